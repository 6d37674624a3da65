//! The worker that runs durable engine work (`work_queue.rs`: jobs engines schedule and events
//! delivered to subscribers) on every serving host: it claims due items with a lease, groups
//! them into runs and runs each on one engine instance. A run starts only once admitted within
//! its tenant's share of the engine runtime; an item that finds no slot in time is handed back
//! without counting an attempt.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument as _;

use super::admission::{CallKind, Permit};
use super::bindings::v0_3::tessera::engine::types as wit;
use super::bus::event_to_wit;
use super::engine::CallError;
use super::registry::EngineRegistry;
pub use crate::config::WorkerConfig;
use crate::work_queue::delivered_events;
pub use crate::work_queue::{
    ClaimedWork, LeaseLost, MAX_ATTEMPTS, MAX_DELIVERY_BATCH, MAX_PAYLOAD_BYTES, NewWork, WorkKind,
    WorkQueue, backoff,
};

/// How long a claimed item waits for an engine slot (its tenant's share, or the pool, is
/// taken) before it is handed back, so items of other tenants behind it get the worker's slot.
const ADMISSION_PATIENCE: Duration = Duration::from_secs(2);
/// When an item handed back for lack of a slot is due again.
const ADMISSION_RETRY: Duration = Duration::from_secs(1);

/// Most payload bytes of the events of one run (one event may pass it alone): a claim of many
/// large events makes small runs, and the claims after it claim fewer items per run.
pub const MAX_DELIVERY_BATCH_BYTES: usize = 1024 * 1024;

/// Most items one claim takes (with [`MAX_PAYLOAD_BYTES`] events, 128 MiB held at most).
const MAX_CLAIM_ITEMS: usize = 512;

/// Most items remembered as to be delivered alone; past it the memory starts anew.
const MAX_ALONE: usize = 10_000;

/// A run: one job, or events due to one engine in one tenant, delivered in order.
type Run = Vec<ClaimedWork>;

/// Items to deliver alone, in a run of their own: each failed in a batch after other events of
/// it had run, so the batch (its deadline, its unit's limits) may be what failed it. Alone, it
/// succeeds, or fails and counts the attempt.
#[derive(Clone, Default)]
struct Alone(Arc<std::sync::Mutex<std::collections::HashSet<String>>>);

impl Alone {
    fn insert(&self, id: &str) {
        let mut ids = self.0.lock().expect("alone lock");
        if ids.len() >= MAX_ALONE {
            ids.clear();
        }
        ids.insert(id.to_owned());
    }

    /// Whether `id` must run alone; it is forgotten once asked (the run it goes to is alone).
    fn take(&self, id: &str) -> bool {
        self.0.lock().expect("alone lock").remove(id)
    }
}

/// Groups `claimed` items (in due order) into runs: the deliveries of one engine and tenant in
/// batches of at most [`MAX_DELIVERY_BATCH`] events (a pack counts its events) and
/// [`MAX_DELIVERY_BATCH_BYTES`] of payloads, each in due order; jobs and events to deliver
/// alone one per run. Runs are ordered by their first item.
fn into_runs(claimed: Vec<ClaimedWork>, alone: &Alone) -> Vec<Run> {
    let mut runs: Vec<Run> = Vec::new();
    // The open batch of each (engine, tenant): an index into `runs`, and the calls and payload
    // bytes it holds.
    let mut open: std::collections::HashMap<(String, String), (usize, usize, usize)> =
        std::collections::HashMap::new();
    for work in claimed {
        if work.kind == WorkKind::Job || alone.take(&work.id) {
            runs.push(vec![work]);
            continue;
        }
        let key = (work.engine_code.clone(), work.tenant_id.clone());
        let (calls, bytes) = (work.calls(), work.payload.len());
        match open.get_mut(&key) {
            Some((index, open_calls, open_bytes))
                if *open_calls + calls <= MAX_DELIVERY_BATCH
                    && *open_bytes + bytes <= MAX_DELIVERY_BATCH_BYTES =>
            {
                *open_calls += calls;
                *open_bytes += bytes;
                runs[*index].push(work);
            }
            _ => {
                open.insert(key, (runs.len(), calls, bytes));
                runs.push(vec![work]);
            }
        }
    }
    runs
}

