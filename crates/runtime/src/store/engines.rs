//! The SQL of the `engines` table: the registry's record of every engine a serving host has
//! loaded, with whether it is loaded now (`crate::registry` decides when to write it).

use anyhow::Context as _;

use tessera_storage::on_pool;
use tessera_storage::{Database, time};
use tessera_wire::engine::Descriptor as EngineDescriptor;

/// Records `descriptor` (inserted or updated by code), active or not, built from `sha256`.
pub async fn upsert(
    database: &Database,
    descriptor: &EngineDescriptor,
    sha256: &str,
    is_active: bool,
) -> anyhow::Result<()> {
    on_pool!(database, pool => sqlx::query(
        "INSERT INTO engines (code, name, version, requires_tenant_provision, requires_user_provision, is_active, component_sha256, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (code) DO UPDATE SET name = excluded.name, version = excluded.version,
             requires_tenant_provision = excluded.requires_tenant_provision,
             requires_user_provision = excluded.requires_user_provision,
             is_active = excluded.is_active, component_sha256 = excluded.component_sha256,
             updated_at = excluded.updated_at",
    )
    .bind(&descriptor.code)
    .bind(&descriptor.name)
    .bind(&descriptor.version)
    .bind(descriptor.requires_tenant_provision)
    .bind(descriptor.requires_user_provision)
    .bind(is_active)
    .bind(sha256)
    .bind(time::now())
    .execute(pool)
    .await
    .map(drop))
    .context("recording an engine")
}

/// Marks the engine `code` inactive.
pub async fn mark_inactive(database: &Database, code: &str) -> anyhow::Result<()> {
    on_pool!(database, pool => sqlx::query("UPDATE engines SET is_active = FALSE, updated_at = $2 WHERE code = $1")
        .bind(code)
        .bind(time::now())
        .execute(pool)
        .await
        .map(drop))
    .context("marking an engine inactive")
}

/// Marks every recorded engine inactive.
pub async fn mark_all_inactive(database: &Database) -> anyhow::Result<()> {
    on_pool!(database, pool => sqlx::query("UPDATE engines SET is_active = FALSE")
        .execute(pool)
        .await
        .map(drop))
    .context("resetting the engine registry")
}

/// A row of the `engines` table.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct EngineRow {
    pub code: String,
    pub name: String,
    pub is_active: bool,
    pub requires_tenant_provision: bool,
    pub requires_user_provision: bool,
    pub version: String,
    pub component_sha256: String,
}

/// Every engine ever recorded, by code.
pub async fn list(database: &Database) -> anyhow::Result<Vec<EngineRow>> {
    on_pool!(database, pool => sqlx::query_as::<_, EngineRow>(
        "SELECT code, name, is_active, requires_tenant_provision, requires_user_provision, version, component_sha256
         FROM engines ORDER BY code",
    )
    .fetch_all(pool)
    .await)
    .context("listing engines")
}
