//! The core service's HTTP resources, one router per resource merged here.

mod entities;
mod families;
mod feeds;
mod intentions;
mod metrics;

use utoipa_axum::router::OpenApiRouter;

use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(families::router())
        .merge(intentions::router())
        .merge(entities::router())
        .merge(feeds::router())
        .merge(metrics::router())
}