/// Runs due work of the engines loaded on this host until `shutdown`, then waits for the runs
/// in flight (each bounded by the lifecycle deadline) and hands back the items it had claimed
/// but not started.
///
/// Claiming and running are two tasks: a claimer keeps up to `concurrency` claimed runs
/// waiting for a slot, claiming again once half of them have started (one claim statement per
/// `concurrency / 2` runs or more, where one per finished run would make every delivery pay a
/// write transaction), and this task starts each waiting run as soon as a slot frees, without
/// waiting for a claim.
pub async fn run_worker(
    engines: Arc<EngineRegistry>,
    queue: WorkQueue,
    config: WorkerConfig,
    shutdown: CancellationToken,
) {
    let concurrency = config.concurrency.max(1);
    let permits = Arc::new(Semaphore::new(concurrency));
    let running = TaskTracker::new();
    let in_flight = InFlight::default();
    let alone = Alone::default();
    // A run may wait for a slot while the runs ahead of it take the whole lifecycle deadline
    // (at most `concurrency` runs wait, another round may be held by the claimer, and every
    // run ahead ends within the deadline), then run for the deadline itself: the lease
    // outlives all three.
    // (The longest any engine has: engines may have their own.)
    let lifecycle_timeout = engines
        .runtime()
        .config()
        .loosest_limits()
        .lifecycle_timeout;
    // Then it may wait for an engine slot, at most `ADMISSION_PATIENCE`.
    let lease = lifecycle_timeout * 3 + ADMISSION_PATIENCE + Duration::from_secs(30);
    let (waiting_sender, mut waiting) = tokio::sync::mpsc::channel(concurrency);
    let claimer = tokio::spawn(claim_ahead(ClaimAhead {
        engines: engines.clone(),
        queue: queue.clone(),
        waiting: waiting_sender,
        alone: alone.clone(),
        lease,
        poll_interval: config.poll_interval,
        shutdown: shutdown.clone(),
    }));
    loop {
        // A free slot first, then the next claimed run: runs wait in `waiting` (whose
        // capacity bounds them), not here.
        let permit = tokio::select! {
            permit = permits.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
            () = shutdown.cancelled() => break,
        };
        let run = tokio::select! {
            run = waiting.recv() => match run {
                Some(run) => run,
                None => break,
            },
            () = shutdown.cancelled() => break,
        };
        let engines = engines.clone();
        let queue = queue.clone();
        let alone = alone.clone();
        let run_number = in_flight.start(run.clone());
        let in_flight = in_flight.clone();
        running.spawn(async move {
            run_one(&engines, &queue, &alone, run, permit).await;
            in_flight.finish(run_number);
        });
    }
    // The claimer stops at `shutdown` (or ended because this loop did); what it had claimed
    // and nobody started goes back to the queue for the next host to claim.
    waiting.close();
    let mut unstarted = match claimer.await {
        Ok(held) => held,
        Err(error) => {
            tracing::error!(%error, "the engine work claimer stopped");
            Vec::new()
        }
    };
    while let Ok(run) = waiting.try_recv() {
        unstarted.extend(run);
    }
    if !unstarted.is_empty()
        && let Err(error) = queue.release(&unstarted).await
    {
        tracing::error!(
            items = unstarted.len(),
            error = format!("{error:#}"),
            "handing back claimed engine work failed; it runs again when its lease ends"
        );
    }
    running.close();
    if tokio::time::timeout(config.drain_timeout, running.wait())
        .await
        .is_err()
    {
        // Runs still going at the deadline: their items go back to the queue now (a late
        // completion of one is refused, its claim no longer held), not when their leases end.
        let abandoned = in_flight.take_all();
        tracing::warn!(
            items = abandoned.len(),
            "engine work still running at the shutdown deadline: handed back to the queue"
        );
        if let Err(error) = queue.release(&abandoned).await {
            tracing::error!(
                items = abandoned.len(),
                error = format!("{error:#}"),
                "handing back running engine work failed; it runs again when its lease ends"
            );
        }
    }
}

/// The runs this host's worker started and that have not finished, so that a shutdown past its
/// deadline can hand their items back.
#[derive(Clone, Default)]
struct InFlight(Arc<std::sync::Mutex<(u64, std::collections::HashMap<u64, Run>)>>);

