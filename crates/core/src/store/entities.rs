//! The SQL of entities (`entities.rs`): reads by id and by page, the batch lock and upsert of
//! the intention writer, and deletion. Every query is bounded by the tenant, which a row names
//! by its number in the log (`event_sequences.tenant_number`,
//! `migrations/*/…_entities_by_tenant_number.sql`): each query finds the number from the
//! tenant's id first.

use anyhow::Context as _;

use tessera_http::paging::OffsetPage;
use tessera_storage::compact::{IdText, StoredId, StoredTime, TimeText};
use tessera_storage::{Database, DatabaseKind, Tx};
use tessera_storage::{on_pool, on_tx};

use super::events::TENANT_NUMBER;

/// An entity row; `fields` is JSON object text. Its id and times are stored compact on
/// SQLite (`tessera_storage::compact`) and read back as text.
#[derive(sqlx::FromRow)]
pub(crate) struct EntityRow {
    #[sqlx(try_from = "IdText")]
    pub id: String,
    pub family_code: String,
    pub fields: String,
    pub status: String,
    #[sqlx(try_from = "TimeText")]
    pub created_at: String,
    #[sqlx(try_from = "TimeText")]
    pub updated_at: String,
}

/// An entity row with its tenant and owner, as [`lock`] reads it.
#[derive(sqlx::FromRow)]
pub(crate) struct KeyedEntityRow {
    #[sqlx(flatten)]
    pub row: EntityRow,
    pub tenant_id: String,
    #[sqlx(try_from = "IdText")]
    pub created_by: String,
}

/// An entity to insert or overwrite; `fields` is JSON object text.
pub(crate) struct EntityWrite<'a> {
    pub id: &'a str,
    pub tenant_id: &'a str,
    pub family_code: &'a str,
    pub status: &'a str,
    pub fields: String,
    pub created_by: &'a str,
    pub created_at: &'a str,
    pub updated_at: &'a str,
}

/// What entities can be sorted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntitySort {
    CreatedAt,
    UpdatedAt,
}

const COLUMNS: &str = "id, family_code, fields, status, created_at, updated_at";

/// Pushes the number of the tenant `tenant_id` (a scalar subquery, with `tenant_id` bound).
fn push_tenant_number<DB: sqlx::Database>(query: &mut sqlx::QueryBuilder<DB>, tenant_id: &str)
where
    for<'t> &'t str: sqlx::Encode<'t, DB> + sqlx::Type<DB>,
{
    query.push("(SELECT tenant_number FROM event_sequences WHERE tenant_id = ");
    query.push_bind(tenant_id);
    query.push(")");
}

/// The column an [`EntitySort`] orders by.
fn sort_column(sort: EntitySort) -> &'static str {
    match sort {
        EntitySort::CreatedAt => "created_at",
        EntitySort::UpdatedAt => "updated_at",
    }
}

/// A tenant's entity.
pub(crate) async fn find(
    database: &Database,
    tenant_id: &str,
    entity_id: &str,
) -> anyhow::Result<Option<EntityRow>> {
    let sql =
        format!("SELECT {COLUMNS} FROM entities WHERE tenant_number = {TENANT_NUMBER} AND id = $2");
    on_pool!(database, pool => sqlx::query_as::<_, EntityRow>(sqlx::AssertSqlSafe(sql.clone()))
        .bind(tenant_id)
        .bind(StoredId(entity_id))
        .fetch_optional(pool)
        .await)
    .context("reading an entity")
}

