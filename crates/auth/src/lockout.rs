//! The login lockout: guesses are counted per normalized login, whether or not an account has
//! it (so a 429 reveals nothing). Each guess (a password, or a second factor) reserves its slot
//! before it is evaluated, in one locked read-modify-write whose result decides, so parallel
//! guesses can never be evaluated beyond the limit; a right guess gives its slot back. After
//! `lockout_max_attempts` wrong guesses the login is locked for `lockout_duration`, even for the
//! right password.

use std::time::Duration;

use anyhow::Context as _;
use chrono::Utc;

use tessera_storage::on_tx;
use tessera_storage::{Database, DatabaseKind, time};

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
    pub fn into_result(self) -> Result<(), tessera_http::ApiError> {
        match self {
            Lock::Open => Ok(()),
            Lock::Locked {
                retry_after_seconds,
            } => Err(tessera_http::ApiError::TooManyRequests {
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

/// Reserves one guess for `login` before it is evaluated, in one locked read-modify-write whose
/// result decides: `Locked` (nothing counted) when the login is locked, or when `max_attempts`
/// guesses are already counted; `Open` when this guess was counted. The guess that takes the
/// last allowed slot starts the lock at once, so parallel guesses that arrive while it is still
/// being evaluated are refused: at most `max_attempts` guesses are ever evaluated per window,
/// whatever the concurrency. A right guess gives its slot back ([`clear`] after a password,
/// [`release`] after a second factor); a wrong one simply keeps it.
pub async fn reserve(
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
    .context("starting a login's guess count")?;
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
        .context("reading a login's guess count")?;
    if let Some(retry_after_seconds) = locked_until.as_deref().and_then(remaining) {
        tx.commit().await?;
        return Ok(Lock::Locked {
            retry_after_seconds,
        });
    }
    // A lock that has run out starts the count again.
    let counted = if locked_until.is_some() { 0 } else { failures };
    let max = i64::from(max_attempts.max(1));
    // Only when the limit was lowered since these guesses were counted.
    let refused = counted >= max;
    let failures = if refused { counted } else { counted + 1 };
    let locked_until = (failures >= max).then(|| time::format(Utc::now() + duration));
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
    .context("counting a login guess")?;
    tx.commit().await?;
    if refused {
        return Ok(Lock::Locked {
            retry_after_seconds: duration.as_secs().max(1),
        });
    }
    if locked_until.is_some() {
        tracing::warn!("a login reached the failed-attempt limit and is locked");
    }
    Ok(Lock::Open)
}

/// A right second factor gives back the slot its guess reserved (one conditional statement):
/// the wrong guesses before it stay counted, and a lock that only this guess completed is
/// lifted. (A right password [`clear`]s the whole count instead.)
pub async fn release(database: &Database, login: &str, max_attempts: u32) -> anyhow::Result<()> {
    tessera_storage::on_pool!(database, pool => sqlx::query(
        "UPDATE login_attempts
         SET failures = failures - 1,
             locked_until = CASE WHEN failures - 1 < $2 THEN NULL ELSE locked_until END,
             updated_at = $3
         WHERE login = $1 AND failures > 0",
    )
    .bind(login)
    .bind(i64::from(max_attempts.max(1)))
    .bind(time::now())
    .execute(pool)
    .await
    .map(drop))
    .context("releasing a login guess")
}

/// A successful login clears the count.
pub async fn clear(database: &Database, login: &str) -> anyhow::Result<()> {
    tessera_storage::on_pool!(database, pool => sqlx::query("DELETE FROM login_attempts WHERE login = $1")
        .bind(login)
        .execute(pool)
        .await
        .map(drop))
    .context("clearing a login's failures")
}
