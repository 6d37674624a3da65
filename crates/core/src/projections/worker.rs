//! The projection worker: tails the event log from a projection's checkpoint and applies
//! batches, moving the checkpoint in the same transaction.
//!
//! Reading order is `(transaction_id, position)`, and on PostgreSQL only events whose
//! transaction id is below the oldest transaction still in flight
//! (`pg_snapshot_xmin(pg_current_snapshot())`) are read. Positions come from a sequence and
//! are taken before commit, so a transaction holding position 5 can commit after one holding
//! position 6: a reader of "position > checkpoint" would pass 5 and never see it. Every
//! transaction that commits later has an id at or above that horizon, hence sorts after
//! everything already read. On SQLite writers are serialized: the position is commit order.
//!
//! Several hosts on one PostgreSQL share the work: a batch locks its projection's checkpoint
//! row with `FOR UPDATE SKIP LOCKED`, so one host applies a given projection at a time and the
//! others move on (they see the row locked and wait for the next wake-up). The SQL is in
//! `store/checkpoints.rs`, `store/log.rs` and `store/stats.rs`.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use tokio_util::sync::CancellationToken;

use super::log_cache::{EventBatch, LogCache};
use super::projection::Projection;
use super::signal::EventSignal;
use super::store::checkpoints::{self, CheckpointRow};
/// A position in the log's reading order (the log store reads by it).
pub use super::store::log::LogPosition;
use super::store::{log, stats};
use crate::events::StoredEvent;
use crate::workers::WorkerRegistry;
use tessera_storage::{Database, DatabaseKind, Tx, time};

/// How workers run (`TESSERA_PROJECTION_*`).
#[derive(Debug, Clone)]
pub struct ProjectionConfig {
    /// Run the workers in this host (`TESSERA_PROJECTION_WORKERS`, default true). A host
    /// without them only serves HTTP; another host must run them.
    pub run_workers: bool,
    /// Events per batch transaction (`TESSERA_PROJECTION_BATCH_SIZE`, default 500).
    pub batch_size: u32,
    /// Poll interval when no wake-up arrives.
    pub idle_poll: Duration,
    /// After a batch that did not fill up, the worker waits this long before the next, so
    /// under load it applies fewer, larger batches instead of one per append (each batch is a
    /// write transaction, and SQLite has one writer). A lone event after a quiet spell is
    /// still applied at once.
    pub batch_interval: Duration,
    /// A worker whose oldest pending event waited longer is `degraded` in extended health.
    pub degraded_lag: Duration,
}

impl Default for ProjectionConfig {
    fn default() -> Self {
        Self {
            run_workers: true,
            batch_size: 500,
            idle_poll: Duration::from_secs(1),
            batch_interval: Duration::from_millis(100),
            degraded_lag: crate::workers::DEGRADED_LAG,
        }
    }
}

/// What one step of a worker did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Step {
    /// Applied this many events; the oldest had waited `lag`. `more_follow`: the batch was
    /// cut short of the batch size, yet more events are known to be waiting.
    Applied {
        events: usize,
        lag: Duration,
        more_follow: bool,
    },
    /// Nothing to apply yet; events still in flight (PostgreSQL) have waited `lag`.
    Idle { lag: Duration },
    /// Another host holds the projection; the oldest pending event has waited `lag`.
    Busy { lag: Duration },
}

/// The checkpoint row of a projection.
#[derive(Debug, Clone, Copy, Default)]
struct Checkpoint {
    applied: LogPosition,
    counted: LogPosition,
}

async fn read_checkpoint(database: &Database, name: &str) -> anyhow::Result<Checkpoint> {
    let row = checkpoints::read(database, name).await?;
    Ok(checkpoint_of(row))
}

fn checkpoint_of(row: CheckpointRow) -> Checkpoint {
    Checkpoint {
        applied: LogPosition {
            transaction_id: row.0,
            position: row.1,
        },
        counted: LogPosition {
            transaction_id: row.2,
            position: row.3,
        },
    }
}

/// The next batch after `after` on SQLite, read outside the writer's turn (writers are
/// serialized there, so the position is commit order): from a stretch another worker of this
/// host already read, or from the log (and then kept for the others).
async fn sqlite_batch(
    database: &Database,
    log_cache: &LogCache,
    after: LogPosition,
    batch_size: u32,
) -> anyhow::Result<EventBatch> {
    let limit = batch_size as usize;
    if let Some(batch) = log_cache.batch_after(after.position, limit) {
        return Ok(batch);
    }
    let events = log::sqlite_events_after(database, after, batch_size).await?;
    let (events, full) = whole_groups(events, limit);
    Ok(log_cache.insert(after.position, events, full))
}