/// The entities named by `(tenant id, entity id)` pairs (at most a few hundred: one
/// statement), with their tenant and owner. Inside a write transaction the rows are locked
/// until it ends, in id order (PostgreSQL `FOR UPDATE`).
pub(crate) async fn lock(
    tx: &mut Tx,
    keys: &[(String, String)],
) -> anyhow::Result<Vec<KeyedEntityRow>> {
    let lock = match tx.kind() {
        DatabaseKind::Sqlite => "",
        // The entities' rows, not their tenants' sequence rows (the log's append locks those,
        // later in the transaction).
        DatabaseKind::Postgres => " FOR UPDATE OF e",
    };
    on_tx!(tx, conn => {
        // Each pair found by its tenant's number and the entity's primary key.
        let mut select = sqlx::QueryBuilder::new("WITH wanted (tenant_id, id) AS (VALUES ");
        let mut pairs = select.separated(", ");
        for (tenant_id, entity_id) in keys {
            pairs.push("(");
            pairs.push_bind_unseparated(tenant_id);
            pairs.push_unseparated(", ");
            pairs.push_bind_unseparated(StoredId(entity_id));
            pairs.push_unseparated(")");
        }
        select.push(format!(
            ") SELECT e.id, e.family_code, e.fields, e.status, e.created_at, e.updated_at,
                      s.tenant_id, e.created_by
               FROM wanted AS w
               JOIN event_sequences AS s ON s.tenant_id = w.tenant_id
               JOIN entities AS e ON e.id = w.id AND e.tenant_number = s.tenant_number
               ORDER BY e.id{lock}"
        ));
        select.build_query_as().fetch_all(&mut **conn).await
    })
    .context("reading the entities to change")
}

/// Inserts new entities and overwrites the fields, status and `updated_at` of existing ones
/// (of the same tenant), in one multi-row statement. Every tenant must have its number in the
/// log: the intention writer appends an intention's events (which numbers a tenant new to the
/// log) before it writes the entities; a row without one fails the statement (`NOT NULL`).
pub(crate) async fn upsert(tx: &mut Tx, rows: &[EntityWrite<'_>]) -> anyhow::Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    on_tx!(tx, conn => {
        let mut upsert = sqlx::QueryBuilder::new(
            "INSERT INTO entities (id, tenant_number, family_code, status, fields, created_by,
             created_at, updated_at) ",
        );
        upsert.push_values(rows, |mut row, entity| {
            // Ids and times in their compact form on SQLite (`compact`).
            row.push_bind(StoredId(entity.id))
                .push_unseparated(", (SELECT tenant_number FROM event_sequences WHERE tenant_id = ")
                .push_bind_unseparated(entity.tenant_id)
                .push_unseparated(")")
                .push_bind(entity.family_code)
                .push_bind(entity.status)
                .push_bind(&entity.fields)
                .push_bind(StoredId(entity.created_by))
                .push_bind(StoredTime(entity.created_at))
                .push_bind(StoredTime(entity.updated_at));
        });
        upsert.push(
            " ON CONFLICT (id) DO UPDATE SET fields = excluded.fields,
              status = excluded.status, updated_at = excluded.updated_at
              WHERE entities.tenant_number = excluded.tenant_number",
        );
        upsert.build().execute(&mut **conn).await.map(drop)
    })
    .context("writing entities")
}

/// The condition naming a tenant's entities, of one family when `family` is given: `$1` the
/// tenant, `$2` the family. One text per shape, so each is planned on the index it can use (a
/// condition `$2 IS NULL OR family_code = $2` is planned once for both, on the tenant's
/// index alone).
fn of_tenant(family: Option<&str>) -> String {
    match family {
        Some(_) => format!("tenant_number = {TENANT_NUMBER} AND family_code = $2"),
        None => format!("tenant_number = {TENANT_NUMBER}"),
    }
}

/// How many entities the tenant has (of one family).
pub(crate) async fn count(
    database: &Database,
    tenant_id: &str,
    family: Option<&str>,
) -> anyhow::Result<i64> {
    let sql = format!("SELECT COUNT(*) FROM entities WHERE {}", of_tenant(family));
    on_pool!(database, pool => {
        let query = sqlx::query_scalar(sqlx::AssertSqlSafe(sql.clone())).bind(tenant_id);
        match family {
            Some(family) => query.bind(family),
            None => query,
        }
        .fetch_one(pool)
        .await
    })
    .context("counting entities")
}

/// Most families a listing of every family merges, one ordered read each; a tenant with
/// entities of more is listed by one read of all of them, sorted.
const MAX_MERGED_FAMILIES: usize = 64;

