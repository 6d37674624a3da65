//! The core service (`/core`): health and metrics, entity families, intentions and the event
//! log, the projections fed from it (timeline, inbox, search, workflows, the bus relay) and
//! their workers. Its router is generic over the app's state, which gives it [`CoreState`] (and
//! the auth service's state, for the `Caller`) by `FromRef`.

pub mod entities;
pub mod erasure;
pub mod events;
pub mod families;
pub mod feeds;
pub mod health;
mod intention_batch;
pub mod intention_writer;
pub mod intentions;
pub mod projections;
pub mod realtime;
mod routes;
pub mod search;
pub mod state;
mod store;
pub mod workers;
pub mod workflows;

use utoipa_axum::router::OpenApiRouter;

pub use crate::state::{CoreServices, CoreState};

pub fn router<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    CoreState: axum::extract::FromRef<S>,
    tessera_auth::AuthState: axum::extract::FromRef<S>,
{
    OpenApiRouter::new()
        .merge(routes::router())
        .merge(search::routes::router())
        .merge(workflows::routes::router())
}
