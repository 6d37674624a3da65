//! The assembly point of the host: every service's router merged under the shared HTTP
//! conventions, the OpenAPI document of all of them and of the loaded engines at
//! `/api/openapi.json`, and the traits a
//! service owns for what it needs from a sibling, implemented here (the core's [`EventSink`]
//! by the engines' event bus, its [`EngineTopics`] by the engine runtime).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use anyhow::Context as _;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::get;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::limit::RequestBodyLimitLayer;
use utoipa_axum::router::OpenApiRouter;

use crate::core::events::StoredEvent;
use crate::core::projections::bus_relay::EventSink;
use crate::core::projections::worker::LogPosition;
use crate::core::realtime::engine_topics::{
    EngineEvent, EngineEventKind, EngineTopicAccess, EngineTopics, PortFuture,
};
use crate::http::{
    backpressure, client_address, connections, conventions, rate_limit, request_metrics,
};
use crate::runtime::bus::{BusEvent, Relayed};
use crate::state::AppState;
use crate::storage::Tx;

/// Every route of the host, with the conventions applied, plus the OpenAPI document of all of
/// them at `/api/openapi.json`. `extra` lets embedders (and tests) add routes that get the same
/// conventions.
pub fn router(state: AppState, extra: Router<AppState>) -> Router {
    // Installed before any request is counted, when metrics are on.
    if state.config.metrics.enabled() {
        crate::metrics::recorder();
    }
    let (routes, openapi) = OpenApiRouter::with_openapi(crate::openapi::document())
        .merge(crate::auth::router())
        .merge(crate::core::router())
        .merge(crate::runtime::routes::core_router())
        .merge(crate::orchestrator::routes::router())
        .merge(crate::cluster::routes::router())
        .merge(crate::tenancy::routes::router())
        .merge(crate::tenancy::operator_routes::router())
        .merge(crate::tenancy::tenant_routes::router())
        .merge(crate::console::router())
        .merge(crate::probes::router())
        .merge(crate::metrics::router())
        .split_for_parts();
    // Publishing takes a whole component as its body: its routes get their own limit.
    let component_limit = state.config.runtime.max_component_bytes;
    let (published_routes, published_openapi) = OpenApiRouter::new()
        .merge(crate::runtime::published::routes::router())
        .split_for_parts();
    let mut openapi = openapi;
    openapi.merge(published_openapi);
    crate::openapi::add_standard_responses(&mut openapi);
    let openapi = Arc::new(crate::openapi::ServedDocument::new(
        &openapi,
        state.engines.clone(),
    ));
    let body_limit = state.config.http.max_body_bytes;
    let body_timeout = state.config.http.body_timeout;
    let rate_limits = match state.config.rate_limit_scope {
        crate::config::RateLimitScope::Host => {
            rate_limit::RateLimits::new(&state.config.rate_limits)
        }
        crate::config::RateLimitScope::Cluster => rate_limit::RateLimits::shared(
            &state.config.rate_limits,
            Arc::new(DatabaseBuckets(state.database.clone())),
        ),
    };
    let backpressure = state.core.backpressure.clone();
    let metering = crate::http::usage::Metering {
        meter: state.usage.clone(),
        tenants: Arc::new(RecentTokens(state.auth.access_tokens.clone())),
    };
    let trusted_proxies = state.config.http.trusted_proxies.clone();

    // Engine routes take larger bodies (file uploads) than the host's own API.
    let engine_body_limit = state.config.runtime.max_request_bytes;
    let engine_routes = crate::runtime::routes::engine_router()
        .layer(DefaultBodyLimit::max(engine_body_limit))
        .layer(RequestBodyLimitLayer::new(engine_body_limit));

    routes
        .merge(crate::runtime::lifecycle_routes::internal_router())
        .merge(extra)
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(RequestBodyLimitLayer::new(body_limit))
        .merge(engine_routes)
        .merge(
            published_routes
                .layer(DefaultBodyLimit::max(component_limit))
                .layer(RequestBodyLimitLayer::new(component_limit))
                .layer(axum::middleware::map_response(close_after_refusal)),
        )
        .route(
            "/api/openapi.json",
            get(move || {
                let openapi = openapi.clone();
                async move { openapi.response() }
            }),
        )
        .fallback(conventions::fallback)
        .with_state(state)
        .layer(CatchPanicLayer::custom(conventions::panic_response))
        .layer(axum::middleware::from_fn_with_state(
            backpressure,
            backpressure::enforce,
        ))
        .layer(axum::middleware::from_fn_with_state(
            rate_limits,
            rate_limit::enforce,
        ))
        .layer(axum::middleware::from_fn_with_state(
            metering,
            crate::http::usage::meter,
        ))
        .layer(axum::middleware::from_fn_with_state(
            body_timeout,
            connections::body_deadline,
        ))
        .layer(axum::middleware::from_fn(request_metrics::record))
        .layer(axum::middleware::from_fn(conventions::request_conventions))
        .layer(axum::middleware::from_fn_with_state(
            trusted_proxies,
            client_address::resolve,
        ))
}

