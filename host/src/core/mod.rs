//! The core service (`/core`): health and extended health, and the tenant's entity families;
//! intentions, the event log, projections, search and workflows build on the modules here.

pub mod families;
pub mod health;
mod routes;
pub mod workers;

use utoipa_axum::{router::OpenApiRouter, routes};

use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(health::health))
        .routes(routes!(health::extended_health))
        .merge(routes::router())
}
