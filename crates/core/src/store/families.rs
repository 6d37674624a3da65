//! The SQL of entity families (`families.rs`): the inserts of new and default families and
//! reads by code and by page. Every query is bounded by the tenant.

use anyhow::Context as _;

use tessera_http::paging::OffsetPage;
use tessera_storage::{Database, Tx};
use tessera_storage::{on_pool, on_tx};

/// A family row: id, code, label, statuses (a JSON array) and creation time.
pub(crate) type FamilyRow = (String, String, String, String, String);

/// A family row of a page: id, code and label.
pub(crate) type FamilyItemRow = (String, String, String);

/// What families can be sorted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FamilySort {
    Code,
    Label,
    CreatedAt,
}

/// A family to insert; `statuses` is a JSON array.
pub(crate) struct FamilyInsert<'a> {
    pub id: &'a str,
    pub tenant_id: &'a str,
    pub code: &'a str,
    pub label: &'a str,
    pub statuses: &'a str,
    pub created_at: &'a str,
}

const FAMILY_BY_CODE: &str =
    "SELECT id, code, label, statuses, created_at FROM families WHERE tenant_id = $1 AND code = $2";

/// The column a [`FamilySort`] orders by.
fn sort_column(sort: FamilySort) -> &'static str {
    match sort {
        FamilySort::Code => "code",
        FamilySort::Label => "label",
        FamilySort::CreatedAt => "created_at",
    }
}

/// Inserts one of a new tenant's default families inside its creation transaction.
pub(crate) async fn insert_default(tx: &mut Tx, family: &FamilyInsert<'_>) -> anyhow::Result<()> {
    on_tx!(tx, conn => sqlx::query(
        "INSERT INTO families (id, tenant_id, code, label, statuses, created_at)
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(family.id)
    .bind(family.tenant_id)
    .bind(family.code)
    .bind(family.label)
    .bind(family.statuses)
    .bind(family.created_at)
    .execute(&mut **conn)
    .await
    .map(drop))
    .with_context(|| format!("creating the default family {}", family.code))
}

/// Inserts a family unless the tenant has one with its code; `false` when it has.
pub(crate) async fn insert(database: &Database, family: &FamilyInsert<'_>) -> anyhow::Result<bool> {
    let inserted = on_pool!(database, pool => sqlx::query(
        "INSERT INTO families (id, tenant_id, code, label, statuses, created_at)
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (tenant_id, code) DO NOTHING",
    )
    .bind(family.id)
    .bind(family.tenant_id)
    .bind(family.code)
    .bind(family.label)
    .bind(family.statuses)
    .bind(family.created_at)
    .execute(pool)
    .await
    .map(|result| result.rows_affected()))
    .context("creating a family")?;
    Ok(inserted == 1)
}

/// How many families the tenant has.
pub(crate) async fn count(database: &Database, tenant_id: &str) -> anyhow::Result<i64> {
    on_pool!(database, pool => sqlx::query_scalar(
        "SELECT COUNT(*) FROM families WHERE tenant_id = $1",
    )
    .bind(tenant_id)
    .fetch_one(pool)
    .await)
    .context("counting families")
}

/// One page of the tenant's families, in the order asked for.
pub(crate) async fn page(
    database: &Database,
    tenant_id: &str,
    sort: FamilySort,
    descending: bool,
    page: &OffsetPage,
) -> anyhow::Result<Vec<FamilyItemRow>> {
    let order = if descending { "DESC" } else { "ASC" };
    // The column and direction come from enums, never from the request text.
    let sql = format!(
        "SELECT id, code, label FROM families WHERE tenant_id = $1
         ORDER BY {} {order}, id {order} LIMIT $2 OFFSET $3",
        sort_column(sort)
    );
    on_pool!(database, pool => sqlx::query_as::<_, FamilyItemRow>(sqlx::AssertSqlSafe(sql.clone()))
        .bind(tenant_id)
        .bind(page.limit())
        .bind(page.offset())
        .fetch_all(pool)
        .await)
    .context("listing families")
}

/// A tenant's family by code.
pub(crate) async fn find(
    database: &Database,
    tenant_id: &str,
    code: &str,
) -> anyhow::Result<Option<FamilyRow>> {
    on_pool!(database, pool => sqlx::query_as(FAMILY_BY_CODE)
        .bind(tenant_id)
        .bind(code)
        .fetch_optional(pool)
        .await)
    .context("reading a family")
}

/// A tenant's family by code, inside a transaction.
pub(crate) async fn find_in(
    tx: &mut Tx,
    tenant_id: &str,
    code: &str,
) -> anyhow::Result<Option<FamilyRow>> {
    on_tx!(tx, conn => sqlx::query_as(FAMILY_BY_CODE)
        .bind(tenant_id)
        .bind(code)
        .fetch_optional(&mut **conn)
        .await)
    .context("reading a family")
}
