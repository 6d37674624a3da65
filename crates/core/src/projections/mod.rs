//! Projections: the read models fed asynchronously from the event log. Each [`Projection`]
//! is driven by one worker (`worker.rs`) that applies batches of events and moves the
//! projection's checkpoint in the same transaction, so a crash or restart resumes exactly
//! where the last commit left off: nothing lost, nothing applied twice. Their SQL is in
//! `store/`.

pub mod bus_relay;
pub mod log_cache;
pub(crate) mod projection;
pub mod projector;
pub mod signal;
pub mod stats;
pub(crate) mod store;
pub mod worker;

pub use projection::Projection;

use std::sync::Arc;

use crate::search::SearchProjection;
use crate::workers::WorkerRegistry;
use crate::workflows::runner::WorkflowRunner;
use bus_relay::EventSink;
use signal::EventSignal;
use tessera_http::backpressure::BacklogSample;
use tessera_storage::Database;
use worker::ProjectionConfig;

/// The events the slowest projection has not applied yet (counted up to `cap`) and how long
/// the first of them has waited: the projections' part of the platform's backlog.
pub async fn backlog(database: &Database, cap: u64) -> anyhow::Result<BacklogSample> {
    let slowest = store::checkpoints::slowest(database).await?;
    let (items, first) = store::log::behind(database, slowest, cap).await?;
    Ok(BacklogSample {
        items: u64::try_from(items).unwrap_or(0),
        oldest_age: first
            .map(|occurred_at| worker::waited_since(&occurred_at, chrono::Utc::now()))
            .unwrap_or_default(),
    })
}

/// The tenants with the most of [`backlog`]'s events (at most `limit`).
pub async fn backlog_by_tenant(
    database: &Database,
    cap: u64,
    limit: u64,
) -> anyhow::Result<Vec<(String, u64)>> {
    let slowest = store::checkpoints::slowest(database).await?;
    let rows = store::log::behind_by_tenant(database, slowest, cap, limit).await?;
    Ok(rows
        .into_iter()
        .map(|(tenant_id, events)| (tenant_id, u64::try_from(events).unwrap_or(0)))
        .collect())
}

/// What the projection workers need of the core service: its database, the append signal that
/// wakes them, the registry they report to, their settings, the workflow runner's write budget
/// and where the bus relay publishes. The core state gives it (`state.rs`).
#[derive(Clone)]
pub struct ProjectionWorkerInputs {
    pub database: Database,
    pub event_signal: EventSignal,
    pub workers: WorkerRegistry,
    pub config: ProjectionConfig,
    /// Intentions a workflow chain may execute (`WorkflowLimits::chain_write_budget`).
    pub chain_write_budget: u32,
    pub event_sink: Arc<dyn EventSink>,
}

/// Starts this host's projection workers (unless configured off) and, on PostgreSQL, the
/// relay of append notifications between hosts.
pub fn spawn_workers(
    inputs: impl Into<ProjectionWorkerInputs>,
    background: &tokio_util::task::TaskTracker,
    shutdown: &tokio_util::sync::CancellationToken,
) {
    let inputs = inputs.into();
    let config = inputs.config.clone();
    if !config.run_workers {
        tracing::info!("projection workers are off in this host (TESSERA_PROJECTION_WORKERS)");
        return;
    }
    background.spawn(
        inputs
            .event_signal
            .clone()
            .run_postgres_relay(inputs.database.clone(), shutdown.clone()),
    );
    // One cache of recently read log stretches for the host's workers (used on SQLite).
    let log_cache = log_cache::LogCache::default();
    macro_rules! spawn {
        ($projection:expr) => {
            background.spawn(worker::run(
                inputs.database.clone(),
                log_cache.clone(),
                Arc::new($projection),
                inputs.event_signal.clone(),
                inputs.workers.clone(),
                config.clone(),
                shutdown.clone(),
            ))
        };
    }
    spawn!(projector::Projector);
    spawn!(SearchProjection);
    spawn!(WorkflowRunner {
        chain_write_budget: inputs.chain_write_budget,
    });
    spawn!(bus_relay::BusRelay {
        sink: inputs.event_sink.clone(),
    });
}

/// What `tessera admin rebuild-projections` did per projection.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RebuildReport {
    pub projection: &'static str,
    /// Events replayed.
    pub events: u64,
}

/// Empties every read model and replays the whole log into it. Safe while hosts serve: the
/// reset takes each projection's checkpoint like a batch does, and replayed events are not
/// counted again in the metrics.
pub async fn rebuild(
    database: &tessera_storage::Database,
    batch_size: u32,
) -> anyhow::Result<Vec<RebuildReport>> {
    let mut reports = Vec::new();
    reports.extend(rebuild_one(database, &projector::Projector, batch_size).await?);
    reports.extend(rebuild_one(database, &SearchProjection, batch_size).await?);
    // Not the workflow runner: it is no read model, and replaying it would run actions again.
    Ok(reports)
}

async fn rebuild_one<P: Projection>(
    database: &tessera_storage::Database,
    projection: &P,
    batch_size: u32,
) -> anyhow::Result<Option<RebuildReport>> {
    let name = projection.name();
    let mut tx = database.begin().await?;
    // Lock the checkpoint first so no worker applies a batch while the model is emptied.
    store::checkpoints::lock(&mut tx, name).await?;
    if !projection.reset(&mut tx).await? {
        tx.rollback().await?;
        return Ok(None);
    }
    store::checkpoints::rewind(&mut tx, name, &tessera_storage::time::now()).await?;
    tx.commit().await?;
    let events = worker::catch_up(database, projection, batch_size).await?;
    Ok(Some(RebuildReport {
        projection: name,
        events,
    }))
}