impl InFlight {
    /// Records a started run; returns its number.
    fn start(&self, run: Run) -> u64 {
        let mut guard = self.0.lock().expect("in-flight runs lock");
        let (next, runs) = &mut *guard;
        *next += 1;
        runs.insert(*next, run);
        *next
    }

    fn finish(&self, run_number: u64) {
        self.0
            .lock()
            .expect("in-flight runs lock")
            .1
            .remove(&run_number);
    }

    /// Every item of the runs not finished, forgetting them.
    fn take_all(&self) -> Vec<ClaimedWork> {
        let mut guard = self.0.lock().expect("in-flight runs lock");
        guard.1.drain().flat_map(|(_, run)| run).collect()
    }
}

/// What the claimer of [`run_worker`] works with.
struct ClaimAhead {
    engines: Arc<EngineRegistry>,
    queue: WorkQueue,
    /// Claimed runs waiting for a slot; its capacity is the most that may wait.
    waiting: tokio::sync::mpsc::Sender<Run>,
    alone: Alone,
    lease: Duration,
    poll_interval: Duration,
    shutdown: CancellationToken,
}

/// Claims due items into `waiting` as runs until `shutdown` or until the worker stops taking
/// them (then answers the items it still held): as many runs as there is room for, once there
/// is room for half of its capacity. A claim asks for as many items per free place as the
/// previous claim made per run (1 to [`MAX_DELIVERY_BATCH`]; at most [`MAX_CLAIM_ITEMS`]), so a backlog of few tenants is
/// claimed in full batches and one of many tenants one item per run; runs claimed beyond the
/// room are held and sent first next time. When nothing is due it waits for an enqueue on
/// this host or the poll interval (other hosts' work).
async fn claim_ahead(claimer: ClaimAhead) -> Vec<ClaimedWork> {
    let ClaimAhead {
        engines,
        queue,
        waiting,
        alone,
        lease,
        poll_interval,
        shutdown,
    } = claimer;
    let batch = (waiting.max_capacity() / 2).max(1);
    let mut held: std::collections::VecDeque<Run> = std::collections::VecDeque::new();
    let mut items_per_run = 1;
    let held_items = |held: std::collections::VecDeque<Run>| held.into_iter().flatten().collect();
    while !shutdown.is_cancelled() {
        let room = tokio::select! {
            room = waiting.reserve_many(batch) => match room {
                Ok(room) => room,
                Err(_) => return held_items(held),
            },
            () = shutdown.cancelled() => return held_items(held),
        };
        let mut room: Vec<_> = room.collect();
        if let Ok(more) = waiting.try_reserve_many(waiting.capacity()) {
            room.extend(more);
        }
        let mut found = 0;
        if held.is_empty() {
            let codes = engines.codes();
            let limit = (room.len() * items_per_run).min(MAX_CLAIM_ITEMS);
            let limit = u32::try_from(limit).unwrap_or(u32::MAX);
            let claimed = match queue.claim(&codes, limit, lease).await {
                Ok(claimed) => claimed,
                Err(error) => {
                    tracing::error!(error = format!("{error:#}"), "claiming engine work failed");
                    Vec::new()
                }
            };
            found = claimed.len();
            let runs = into_runs(claimed, &alone);
            if !runs.is_empty() {
                items_per_run = (found / runs.len()).clamp(1, MAX_DELIVERY_BATCH);
            }
            held.extend(runs);
        }
        for slot in room {
            let Some(run) = held.pop_front() else { break };
            slot.send(run);
        }
        if found == 0 && held.is_empty() {
            tokio::select! {
                () = queue.enqueued() => {}
                () = tokio::time::sleep(poll_interval) => {}
                () = shutdown.cancelled() => return Vec::new(),
            }
        }
    }
    held_items(held)
}

/// How a run ended.
#[derive(Debug)]
enum RunOutcome {
    /// Every item ran; its effects and its completion committed together.
    Done,
    /// The item at `index` failed with `reason`: nothing the run buffered since its last
    /// commit is kept (the items a synchronisation point committed with their completions
    /// are done).
    Failed {
        index: usize,
        reason: String,
        kept: Kept,
    },
    /// Every item ran but their unit could not be committed.
    NotCommitted { reason: String, kept: Kept },
}

