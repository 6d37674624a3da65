//! SQL of a user's own memberships as `GET /auth/api/v1/auth/memberships` lists them: the
//! tenants (not disabled) with the user's role, and their workspaces.

use anyhow::Context as _;

use tessera_storage::Database;
use tessera_storage::on_pool;

/// The most memberships listed.
const MAX_MEMBERSHIPS: i64 = 1000;

/// A tenant the user belongs to.
#[derive(Debug, sqlx::FromRow)]
pub struct MembershipRow {
    pub tenant_id: String,
    pub tenant_slug: String,
    pub tenant_name: String,
    pub role: String,
}

/// A workspace of one of the user's tenants.
#[derive(Debug, sqlx::FromRow)]
pub struct WorkspaceRow {
    pub id: String,
    pub tenant_id: String,
    pub name: String,
    pub is_default: bool,
}

/// The user's memberships in tenants that are not disabled, oldest first (sign-in's order).
pub async fn of_user(database: &Database, user_id: &str) -> anyhow::Result<Vec<MembershipRow>> {
    on_pool!(database, pool => sqlx::query_as(
        "SELECT m.tenant_id, t.slug AS tenant_slug, t.name AS tenant_name, m.role
         FROM memberships m JOIN tenants t ON t.id = m.tenant_id
         WHERE m.user_id = $1 AND t.disabled_at IS NULL
         ORDER BY m.created_at, m.tenant_id
         LIMIT $2",
    )
    .bind(user_id)
    .bind(MAX_MEMBERSHIPS)
    .fetch_all(pool)
    .await)
    .context("listing a user's memberships")
}

/// The workspaces of every tenant the user belongs to, each tenant's default first, then by
/// name.
pub async fn workspaces_of(
    database: &Database,
    user_id: &str,
) -> anyhow::Result<Vec<WorkspaceRow>> {
    on_pool!(database, pool => sqlx::query_as(
        "SELECT w.id, w.tenant_id, w.name, w.is_default
         FROM workspaces w JOIN memberships m ON m.tenant_id = w.tenant_id
         WHERE m.user_id = $1
         ORDER BY w.tenant_id, w.is_default DESC, w.name, w.id",
    )
    .bind(user_id)
    .fetch_all(pool)
    .await)
    .context("listing the workspaces of a user's tenants")
}
