//! Entities: the write model the intentions change (family, pipeline status, field map), read
//! directly by the entity endpoints. Every function takes the tenant it acts for and every
//! query (`store/entities.rs`) is bounded by it: an entity of another tenant does not exist
//! here.

use anyhow::Context as _;
use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

/// What entities can be sorted by (the store orders by it).
pub use crate::store::entities::EntitySort;
use crate::store::entities::{self as store, EntityRow, EntityWrite};
use tessera_http::paging::OffsetPage;
use tessera_storage::{Database, Tx};

/// An entity as the API shows it (CONTRACT §6).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Entity {
    pub id: String,
    pub family_code: String,
    /// Field code → value.
    #[schema(value_type = Object)]
    pub fields: Map<String, Value>,
    /// A status of the family's pipeline.
    pub status: String,
    pub created_at: String,
    pub updated_at: String,
}

/// The entity of a stored row.
fn entity_of(row: EntityRow) -> anyhow::Result<Entity> {
    Ok(Entity {
        fields: serde_json::from_str(&row.fields)
            .with_context(|| format!("decoding the fields of entity {}", row.id))?,
        id: row.id,
        family_code: row.family_code,
        status: row.status,
        created_at: row.created_at,
        updated_at: row.updated_at,
    })
}

/// A tenant's entity.
pub async fn find(
    database: &Database,
    tenant_id: &str,
    entity_id: &str,
) -> anyhow::Result<Option<Entity>> {
    let row = store::find(database, tenant_id, entity_id).await?;
    row.map(entity_of).transpose()
}

/// An entity about to be changed, and who created it (its owner).
#[derive(Debug, Clone)]
pub struct OwnedEntity {
    pub entity: Entity,
    pub created_by: String,
}

/// An entity and its tenant, for writes that span tenants (the intention writer's batches).
#[derive(Debug, Clone)]
pub struct TenantEntity<'a> {
    pub tenant_id: &'a str,
    pub entity: &'a Entity,
    pub created_by: &'a str,
}

/// The entities named by `(tenant id, entity id)` pairs, keyed the same way; pairs with no
/// such entity in that tenant are absent. Inside a write transaction the rows are locked
/// until it ends, in id order (PostgreSQL `FOR UPDATE`), so two writers never lock the same
/// rows in opposite orders.
pub async fn lock_many(
    tx: &mut Tx,
    keys: &[(String, String)],
) -> anyhow::Result<std::collections::HashMap<(String, String), OwnedEntity>> {
    let mut found = std::collections::HashMap::new();
    for chunk in keys.chunks(200) {
        for row in store::lock(tx, chunk).await? {
            let key = (row.tenant_id, row.row.id.clone());
            found.insert(
                key,
                OwnedEntity {
                    entity: entity_of(row.row)?,
                    created_by: row.created_by,
                },
            );
        }
    }
    Ok(found)
}

/// Inserts new entities and overwrites the fields, status and `updated_at` of existing ones,
/// in multi-row statements.
pub async fn upsert_many(tx: &mut Tx, entities: &[TenantEntity<'_>]) -> anyhow::Result<()> {
    let rows: Vec<EntityWrite<'_>> = entities
        .iter()
        .map(|row| EntityWrite {
            id: &row.entity.id,
            tenant_id: row.tenant_id,
            family_code: &row.entity.family_code,
            status: &row.entity.status,
            fields: Value::Object(row.entity.fields.clone()).to_string(),
            created_by: row.created_by,
            created_at: &row.entity.created_at,
            updated_at: &row.entity.updated_at,
        })
        .collect();
    for chunk in rows.chunks(100) {
        store::upsert(tx, chunk).await?;
    }
    Ok(())
}

/// One page of a tenant's entities (optionally of one family), and the total.
pub async fn list(
    database: &Database,
    tenant_id: &str,
    family: Option<&str>,
    sort: EntitySort,
    descending: bool,
    page: &OffsetPage,
) -> anyhow::Result<(Vec<Entity>, u64)> {
    let total = store::count(database, tenant_id, family).await?;
    let rows = store::page(database, tenant_id, family, sort, descending, page).await?;
    let entities = rows
        .into_iter()
        .map(entity_of)
        .collect::<anyhow::Result<_>>()?;
    Ok((entities, u64::try_from(total).unwrap_or(0)))
}

/// Deletes an entity.
pub async fn delete(tx: &mut Tx, tenant_id: &str, entity_id: &str) -> anyhow::Result<()> {
    store::delete(tx, tenant_id, entity_id).await
}
