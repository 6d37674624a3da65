//! The core service (`/core`): health and metrics, entity families, intentions and the event
//! log, the projections fed from it (timeline, inbox, search) and their workers.

pub mod entities;
pub mod events;
pub mod families;
pub mod feeds;
pub mod health;
pub mod intention_writer;
pub mod intentions;
pub mod projections;
mod routes;
pub mod search;
pub mod workers;
pub mod workflows;

use utoipa_axum::{router::OpenApiRouter, routes};

use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(health::health))
        .routes(routes!(health::extended_health))
        .merge(routes::router())
        .merge(search::router())
        .merge(workflows::router())
}