/// A refused publication (401, 413, 422…) may leave most of its component unread: the
/// connection is closed after the answer (`Connection: close`), so the client does not send its
/// next request on it.
async fn close_after_refusal(mut response: axum::response::Response) -> axum::response::Response {
    if response.status().is_client_error() {
        response.headers_mut().insert(
            axum::http::header::CONNECTION,
            axum::http::HeaderValue::from_static("close"),
        );
    }
    response
}

/// The router of the `TESSERA_METRICS_LISTEN` address: `/metrics` without a token, and
/// nothing else (the fallback answers 404).
pub fn metrics_router(state: &AppState) -> Router {
    Router::new()
        .route("/metrics", get(crate::metrics::scrape))
        .fallback(conventions::fallback)
        .with_state(state.metrics_state(crate::metrics::MetricsAccess::Open))
        .layer(axum::middleware::from_fn(conventions::request_conventions))
}

/// The usage meter's sink: `tenant_usage` in the database.
pub struct DatabaseUsage(pub crate::storage::Database);

impl crate::http::usage::UsageSink for DatabaseUsage {
    fn add<'a>(
        &'a self,
        counts: &'a [(crate::http::usage::UsageKey, u64)],
    ) -> std::pin::Pin<Box<dyn Future<Output = anyhow::Result<()>> + Send + 'a>> {
        let increments: Vec<crate::storage::tenant_usage::UsageIncrement<'_>> = counts
            .iter()
            .map(
                |(key, amount)| crate::storage::tenant_usage::UsageIncrement {
                    tenant_id: &key.tenant_id,
                    day: &key.day,
                    metric: key.metric,
                    dimension: &key.dimension,
                    amount: i64::try_from(*amount).unwrap_or(i64::MAX),
                },
            )
            .collect();
        Box::pin(async move { crate::storage::tenant_usage::add(&self.0, &increments).await })
    }
}

/// Whose usage a request is: the tenant of a bearer token this host verified recently (the
/// verified-token cache; no signature is checked for metering).
pub struct RecentTokens(pub crate::auth::tokens::AccessTokens);

impl crate::http::usage::TenantOfBearer for RecentTokens {
    fn tenant_of(
        &self,
        token: &str,
    ) -> std::pin::Pin<Box<dyn Future<Output = Option<String>> + Send + '_>> {
        let token = token.to_owned();
        Box::pin(async move {
            self.0
                .verified_recently(&token)
                .await
                .map(|claims| claims.tid)
        })
    }
}

/// The auth service's view of the loaded engines (for `meta.services`): the engine registry.
pub struct LoadedEngines(pub Arc<crate::runtime::registry::EngineRegistry>);

impl crate::auth::state::EngineDirectory for LoadedEngines {
    fn engine_codes(&self) -> Vec<String> {
        self.0.codes()
    }
}

/// The cluster's view of what this host runs (its heartbeats): the engine registry.
impl crate::cluster::EngineInventory for LoadedEngines {
    fn running(&self) -> Vec<crate::cluster::RunningEngine> {
        self.0
            .loaded()
            .iter()
            .map(|engine| crate::cluster::RunningEngine {
                code: engine.descriptor.code.clone(),
                version: engine.descriptor.version.clone(),
                sha256: engine.sha256.clone(),
            })
            .collect()
    }
}

