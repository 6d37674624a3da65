//! The metrics of `GET /core/api/metrics`, from the per-tenant counters the workers keep in
//! `projection_stats` (`store/stats.rs`) and the workflow runs.

use serde::Serialize;
use utoipa::ToSchema;

use super::store::stats as store;
use tessera_http::backpressure::BacklogReport;
use tessera_storage::Database;

/// `data` of the metrics endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Metrics {
    /// Events applied by the projector worker (timeline and inbox).
    pub events_processed: i64,
    /// Workflow runs that completed.
    pub workflows_executed: i64,
    /// Workflow runs that failed.
    pub workflows_failed: i64,
    /// Average delay from an event's append to the projector applying it, in milliseconds.
    pub worker_latency_avg_ms: f64,
    /// The platform's backlog of accepted work (whatever the token's tenant) and its bound:
    /// past it, write requests answer 503 with `Retry-After`.
    pub backlog: BacklogReport,
}

/// The metrics of one tenant, or of the whole platform with `None`.
pub async fn metrics(
    database: &Database,
    tenant_id: Option<&str>,
    backlog: BacklogReport,
) -> anyhow::Result<Metrics> {
    let (events_processed, latency_ms_total) = store::projector_totals(database, tenant_id).await?;
    let worker_latency_avg_ms = if events_processed > 0 {
        (latency_ms_total / events_processed as f64 * 100.0).round() / 100.0
    } else {
        0.0
    };
    let (workflows_executed, workflows_failed) =
        crate::workflows::store::run_counts(database, tenant_id).await?;
    Ok(Metrics {
        events_processed,
        workflows_executed: i64::try_from(workflows_executed).unwrap_or(i64::MAX),
        workflows_failed: i64::try_from(workflows_failed).unwrap_or(i64::MAX),
        worker_latency_avg_ms,
        backlog,
    })
}
