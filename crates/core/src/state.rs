//! What the core service needs from the app, built once at start: the database, the cache,
//! its settings, the event-log signal, the intention writer, the workers' registry, and where
//! the bus relay publishes ([`EventSink`]). The app gives it to the core routes by `FromRef`.

use std::sync::Arc;

use tessera_storage::Database;
use tessera_storage::cache::Cache;

use crate::intention_writer::IntentionWriter;
use crate::projections::ProjectionWorkerInputs;
use crate::projections::bus_relay::EventSink;
use crate::projections::signal::EventSignal;
use crate::projections::worker::ProjectionConfig;
use crate::workers::WorkerRegistry;
use crate::workflows::WorkflowLimits;

/// The core service's state: one `Arc`, cheap to clone per request.
#[derive(Clone)]
pub struct CoreState(Arc<CoreServices>);

impl CoreState {
    pub fn new(services: CoreServices) -> Self {
        Self(Arc::new(services))
    }
}

impl std::ops::Deref for CoreState {
    type Target = CoreServices;

    fn deref(&self) -> &CoreServices {
        &self.0
    }
}

/// What the projection workers take of the core service.
impl From<&CoreState> for ProjectionWorkerInputs {
    fn from(state: &CoreState) -> Self {
        Self {
            database: state.database.clone(),
            event_signal: state.event_signal.clone(),
            workers: state.workers.clone(),
            config: state.projections.clone(),
            chain_write_budget: state.workflows.chain_write_budget,
            event_sink: state.event_sink.clone(),
        }
    }
}

/// The services behind [`CoreState`].
pub struct CoreServices {
    pub database: Database,
    pub cache: Cache,
    pub projections: ProjectionConfig,
    pub workflows: WorkflowLimits,
    /// Search limits (`TESSERA_SEARCH_MAX_CANDIDATES`).
    pub search: crate::search::SearchLimits,
    /// Wakes the projection workers after appends to the event log.
    pub event_signal: EventSignal,
    /// Group-commits intentions.
    pub intention_writer: IntentionWriter,
    pub workers: WorkerRegistry,
    /// Where the bus relay publishes the log's events.
    pub event_sink: Arc<dyn EventSink>,
    /// The platform's backlog of accepted work, for the metrics.
    pub backpressure: tessera_http::backpressure::Backpressure,
    /// This host's realtime hub: tails the log once and fans events out to connections.
    pub realtime: crate::realtime::Hub,
}