/// A tenant's engine-call share held for a cluster (`TESSERA_ENGINE_TENANT_CONCURRENCY` set,
/// with `TESSERA_RATE_LIMIT_SCOPE=cluster`): each host takes the total divided among the live
/// hosts, rounded up, and retakes it whenever the count changes.
pub struct ClusterTenantShare {
    pub admission: crate::runtime::admission::Admission,
    /// The cluster's total: calls one tenant may run at once on all hosts together.
    pub total: usize,
}

impl crate::cluster::LiveHostsListener for ClusterTenantShare {
    fn live_hosts(&self, count: usize) {
        let share = self.total.div_ceil(count.max(1));
        if share != self.admission.limits().tenant_share {
            tracing::info!(
                live_hosts = count,
                cluster_total = self.total,
                tenant_share = share,
                "this host's part of the tenant engine-call share changed"
            );
        }
        self.admission.set_tenant_share(share);
    }
}

/// The rate limits' buckets shared by a cluster: `rate_limit_buckets` in the database.
pub struct DatabaseBuckets(pub crate::storage::Database);

impl rate_limit::SharedBuckets for DatabaseBuckets {
    fn draw(&self, draws: Vec<rate_limit::BucketDraw>) -> rate_limit::DrawFuture<'_> {
        use crate::storage::rate_limit_buckets::{self, Draw};
        Box::pin(async move {
            let draws = draws
                .into_iter()
                .map(|draw| Draw {
                    key: draw.key,
                    wanted: draw.wanted,
                    burst: draw.burst,
                    interval_us: draw.interval_us,
                })
                .collect();
            Ok(rate_limit_buckets::draw(&self.0, draws)
                .await?
                .into_iter()
                .map(|grant| rate_limit::BucketGrant {
                    key: grant.key,
                    granted: u32::try_from(grant.granted).unwrap_or(0),
                    remaining: u32::try_from(grant.remaining).unwrap_or(u32::MAX),
                    retry_after: std::time::Duration::from_micros(
                        u64::try_from(grant.retry_after_us).unwrap_or(0),
                    ),
                })
                .collect())
        })
    }

    fn sweep(&self) -> Pin<Box<dyn Future<Output = anyhow::Result<u64>> + Send + '_>> {
        Box::pin(crate::storage::rate_limit_buckets::delete_full(&self.0))
    }
}

/// The core's bus relay publishing on the engines' event bus.
pub struct EngineBus(pub crate::runtime::bus::EventBus);

impl EventSink for EngineBus {
    fn subscribed(&self, event_type: &str) -> bool {
        !self.0.subscriptions().subscribers(event_type).is_empty()
    }

    fn publish_in<'a>(
        &'a self,
        tx: &'a mut Tx,
        events: Vec<&'a StoredEvent>,
    ) -> Pin<Box<dyn Future<Output = anyhow::Result<()>> + Send + 'a>> {
        Box::pin(async move {
            let events = events
                .into_iter()
                .map(|event| {
                    Ok(Relayed {
                        event: bus_event(event)?,
                        traceparent: event.traceparent.clone(),
                        group: event.group_first_sequence(),
                    })
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            self.0.publish_packed_in(tx, &events).await?;
            Ok(())
        })
    }

    fn committed(&self) {
        self.0.wake();
    }
}

/// The core's realtime hub reaching the engines' topics through the engine runtime: who may
/// subscribe (the engine's `authorize-subscription`), and what engines' calls published.
pub struct EngineRealtime {
    pub engines: Arc<crate::runtime::registry::EngineRegistry>,
    pub feed: crate::runtime::realtime::RealtimeFeed,
}

fn feed_position(position: LogPosition) -> crate::runtime::realtime::FeedPosition {
    crate::runtime::realtime::FeedPosition {
        transaction_id: position.transaction_id,
        position: position.position,
    }
}