/// Locks the checkpoint (PostgreSQL: skipping it when another host holds it) and reads the
/// next batch after it. On SQLite the batch was read before the transaction began
/// (`prefetched`, after the checkpoint `read_before`), so the writer's turn is not spent
/// reading: the batch stands if the checkpoint has not moved since (another process sharing
/// the data dir may have applied it), and is dropped as `None` otherwise.
async fn lock_and_read(
    tx: &mut Tx,
    name: &str,
    batch_size: u32,
    read_before: Checkpoint,
    prefetched: Option<EventBatch>,
) -> anyhow::Result<Option<(Checkpoint, EventBatch)>> {
    let limit = i64::from(batch_size);
    match tx.kind() {
        DatabaseKind::Sqlite => {
            let row = checkpoints::read_in(tx, name).await?;
            let checkpoint = checkpoint_of(row);
            let Some(prefetched) = prefetched.filter(|_| checkpoint.applied == read_before.applied)
            else {
                return Ok(None);
            };
            Ok(Some((checkpoint, prefetched)))
        }
        DatabaseKind::Postgres => {
            // First, before this transaction has an id of its own: the horizon below which
            // every transaction has ended.
            let horizon = log::transaction_horizon(tx).await?;
            let row = checkpoints::lock_unless_held(tx, name).await?;
            let Some(row) = row else {
                return Ok(None);
            };
            let checkpoint = checkpoint_of(row);
            let events = log::postgres_events_after(tx, checkpoint.applied, horizon, limit).await?;
            let (events, full) = whole_groups(events, batch_size as usize);
            let mut batch = EventBatch::from(events);
            batch.more_follow = full;
            Ok(Some((checkpoint, batch)))
        }
    }
}

pub(crate) fn waited_since(occurred_at: &str, now: chrono::DateTime<chrono::Utc>) -> Duration {
    chrono::DateTime::parse_from_rfc3339(occurred_at)
        .ok()
        .and_then(|at| (now - at.with_timezone(&chrono::Utc)).to_std().ok())
        .unwrap_or_default()
}

/// One batch: applies the next events after the checkpoint, if any, and commits.
pub async fn step<P: Projection>(
    database: &Database,
    log_cache: &LogCache,
    projection: &P,
    batch_size: u32,
) -> anyhow::Result<Step> {
    let name = projection.name();
    // A cheap look without the write lock: most idle polls end here.
    let checkpoint = read_checkpoint(database, name).await?;
    let (oldest_pending, prefetched) = match database.kind() {
        DatabaseKind::Sqlite => {
            let batch = sqlite_batch(database, log_cache, checkpoint.applied, batch_size).await?;
            (
                batch
                    .events()
                    .first()
                    .map(|event| event.occurred_at.clone()),
                Some(batch),
            )
        }
        // How long the projection has been behind (on SQLite the prefetched batch tells).
        DatabaseKind::Postgres => (
            log::first_pending(database, checkpoint.applied).await?,
            None,
        ),
    };
    let Some(oldest_pending) = oldest_pending else {
        return Ok(Step::Idle {
            lag: Duration::ZERO,
        });
    };
    let pending_lag = waited_since(&oldest_pending, chrono::Utc::now());
    let mut tx = database.begin_background().await?;
    let Some((checkpoint, batch)) =
        lock_and_read(&mut tx, name, batch_size, checkpoint, prefetched).await?
    else {
        tx.rollback().await?;
        return Ok(Step::Busy { lag: pending_lag });
    };
    let more_follow = batch.more_follow;
    let events = batch.events();
    let Some(last) = events.last() else {
        // Only events of transactions still in flight: wait for them to end.
        tx.rollback().await?;
        return Ok(Step::Idle { lag: pending_lag });
    };
    let last = LogPosition::of(last);
    projection
        .apply(&mut tx, events)
        .await
        .with_context(|| format!("applying {} events to {name}", events.len()))?;
    let now = chrono::Utc::now();
    let lag = waited_since(&events[0].occurred_at, now);
    record_stats(&mut tx, name, events, checkpoint.counted, now).await?;
    let counted = checkpoint.counted.max(last);
    checkpoints::advance(&mut tx, name, last, counted, &time::now()).await?;
    tx.commit().await?;
    projection.committed();
    Ok(Step::Applied {
        events: events.len(),
        lag,
        more_follow,
    })
}

/// A read of the log that got all the `limit` events it asked for may end inside a group:
/// the read without that group, which the next read starts with, and whether it was full. So
/// an intention's events are applied in one batch (the bus relay then delivers them to an
/// engine in one pack, and activity folds a creation's into one item). A read that is one
/// group alone, larger than a batch, is kept as read.
fn whole_groups(mut events: Vec<StoredEvent>, limit: usize) -> (Vec<StoredEvent>, bool) {
    let full = events.len() >= limit;
    if let Some(last) = events.last().filter(|_| full) {
        let in_last_group = |event: &StoredEvent| {
            event.tenant_id == last.tenant_id
                && event.group_first_sequence() == last.group_first_sequence()
        };
        if let Some(before_last_group) = events.iter().rposition(|event| !in_last_group(event)) {
            events.truncate(before_last_group + 1);
        }
    }
    (events, full)
}