/// Per item of a run, how many of its first calls had their effects committed by a
/// synchronisation point (of a later call of the same item) without the item completing: a
/// pack split after a failure delivers its events from there on ([`WorkQueue::split`]), so an
/// event whose call ended before such a commit is not delivered again. (A run cut off by its
/// deadline records nothing for the call it was in.)
type Kept = Vec<usize>;

/// Runs one claimed run in the worker's slot `permit` holds, once admitted within its
/// tenant's share of the engine runtime, and records its outcome. A run not admitted within
/// [`ADMISSION_PATIENCE`] goes back to the queue uncounted (see [`WorkQueue::postpone`]).
///
/// Each item that succeeds is deleted in the transaction of the run's unit of work
/// (`EngineRuntime::call_admitted`), through the host's group-commit writer: the run's writes,
/// events and jobs and the items' completions commit together, all or nothing. Until then the
/// items stay `running` under their lease, so nobody claims them again, and a crash before the
/// commit runs them again with nothing of the first run left behind (but what its
/// synchronisation points committed, with the completions of the items done by then).
///
/// When an item fails: alone, or first of its batch, the failure counts (retried after
/// [`backoff`]) and the rest of the batch goes back uncounted; later in a batch, nothing counts,
/// the whole batch goes back and the item is delivered alone next, so a batch never fails an
/// item that alone would succeed.
async fn run_one(
    engines: &EngineRegistry,
    queue: &WorkQueue,
    alone: &Alone,
    run: Run,
    permit: tokio::sync::OwnedSemaphorePermit,
) {
    let Some(first) = run.first() else { return };
    let admitted = engines
        .runtime()
        .admission()
        .admit_to(
            Some(&first.tenant_id),
            Some(&first.engine_code),
            CallKind::Background,
            ADMISSION_PATIENCE,
        )
        .await;
    let admitted = match admitted {
        Ok(admitted) => admitted,
        Err(refused) => {
            drop(permit);
            tracing::debug!(engine = %first.engine_code, work_id = %first.id, items = run.len(), reason = %refused, "engine work postponed: no engine slot");
            if let Err(error) = queue.postpone(&run, ADMISSION_RETRY).await {
                tracing::error!(work_id = %first.id, error = format!("{error:#}"), "postponing engine work failed; it runs again when its lease ends");
            }
            return;
        }
    };
    // The run continues the trace its first sampled item was queued in (a job: the engine
    // call that scheduled it; an engine's event: the call that published it), else its first
    // traced item's (left out, and passed on as such).
    let traced = || run.iter().filter_map(|item| item.traceparent.as_deref());
    let traceparent = traced()
        .find(|traceparent| tessera_http::trace_context::is_sampled(traceparent))
        .or_else(|| traced().next());
    let span = tessera_http::trace_context::span_continuing_stored(traceparent, || {
        tracing::info_span!(
            "engine work",
            engine = %run[0].engine_code,
            kind = run[0].kind.as_str(),
            items = run.len(),
        )
    });
    let outcome = deliver(engines, &run, admitted).instrument(span).await;
    drop(permit);
    let recorded = match outcome {
        RunOutcome::Done => Ok(()),
        RunOutcome::Failed {
            index,
            reason,
            kept,
        } => {
            let work = &run[index];
            tracing::warn!(engine = %work.engine_code, work_id = %work.id, kind = work.kind.as_str(), attempt = work.attempt, batch = run.len(), error = %reason, "engine work failed");
            if work.is_pack() {
                // Its events run one by one next; the other items go back uncounted.
                let others: Vec<ClaimedWork> = run
                    .iter()
                    .enumerate()
                    .filter(|(other, _)| *other != index)
                    .map(|(_, work)| work.clone())
                    .collect();
                let rest = queue.release(&others).await;
                queue.split(work, kept[index]).await.and(rest)
            } else if index == 0 {
                let rest = queue.release(&run[1..]).await;
                queue.fail(work, &reason).await.and(rest)
            } else {
                alone.insert(&work.id);
                queue.release(&run).await
            }
        }
        RunOutcome::NotCommitted { reason, .. } if run.len() == 1 && !first.is_pack() => {
            tracing::warn!(engine = %first.engine_code, work_id = %first.id, kind = first.kind.as_str(), attempt = first.attempt, error = %reason, "engine work failed");
            queue.fail(first, &reason).await
        }
        RunOutcome::NotCommitted { reason, kept } => {
            tracing::warn!(engine = %first.engine_code, items = run.len(), error = %reason, "a batch of engine work could not be committed; each item runs alone next");
            let mut singles = Vec::new();
            let mut recorded = Ok(());
            for (work, kept) in run.iter().zip(kept) {
                if work.is_pack() {
                    recorded = queue.split(work, kept).await.and(recorded);
                } else {
                    alone.insert(&work.id);
                    singles.push(work.clone());
                }
            }
            queue.release(&singles).await.and(recorded)
        }
    };
    if let Err(error) = recorded {
        tracing::error!(work_id = %first.id, error = format!("{error:#}"), "recording the outcome of engine work failed; it runs again when its lease ends");
    }
}

