//! SQL of MFA: the user's sealed TOTP secret and last accepted step (`user_mfa`), the recovery
//! codes (`mfa_recovery_codes`, hashed) and the login challenges (`mfa_challenges`, by token
//! hash).

use anyhow::Context as _;

use tessera_storage::{Database, Tx};
use tessera_storage::{on_pool, on_tx};

/// A user's TOTP secret as stored.
#[derive(sqlx::FromRow)]
pub struct SecretRow {
    pub sealed_secret: String,
    /// `None` while the enrolment is pending (not confirmed yet).
    pub enabled_at: Option<String>,
    /// The last accepted time step.
    pub last_step: Option<i64>,
}

/// A pending login challenge.
#[derive(sqlx::FromRow)]
pub struct Challenge {
    pub user_id: String,
    pub login: String,
}

/// When the user's MFA was enabled; `None` when it is not (no secret, or one pending).
pub async fn enabled_at(database: &Database, user_id: &str) -> anyhow::Result<Option<String>> {
    let enabled_at: Option<Option<String>> = on_pool!(database, pool => sqlx::query_scalar(
        "SELECT enabled_at FROM user_mfa WHERE user_id = $1",
    )
    .bind(user_id)
    .fetch_optional(pool)
    .await)
    .context("reading a user's MFA")?;
    Ok(enabled_at.flatten())
}

/// Stores a login challenge by the hash of its token.
pub async fn insert_challenge(
    database: &Database,
    token_hash: &str,
    user_id: &str,
    login: &str,
    expires_at: &str,
    created_at: &str,
) -> anyhow::Result<()> {
    on_pool!(database, pool => sqlx::query(
        "INSERT INTO mfa_challenges (token_hash, user_id, login, expires_at, created_at) VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(token_hash)
    .bind(user_id)
    .bind(login)
    .bind(expires_at)
    .bind(created_at)
    .execute(pool)
    .await
    .map(drop))
    .context("storing an MFA challenge")
}

/// The unused challenge of `token_hash` that has not expired at `now`.
pub async fn challenge(
    database: &Database,
    token_hash: &str,
    now: &str,
) -> anyhow::Result<Option<Challenge>> {
    on_pool!(database, pool => sqlx::query_as(
        "SELECT user_id, login FROM mfa_challenges WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $2",
    )
    .bind(token_hash)
    .bind(now)
    .fetch_optional(pool)
    .await)
    .context("reading an MFA challenge")
}

/// Marks the challenge of `token_hash` used; whether this call did (it was unused).
pub async fn spend_challenge(
    database: &Database,
    token_hash: &str,
    now: &str,
) -> anyhow::Result<bool> {
    let spent = on_pool!(database, pool => sqlx::query(
        "UPDATE mfa_challenges SET used_at = $2 WHERE token_hash = $1 AND used_at IS NULL",
    )
    .bind(token_hash)
    .bind(now)
    .execute(pool)
    .await
    .map(|result| result.rows_affected()))
    .context("spending an MFA challenge")?;
    Ok(spent == 1)
}

/// Stores a new pending secret, replacing any earlier one (enabled or not).
pub async fn store_pending_secret(
    database: &Database,
    user_id: &str,
    sealed_secret: &str,
    now: &str,
) -> anyhow::Result<()> {
    on_pool!(database, pool => sqlx::query(
        "INSERT INTO user_mfa (user_id, sealed_secret, created_at) VALUES ($1, $2, $3)
         ON CONFLICT (user_id) DO UPDATE SET sealed_secret = excluded.sealed_secret,
             enabled_at = NULL, last_step = NULL, created_at = excluded.created_at",
    )
    .bind(user_id)
    .bind(sealed_secret)
    .bind(now)
    .execute(pool)
    .await
    .map(drop))
    .context("storing a pending TOTP secret")
}

/// The user's secret, pending or enabled.
pub async fn secret(database: &Database, user_id: &str) -> anyhow::Result<Option<SecretRow>> {
    on_pool!(database, pool => sqlx::query_as(
        "SELECT sealed_secret, enabled_at, last_step FROM user_mfa WHERE user_id = $1",
    )
    .bind(user_id)
    .fetch_optional(pool)
    .await)
    .context("reading a TOTP secret")
}

/// Stores `step` as the user's last accepted step only if it is newer than the stored one (one
/// conditional update); whether it was.
pub async fn advance_last_step(
    database: &Database,
    user_id: &str,
    step: i64,
) -> anyhow::Result<bool> {
    let stored = on_pool!(database, pool => sqlx::query(
        "UPDATE user_mfa SET last_step = $2 WHERE user_id = $1 AND (last_step IS NULL OR last_step < $2)",
    )
    .bind(user_id)
    .bind(step)
    .execute(pool)
    .await
    .map(|result| result.rows_affected()))
    .context("storing the last TOTP step")?;
    Ok(stored == 1)
}

/// Turns the user's pending secret on at `now`.
pub async fn enable(tx: &mut Tx, user_id: &str, now: &str) -> anyhow::Result<()> {
    on_tx!(tx, conn => sqlx::query("UPDATE user_mfa SET enabled_at = $2 WHERE user_id = $1")
        .bind(user_id)
        .bind(now)
        .execute(&mut **conn)
        .await
        .map(drop))
    .context("enabling MFA")
}

/// Deletes every recovery code of the user.
pub async fn delete_recovery_codes(tx: &mut Tx, user_id: &str) -> anyhow::Result<()> {
    on_tx!(tx, conn => sqlx::query("DELETE FROM mfa_recovery_codes WHERE user_id = $1")
        .bind(user_id)
        .execute(&mut **conn)
        .await
        .map(drop))
    .context("clearing recovery codes")
}

/// Stores one recovery code by its hash.
pub async fn insert_recovery_code(
    tx: &mut Tx,
    user_id: &str,
    code_hash: &str,
) -> anyhow::Result<()> {
    on_tx!(tx, conn => sqlx::query(
        "INSERT INTO mfa_recovery_codes (user_id, code_hash) VALUES ($1, $2)",
    )
    .bind(user_id)
    .bind(code_hash)
    .execute(&mut **conn)
    .await
    .map(drop))
    .context("storing a recovery code")
}

/// Spends the user's unused recovery code of `code_hash` at `now`; whether there was one.
pub async fn use_recovery_code(
    database: &Database,
    user_id: &str,
    code_hash: &str,
    now: &str,
) -> anyhow::Result<bool> {
    let burnt = on_pool!(database, pool => sqlx::query(
        "UPDATE mfa_recovery_codes SET used_at = $3 WHERE user_id = $1 AND code_hash = $2 AND used_at IS NULL",
    )
    .bind(user_id)
    .bind(code_hash)
    .bind(now)
    .execute(pool)
    .await
    .map(|result| result.rows_affected()))
    .context("using a recovery code")?;
    Ok(burnt == 1)
}

/// Deletes the user's secret and recovery codes (two statements in the caller's transaction).
pub async fn delete_mfa(tx: &mut Tx, user_id: &str) -> anyhow::Result<()> {
    for statement in [
        "DELETE FROM user_mfa WHERE user_id = $1",
        "DELETE FROM mfa_recovery_codes WHERE user_id = $1",
    ] {
        on_tx!(tx, conn => sqlx::query(statement)
            .bind(user_id)
            .execute(&mut **conn)
            .await
            .map(drop))
        .context("disabling MFA")?;
    }
    Ok(())
}
