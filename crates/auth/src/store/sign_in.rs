//! SQL of sign-in by mail: the single-use tokens mailed to users (`sign_in_tokens`, by hash)
//! and the windows that limit sign-in mails per login and per client address
//! (`sign_in_mail_windows`). Expired rows of both are pruned by [`prune`].

use anyhow::Context as _;

use tessera_storage::{Database, Tx};
use tessera_storage::{on_pool, on_tx};

/// Stores a mailed token by its hash.
pub async fn insert_token(
    tx: &mut Tx,
    token_hash: &str,
    purpose: &str,
    user_id: &str,
    expires_at: &str,
    created_at: &str,
) -> anyhow::Result<()> {
    on_tx!(tx, conn => sqlx::query(
        "INSERT INTO sign_in_tokens (token_hash, purpose, user_id, expires_at, created_at) VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(token_hash)
    .bind(purpose)
    .bind(user_id)
    .bind(expires_at)
    .bind(created_at)
    .execute(&mut **conn)
    .await
    .map(drop))
    .context("storing a sign-in token")
}

/// The user a token of `purpose` is for, if it is unused and unexpired at `now` (read only).
pub async fn token_user(
    database: &Database,
    token_hash: &str,
    purpose: &str,
    now: &str,
) -> anyhow::Result<Option<String>> {
    on_pool!(database, pool => sqlx::query_scalar(
        "SELECT user_id FROM sign_in_tokens
         WHERE token_hash = $1 AND purpose = $2 AND used_at IS NULL AND expires_at > $3",
    )
    .bind(token_hash)
    .bind(purpose)
    .bind(now)
    .fetch_optional(pool)
    .await)
    .context("reading a sign-in token")
}

/// Spends a token of `purpose` in one conditional statement: the user it was for, or `None`
/// when it is unknown, used or expired (a parallel spender got it first).
pub async fn spend_token(
    tx: &mut Tx,
    token_hash: &str,
    purpose: &str,
    now: &str,
) -> anyhow::Result<Option<String>> {
    on_tx!(tx, conn => sqlx::query_scalar(
        "UPDATE sign_in_tokens SET used_at = $3
         WHERE token_hash = $1 AND purpose = $2 AND used_at IS NULL AND expires_at > $3
         RETURNING user_id",
    )
    .bind(token_hash)
    .bind(purpose)
    .bind(now)
    .fetch_optional(&mut **conn)
    .await)
    .context("spending a sign-in token")
}

/// Spends every unused token of `purpose` the user holds (a reset makes the other reset mails
/// useless).
pub async fn spend_tokens_of(
    tx: &mut Tx,
    user_id: &str,
    purpose: &str,
    now: &str,
) -> anyhow::Result<()> {
    on_tx!(tx, conn => sqlx::query(
        "UPDATE sign_in_tokens SET used_at = $3 WHERE user_id = $1 AND purpose = $2 AND used_at IS NULL",
    )
    .bind(user_id)
    .bind(purpose)
    .bind(now)
    .execute(&mut **conn)
    .await
    .map(drop))
    .context("spending a user's sign-in tokens")
}

/// Counts one mail in the window of `limit_key` (one conditional upsert): a window that started
/// at or before `expired_before` starts again at `now`; `false` when the current window already
/// counts `max` mails (nothing is counted then).
pub async fn count_mail(
    tx: &mut Tx,
    limit_key: &str,
    now: &str,
    expired_before: &str,
    max: i64,
) -> anyhow::Result<bool> {
    let counted: Option<String> = on_tx!(tx, conn => sqlx::query_scalar(
        "INSERT INTO sign_in_mail_windows (limit_key, window_start, sent) VALUES ($1, $2, 1)
         ON CONFLICT (limit_key) DO UPDATE SET
             window_start = CASE WHEN sign_in_mail_windows.window_start <= $3
                 THEN excluded.window_start ELSE sign_in_mail_windows.window_start END,
             sent = CASE WHEN sign_in_mail_windows.window_start <= $3
                 THEN 1 ELSE sign_in_mail_windows.sent + 1 END
         WHERE sign_in_mail_windows.window_start <= $3 OR sign_in_mail_windows.sent < $4
         RETURNING limit_key",
    )
    .bind(limit_key)
    .bind(now)
    .bind(expired_before)
    .bind(max)
    .fetch_optional(&mut **conn)
    .await)
    .context("counting a sign-in mail")?;
    Ok(counted.is_some())
}

/// When the current window of `limit_key` started.
pub async fn window_start(tx: &mut Tx, limit_key: &str) -> anyhow::Result<Option<String>> {
    on_tx!(tx, conn => sqlx::query_scalar(
        "SELECT window_start FROM sign_in_mail_windows WHERE limit_key = $1",
    )
    .bind(limit_key)
    .fetch_optional(&mut **conn)
    .await)
    .context("reading a sign-in mail window")
}

/// Deletes tokens expired at `now` and windows that started at or before `windows_before`
/// (by their indexes).
pub async fn prune(tx: &mut Tx, now: &str, windows_before: &str) -> anyhow::Result<()> {
    on_tx!(tx, conn => sqlx::query("DELETE FROM sign_in_tokens WHERE expires_at <= $1")
        .bind(now)
        .execute(&mut **conn)
        .await
        .map(drop))
    .context("pruning expired sign-in tokens")?;
    on_tx!(tx, conn => sqlx::query(
        "DELETE FROM sign_in_mail_windows WHERE window_start <= $1",
    )
    .bind(windows_before)
    .execute(&mut **conn)
    .await
    .map(drop))
    .context("pruning sign-in mail windows")
}
