//! SQL of the login lockout (`login_attempts`): the guess count of a login, read and written
//! in the reserving transaction, and its release and clearing.

use anyhow::Context as _;

use tessera_storage::{Database, DatabaseKind, Tx, time};
use tessera_storage::{on_pool, on_tx};

/// A login's guess count.
#[derive(sqlx::FromRow)]
pub struct GuessCount {
    /// Guesses counted in the current window.
    pub failures: i64,
    /// When set, the login is (or was) locked until then.
    pub locked_until: Option<String>,
}

/// Makes sure `login` has a row (a count of 0 when new).
pub async fn start_count(tx: &mut Tx, login: &str, now: &str) -> anyhow::Result<()> {
    on_tx!(tx, conn => sqlx::query(
        "INSERT INTO login_attempts (login, failures, updated_at) VALUES ($1, 0, $2)
         ON CONFLICT (login) DO NOTHING",
    )
    .bind(login)
    .bind(now)
    .execute(&mut **conn)
    .await
    .map(drop))
    .context("starting a login's guess count")
}

/// The guess count of `login` (which must have a row), locked until the transaction ends.
pub async fn lock_count(tx: &mut Tx, login: &str) -> anyhow::Result<GuessCount> {
    // SQLite's write transaction already excludes every other writer.
    let select = match tx.kind() {
        DatabaseKind::Postgres => {
            "SELECT failures, locked_until FROM login_attempts WHERE login = $1 FOR UPDATE"
        }
        DatabaseKind::Sqlite => {
            "SELECT failures, locked_until FROM login_attempts WHERE login = $1"
        }
    };
    on_tx!(tx, conn => sqlx::query_as(select)
        .bind(login)
        .fetch_one(&mut **conn)
        .await)
    .context("reading a login's guess count")
}

/// Stores the guess count of `login`.
pub async fn set_count(
    tx: &mut Tx,
    login: &str,
    failures: i64,
    locked_until: Option<&str>,
    now: &str,
) -> anyhow::Result<()> {
    on_tx!(tx, conn => sqlx::query(
        "UPDATE login_attempts SET failures = $2, locked_until = $3, updated_at = $4 WHERE login = $1",
    )
    .bind(login)
    .bind(failures)
    .bind(locked_until)
    .bind(now)
    .execute(&mut **conn)
    .await
    .map(drop))
    .context("counting a login guess")
}

/// Gives back one counted guess of `login` (one conditional statement), lifting the lock when
/// the count drops below `max_attempts`.
pub async fn release(database: &Database, login: &str, max_attempts: i64) -> anyhow::Result<()> {
    on_pool!(database, pool => sqlx::query(
        "UPDATE login_attempts
         SET failures = failures - 1,
             locked_until = CASE WHEN failures - 1 < $2 THEN NULL ELSE locked_until END,
             updated_at = $3
         WHERE login = $1 AND failures > 0",
    )
    .bind(login)
    .bind(max_attempts)
    .bind(time::now())
    .execute(pool)
    .await
    .map(drop))
    .context("releasing a login guess")
}

/// Forgets the guess count of `login`.
pub async fn clear(database: &Database, login: &str) -> anyhow::Result<()> {
    on_pool!(database, pool => sqlx::query("DELETE FROM login_attempts WHERE login = $1")
        .bind(login)
        .execute(pool)
        .await
        .map(drop))
    .context("clearing a login's failures")
}
