//! Probes for process supervisors and orchestrators (CONTRACT §8): `GET /livez` answers 200
//! while the process serves HTTP; `GET /readyz` answers 200 when this host can do its work
//! (database reachable, every migration of this binary applied, the plugins dir loaded, the
//! projection workers running where this host runs them), else 503 naming the failing checks.
//! Both are public, never rate limited and never refused by backpressure.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::core::health::HealthStatus;
use crate::core::workers::WorkerRegistry;
use crate::http::extract::NoQuery;
use crate::runtime::EngineRegistry;
use crate::storage::Database;

/// The projection workers a host runs when `TESSERA_PROJECTION_WORKERS` is on (their names in
/// the worker registry).
const PROJECTION_WORKERS: [&str; 4] = ["projector", "search", "workflow", "bus"];

/// What the probes read: the host's database, its engines and its projection workers.
#[derive(Clone)]
pub struct ProbeState {
    pub database: Database,
    pub engines: Arc<EngineRegistry>,
    pub workers: WorkerRegistry,
    /// Whether this host runs the projection workers (`TESSERA_PROJECTION_WORKERS`).
    pub runs_projection_workers: bool,
}

/// `/livez` and `/readyz`, documented.
pub fn router<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    ProbeState: axum::extract::FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(live))
        .routes(routes!(ready))
}

/// What `/livez` answers.
#[derive(Debug, Serialize, ToSchema)]
pub struct Liveness {
    /// Always `ok`.
    pub status: &'static str,
}

/// What `/readyz` answers, 200 or 503 alike.
#[derive(Debug, Serialize, ToSchema)]
pub struct Readiness {
    /// `ready`, or `not_ready` when any check fails.
    pub status: &'static str,
    /// Every check by name (`database`, `migrations`, `plugins`, `workers`).
    pub checks: BTreeMap<&'static str, ReadinessCheck>,
    /// The names of the failing checks (empty when ready).
    pub failing: Vec<&'static str>,
}

/// One check of `/readyz`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReadinessCheck {
    /// Whether the check passes.
    pub ok: bool,
    /// What was found: the failure, or what passed (e.g. the engines loaded).
    pub detail: String,
}

impl ReadinessCheck {
    fn passing(detail: impl Into<String>) -> Self {
        Self {
            ok: true,
            detail: detail.into(),
        }
    }

    fn failing(detail: impl Into<String>) -> Self {
        Self {
            ok: false,
            detail: detail.into(),
        }
    }
}

/// Liveness: the process serves HTTP. A supervisor restarts the process when this fails.
#[utoipa::path(
    get,
    path = "/livez",
    operation_id = "probe_live",
    tag = "health",
    responses((status = 200, description = "The process serves", body = Liveness))
)]
pub async fn live(_: NoQuery) -> Json<Liveness> {
    Json(Liveness { status: "ok" })
}

/// Readiness: whether this host can do its work; a load balancer sends it traffic only then.
#[utoipa::path(
    get,
    path = "/readyz",
    operation_id = "probe_ready",
    tag = "health",
    responses(
        (status = 200, description = "Ready: every check passes", body = Readiness),
        (status = 503, description = "Not ready: `failing` names the checks that fail", body = Readiness),
    )
)]
pub async fn ready(State(state): State<ProbeState>, _: NoQuery) -> (StatusCode, Json<Readiness>) {
    let mut checks = BTreeMap::new();
    let database = state.database.ping().await;
    let database_reachable = database.is_ok();
    checks.insert(
        "database",
        match database {
            Ok(()) => ReadinessCheck::passing("reachable"),
            Err(error) => {
                tracing::warn!(
                    error = format!("{error:#}"),
                    "readiness: the database is unreachable"
                );
                ReadinessCheck::failing("unreachable")
            }
        },
    );
    checks.insert(
        "migrations",
        if !database_reachable {
            ReadinessCheck::failing("not checked: the database is unreachable")
        } else {
            match state.database.unapplied_migrations().await {
                Ok(unapplied) if unapplied.is_empty() => ReadinessCheck::passing("all applied"),
                Ok(unapplied) => ReadinessCheck::failing(format!(
                    "not applied: {}",
                    unapplied
                        .iter()
                        .map(i64::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
                Err(error) => {
                    tracing::warn!(
                        error = format!("{error:#}"),
                        "readiness: reading the migrations failed"
                    );
                    ReadinessCheck::failing("could not be read")
                }
            }
        },
    );
    // The plugins dir is loaded before the host serves; an engine file that cannot be loaded
    // is logged and skipped, and does not make the host unready (one bad file would otherwise
    // take every host of a deployment out of service).
    let codes = state.engines.codes();
    checks.insert(
        "plugins",
        ReadinessCheck::passing(format!(
            "{} engines loaded: {}",
            codes.len(),
            codes.join(", ")
        )),
    );
    checks.insert("workers", workers_check(&state));
    let failing: Vec<&'static str> = checks
        .iter()
        .filter(|(_, check)| !check.ok)
        .map(|(name, _)| *name)
        .collect();
    let (code, status) = if failing.is_empty() {
        (StatusCode::OK, "ready")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "not_ready")
    };
    (
        code,
        Json(Readiness {
            status,
            checks,
            failing,
        }),
    )
}

/// The projection workers, where this host runs them: each has reported recently (a lagging
/// worker still passes; its lag is the extended health's and the metrics' concern).
fn workers_check(state: &ProbeState) -> ReadinessCheck {
    if !state.runs_projection_workers {
        return ReadinessCheck::passing("not run by this host (TESSERA_PROJECTION_WORKERS=false)");
    }
    let silent: Vec<&str> = PROJECTION_WORKERS
        .into_iter()
        .filter(|worker| state.workers.status(worker) == HealthStatus::Down)
        .collect();
    if silent.is_empty() {
        ReadinessCheck::passing(format!("running: {}", PROJECTION_WORKERS.join(", ")))
    } else {
        ReadinessCheck::failing(format!("not running: {}", silent.join(", ")))
    }
}
