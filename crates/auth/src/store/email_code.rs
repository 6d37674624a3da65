//! SQL of e-mail one-time codes: a user's enrolment (`email_otp`) and the current code per
//! purpose (`email_codes`, by keyed hash), each spent by one conditional statement.

use anyhow::Context as _;

use tessera_storage::{Database, Tx};
use tessera_storage::{on_pool, on_tx};

/// The user's enrolment: `None` without one, `Some(None)` while pending, `Some(Some(at))` once
/// enabled.
pub async fn enrolment(
    database: &Database,
    user_id: &str,
) -> anyhow::Result<Option<Option<String>>> {
    on_pool!(database, pool => sqlx::query_scalar(
        "SELECT enabled_at FROM email_otp WHERE user_id = $1",
    )
    .bind(user_id)
    .fetch_optional(pool)
    .await)
    .context("reading a user's e-mail code enrolment")
}

/// Starts a pending enrolment (kept if one is pending already).
pub async fn start_enrolment(tx: &mut Tx, user_id: &str, now: &str) -> anyhow::Result<()> {
    on_tx!(tx, conn => sqlx::query(
        "INSERT INTO email_otp (user_id, created_at) VALUES ($1, $2) ON CONFLICT (user_id) DO NOTHING",
    )
    .bind(user_id)
    .bind(now)
    .execute(&mut **conn)
    .await
    .map(drop))
    .context("starting an e-mail code enrolment")
}

/// Confirms a pending enrolment.
pub async fn enable(tx: &mut Tx, user_id: &str, now: &str) -> anyhow::Result<()> {
    on_tx!(tx, conn => sqlx::query(
        "UPDATE email_otp SET enabled_at = $2 WHERE user_id = $1 AND enabled_at IS NULL",
    )
    .bind(user_id)
    .bind(now)
    .execute(&mut **conn)
    .await
    .map(drop))
    .context("enabling e-mail codes")
}

/// Removes the user's enrolment and codes; whether there was an enrolment.
pub async fn remove(tx: &mut Tx, user_id: &str) -> anyhow::Result<bool> {
    on_tx!(tx, conn => sqlx::query("DELETE FROM email_codes WHERE user_id = $1")
        .bind(user_id)
        .execute(&mut **conn)
        .await
        .map(drop))
    .context("deleting a user's e-mail codes")?;
    let removed: u64 = on_tx!(tx, conn => sqlx::query("DELETE FROM email_otp WHERE user_id = $1")
        .bind(user_id)
        .execute(&mut **conn)
        .await
        .map(|done| done.rows_affected()))
    .context("deleting a user's e-mail code enrolment")?;
    Ok(removed > 0)
}

/// Stores the user's current code of `purpose`, replacing the one before.
pub async fn store_code(
    tx: &mut Tx,
    user_id: &str,
    purpose: &str,
    code_hash: &str,
    expires_at: &str,
) -> anyhow::Result<()> {
    on_tx!(tx, conn => sqlx::query(
        "INSERT INTO email_codes (user_id, purpose, code_hash, expires_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (user_id, purpose) DO UPDATE
         SET code_hash = excluded.code_hash, expires_at = excluded.expires_at, used_at = NULL",
    )
    .bind(user_id)
    .bind(purpose)
    .bind(code_hash)
    .bind(expires_at)
    .execute(&mut **conn)
    .await
    .map(drop))
    .context("storing an e-mail code")
}

/// Spends the user's current code of `purpose` if it is `code_hash`, unused and unexpired at
/// `now` (one conditional statement: a code works once, even in parallel).
pub async fn spend_code(
    database: &Database,
    user_id: &str,
    purpose: &str,
    code_hash: &str,
    now: &str,
) -> anyhow::Result<bool> {
    let spent: u64 = on_pool!(database, pool => sqlx::query(
        "UPDATE email_codes SET used_at = $4
         WHERE user_id = $1 AND purpose = $2 AND code_hash = $3 AND used_at IS NULL AND expires_at > $4",
    )
    .bind(user_id)
    .bind(purpose)
    .bind(code_hash)
    .bind(now)
    .execute(pool)
    .await
    .map(|done| done.rows_affected()))
    .context("spending an e-mail code")?;
    Ok(spent == 1)
}
