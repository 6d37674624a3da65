//! The core service's HTTP resources, one router per resource merged here (health's two
//! endpoints directly).

mod entities;
mod families;
mod feeds;
mod health;
mod intentions;
mod metrics;
mod realtime;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::CoreState;

pub fn router<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    CoreState: axum::extract::FromRef<S>,
    tessera_auth::AuthState: axum::extract::FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(health::health))
        .routes(routes!(health::extended_health))
        .merge(families::router())
        .merge(intentions::router())
        .merge(entities::router())
        .merge(feeds::router())
        .merge(metrics::router())
        .merge(realtime::router())
}
