//! Workflows: event-driven automations of a tenant. Definitions and their validation
//! (`definition.rs`), condition evaluation (`conditions.rs`), value templates
//! (`templates.rs`), storage of workflows and runs (`store.rs`), the HTTP endpoints
//! (`routes.rs`) and the runner the `workflow` worker drives (`runner.rs`).

pub mod conditions;
pub mod definition;
mod routes;
pub mod runner;
pub mod store;
pub mod templates;

use utoipa_axum::router::OpenApiRouter;

use crate::state::AppState;

/// `/core/api/v1/workflows…`.
pub fn router() -> OpenApiRouter<AppState> {
    routes::router()
}
