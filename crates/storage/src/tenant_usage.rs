//! SQL of a tenant's usage: the day counters the usage meter flushes (`tenant_usage`, added to
//! in one transaction per batch), their pruning, the reads of the owners' and the operator's
//! usage endpoints, and what a tenant's data takes in engine storage (entries, blobs).

use anyhow::Context as _;

use crate::{Database, on_pool, on_tx};

/// One counter to add to: a tenant's `metric` on `day` by `dimension`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageIncrement<'a> {
    pub tenant_id: &'a str,
    /// UTC, `YYYY-MM-DD`.
    pub day: &'a str,
    pub metric: &'a str,
    pub dimension: &'a str,
    pub amount: i64,
}

/// Adds every increment to its counter, in one transaction.
pub async fn add(database: &Database, increments: &[UsageIncrement<'_>]) -> anyhow::Result<()> {
    let mut tx = database.begin().await?;
    for increment in increments {
        on_tx!(tx, conn => sqlx::query(
            "INSERT INTO tenant_usage (tenant_id, day, metric, dimension, amount)
             VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (tenant_id, day, metric, dimension)
             DO UPDATE SET amount = tenant_usage.amount + excluded.amount",
        )
        .bind(increment.tenant_id)
        .bind(increment.day)
        .bind(increment.metric)
        .bind(increment.dimension)
        .bind(increment.amount)
        .execute(&mut **conn)
        .await
        .map(drop))
        .context("adding to a tenant's usage")?;
    }
    tx.commit().await.context("committing usage counters")
}

/// Deletes the counters of days before `day`; how many.
pub async fn prune_before(database: &Database, day: &str) -> anyhow::Result<u64> {
    on_pool!(database, pool => sqlx::query("DELETE FROM tenant_usage WHERE day < $1")
        .bind(day)
        .execute(pool)
        .await
        .map(|done| done.rows_affected()))
    .context("pruning old usage counters")
}

/// One stored counter.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct UsageRow {
    pub day: String,
    pub metric: String,
    pub dimension: String,
    pub amount: i64,
}

/// The tenant's counters from `since` (a day) on, by day, metric and dimension.
pub async fn of_tenant(
    database: &Database,
    tenant_id: &str,
    since: &str,
) -> anyhow::Result<Vec<UsageRow>> {
    on_pool!(database, pool => sqlx::query_as(
        "SELECT day, metric, dimension, amount FROM tenant_usage
         WHERE tenant_id = $1 AND day >= $2
         ORDER BY day, metric, dimension",
    )
    .bind(tenant_id)
    .bind(since)
    .fetch_all(pool)
    .await)
    .context("reading a tenant's usage")
}

/// Every tenant's total of each metric from `since` on.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct TenantTotal {
    pub tenant_id: String,
    pub metric: String,
    pub amount: i64,
}

/// The totals by tenant and metric from `since` (a day) on.
pub async fn totals_since(database: &Database, since: &str) -> anyhow::Result<Vec<TenantTotal>> {
    on_pool!(database, pool => sqlx::query_as(
        "SELECT tenant_id, metric, CAST(SUM(amount) AS BIGINT) AS amount FROM tenant_usage
         WHERE day >= $1
         GROUP BY tenant_id, metric
         ORDER BY tenant_id, metric",
    )
    .bind(since)
    .fetch_all(pool)
    .await)
    .context("reading every tenant's usage")
}

/// What one engine keeps for a tenant.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct EngineStorage {
    pub engine_code: String,
    pub entries: i64,
    /// Bytes of the entries' values.
    pub entry_bytes: i64,
    pub blob_bytes: i64,
}

/// What each engine keeps for the tenant: its key-value entries (counted now: a scan of the
/// tenant's entries) and its blobs' bytes (kept as they change).
pub async fn engine_storage(
    database: &Database,
    tenant_id: &str,
) -> anyhow::Result<Vec<EngineStorage>> {
    on_pool!(database, pool => sqlx::query_as(
        "SELECT codes.engine_code,
                COALESCE(entries.entries, 0) AS entries,
                COALESCE(entries.entry_bytes, 0) AS entry_bytes,
                COALESCE(blobs.bytes, 0) AS blob_bytes
         FROM (SELECT engine_code FROM engine_scopes WHERE tenant_id = $1
               UNION SELECT engine_code FROM engine_blob_usage WHERE tenant_id = $1) AS codes
         LEFT JOIN (SELECT s.engine_code, CAST(COUNT(*) AS BIGINT) AS entries,
                           CAST(COALESCE(SUM(LENGTH(e.value)), 0) AS BIGINT) AS entry_bytes
                    FROM engine_scopes AS s JOIN engine_entries AS e ON e.scope = s.scope
                    WHERE s.tenant_id = $1
                    GROUP BY s.engine_code) AS entries
                ON entries.engine_code = codes.engine_code
         LEFT JOIN engine_blob_usage AS blobs
                ON blobs.engine_code = codes.engine_code AND blobs.tenant_id = $1
         ORDER BY codes.engine_code",
    )
    .bind(tenant_id)
    .fetch_all(pool)
    .await)
    .context("reading a tenant's engine storage")
}
