//! The SQL of the per-tenant projection counters (`projection_stats`): the worker adds each
//! batch's events and their delay in its transaction; the metrics read the projector's sums.

use anyhow::Context as _;

use tessera_storage::{Database, Tx};
use tessera_storage::{on_pool, on_tx};

/// Adds `events` events and their total delay to the projection's counters of the tenant.
pub(crate) async fn add(
    tx: &mut Tx,
    projection: &str,
    tenant_id: &str,
    events: i64,
    latency_ms: f64,
) -> anyhow::Result<()> {
    on_tx!(tx, conn => sqlx::query(
        "INSERT INTO projection_stats (projection, tenant_id, events_processed, latency_ms_total)
         VALUES ($1, $2, $3, $4)
         ON CONFLICT (projection, tenant_id) DO UPDATE SET
           events_processed = projection_stats.events_processed + excluded.events_processed,
           latency_ms_total = projection_stats.latency_ms_total + excluded.latency_ms_total",
    )
    .bind(projection)
    .bind(tenant_id)
    .bind(events)
    .bind(latency_ms)
    .execute(&mut **conn)
    .await
    .map(drop))
    .context("recording projection statistics")
}

/// The events the projector applied and their summed delay in milliseconds, of one tenant or
/// of every tenant with `None`.
pub(crate) async fn projector_totals(
    database: &Database,
    tenant_id: Option<&str>,
) -> anyhow::Result<(i64, f64)> {
    on_pool!(database, pool => sqlx::query_as(
        "SELECT CAST(COALESCE(SUM(events_processed), 0) AS BIGINT),
                CAST(COALESCE(SUM(latency_ms_total), 0) AS DOUBLE PRECISION)
         FROM projection_stats
         WHERE projection = 'projector' AND (CAST($1 AS TEXT) IS NULL OR tenant_id = $1)",
    )
    .bind(tenant_id)
    .fetch_one(pool)
    .await)
    .context("reading projection statistics")
}
