//! Projections: the read models fed asynchronously from the event log. Each [`Projection`]
//! is driven by one worker (`worker.rs`) that applies batches of events and moves the
//! projection's checkpoint in the same transaction, so a crash or restart resumes exactly
//! where the last commit left off: nothing lost, nothing applied twice. Their SQL is in
//! `store/`.

pub mod bus_relay;
pub mod log_cache;
pub mod projector;
pub mod signal;
pub mod stats;
mod store;
pub mod worker;

use std::future::Future;

use crate::events::StoredEvent;
use tessera_http::backpressure::BacklogSample;
use tessera_storage::{Database, Tx};

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

/// A consumer of the event log with its own checkpoint.
pub trait Projection: Send + Sync + 'static {
    /// The checkpoint row, the worker slot in extended health and the metrics key:
    /// `projector`, `search`, `workflow` or `bus`.
    fn name(&self) -> &'static str;

    /// Applies `events` (in log order, all after the checkpoint) inside `tx`; the worker
    /// moves the checkpoint in the same transaction. An error rolls the whole batch back.
    fn apply<'a>(
        &'a self,
        tx: &'a mut Tx,
        events: &'a [StoredEvent],
    ) -> impl Future<Output = anyhow::Result<()>> + Send + 'a;

    /// Deletes everything the projection wrote, for `tessera admin rebuild-projections`.
    /// `Ok(false)` when the projection is not a read model and must not be replayed (the
    /// workflow worker: replaying it would run actions again).
    fn reset<'a>(
        &'a self,
        tx: &'a mut Tx,
    ) -> impl Future<Output = anyhow::Result<bool>> + Send + 'a;

    /// Called after a batch's transaction committed (the bus relay wakes the work worker).
    fn committed(&self) {}
}

/// Starts this host's projection workers (unless configured off) and, on PostgreSQL, the
/// relay of append notifications between hosts.
pub fn spawn_workers(
    state: &crate::state::CoreState,
    background: &tokio_util::task::TaskTracker,
    shutdown: &tokio_util::sync::CancellationToken,
) {
    let config = state.projections.clone();
    if !config.run_workers {
        tracing::info!("projection workers are off in this host (TESSERA_PROJECTION_WORKERS)");
        return;
    }
    background.spawn(
        state
            .event_signal
            .clone()
            .run_postgres_relay(state.database.clone(), shutdown.clone()),
    );
    // One cache of recently read log stretches for the host's workers (used on SQLite).
    let log_cache = log_cache::LogCache::default();
    macro_rules! spawn {
        ($projection:expr) => {
            background.spawn(worker::run(
                state.database.clone(),
                log_cache.clone(),
                std::sync::Arc::new($projection),
                state.event_signal.clone(),
                state.workers.clone(),
                config.clone(),
                shutdown.clone(),
            ))
        };
    }
    spawn!(projector::Projector);
    spawn!(crate::search::SearchProjection);
    spawn!(crate::workflows::runner::WorkflowRunner {
        chain_write_budget: state.workflows.chain_write_budget,
    });
    spawn!(bus_relay::BusRelay {
        sink: state.event_sink.clone(),
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
    reports.extend(rebuild_one(database, &crate::search::SearchProjection, batch_size).await?);
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
