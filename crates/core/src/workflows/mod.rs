//! Workflows: event-driven automations of a tenant. Definitions and their validation
//! (`definition.rs`), condition evaluation (`conditions.rs`) and value templates
//! (`templates.rs`) over the entity a run is about (`subject.rs`), storage of workflows and
//! runs over plain rows (`store.rs`), the operations that turn those rows into workflows and
//! hold the rules that are not SQL (`service.rs`), the HTTP endpoints (`routes.rs`) with the
//! documented shape of their bodies (`schema.rs`) and the runner the `workflow` worker drives
//! (`runner.rs`).

pub mod conditions;
pub mod definition;
pub(crate) mod routes;
pub mod runner;
mod schema;
pub mod service;
pub mod store;
pub(crate) mod subject;
pub mod templates;

/// What an operator bounds about workflows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkflowLimits {
    /// Active workflows a tenant may have at once (`TESSERA_WORKFLOW_MAX_ACTIVE_PER_TENANT`):
    /// activating one more is 409.
    pub max_active_per_tenant: u32,
    /// Intentions workflow actions may execute, at every depth, in the chain started by one
    /// person's intention (`TESSERA_WORKFLOW_CHAIN_WRITE_BUDGET`): a run that would exceed it
    /// fails there, and nothing more of the chain runs.
    pub chain_write_budget: u32,
}

impl Default for WorkflowLimits {
    fn default() -> Self {
        Self {
            max_active_per_tenant: 100,
            chain_write_budget: 100,
        }
    }
}
