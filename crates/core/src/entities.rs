//! Entities: the write model the intentions change (family, pipeline status, field map), read
//! directly by the entity endpoints. Every function takes the tenant it acts for and every
//! query is bounded by it: an entity of another tenant does not exist here.

use anyhow::Context as _;
use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use tessera_http::paging::OffsetPage;
use tessera_storage::{Database, DatabaseKind, Tx};
use tessera_storage::{on_pool, on_tx};

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

#[derive(sqlx::FromRow)]
struct EntityRow {
    id: String,
    family_code: String,
    fields: String,
    status: String,
    created_at: String,
    updated_at: String,
}

impl EntityRow {
    fn into_entity(self) -> anyhow::Result<Entity> {
        Ok(Entity {
            fields: serde_json::from_str(&self.fields)
                .with_context(|| format!("decoding the fields of entity {}", self.id))?,
            id: self.id,
            family_code: self.family_code,
            status: self.status,
            created_at: self.created_at,
            updated_at: self.updated_at,
        })
    }
}

const COLUMNS: &str = "id, family_code, fields, status, created_at, updated_at";

/// What entities can be sorted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntitySort {
    CreatedAt,
    UpdatedAt,
}

impl EntitySort {
    fn column(self) -> &'static str {
        match self {
            Self::CreatedAt => "created_at",
            Self::UpdatedAt => "updated_at",
        }
    }
}

/// A tenant's entity.
pub async fn find(
    database: &Database,
    tenant_id: &str,
    entity_id: &str,
) -> anyhow::Result<Option<Entity>> {
    let sql = format!("SELECT {COLUMNS} FROM entities WHERE tenant_id = $1 AND id = $2");
    let row =
        on_pool!(database, pool => sqlx::query_as::<_, EntityRow>(sqlx::AssertSqlSafe(sql.clone()))
        .bind(tenant_id)
        .bind(entity_id)
        .fetch_optional(pool)
        .await)
        .context("reading an entity")?;
    row.map(EntityRow::into_entity).transpose()
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

#[derive(sqlx::FromRow)]
struct KeyedEntityRow {
    #[sqlx(flatten)]
    row: EntityRow,
    tenant_id: String,
    created_by: String,
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
    let lock = match tx.kind() {
        DatabaseKind::Sqlite => "",
        DatabaseKind::Postgres => " FOR UPDATE",
    };
    for chunk in keys.chunks(200) {
        let rows: Vec<KeyedEntityRow> = on_tx!(tx, conn => {
            let mut select = sqlx::QueryBuilder::new(format!(
                "SELECT {COLUMNS}, tenant_id, created_by FROM entities WHERE (tenant_id, id) IN (VALUES "
            ));
            let mut pairs = select.separated(", ");
            for (tenant_id, entity_id) in chunk {
                pairs.push("(");
                pairs.push_bind_unseparated(tenant_id);
                pairs.push_unseparated(", ");
                pairs.push_bind_unseparated(entity_id);
                pairs.push_unseparated(")");
            }
            select.push(format!(") ORDER BY id{lock}"));
            select.build_query_as().fetch_all(&mut **conn).await
        })
        .context("reading the entities to change")?;
        for row in rows {
            let key = (row.tenant_id, row.row.id.clone());
            found.insert(
                key,
                OwnedEntity {
                    entity: row.row.into_entity()?,
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
    let rows: Vec<(&TenantEntity<'_>, String)> = entities
        .iter()
        .map(|row| (row, Value::Object(row.entity.fields.clone()).to_string()))
        .collect();
    for chunk in rows.chunks(100) {
        on_tx!(tx, conn => {
            let mut upsert = sqlx::QueryBuilder::new(
                "INSERT INTO entities (id, tenant_id, family_code, status, fields, created_by,
                 created_at, updated_at) ",
            );
            upsert.push_values(chunk, |mut row, (entity, fields)| {
                row.push_bind(&entity.entity.id)
                    .push_bind(entity.tenant_id)
                    .push_bind(&entity.entity.family_code)
                    .push_bind(&entity.entity.status)
                    .push_bind(fields)
                    .push_bind(entity.created_by)
                    .push_bind(&entity.entity.created_at)
                    .push_bind(&entity.entity.updated_at);
            });
            upsert.push(
                " ON CONFLICT (id) DO UPDATE SET fields = excluded.fields,
                  status = excluded.status, updated_at = excluded.updated_at
                  WHERE entities.tenant_id = excluded.tenant_id",
            );
            upsert.build().execute(&mut **conn).await.map(drop)
        })
        .context("writing entities")?;
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
    let total: i64 = on_pool!(database, pool => sqlx::query_scalar(
        "SELECT COUNT(*) FROM entities
         WHERE tenant_id = $1 AND (CAST($2 AS TEXT) IS NULL OR family_code = $2)",
    )
    .bind(tenant_id)
    .bind(family)
    .fetch_one(pool)
    .await)
    .context("counting entities")?;
    let order = if descending { "DESC" } else { "ASC" };
    // The column and direction come from enums, never from the request text.
    let sql = format!(
        "SELECT {COLUMNS} FROM entities
         WHERE tenant_id = $1 AND (CAST($2 AS TEXT) IS NULL OR family_code = $2)
         ORDER BY {column} {order}, id {order} LIMIT $3 OFFSET $4",
        column = sort.column()
    );
    let rows =
        on_pool!(database, pool => sqlx::query_as::<_, EntityRow>(sqlx::AssertSqlSafe(sql.clone()))
        .bind(tenant_id)
        .bind(family)
        .bind(page.limit())
        .bind(page.offset())
        .fetch_all(pool)
        .await)
        .context("listing entities")?;
    let entities = rows
        .into_iter()
        .map(EntityRow::into_entity)
        .collect::<anyhow::Result<_>>()?;
    Ok((entities, u64::try_from(total).unwrap_or(0)))
}

/// Deletes an entity.
pub async fn delete(tx: &mut Tx, tenant_id: &str, entity_id: &str) -> anyhow::Result<()> {
    on_tx!(tx, conn => sqlx::query("DELETE FROM entities WHERE tenant_id = $1 AND id = $2")
        .bind(tenant_id)
        .bind(entity_id)
        .execute(&mut **conn)
        .await
        .map(drop))
    .context("deleting an entity")
}
