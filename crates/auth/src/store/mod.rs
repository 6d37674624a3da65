//! SQL of the authentication service. This file holds accounts, memberships and workspaces as
//! login and context switching read them; each other area has its own submodule. The functions
//! take the database (or the caller's transaction, so several statements commit together) and
//! plain values, and return plain rows; the service modules keep the logic.

pub mod audit;
pub mod email_code;
pub mod keys;
pub mod lockout;
pub mod memberships;
pub mod mfa;
pub mod sessions;
pub mod sign_in;
pub mod webauthn;

use anyhow::Context as _;

use tessera_storage::Database;
use tessera_storage::{Tx, on_pool, on_tx};

/// An account as login sees it.
pub struct Account {
    pub user_id: String,
    pub password_hash: String,
}

/// A membership: the tenant, the role in it and the user's type.
pub struct Membership {
    pub tenant_id: String,
    pub role: String,
    pub user_type: String,
}

/// The account that may sign in with `email`: a disabled user has none (signing in fails as
/// for an unknown login, with the same cost and answer).
pub async fn account_by_email(database: &Database, email: &str) -> anyhow::Result<Option<Account>> {
    let row: Option<(String, String)> = on_pool!(database, pool => sqlx::query_as(
        "SELECT id, password_hash FROM users WHERE email = $1 AND disabled_at IS NULL",
    )
    .bind(email)
    .fetch_optional(pool)
    .await)
    .context("reading an account")?;
    Ok(row.map(|(user_id, password_hash)| Account {
        user_id,
        password_hash,
    }))
}

pub async fn email_of(database: &Database, user_id: &str) -> anyhow::Result<Option<String>> {
    on_pool!(database, pool => sqlx::query_scalar("SELECT email FROM users WHERE id = $1")
        .bind(user_id)
        .fetch_optional(pool)
        .await)
    .context("reading a user's e-mail")
}

/// The one statement that stores a user's password hash.
const SET_PASSWORD_HASH: &str =
    "UPDATE users SET password_hash = $2, updated_at = $3 WHERE id = $1";

/// Replaces a user's password hash inside `tx` (a password change, with its revocations).
pub async fn replace_password_hash(
    tx: &mut Tx,
    user_id: &str,
    password_hash: &str,
) -> anyhow::Result<()> {
    on_tx!(tx, conn => sqlx::query(SET_PASSWORD_HASH)
    .bind(user_id)
    .bind(password_hash)
    .bind(tessera_storage::time::now())
    .execute(&mut **conn)
    .await
    .map(drop))
    .context("storing a changed password")
}

pub async fn update_password_hash(
    database: &Database,
    user_id: &str,
    password_hash: &str,
) -> anyhow::Result<()> {
    on_pool!(database, pool => sqlx::query(SET_PASSWORD_HASH)
    .bind(user_id)
    .bind(password_hash)
    .bind(tessera_storage::time::now())
    .execute(pool)
    .await
    .map(drop))
    .context("storing a re-hashed password")
}

/// The membership a login lands in: `tenant_id` when given, else the user's first one of a
/// tenant not disabled; none for a disabled user (so no token is issued to one, whichever way
/// they signed in).
pub async fn membership(
    database: &Database,
    user_id: &str,
    tenant_id: Option<&str>,
) -> anyhow::Result<Option<Membership>> {
    let row: Option<(String, String, String)> = on_pool!(database, pool => sqlx::query_as(
        "SELECT m.tenant_id, m.role, u.user_type FROM memberships m JOIN users u ON u.id = m.user_id
         JOIN tenants t ON t.id = m.tenant_id
         WHERE m.user_id = $1 AND ($2 IS NULL OR m.tenant_id = $2) AND u.disabled_at IS NULL
           AND t.disabled_at IS NULL
         ORDER BY m.created_at, m.tenant_id LIMIT 1",
    )
    .bind(user_id)
    .bind(tenant_id)
    .fetch_optional(pool)
    .await)
    .context("reading a membership")?;
    Ok(row.map(|(tenant_id, role, user_type)| Membership {
        tenant_id,
        role,
        user_type,
    }))
}

pub async fn default_workspace(
    database: &Database,
    tenant_id: &str,
) -> anyhow::Result<Option<String>> {
    on_pool!(database, pool => sqlx::query_scalar(
        "SELECT id FROM workspaces WHERE tenant_id = $1 ORDER BY is_default DESC, created_at LIMIT 1",
    )
    .bind(tenant_id)
    .fetch_optional(pool)
    .await)
    .context("reading a tenant's default workspace")
}

/// The tenant a workspace belongs to.
pub async fn workspace_tenant(
    database: &Database,
    workspace_id: &str,
) -> anyhow::Result<Option<String>> {
    on_pool!(database, pool => sqlx::query_scalar("SELECT tenant_id FROM workspaces WHERE id = $1")
        .bind(workspace_id)
        .fetch_optional(pool)
        .await)
    .context("reading a workspace")
}