/// The families the tenant has entities of, in code order: a skip scan of
/// `entities_by_family_created`, one index search per family.
async fn families_of(database: &Database, tenant_id: &str) -> anyhow::Result<Vec<String>> {
    on_pool!(database, pool => sqlx::query_scalar(
        "WITH RECURSIVE tenant (number) AS (
             SELECT tenant_number FROM event_sequences WHERE tenant_id = $1
         ),
         families (code) AS (
             SELECT MIN(family_code) FROM entities WHERE tenant_number = (SELECT number FROM tenant)
             UNION ALL
             SELECT (SELECT MIN(e.family_code) FROM entities AS e
                     WHERE e.tenant_number = (SELECT number FROM tenant)
                       AND e.family_code > families.code)
             FROM families WHERE families.code IS NOT NULL
         )
         SELECT code FROM families WHERE code IS NOT NULL",
    )
    .bind(tenant_id)
    .fetch_all(pool)
    .await)
    .context("finding the families of a tenant's entities")
}

/// One page of the tenant's entities (of one family), in the order asked for. Entities are
/// indexed per family only (`migrations/*/…_entities_two_listings.sql`): a page of every
/// family merges one ordered read per family. SQLite merges the families' index orders as it
/// goes (a compound `SELECT` with its `ORDER BY`: `MERGE (UNION ALL)`, no sort), reading
/// `offset + limit` entries in all; PostgreSQL (which sorts a `UNION ALL` as a whole) reads
/// each family's first `offset + limit` and sorts those.
pub(crate) async fn page(
    database: &Database,
    tenant_id: &str,
    family: Option<&str>,
    sort: EntitySort,
    descending: bool,
    page: &OffsetPage,
) -> anyhow::Result<Vec<EntityRow>> {
    let order = if descending { "DESC" } else { "ASC" };
    // The column and direction come from enums, never from the request text.
    let ordering = format!("{column} {order}, id {order}", column = sort_column(sort));
    let families = match family {
        Some(family) => vec![family.to_owned()],
        None => families_of(database, tenant_id).await?,
    };
    if families.is_empty() {
        return Ok(Vec::new());
    }
    let merged_after_sorting = families.len() > 1 && database.kind() == DatabaseKind::Postgres;
    on_pool!(database, pool => {
        let mut select = sqlx::QueryBuilder::new("");
        if families.len() > MAX_MERGED_FAMILIES {
            select.push(format!("SELECT {COLUMNS} FROM entities WHERE tenant_number = "));
            push_tenant_number(&mut select, tenant_id);
        } else if merged_after_sorting {
            select.push(format!("SELECT {COLUMNS} FROM ("));
            for (index, family) in families.iter().enumerate() {
                if index > 0 {
                    select.push(" UNION ALL ");
                }
                select.push(format!(
                    "SELECT {COLUMNS} FROM (SELECT {COLUMNS} FROM entities WHERE tenant_number = "
                ));
                push_tenant_number(&mut select, tenant_id);
                select.push(" AND family_code = ");
                select.push_bind(family);
                select.push(format!(" ORDER BY {ordering} LIMIT "));
                select.push_bind(page.offset() + page.limit());
                select.push(format!(") AS family_{index}"));
            }
            select.push(") AS merged");
        } else {
            for (index, family) in families.iter().enumerate() {
                if index > 0 {
                    select.push(" UNION ALL ");
                }
                select.push(format!("SELECT {COLUMNS} FROM entities WHERE tenant_number = "));
                push_tenant_number(&mut select, tenant_id);
                select.push(" AND family_code = ");
                select.push_bind(family);
            }
        }
        select.push(format!(" ORDER BY {ordering} LIMIT "));
        select.push_bind(page.limit());
        select.push(" OFFSET ");
        select.push_bind(page.offset());
        select.build_query_as::<EntityRow>().fetch_all(pool).await
    })
    .context("listing entities")
}

/// Deletes an entity.
pub(crate) async fn delete(tx: &mut Tx, tenant_id: &str, entity_id: &str) -> anyhow::Result<()> {
    let sql = format!("DELETE FROM entities WHERE tenant_number = {TENANT_NUMBER} AND id = $2");
    on_tx!(tx, conn => sqlx::query(sqlx::AssertSqlSafe(sql.clone()))
        .bind(tenant_id)
        .bind(StoredId(entity_id))
        .execute(&mut **conn)
        .await
        .map(drop))
    .context("deleting an entity")
}
