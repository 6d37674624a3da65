//! The login lockout: failed logins are counted per normalized login, whether or not an account
//! has it (so a 429 reveals nothing), in one locked read-modify-write per failure (so parallel
//! wrong guesses cannot slip past the count). After `lockout_max_attempts` failures the login is
//! locked for `lockout_duration`, even for the right password.

use std::time::Duration;

use anyhow::Context as _;
use chrono::Utc;

use crate::on_tx;
use crate::storage::{Database, DatabaseKind, time};

/// Whether a login may be tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lock {
    Open,
    /// Locked for this many more seconds (at least 1).
    Locked {
        retry_after_seconds: u64,
    },
}

impl Lock {
    /// The 429 (with `Retry-After`) of a locked login.
    pub fn into_result(self) -> Result<(), crate::http::ApiError> {
        match self {
            Lock::Open => Ok(()),
            Lock::Locked {
                retry_after_seconds,
            } => Err(crate::http::ApiError::TooManyRequests {
                retry_after_seconds,
            }),
        }
    }
}

fn remaining(locked_until: &str) -> Option<u64> {
    let until = time::parse(locked_until).ok()?;
    let left = (until - Utc::now()).num_milliseconds();
    (left > 0).then(|| u64::try_from(left).unwrap_or(0).div_ceil(1000).max(1))
}

/// The lock state of `login` now.
pub async fn check(database: &Database, login: &str) -> anyhow::Result<Lock> {
    let locked_until: Option<Option<String>> =
        crate::on_pool!(database, pool => sqlx::query_scalar(
        "SELECT locked_until FROM login_attempts WHERE login = $1",
    )
    .bind(login)
    .fetch_optional(pool)
    .await)
        .context("reading a login's lock")?;
    Ok(
        match locked_until.flatten().as_deref().and_then(remaining) {
            Some(retry_after_seconds) => Lock::Locked {
                retry_after_seconds,
            },
            None => Lock::Open,
        },
    )
}

/// Counts one failure. `Locked` when the login was already locked (this attempt does not
/// count); `Open` when it was counted (the lock, if this was the last allowed failure, starts
/// now and applies to the next attempt).
pub async fn record_failure(
    database: &Database,
    login: &str,
    max_attempts: u32,
    duration: Duration,
) -> anyhow::Result<Lock> {
    let now = time::now();
    let mut tx = database.begin().await?;
    on_tx!(&mut tx, conn => sqlx::query(
        "INSERT INTO login_attempts (login, failures, updated_at) VALUES ($1, 0, $2)
         ON CONFLICT (login) DO NOTHING",
    )
    .bind(login)
    .bind(&now)
    .execute(&mut **conn)
    .await
    .map(drop))
    .context("starting a login's failure count")?;
    // SQLite's write transaction already excludes every other writer.
    let select = match database.kind() {
        DatabaseKind::Postgres => {
            "SELECT failures, locked_until FROM login_attempts WHERE login = $1 FOR UPDATE"
        }
        DatabaseKind::Sqlite => {
            "SELECT failures, locked_until FROM login_attempts WHERE login = $1"
        }
    };
    let (failures, locked_until): (i64, Option<String>) =
        on_tx!(&mut tx, conn => sqlx::query_as(select)
        .bind(login)
        .fetch_one(&mut **conn)
        .await)
        .context("reading a login's failure count")?;
    if let Some(retry_after_seconds) = locked_until.as_deref().and_then(remaining) {
        tx.commit().await?;
        return Ok(Lock::Locked {
            retry_after_seconds,
        });
    }
    // A lock that has run out starts the count again.
    let failures = if locked_until.is_some() {
        1
    } else {
        failures + 1
    };
    let locked_until =
        (failures >= i64::from(max_attempts)).then(|| time::format(Utc::now() + duration));
    on_tx!(&mut tx, conn => sqlx::query(
        "UPDATE login_attempts SET failures = $2, locked_until = $3, updated_at = $4 WHERE login = $1",
    )
    .bind(login)
    .bind(failures)
    .bind(&locked_until)
    .bind(&now)
    .execute(&mut **conn)
    .await
    .map(drop))
    .context("counting a failed login")?;
    tx.commit().await?;
    if locked_until.is_some() {
        tracing::warn!("a login reached the failed-attempt limit and is locked");
    }
    Ok(Lock::Open)
}

/// A successful login clears the count.
pub async fn clear(database: &Database, login: &str) -> anyhow::Result<()> {
    crate::on_pool!(database, pool => sqlx::query("DELETE FROM login_attempts WHERE login = $1")
        .bind(login)
        .execute(pool)
        .await
        .map(drop))
    .context("clearing a login's failures")
}
