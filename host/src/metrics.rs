//! Prometheus metrics (CONTRACT §8): `GET /metrics` in the text exposition format. The crates
//! record through the `metrics` facade (requests in `http/request_metrics.rs`, engine calls and
//! outbound requests in `runtime/call_metrics.rs`, projection lag in `core/workers.rs`, auth
//! events in `auth/audit.rs`); this module installs the one process-wide Prometheus recorder,
//! describes every series, samples the gauges that are read rather than counted (instance pool,
//! database pool; the backlog is set by the host's backlog sampler), and serves the scrape.
//!
//! Access is denied by default: on the main listener `/metrics` answers only a bearer of
//! `TESSERA_METRICS_TOKEN` (compared in constant time); `TESSERA_METRICS_LISTEN` serves it
//! without a token on an address of its own (a management network), and nothing else there.
//! With neither set, metrics are off: the recorder is not installed and nothing is recorded.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::config::Secret;
use crate::http::ApiError;
use crate::http::extract::NoQuery;
use crate::runtime::EngineRegistry;
use crate::storage::{Database, Pool};

/// The scrape's content type: the text exposition format, version 0.0.4.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// How often histograms are drained into their buckets between scrapes.
const UPKEEP_INTERVAL: Duration = Duration::from_secs(5);

/// Bucket bounds (seconds) of every duration histogram: 1 ms to 30 s.
const DURATION_BUCKETS: [f64; 14] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// Who may scrape on a listener.
#[derive(Clone)]
pub enum MetricsAccess {
    /// Anyone (the dedicated `TESSERA_METRICS_LISTEN` address).
    Open,
    /// A bearer of this token (`TESSERA_METRICS_TOKEN`), on the main listener.
    Token(Secret),
    /// Nobody: neither setting names the main listener.
    Closed,
}

/// What `/metrics` reads.
#[derive(Clone)]
pub struct MetricsState {
    /// The recorder's handle; `None` when metrics are off on this host (neither
    /// `TESSERA_METRICS_TOKEN` nor `TESSERA_METRICS_LISTEN`), where nothing is recorded.
    pub handle: Option<PrometheusHandle>,
    pub access: MetricsAccess,
    pub database: Database,
    pub engines: Arc<EngineRegistry>,
}

/// The process-wide recorder's handle: installed on first use, with every series described
/// and a task draining histograms every [`UPKEEP_INTERVAL`] (call within a Tokio runtime).
/// Until it is installed the crates' recording calls are no-ops, so a host with metrics off
/// pays nothing for them (the request and engine-call series are not even looked up).
pub fn recorder() -> PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let builder = PrometheusBuilder::new()
                .set_buckets(&DURATION_BUCKETS)
                .expect("the duration buckets are not empty");
            let handle = match builder.install_recorder() {
                Ok(handle) => handle,
                Err(error) => {
                    // Another recorder was installed first (an embedder's): the scrape then
                    // shows only what this handle records, nothing.
                    tracing::warn!(%error, "the Prometheus recorder could not be installed");
                    PrometheusBuilder::new().build_recorder().handle()
                }
            };
            describe_series();
            // The hot paths' handles, bound to the recorder just installed.
            crate::http::request_metrics::start_recording();
            crate::runtime::call_metrics::start_recording();
            let upkeep = handle.clone();
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(UPKEEP_INTERVAL).await;
                    upkeep.run_upkeep();
                }
            });
            handle
        })
        .clone()
}

/// Every series with its unit and help text (the `# HELP` lines).
fn describe_series() {
    describe_counter!(
        "tessera_http_requests_total",
        "HTTP requests answered, by method, route template and status"
    );
    describe_histogram!(
        "tessera_http_request_duration_seconds",
        Unit::Seconds,
        "Time to answer an HTTP request, by method, route template and status"
    );
    describe_counter!(
        "tessera_engine_calls_total",
        "Engine calls by engine and outcome (ok, error, trap, timeout, rejected)"
    );
    describe_histogram!(
        "tessera_engine_call_duration_seconds",
        Unit::Seconds,
        "Time an admitted engine call took, commit included, by engine and outcome"
    );
    describe_counter!(
        "tessera_outbound_requests_total",
        "Engines' outbound HTTP requests (webhook deliveries among them) by engine and outcome (status class or failure)"
    );
    describe_counter!(
        "tessera_auth_events_total",
        "Authentication events recorded in the audit log (login.succeeded, login.failed, mfa.failed, …)"
    );
    describe_gauge!(
        "tessera_projection_lag_seconds",
        Unit::Seconds,
        "How far each projection worker is behind the event log at its last report"
    );
    describe_gauge!(
        "tessera_backlog_items",
        "Accepted work not yet done, by kind (engine_work: deliveries and jobs due; events: not yet applied by every projection)"
    );
    describe_gauge!(
        "tessera_backlog_oldest_age_seconds",
        Unit::Seconds,
        "How long the oldest waiting item of each kind has waited"
    );
    describe_gauge!(
        "tessera_backlog_refusing_writes",
        "1 while write requests are refused because the backlog passed its bound"
    );
    describe_gauge!(
        "tessera_engine_instances",
        "Engine instance pool: calls running (in_use), its size (capacity), instances kept warm (warm)"
    );
    describe_gauge!(
        "tessera_engine_tenant_share",
        "Engine calls one tenant may run at once on this host now (in a cluster with an explicit share: its part of the cluster's total)"
    );
    describe_gauge!(
        "tessera_engines_loaded",
        "Engine components loaded on this host"
    );
    describe_gauge!(
        "tessera_database_connections",
        "Database pool connections by state (idle, in_use)"
    );
}

