//! The state every handler shares.

use std::sync::Arc;

use crate::auth::password::PasswordHasher;
use crate::auth::sessions::Sessions;
use crate::auth::tokens::AccessTokens;
use crate::config::{Config, Secret};
use crate::core::intention_writer::IntentionWriter;
use crate::core::projections::signal::EventSignal;
use crate::core::workers::WorkerRegistry;
use crate::orchestrator::Orchestrator;
use crate::runtime::EngineRegistry;
use crate::storage::Database;
use crate::storage::cache::Cache;

#[derive(Clone)]
pub struct AppState {
    pub config: Arc<Config>,
    pub database: Database,
    pub cache: Cache,
    pub workers: WorkerRegistry,
    pub password_hasher: PasswordHasher,
    pub service_secret: Secret,
    pub access_tokens: AccessTokens,
    pub sessions: Sessions,
    /// Checked when a login names no account, so unknown logins cost the same time.
    pub dummy_password_hash: Arc<str>,
    pub engines: Arc<EngineRegistry>,
    pub orchestrator: Orchestrator,
    /// Wakes the projection workers after appends to the event log.
    pub event_signal: EventSignal,
    /// Group-commits intentions.
    pub intention_writer: IntentionWriter,
}
