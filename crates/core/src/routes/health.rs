//! Core health endpoints: the plain liveness endpoint and the extended report of the database,
//! the cache and the background workers.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;

use crate::health::{ExtendedHealth, HealthChecks, HealthStatus, WorkerChecks};
use crate::state::CoreState;
use tessera_auth::ServiceHealth;
use tessera_http::extract::NoQuery;

/// Liveness of the core service.
#[utoipa::path(
    get,
    path = "/core/api/health",
    operation_id = "core_health",
    tag = "health",
    responses((status = 200, description = "The service is up", body = ServiceHealth))
)]
pub async fn health(_: NoQuery) -> Json<ServiceHealth> {
    Json(ServiceHealth::ok())
}

/// Real checks: a query on the database, a write and read of the cache, and each worker's
/// heartbeat. The database is critical (`down` when unreachable); the cache is not
/// (`degraded`). Answers 503 (same body) when the overall status is `down`, so that a probe
/// reading only the status code sees it.
#[utoipa::path(
    get,
    path = "/core/api/health/extended",
    operation_id = "core_health_extended",
    tag = "health",
    responses(
        (status = 200, description = "Status of every subsystem: `ok` or `degraded` overall", body = ExtendedHealth),
        (status = 503, description = "Status of every subsystem: `down` overall", body = ExtendedHealth),
    )
)]
pub async fn extended_health(
    State(state): State<CoreState>,
    _: NoQuery,
) -> (StatusCode, Json<ExtendedHealth>) {
    let database = match state.database.ping().await {
        Ok(()) => HealthStatus::Ok,
        Err(error) => {
            tracing::warn!(error = format!("{error:#}"), "database health check failed");
            HealthStatus::Down
        }
    };
    let cache = match state.cache.check().await {
        Ok(()) => HealthStatus::Ok,
        Err(error) => {
            tracing::warn!(error = format!("{error:#}"), "cache health check failed");
            HealthStatus::Degraded
        }
    };
    let workers = WorkerChecks {
        projector: state.workers.status("projector"),
        search: state.workers.status("search"),
        workflow: state.workers.status("workflow"),
    };
    let status = [
        database,
        cache,
        workers.projector,
        workers.search,
        workers.workflow,
    ]
    .into_iter()
    .max()
    .unwrap_or(HealthStatus::Ok);
    let code = if status == HealthStatus::Down {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::OK
    };
    (
        code,
        Json(ExtendedHealth {
            status,
            checks: HealthChecks {
                database,
                cache,
                workers,
            },
        }),
    )
}
