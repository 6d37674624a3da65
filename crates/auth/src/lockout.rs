//! The login lockout: guesses are counted per normalized login, whether or not an account has
//! it (so a 429 reveals nothing). Each guess (a password, or a second factor) reserves its slot
//! before it is evaluated, in one locked read-modify-write whose result decides, so parallel
//! guesses can never be evaluated beyond the limit; a right guess gives its slot back. After
//! `lockout_max_attempts` wrong guesses the login is locked for `lockout_duration`, even for the
//! right password.
//!
//! A locked login is the service's own error, [`LockedOut`]; routes turn it into the 429 (with
//! `Retry-After`) by `?`.

use std::time::Duration;

use chrono::Utc;

use crate::store::lockout as store;
use tessera_http::ApiError;
use tessera_storage::{Database, time};

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
    /// `Err(LockedOut)` when the login is locked.
    pub fn into_result(self) -> Result<(), LockedOut> {
        match self {
            Lock::Open => Ok(()),
            Lock::Locked {
                retry_after_seconds,
            } => Err(LockedOut {
                retry_after_seconds,
            }),
        }
    }
}

/// The login is locked after too many wrong guesses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the login is locked for {retry_after_seconds} more seconds")]
pub struct LockedOut {
    /// At least 1.
    pub retry_after_seconds: u64,
}

/// A 429 with `Retry-After`, the same answer whether or not an account has the login.
impl From<LockedOut> for ApiError {
    fn from(
        LockedOut {
            retry_after_seconds,
        }: LockedOut,
    ) -> Self {
        ApiError::TooManyRequests {
            retry_after_seconds,
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
    store::start_count(&mut tx, login, &now).await?;
    let store::GuessCount {
        failures,
        locked_until,
    } = store::lock_count(&mut tx, login).await?;
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
    store::set_count(&mut tx, login, failures, locked_until.as_deref(), &now).await?;
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

/// [`reserve`] with the lockout's settings, as a route uses it: when the login is locked,
/// `locked_out` (the caller's entry, recorded as `account.locked_out`) goes into the trail and
/// the answer is the 429.
pub async fn reserve_or_refuse(
    database: &Database,
    config: &crate::config::AuthConfig,
    login: &str,
    locked_out: crate::audit::AuditEntry,
) -> tessera_http::ApiResult<()> {
    let reserved = reserve(
        database,
        login,
        config.lockout_max_attempts,
        config.lockout_duration,
    )
    .await?;
    if let Err(locked) = reserved.into_result() {
        let entry = crate::audit::AuditEntry {
            event: crate::audit::AuditEvent::LockedOut,
            ..locked_out
        };
        crate::audit::record(database, &entry).await?;
        return Err(locked.into());
    }
    Ok(())
}

/// A right second factor gives back the slot its guess reserved (one conditional statement):
/// the wrong guesses before it stay counted, and a lock that only this guess completed is
/// lifted. (A right password [`clear`]s the whole count instead.)
pub async fn release(database: &Database, login: &str, max_attempts: u32) -> anyhow::Result<()> {
    store::release(database, login, i64::from(max_attempts.max(1))).await
}

/// A successful login clears the count.
pub async fn clear(database: &Database, login: &str) -> anyhow::Result<()> {
    store::clear(database, login).await
}
