//! Workflows: event-driven automations of a tenant (definitions, their validation, condition
//! evaluation, value templates, storage, the HTTP endpoints and the runner the `workflow`
//! worker drives).

pub mod conditions;
pub mod definition;
pub mod templates;