/// Adds the batch's events beyond the high-water mark `counted` (a rebuild replays the
/// others) to the per-tenant counters, with their delay from append to now.
async fn record_stats(
    tx: &mut Tx,
    name: &str,
    events: &[StoredEvent],
    counted: LogPosition,
    now: chrono::DateTime<chrono::Utc>,
) -> anyhow::Result<()> {
    let mut per_tenant: std::collections::BTreeMap<&str, (i64, f64)> = Default::default();
    for event in events
        .iter()
        .filter(|event| LogPosition::of(event) > counted)
    {
        let entry = per_tenant.entry(&event.tenant_id).or_default();
        entry.0 += 1;
        entry.1 += waited_since(&event.occurred_at, now).as_secs_f64() * 1000.0;
    }
    for (tenant_id, (count, latency_ms)) in per_tenant {
        stats::add(tx, name, tenant_id, count, latency_ms).await?;
    }
    Ok(())
}

/// Runs a projection until `shutdown`: a step after every wake-up or poll interval, and
/// straight away again after a batch. Reports each outcome to `workers` for extended health;
/// a failing batch is retried after a pause (the checkpoint did not move).
pub async fn run<P: Projection>(
    database: Database,
    log_cache: LogCache,
    projection: Arc<P>,
    signal: EventSignal,
    workers: WorkerRegistry,
    config: ProjectionConfig,
    shutdown: CancellationToken,
) {
    let name = projection.name();
    let mut failures: u32 = 0;
    while !shutdown.is_cancelled() {
        let notified = signal.wait();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let pause = match step(
            &database,
            &log_cache,
            projection.as_ref(),
            config.batch_size,
        )
        .await
        {
            Ok(Step::Applied {
                events,
                lag,
                more_follow,
            }) => {
                failures = 0;
                workers.heartbeat(name, lag);
                if more_follow || events >= config.batch_size as usize {
                    continue;
                }
                tokio::select! {
                    () = shutdown.cancelled() => break,
                    () = tokio::time::sleep(config.batch_interval) => {}
                }
                continue;
            }
            Ok(Step::Idle { lag }) | Ok(Step::Busy { lag }) => {
                failures = 0;
                workers.heartbeat(name, lag);
                config.idle_poll
            }
            Err(error) => {
                failures = failures.saturating_add(1);
                tracing::error!(
                    worker = name,
                    error = format!("{error:#}"),
                    "a projection batch failed; retrying"
                );
                Duration::from_millis(250 * u64::from(failures.min(20)))
            }
        };
        tokio::select! {
            () = shutdown.cancelled() => break,
            () = &mut notified => {}
            () = tokio::time::sleep(pause) => {}
        }
    }
    workers.stopped(name);
}

/// Applies every pending event to `projection` until nothing is left (the rebuild command);
/// returns how many were applied.
pub async fn catch_up<P: Projection>(
    database: &Database,
    projection: &P,
    batch_size: u32,
) -> anyhow::Result<u64> {
    let mut applied = 0u64;
    let log_cache = LogCache::default();
    loop {
        match step(database, &log_cache, projection, batch_size).await? {
            Step::Applied { events, .. } => applied += events as u64,
            Step::Idle { .. } => return Ok(applied),
            Step::Busy { .. } => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An event of `tenant` at `sequence`, `group_offset` into its group.
    fn event(tenant: &str, sequence: i64, group_offset: i64) -> StoredEvent {
        StoredEvent {
            position: sequence,
            transaction_id: 0,
            id: format!("{tenant}-{sequence}"),
            tenant_id: tenant.to_owned(),
            sequence,
            event_type: "entity.field_set".to_owned(),
            entity_id: None,
            intention_id: None,
            actor_id: None,
            correlation_id: None,
            depth: 0,
            data: "{}".to_owned(),
            occurred_at: String::new(),
            entity_state: None,
            traceparent: None,
            group_offset,
        }
    }

    fn sequences(events: &[StoredEvent]) -> Vec<i64> {
        events.iter().map(|event| event.sequence).collect()
    }

    #[test]
    fn a_full_read_leaves_its_last_group_to_the_next() {
        // Groups: 1–2, 3–5 (cut after 4 by the read's limit).
        let read = || {
            vec![
                event("t", 1, 0),
                event("t", 2, 1),
                event("t", 3, 0),
                event("t", 4, 1),
            ]
        };
        let (kept, full) = whole_groups(read(), 4);
        assert_eq!((sequences(&kept), full), (vec![1, 2], true));
        // Short of its limit, the read reached the log's head: every group there is whole.
        let (kept, full) = whole_groups(read(), 5);
        assert_eq!((sequences(&kept), full), (vec![1, 2, 3, 4], false));
        // Another tenant's group at the same offsets is another group.
        let tenants = vec![event("t", 1, 0), event("u", 1, 0), event("u", 2, 1)];
        assert_eq!(sequences(&whole_groups(tenants, 3).0), [1]);
        // One group larger than a batch is applied as read.
        let large = vec![event("t", 7, 3), event("t", 8, 4), event("t", 9, 5)];
        assert_eq!(sequences(&whole_groups(large, 3).0), [7, 8, 9]);
    }
}