fn engine_event(row: crate::runtime::realtime::PublishedRow) -> anyhow::Result<EngineEvent> {
    use crate::runtime::realtime::PublishedKind;
    let kind = match row.kind {
        PublishedKind::Event { event_type, data } => EngineEventKind::Event {
            event_type,
            data: serde_json::from_str(&data).context("reading a realtime event's data")?,
        },
        PublishedKind::End => EngineEventKind::End,
    };
    Ok(EngineEvent {
        position: LogPosition {
            transaction_id: row.position.transaction_id,
            position: row.position.position,
        },
        tenant_id: row.tenant_id,
        topic: row.topic,
        user_id: row.user_id,
        kind,
        occurred_at: row.occurred_at,
    })
}

impl EngineTopics for EngineRealtime {
    fn authorize<'a>(
        &'a self,
        caller: &'a crate::auth::caller::Caller,
        topic: &'a str,
    ) -> PortFuture<'a, anyhow::Result<EngineTopicAccess>> {
        use crate::runtime::realtime::{Subscriber, TopicDecision};
        Box::pin(async move {
            let subscriber = Subscriber {
                tenant_id: caller.tenant_id.clone(),
                workspace_id: caller.workspace_id.clone(),
                user_id: caller.user_id.clone(),
                role: caller.role.clone(),
                token_type: caller.token_type.clone(),
                correlation_id: uuid::Uuid::now_v7().to_string(),
            };
            Ok(
                match self
                    .engines
                    .authorize_subscription(&subscriber, topic)
                    .await?
                {
                    TopicDecision::Allowed => EngineTopicAccess::Allowed,
                    TopicDecision::Forbidden => EngineTopicAccess::Forbidden,
                    TopicDecision::Unknown => EngineTopicAccess::Unknown,
                },
            )
        })
    }

    fn head(&self) -> PortFuture<'_, anyhow::Result<LogPosition>> {
        Box::pin(async move {
            let head = self.feed.head().await?;
            Ok(LogPosition {
                transaction_id: head.transaction_id,
                position: head.position,
            })
        })
    }

    fn after(
        &self,
        after: LogPosition,
        limit: u32,
    ) -> PortFuture<'_, anyhow::Result<Vec<EngineEvent>>> {
        Box::pin(async move {
            self.feed
                .after(feed_position(after), limit)
                .await?
                .into_iter()
                .map(engine_event)
                .collect()
        })
    }

    fn replay<'a>(
        &'a self,
        tenant_id: &'a str,
        topic: &'a str,
        user_id: &'a str,
        after: LogPosition,
        until: LogPosition,
        limit: u32,
    ) -> PortFuture<'a, anyhow::Result<Option<Vec<EngineEvent>>>> {
        Box::pin(async move {
            let rows = self
                .feed
                .replay(
                    tenant_id,
                    topic,
                    user_id,
                    feed_position(after),
                    feed_position(until),
                    limit,
                )
                .await?;
            rows.map(|rows| rows.into_iter().map(engine_event).collect())
                .transpose()
        })
    }

    fn prune(&self) -> PortFuture<'_, anyhow::Result<u64>> {
        Box::pin(self.feed.prune())
    }

    fn published(&self) -> PortFuture<'_, ()> {
        // Registered now, not when first polled: a commit before the hub waits still wakes it.
        let mut published = Box::pin(self.feed.published());
        published.as_mut().enable();
        Box::pin(published)
    }
}

/// A log event as the bus carries it: its data plus `entity_id` as the payload, its own id as
/// the correlation id when it has none.
fn bus_event(event: &StoredEvent) -> anyhow::Result<BusEvent> {
    let mut payload: serde_json::Value = serde_json::from_str(&event.data)
        .with_context(|| format!("reading the data of event {}", event.id))?;
    if let (Some(fields), Some(entity_id)) = (payload.as_object_mut(), &event.entity_id) {
        fields.insert("entity_id".to_owned(), entity_id.clone().into());
    }
    Ok(BusEvent {
        id: event.id.clone(),
        event_type: event.event_type.clone(),
        tenant_id: event.tenant_id.clone(),
        occurred_at: event.occurred_at.clone(),
        actor_id: event.actor_id.clone(),
        correlation_id: event
            .correlation_id
            .clone()
            .unwrap_or_else(|| event.id.clone()),
        payload,
    })
}
