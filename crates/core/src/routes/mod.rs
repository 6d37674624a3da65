//! The core service's HTTP resources, one router per resource merged here.

mod entities;
mod families;
mod feeds;
mod intentions;
mod metrics;

use utoipa_axum::router::OpenApiRouter;

use crate::state::CoreState;

pub fn router<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    CoreState: axum::extract::FromRef<S>,
    tessera_auth::AuthState: axum::extract::FromRef<S>,
{
    OpenApiRouter::new()
        .merge(families::router())
        .merge(intentions::router())
        .merge(entities::router())
        .merge(feeds::router())
        .merge(metrics::router())
}