/// A run's item, ready to deliver.
enum Delivery {
    Event(wit::Event),
    Job(wit::Job),
}

/// Runs `run` on one instance, each item in turn (one job, or the events of one engine and
/// tenant: each a call of its own on that instance, with its own correlation id and scan
/// budget), as one unit of work, within the lifecycle deadline.
async fn deliver(engines: &EngineRegistry, run: &[ClaimedWork], admitted: Permit) -> RunOutcome {
    let first = &run[0];
    let Some(engine) = engines.get(&first.engine_code) else {
        return RunOutcome::Failed {
            index: 0,
            reason: format!("the engine {} is not loaded", first.engine_code),
            kept: vec![0; run.len()],
        };
    };
    // Each call, with the index in `run` of its item, which completes after its last call.
    let mut deliveries = Vec::with_capacity(run.len());
    for (index, work) in run.iter().enumerate() {
        match work.kind {
            WorkKind::Event => match delivered_events(&work.payload) {
                Ok(events) if !events.is_empty() => {
                    let last = events.len() - 1;
                    deliveries.extend(events.iter().enumerate().map(|(position, event)| {
                        let completes = position == last;
                        (
                            event.correlation_id.clone(),
                            Delivery::Event(event_to_wit(event)),
                            (index, position, completes),
                        )
                    }));
                }
                Ok(_) => {
                    return RunOutcome::Failed {
                        index,
                        reason: "an undeliverable event: an empty pack".to_owned(),
                        kept: vec![0; run.len()],
                    };
                }
                Err(error) => {
                    return RunOutcome::Failed {
                        index,
                        reason: format!("an undeliverable event: {error}"),
                        kept: vec![0; run.len()],
                    };
                }
            },
            WorkKind::Job => deliveries.push((
                work.id.clone(),
                Delivery::Job(wit::Job {
                    id: work.id.clone(),
                    tenant_id: work.tenant_id.clone(),
                    payload: work.payload.clone(),
                    attempt: work.attempt,
                }),
                (index, 0, true),
            )),
        }
    }
    let scope = engine.scope(&first.tenant_id, Some(deliveries[0].0.clone()));
    let runtime = engines.runtime();
    // The item running (its index in `run`), for a trap or the deadline.
    let current = std::sync::atomic::AtomicUsize::new(0);
    let kept = std::sync::Mutex::new(vec![0; run.len()]);
    let outcome = runtime
        .call_admitted(
            admitted,
            &engine.pre,
            scope,
            runtime
                .config()
                .limits_of(&first.engine_code)
                .lifecycle_timeout,
            Result::is_ok,
            async |guest, store| {
                for (correlation_id, delivery, (index, position, completes)) in deliveries {
                    current.store(index, std::sync::atomic::Ordering::Relaxed);
                    store.data_mut().begin_delivery(correlation_id);
                    let commit_points = store.data().commit_points();
                    let result = match &delivery {
                        Delivery::Event(event) => guest.call_on_event(&mut *store, event).await,
                        Delivery::Job(job) => guest.call_run_job(&mut *store, job).await,
                    };
                    if store.data().commit_points() != commit_points {
                        // The calls of this item before this one are committed.
                        kept.lock().expect("kept calls lock")[index] = position;
                    }
                    match result? {
                        Ok(()) if completes => {
                            let work = &run[index];
                            store
                                .data_mut()
                                .unit
                                .complete((work.id.clone(), work.attempt));
                        }
                        Ok(()) => {}
                        Err(reason) => return Ok(Err((index, reason))),
                    }
                }
                Ok(Ok(()))
            },
        )
        .await;
    let failed_at = || current.load(std::sync::atomic::Ordering::Relaxed);
    let kept = kept.into_inner().expect("kept calls lock");
    match outcome {
        Ok(Ok(())) => RunOutcome::Done,
        Ok(Err((index, reason))) => RunOutcome::Failed {
            index,
            reason,
            kept,
        },
        Err(CallError::Commit(reason)) => RunOutcome::NotCommitted { reason, kept },
        Err(error) => RunOutcome::Failed {
            index: failed_at(),
            reason: error.into_reason(&engine.descriptor.code),
            kept,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn work(id: &str, engine_code: &str, tenant_id: &str, kind: WorkKind) -> ClaimedWork {
        ClaimedWork {
            id: id.to_owned(),
            engine_code: engine_code.to_owned(),
            tenant_id: tenant_id.to_owned(),
            kind,
            payload: Vec::new(),
            attempt: 1,
            traceparent: None,
        }
    }

    fn ids(runs: &[Run]) -> Vec<Vec<&str>> {
        runs.iter()
            .map(|run| run.iter().map(|work| work.id.as_str()).collect())
            .collect()
    }

    #[test]
    fn events_of_one_engine_and_tenant_run_together_in_due_order() {
        let alone = Alone::default();
        alone.insert("e5");
        let claimed = vec![
            work("e1", "activity", "t1", WorkKind::Event),
            work("e2", "activity", "t2", WorkKind::Event),
            work("j1", "activity", "t1", WorkKind::Job),
            work("e3", "activity", "t1", WorkKind::Event),
            work("e4", "chat", "t1", WorkKind::Event),
            work("e5", "activity", "t1", WorkKind::Event),
            work("e6", "activity", "t2", WorkKind::Event),
        ];
        assert_eq!(
            ids(&into_runs(claimed, &alone)),
            [
                vec!["e1", "e3"],
                vec!["e2", "e6"],
                vec!["j1"],
                vec!["e4"],
                vec!["e5"],
            ]
        );
        // Delivered alone once, then batched again.
        let claimed = vec![
            work("e5", "activity", "t1", WorkKind::Event),
            work("e7", "activity", "t1", WorkKind::Event),
        ];
        assert_eq!(ids(&into_runs(claimed, &alone)), [vec!["e5", "e7"]]);

        let many: Vec<ClaimedWork> = (0..MAX_DELIVERY_BATCH * 2 + 1)
            .map(|index| work(&format!("e{index}"), "activity", "t1", WorkKind::Event))
            .collect();
        let sizes: Vec<usize> = into_runs(many, &alone).iter().map(Vec::len).collect();
        assert_eq!(sizes, [MAX_DELIVERY_BATCH, MAX_DELIVERY_BATCH, 1]);

        // Large events make smaller batches; one larger than the bound runs alone.
        let sized = |id: &str, bytes: usize| ClaimedWork {
            payload: vec![b'x'; bytes],
            ..work(id, "activity", "t1", WorkKind::Event)
        };
        let third = MAX_DELIVERY_BATCH_BYTES / 3;
        let large = vec![
            sized("l1", third),
            sized("l2", third),
            sized("l3", third),
            sized("l4", third),
            sized("huge", MAX_DELIVERY_BATCH_BYTES + 1),
            sized("l5", 10),
        ];
        assert_eq!(
            ids(&into_runs(large, &alone)),
            [vec!["l1", "l2", "l3"], vec!["l4"], vec!["huge"], vec!["l5"]]
        );

        // A pack counts its events toward the batch.
        let pack = |id: &str, events: usize| ClaimedWork {
            payload: serde_json::to_vec(&vec![serde_json::json!({}); events]).unwrap(),
            ..work(id, "activity", "t1", WorkKind::Event)
        };
        let packs = vec![
            pack("p1", 6),
            pack("p2", 6),
            pack("p3", MAX_DELIVERY_BATCH - 12),
            pack("p4", 1),
            work("e8", "activity", "t1", WorkKind::Event),
        ];
        assert!(pack("p1", 6).is_pack() && !pack("p4", 1).is_pack());
        assert_eq!(
            ids(&into_runs(packs, &alone)),
            [vec!["p1", "p2", "p3"], vec!["p4", "e8"]]
        );
    }
}