/// `/metrics`, documented.
pub fn router<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    MetricsState: axum::extract::FromRef<S>,
{
    OpenApiRouter::new().routes(routes!(scrape))
}

/// Prometheus metrics in the text exposition format.
#[utoipa::path(
    get,
    path = "/metrics",
    operation_id = "metrics_prometheus",
    tag = "health",
    responses(
        (status = 200, description = "Every series in the Prometheus text exposition format (version 0.0.4)", content_type = "text/plain", body = String),
        (status = 401, description = "No bearer token, or not `TESSERA_METRICS_TOKEN`"),
        (status = 404, description = "Metrics are not served on this listener (neither `TESSERA_METRICS_TOKEN` nor `TESSERA_METRICS_LISTEN` is set)"),
    )
)]
pub async fn scrape(
    State(state): State<MetricsState>,
    headers: HeaderMap,
    _: NoQuery,
) -> Result<Response, ApiError> {
    let closed = || {
        ApiError::NotFound(
            "Metrics are served on TESSERA_METRICS_LISTEN, or here to a bearer of TESSERA_METRICS_TOKEN."
                .into(),
        )
    };
    match &state.access {
        MetricsAccess::Open => {}
        MetricsAccess::Token(token) => {
            if !crate::http::operator::bearer_matches(&headers, token) {
                return Err(ApiError::Unauthenticated);
            }
        }
        MetricsAccess::Closed => return Err(closed()),
    }
    let Some(handle) = &state.handle else {
        return Err(closed());
    };
    sample_gauges(&state);
    let mut response = handle.render().into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    Ok(response)
}

/// The gauges read at scrape time: the engine instance pool and the database pool.
fn sample_gauges(state: &MetricsState) {
    let runtime = state.engines.runtime();
    let admission = runtime.admission();
    let (running, _) = admission.running(None);
    let instances = [
        ("in_use", running),
        ("capacity", admission.limits().capacity),
        ("warm", runtime.warm_instance_count()),
    ];
    for (state_label, count) in instances {
        metrics::gauge!("tessera_engine_instances", "state" => state_label).set(count as f64);
    }
    metrics::gauge!("tessera_engine_tenant_share").set(admission.limits().tenant_share as f64);
    metrics::gauge!("tessera_engines_loaded").set(state.engines.codes().len() as f64);
    let (size, idle) = match state.database.pool() {
        Pool::Sqlite(pool) => (pool.size(), pool.num_idle()),
        Pool::Postgres(pool) => (pool.size(), pool.num_idle()),
    };
    let idle = u32::try_from(idle).unwrap_or(u32::MAX);
    metrics::gauge!("tessera_database_connections", "state" => "idle").set(f64::from(idle));
    metrics::gauge!("tessera_database_connections", "state" => "in_use")
        .set(f64::from(size.saturating_sub(idle)));
}

/// Sets the backlog gauges from one sample of the host's backlog sampler.
pub fn record_backlog(
    engine_work: crate::http::backpressure::BacklogSample,
    events: crate::http::backpressure::BacklogSample,
    refusing_writes: bool,
) {
    for (kind, sample) in [("engine_work", engine_work), ("events", events)] {
        metrics::gauge!("tessera_backlog_items", "kind" => kind).set(sample.items as f64);
        metrics::gauge!("tessera_backlog_oldest_age_seconds", "kind" => kind)
            .set(sample.oldest_age.as_secs_f64());
    }
    metrics::gauge!("tessera_backlog_refusing_writes").set(if refusing_writes { 1.0 } else { 0.0 });
}
