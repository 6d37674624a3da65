//! SQL of sessions and refresh tokens (`sessions`, `refresh_tokens`, by token hash), and of the
//! member's current role that a refresh and the bearer extractor read.

use anyhow::Context as _;

use tessera_storage::{Database, Tx, time};
use tessera_storage::{on_pool, on_tx};

/// A refresh token with its session.
#[derive(sqlx::FromRow)]
pub struct RefreshRow {
    pub session_id: String,
    pub tenant_id: String,
    pub workspace_id: Option<String>,
    pub expires_at: String,
    /// When it was rotated; `None` while it is the session's current token.
    pub used_at: Option<String>,
    /// The session's user.
    pub user_id: String,
    /// When the session was revoked.
    pub revoked_at: Option<String>,
}

/// A new session's row.
pub struct NewSession<'a> {
    pub id: &'a str,
    pub user_id: &'a str,
    pub created_at: &'a str,
    pub expires_at: &'a str,
    pub client_ip: Option<&'a str>,
    pub user_agent: Option<&'a str>,
}

/// Stores a new session.
pub async fn insert_session(tx: &mut Tx, session: &NewSession<'_>) -> anyhow::Result<()> {
    on_tx!(tx, conn => sqlx::query(
        "INSERT INTO sessions (id, user_id, created_at, expires_at, client_ip, user_agent)
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(session.id)
    .bind(session.user_id)
    .bind(session.created_at)
    .bind(session.expires_at)
    .bind(session.client_ip)
    .bind(session.user_agent)
    .execute(&mut **conn)
    .await
    .map(drop))
    .context("opening a session")
}

/// The ids of the user's sessions still active at `now`, newest first.
pub async fn active_sessions(tx: &mut Tx, user_id: &str, now: &str) -> anyhow::Result<Vec<String>> {
    on_tx!(tx, conn => sqlx::query_scalar(
        "SELECT id FROM sessions WHERE user_id = $1 AND revoked_at IS NULL AND expires_at > $2
         ORDER BY created_at DESC, id DESC",
    )
    .bind(user_id)
    .bind(now)
    .fetch_all(&mut **conn)
    .await)
    .context("finding sessions beyond the limit")
}

/// The ids of the user's sessions not revoked (expired ones included).
pub async fn unrevoked_sessions(database: &Database, user_id: &str) -> anyhow::Result<Vec<String>> {
    on_pool!(database, pool => sqlx::query_scalar(
        "SELECT id FROM sessions WHERE user_id = $1 AND revoked_at IS NULL",
    )
    .bind(user_id)
    .fetch_all(pool)
    .await)
    .context("listing a user's sessions")
}

/// An active session as its user's list shows it.
#[derive(Debug, sqlx::FromRow)]
pub struct SessionRow {
    pub id: String,
    pub created_at: String,
    pub expires_at: String,
    /// When its newest token set was issued (sign-in, refresh or context switch).
    pub last_active_at: Option<String>,
    pub client_ip: Option<String>,
    pub user_agent: Option<String>,
}

/// The user's sessions active at `now`, newest first (at most `limit`).
pub async fn list_active(
    database: &Database,
    user_id: &str,
    now: &str,
    limit: u32,
) -> anyhow::Result<Vec<SessionRow>> {
    on_pool!(database, pool => sqlx::query_as(
        "SELECT s.id, s.created_at, s.expires_at, s.client_ip, s.user_agent,
                (SELECT MAX(r.issued_at) FROM refresh_tokens r WHERE r.session_id = s.id)
                    AS last_active_at
         FROM sessions s
         WHERE s.user_id = $1 AND s.revoked_at IS NULL AND s.expires_at > $2
         ORDER BY s.created_at DESC, s.id DESC
         LIMIT $3",
    )
    .bind(user_id)
    .bind(now)
    .bind(i64::from(limit))
    .fetch_all(pool)
    .await)
    .context("listing a user's active sessions")
}

/// Revokes the session now for `reason` when it is `user_id`'s and active at `now`: false when
/// it is not (another user's, unknown, ended), and nothing changed.
pub async fn revoke_own(
    tx: &mut Tx,
    user_id: &str,
    session_id: &str,
    now: &str,
    reason: &str,
) -> anyhow::Result<bool> {
    let revoked = on_tx!(tx, conn => sqlx::query(
        "UPDATE sessions SET revoked_at = $3, revoked_reason = $4
         WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL AND expires_at > $3",
    )
    .bind(session_id)
    .bind(user_id)
    .bind(now)
    .bind(reason)
    .execute(&mut **conn)
    .await
    .map(|done| done.rows_affected()))
    .context("ending one of a user's sessions")?;
    Ok(revoked == 1)
}

/// Whether the session is neither revoked nor expired at `now`.
pub async fn is_active(database: &Database, session_id: &str, now: &str) -> anyhow::Result<bool> {
    let active: Option<String> = on_pool!(database, pool => sqlx::query_scalar(
        "SELECT id FROM sessions WHERE id = $1 AND revoked_at IS NULL AND expires_at > $2",
    )
    .bind(session_id)
    .bind(now)
    .fetch_optional(pool)
    .await)
    .context("checking a session")?;
    Ok(active.is_some())
}

/// Revokes the session now for `reason`, unless it already is.
pub async fn revoke(tx: &mut Tx, session_id: &str, reason: &str) -> anyhow::Result<()> {
    on_tx!(tx, conn => sqlx::query(
        "UPDATE sessions SET revoked_at = $2, revoked_reason = $3 WHERE id = $1 AND revoked_at IS NULL",
    )
    .bind(session_id)
    .bind(time::now())
    .bind(reason)
    .execute(&mut **conn)
    .await
    .map(drop))
    .context("revoking a session")
}

/// Stores a refresh token of the session by its hash, with the scope it re-issues.
pub async fn insert_refresh_token(
    tx: &mut Tx,
    token_hash: &str,
    session_id: &str,
    tenant_id: &str,
    workspace_id: Option<&str>,
    issued_at: &str,
    expires_at: &str,
) -> anyhow::Result<()> {
    on_tx!(tx, conn => sqlx::query(
        "INSERT INTO refresh_tokens (token_hash, session_id, tenant_id, workspace_id, issued_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(token_hash)
    .bind(session_id)
    .bind(tenant_id)
    .bind(workspace_id)
    .bind(issued_at)
    .bind(expires_at)
    .execute(&mut **conn)
    .await
    .map(drop))
    .context("storing a refresh token")
}

/// The refresh token of `token_hash` and its session.
pub async fn refresh_token(tx: &mut Tx, token_hash: &str) -> anyhow::Result<Option<RefreshRow>> {
    on_tx!(tx, conn => sqlx::query_as(
        "SELECT r.session_id, r.tenant_id, r.workspace_id, r.expires_at, r.used_at, s.user_id, s.revoked_at
         FROM refresh_tokens r JOIN sessions s ON s.id = r.session_id WHERE r.token_hash = $1",
    )
    .bind(token_hash)
    .fetch_optional(&mut **conn)
    .await)
    .context("reading a refresh token")
}

/// Marks the refresh token of `token_hash` used at `now`; whether this call did (it was
/// unused).
pub async fn spend_refresh_token(tx: &mut Tx, token_hash: &str, now: &str) -> anyhow::Result<bool> {
    let spent = on_tx!(tx, conn => sqlx::query(
        "UPDATE refresh_tokens SET used_at = $2 WHERE token_hash = $1 AND used_at IS NULL",
    )
    .bind(token_hash)
    .bind(now)
    .execute(&mut **conn)
    .await
    .map(|result| result.rows_affected()))
    .context("spending a refresh token")?;
    Ok(spent > 0)
}

const MEMBER_ROLE: &str =
    "SELECT m.role, u.user_type FROM memberships m JOIN users u ON u.id = m.user_id
     JOIN tenants t ON t.id = m.tenant_id
     WHERE m.user_id = $1 AND m.tenant_id = $2 AND u.disabled_at IS NULL
       AND t.disabled_at IS NULL";

/// The user's role in a tenant and the user's type, `(role, user_type)`; `None` when not a
/// member, or when the user or the tenant is disabled. For the bearer extractor.
pub async fn member_role(
    database: &Database,
    user_id: &str,
    tenant_id: &str,
) -> anyhow::Result<Option<(String, String)>> {
    on_pool!(database, pool => sqlx::query_as(MEMBER_ROLE)
        .bind(user_id)
        .bind(tenant_id)
        .fetch_optional(pool)
        .await)
    .context("reading a caller's membership")
}

/// [`member_role`] inside the caller's transaction (a refresh).
pub async fn member_role_in(
    tx: &mut Tx,
    user_id: &str,
    tenant_id: &str,
) -> anyhow::Result<Option<(String, String)>> {
    on_tx!(tx, conn => sqlx::query_as(MEMBER_ROLE)
        .bind(user_id)
        .bind(tenant_id)
        .fetch_optional(&mut **conn)
        .await)
    .context("reading a membership")
}
