//! The assembly point of the host: every service's router merged under the shared HTTP
//! conventions, and the OpenAPI document of all of them at `/api/openapi.json`.

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::get;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::limit::RequestBodyLimitLayer;
use utoipa_axum::router::OpenApiRouter;

use crate::http::{connections, conventions, rate_limit};
use crate::state::AppState;

/// Every route of the host, with the conventions applied, plus the OpenAPI document of all of
/// them at `/api/openapi.json`. `extra` lets embedders (and tests) add routes that get the same
/// conventions.
pub fn router(state: AppState, extra: Router<AppState>) -> Router {
    let (routes, openapi) = OpenApiRouter::with_openapi(crate::openapi::document())
        .merge(crate::auth::router())
        .merge(crate::core::router())
        .merge(crate::runtime::routes::core_router())
        .merge(crate::orchestrator::routes::router())
        .split_for_parts();
    let openapi = std::sync::Arc::new(openapi);
    let body_limit = state.config.http.max_body_bytes;
    let body_timeout = state.config.http.body_timeout;
    let rate_limits = rate_limit::RateLimits::new(&state.config.rate_limits);

    // Engine routes take larger bodies (file uploads) than the host's own API.
    let engine_body_limit = state.config.runtime.max_request_bytes;
    let engine_routes = crate::runtime::routes::engine_router()
        .layer(DefaultBodyLimit::max(engine_body_limit))
        .layer(RequestBodyLimitLayer::new(engine_body_limit));

    routes
        .merge(crate::runtime::lifecycle::internal_router())
        .merge(extra)
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(RequestBodyLimitLayer::new(body_limit))
        .merge(engine_routes)
        .route(
            "/api/openapi.json",
            get(move || {
                let openapi = openapi.clone();
                async move { axum::Json(openapi.as_ref().clone()) }
            }),
        )
        .fallback(conventions::fallback)
        .with_state(state)
        .layer(CatchPanicLayer::custom(conventions::panic_response))
        .layer(axum::middleware::from_fn_with_state(
            rate_limits,
            rate_limit::enforce,
        ))
        .layer(axum::middleware::from_fn_with_state(
            body_timeout,
            connections::body_deadline,
        ))
        .layer(axum::middleware::from_fn(conventions::request_conventions))
}
