//! Group commit for engine calls' units of work (`unit_of_work.rs`: the storage writes, events
//! and jobs of one call) and for the completions of engine work: one writer task per host takes
//! everything waiting at the moment it starts a transaction (up to [`MAX_GROUP`] items) and
//! commits it together, instead of one write transaction per call. Concurrent engine calls
//! (notes created, and the activity deliveries they cause with the completions of their work
//! items, say) then cost SQLite's single writer one transaction, and PostgreSQL one round trip
//! per statement, for the whole group. The units holding prefix deletions or blobs (which
//! read and lock as they write) are applied one by one in a second transaction of the group,
//! each in a savepoint, so one refused by its condition or its quota leaves the others.
//!
//! Each batch stays all-or-nothing and is answered only after its group committed. The group's
//! effect is exactly that of its batches applied one after another in arrival order (the last
//! write of a key wins; inside one batch, as `write-batch` documents, the sets come before the
//! deletes). If the group's transaction fails, every batch is retried alone, so one failing
//! batch cannot take the others down with it.
//!
//! One group commits at a time, even on PostgreSQL: measured, several concurrent groups
//! (smaller, so more statements and commits) cost more CPU than the latency they save
//! (the `webhooks` benchmark). Rows are written in key order, so groups of two
//! hosts sharing one PostgreSQL take their row locks in the same order.

use anyhow::Context as _;
use tokio::sync::{mpsc, oneshot};

use super::store::realtime_events::{self, NewPublished};
use super::store::write_group as store;
use crate::realtime::Publication;
use crate::work_queue::{NewWork, WorkQueue};
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::Notify;

use tessera_auth::audit::{self, EngineAuditEntry};
use tessera_storage::engine_blobs;
use tessera_storage::engine_kv::{self, KvKey, KvScope, KvWrite};
use tessera_storage::{Database, Pool, Tx};

/// The most items (batches and completions) one transaction takes.
const MAX_GROUP: usize = 256;

/// How many items may wait for the writer before callers wait to enqueue.
const QUEUE: usize = 1024;

/// One engine call's unit of work, scoped to the engine and tenant of the call.
#[derive(Debug, Clone, Default)]
pub struct StorageBatch {
    pub engine_code: String,
    pub tenant_id: String,
    /// Conditions (`transact`): nothing is written unless each key holds this value.
    pub expect: Vec<(String, Option<Vec<u8>>)>,
    pub sets: Vec<(String, Vec<u8>)>,
    pub deletes: Vec<String>,
    /// Counters (`transact`): amounts added to integers stored as decimal text.
    pub add: Vec<(String, i64)>,
    /// Jobs to schedule and event deliveries, in the same transaction.
    pub jobs: Vec<NewWork>,
    /// Disjoint prefixes whose entries are deleted before the sets and deletes.
    pub prefix_deletes: Vec<String>,
    /// The unit's blob writes.
    pub blobs: BlobWrites,
    /// The engine work items (`(id, attempt)`) whose runs this unit holds the effects of:
    /// deleted in the same transaction when the unit is written, so a delivery's effect and
    /// its completion commit together.
    pub completes: Vec<(String, u32)>,
    /// The audit entry of an audited operation the call answered (rare: an owner's action),
    /// written in the unit's transaction.
    pub audit: Vec<EngineAuditEntry>,
    /// What the call published to its realtime topics, written in the unit's transaction.
    pub publications: Vec<Publication>,
}

/// The blob writes of a unit of work: prefix deletions, then deletions, then puts; then the
/// scope's usage must be within `quota`, or nothing of the unit is written.
#[derive(Debug, Clone, Default)]
pub struct BlobWrites {
    pub puts: Vec<(String, Vec<u8>)>,
    pub deletes: Vec<String>,
    pub prefix_deletes: Vec<String>,
    pub quota: Option<u64>,
}

impl BlobWrites {
    fn is_empty(&self) -> bool {
        self.puts.is_empty() && self.deletes.is_empty() && self.prefix_deletes.is_empty()
    }
}

impl StorageBatch {
    /// True when the batch has conditions or counters, which read the database at commit.
    fn reads(&self) -> bool {
        !self.expect.is_empty() || !self.add.is_empty()
    }

    /// True when the batch is applied on its own, in a savepoint (prefix deletions, blobs and
    /// audit entries are not merged with other batches' writes: the group's one-statement
    /// path stays for the common calls).
    fn one_by_one(&self) -> bool {
        !self.prefix_deletes.is_empty()
            || !self.blobs.is_empty()
            || !self.audit.is_empty()
            || !self.publications.is_empty()
    }

    fn scope(&self) -> KvScope<'_> {
        KvScope {
            engine_code: &self.engine_code,
            tenant_id: &self.tenant_id,
        }
    }

    fn key<'a>(&'a self, key: &'a str) -> KvKey<'a> {
        KvKey {
            engine_code: &self.engine_code,
            tenant_id: &self.tenant_id,
            key,
        }
    }
}

/// What became of one batch of a group: its job ids, or `None` when a condition did not hold.
type Outcome = Option<Vec<String>>;

/// What the writer is asked to commit.
enum Item {
    /// A unit of work, answered with its job ids (`None`: a condition or its quota failed).
    Batch {
        batch: Box<StorageBatch>,
        reply: oneshot::Sender<anyhow::Result<Outcome>>,
    },
    /// A run of engine work (`(id, attempt)`) that succeeded: its item is deleted.
    Completion {
        work: (String, u32),
        reply: oneshot::Sender<anyhow::Result<()>>,
    },
}

/// The handle engine calls use; cheap to clone.
#[derive(Clone)]
pub struct BatchWriter {
    items: mpsc::Sender<Item>,
    /// Woken after a unit with realtime publications committed (`realtime::RealtimeFeed`).
    published: Arc<Notify>,
}

impl BatchWriter {
    /// Starts the writer task on the current runtime; it ends when every handle is dropped.
    pub fn start(database: Database, queue: WorkQueue) -> Self {
        let (items, receiver) = mpsc::channel(QUEUE);
        tokio::spawn(run(database, queue, receiver));
        Self {
            items,
            published: Arc::default(),
        }
    }

    /// What is woken after a unit with realtime publications committed.
    pub fn published(&self) -> Arc<Notify> {
        self.published.clone()
    }

    /// Writes `batch` (all of it or nothing) and answers once it is committed, with the ids of
    /// its jobs in order.
    pub async fn write(&self, batch: StorageBatch) -> anyhow::Result<Vec<String>> {
        anyhow::ensure!(
            !batch.reads(),
            "a batch with conditions goes to write_conditional"
        );
        self.write_conditional(batch)
            .await?
            .context("a batch without conditions was refused")
    }

    /// Writes `batch` when its conditions hold (all of it or nothing) and answers once it is
    /// committed: its job ids, or `None` when a condition did not hold (nothing was written).
    pub async fn write_conditional(&self, batch: StorageBatch) -> anyhow::Result<Outcome> {
        let (reply, answer) = oneshot::channel();
        self.send(Item::Batch {
            batch: Box::new(batch),
            reply,
        })
        .await?;
        answer
            .await
            .map_err(|_| anyhow::anyhow!("the storage batch writer dropped a batch"))?
    }

    /// Deletes the item of a successful run of engine work (`(id, attempt)`; an item claimed
    /// again since, by a newer attempt, stays) and answers once that is committed.
    pub async fn complete(&self, work: (String, u32)) -> anyhow::Result<()> {
        let (reply, answer) = oneshot::channel();
        self.send(Item::Completion { work, reply }).await?;
        answer
            .await
            .map_err(|_| anyhow::anyhow!("the storage batch writer dropped a completion"))?
    }

    /// Commits an engine call's unit of work: true when committed, false when one of its
    /// conditions (or its blob quota) no longer held, and nothing was written.
    pub async fn commit_unit(&self, batch: StorageBatch) -> anyhow::Result<bool> {
        let publishes = !batch.publications.is_empty();
        let committed = self.write_conditional(batch).await?.is_some();
        if committed && publishes {
            self.published.notify_waiters();
        }
        Ok(committed)
    }

    async fn send(&self, item: Item) -> anyhow::Result<()> {
        self.items
            .send(item)
            .await
            .map_err(|_| anyhow::anyhow!("the storage batch writer has stopped"))
    }
}

async fn run(database: Database, queue: WorkQueue, mut receiver: mpsc::Receiver<Item>) {
    let mut group = Vec::with_capacity(MAX_GROUP);
    while receiver.recv_many(&mut group, MAX_GROUP).await > 0 {
        commit_group(&database, &queue, std::mem::take(&mut group)).await;
    }
}

/// Commits `group` in one transaction and answers each item; when that fails, each item is
/// committed alone.
async fn commit_group(database: &Database, queue: &WorkQueue, group: Vec<Item>) {
    let mut batches = Vec::new();
    let mut batch_replies = Vec::new();
    let mut completions = Vec::new();
    let mut completion_replies = Vec::new();
    for item in group {
        match item {
            Item::Batch { batch, reply } => {
                batches.push(*batch);
                batch_replies.push(reply);
            }
            Item::Completion { work, reply } => {
                completions.push(work);
                completion_replies.push(reply);
            }
        }
    }
    let scheduled = batches.iter().any(|batch| !batch.jobs.is_empty());
    let (mut one_by_one, grouped): (Vec<_>, Vec<_>) = batches
        .into_iter()
        .zip(batch_replies)
        .partition(|(batch, _)| batch.one_by_one());
    let (batches, batch_replies): (Vec<_>, Vec<_>) = grouped.into_iter().unzip();
    if !one_by_one.is_empty() {
        // Concurrent units may commit in any order; by scope, two hosts sharing a PostgreSQL
        // lock the blob usage rows of their groups in the same order.
        one_by_one.sort_by(|(left, _), (right, _)| {
            (&left.engine_code, &left.tenant_id).cmp(&(&right.engine_code, &right.tenant_id))
        });
        let (units, replies): (Vec<_>, Vec<_>) = one_by_one.into_iter().unzip();
        let outcomes = write_one_by_one(database, &units).await;
        for (reply, outcome) in replies.into_iter().zip(outcomes) {
            let _ = reply.send(outcome);
        }
    }
    let items = batches.len() + completions.len();
    let (batch_outcomes, completion_outcomes) =
        match write_group(database, &batches, &completions).await {
            Ok(outcomes) => (
                outcomes.into_iter().map(Ok).collect(),
                completions.iter().map(|_| Ok(())).collect(),
            ),
            Err(error) if items > 1 => {
                tracing::warn!(
                    batches = batches.len(),
                    completions = completions.len(),
                    error = format!("{error:#}"),
                    "a group of storage batches failed; writing each alone"
                );
                let mut batch_outcomes = Vec::with_capacity(batches.len());
                for batch in &batches {
                    batch_outcomes.push(
                        write_group(database, std::slice::from_ref(batch), &[])
                            .await
                            .map(|mut outcomes| outcomes.remove(0)),
                    );
                }
                let mut completion_outcomes = Vec::with_capacity(completions.len());
                for work in &completions {
                    completion_outcomes.push(
                        write_group(database, &[], std::slice::from_ref(work))
                            .await
                            .map(drop),
                    );
                }
                (batch_outcomes, completion_outcomes)
            }
            Err(error) => {
                let message = format!("{error:#}");
                (
                    batches
                        .iter()
                        .map(|_| Err(anyhow::anyhow!("{message}")))
                        .collect(),
                    completions
                        .iter()
                        .map(|_| Err(anyhow::anyhow!("{message}")))
                        .collect(),
                )
            }
        };
    if scheduled {
        queue.wake();
    }
    for (reply, outcome) in batch_replies.into_iter().zip(batch_outcomes) {
        let _ = reply.send(outcome);
    }
    for (reply, outcome) in completion_replies.into_iter().zip(completion_outcomes) {
        let _ = reply.send(outcome);
    }
}

/// Writes `units` in one transaction, each in a savepoint: the outcome of each, in order. When
/// that transaction fails, each unit is written alone, so one failing unit cannot take the
/// others down with it.
async fn write_one_by_one(
    database: &Database,
    units: &[StorageBatch],
) -> Vec<anyhow::Result<Outcome>> {
    if units.len() > 1 {
        match write_in_savepoints(database, units).await {
            Ok(outcomes) => return outcomes.into_iter().map(Ok).collect(),
            Err(error) => tracing::warn!(
                units = units.len(),
                error = format!("{error:#}"),
                "a group of units with blobs or prefix deletions failed; writing each alone"
            ),
        }
    }
    let mut outcomes = Vec::with_capacity(units.len());
    for unit in units {
        outcomes.push(write_alone(database, unit).await);
    }
    outcomes
}

async fn write_in_savepoints(
    database: &Database,
    units: &[StorageBatch],
) -> anyhow::Result<Vec<Outcome>> {
    let mut tx = database.begin().await?;
    let mut outcomes = Vec::with_capacity(units.len());
    for unit in units {
        tx.savepoint().await?;
        let outcome = write_unit_in(&mut tx, unit).await?;
        if outcome.is_some() {
            tx.release_savepoint().await?;
        } else {
            tx.rollback_to_savepoint().await?;
        }
        outcomes.push(outcome);
    }
    tx.commit()
        .await
        .context("committing units with blobs or prefix deletions")?;
    Ok(outcomes)
}

/// Writes `unit` in a transaction of its own ([`write_unit_in`]).
async fn write_alone(database: &Database, unit: &StorageBatch) -> anyhow::Result<Outcome> {
    let mut tx = database.begin().await?;
    let outcome = write_unit_in(&mut tx, unit).await?;
    if outcome.is_some() {
        tx.commit()
            .await
            .context("committing a unit of work alone")?;
    }
    Ok(outcome)
}

/// Writes `batch` in `tx`: its conditions (checked first), prefix deletions, writes, counters,
/// blobs (within its quota), jobs and completion; `None` when a condition or the quota does not
/// hold, and what it wrote must be undone (the caller rolls back).
async fn write_unit_in(tx: &mut Tx, batch: &StorageBatch) -> anyhow::Result<Outcome> {
    let scope = batch.scope();
    // Conditions are checked against the committed values, before anything is deleted.
    let read: Vec<KvKey<'_>> = batch
        .expect
        .iter()
        .map(|(key, _)| key)
        .chain(batch.add.iter().map(|(key, _)| key))
        .map(|key| batch.key(key))
        .collect();
    let locked = engine_kv::lock_in(tx, &read).await?;
    let committed = |key: &str| locked.values.get(&batch.key(key)).cloned().flatten();
    let holds = batch
        .expect
        .iter()
        .all(|(key, expected)| committed(key).as_deref() == expected.as_deref());
    if !holds {
        return Ok(None);
    }
    for prefix in &batch.prefix_deletes {
        engine_kv::delete_prefix_in(tx, &scope, prefix).await?;
    }
    let mut counted = Vec::with_capacity(batch.add.len());
    for (key, amount) in &batch.add {
        let base = counter_value(key, committed(key).as_deref()).map_err(anyhow::Error::msg)?;
        let sum = base
            .checked_add(*amount)
            .with_context(|| format!("adding {amount} to {key} ({base}) overflows"))?;
        counted.push((key.clone(), sum.to_string().into_bytes()));
    }
    let mut writes = final_writes(std::slice::from_ref(batch));
    writes.extend(counted.iter().map(|(key, value)| KvWrite {
        engine_code: &batch.engine_code,
        tenant_id: &batch.tenant_id,
        key,
        value: Some(value),
    }));
    // A placeholder nothing wrote is removed again.
    for placeholder in &locked.placeholders {
        let written = writes.iter().any(|write| write.key == placeholder.key);
        if !written {
            writes.push(KvWrite {
                engine_code: placeholder.engine_code,
                tenant_id: placeholder.tenant_id,
                key: placeholder.key,
                value: None,
            });
        }
    }
    engine_kv::apply_in(tx, &writes).await?;
    WorkQueue::insert_in(tx, &batch.jobs).await?;
    let blobs = &batch.blobs;
    for prefix in &blobs.prefix_deletes {
        engine_blobs::delete_prefix_in(tx, &scope, prefix).await?;
    }
    if !blobs.deletes.is_empty() {
        engine_blobs::delete_in(tx, &scope, &blobs.deletes).await?;
    }
    for (key, content) in &blobs.puts {
        engine_blobs::put_in(tx, &scope, key, content).await?;
    }
    if let Some(quota) = blobs.quota
        && engine_blobs::usage_in(tx, &scope).await? > quota
    {
        return Ok(None);
    }
    WorkQueue::complete_fenced_in(tx, &batch.completes).await?;
    for entry in &batch.audit {
        audit::record_engine_in(tx, entry).await?;
    }
    if !batch.publications.is_empty() {
        let occurred_at = crate::realtime::timestamp(chrono::Utc::now());
        let rows: Vec<NewPublished<'_>> = batch
            .publications
            .iter()
            .map(|publication| NewPublished {
                tenant_id: &batch.tenant_id,
                engine_code: &batch.engine_code,
                topic: format!("{}.{}", batch.engine_code, publication.topic),
                user_id: publication.user_id.as_deref(),
                kind: &publication.kind,
                occurred_at: &occurred_at,
            })
            .collect();
        realtime_events::insert_in(tx, &rows).await?;
    }
    Ok(Some(job_ids_of(batch)))
}

/// Writes `batches` and deletes the items of `completions` atomically; the outcome of each
/// batch, in order. Without conditions or counters, on PostgreSQL: one statement
/// (`engine_storage_write_group`, migrations 12 and 17), so one round trip and one commit;
/// otherwise a transaction of multi-row statements (on SQLite's writer).
///
/// The items a written unit completes are fenced ([`WorkQueue::complete_fenced_in`]): if one
/// was claimed again by another run, the whole group fails (and the caller writes each batch
/// alone, so only that unit is refused). A bare completion of a run claimed again deletes
/// nothing and is no error: it carries no effects.
async fn write_group(
    database: &Database,
    batches: &[StorageBatch],
    completions: &[(String, u32)],
) -> anyhow::Result<Vec<Outcome>> {
    let reads = batches.iter().any(StorageBatch::reads);
    if let (Pool::Postgres(pool), false) = (database.pool(), reads) {
        let ids = write_group_postgres(pool, batches, completions).await?;
        return Ok(ids.into_iter().map(Some).collect());
    }
    let mut tx = database.begin().await?;
    let ids = if reads {
        write_in_order(&mut tx, batches).await?
    } else {
        write_in(&mut tx, batches)
            .await?
            .into_iter()
            .map(Some)
            .collect()
    };
    WorkQueue::complete_in(&mut tx, completions).await?;
    // The work items of the units written (a unit whose condition failed completes nothing).
    let written = batches.iter().zip(&ids).filter(|(_, id)| id.is_some());
    let units_completed = completed_by(written.map(|(batch, _)| batch));
    WorkQueue::complete_fenced_in(&mut tx, &units_completed).await?;
    tx.commit()
        .await
        .context("committing a group of storage batches")?;
    Ok(ids)
}

/// The work items `units` complete.
fn completed_by<'a>(units: impl Iterator<Item = &'a StorageBatch>) -> Vec<(String, u32)> {
    units
        .flat_map(|batch| batch.completes.iter().cloned())
        .collect()
}

/// [`write_group`] on PostgreSQL: every row as arrays to one function call.
async fn write_group_postgres(
    pool: &sqlx::PgPool,
    batches: &[StorageBatch],
    completions: &[(String, u32)],
) -> anyhow::Result<Vec<Vec<String>>> {
    let writes = final_writes(batches);
    let (sets, deletes) = engine_kv::in_key_order(&writes);
    let jobs: Vec<_> = batches
        .iter()
        .flat_map(|batch| &batch.jobs)
        .map(NewWork::row)
        .collect();
    let completions = store::Completions {
        bare: completions,
        fenced: &completed_by(batches.iter()),
    };
    store::write_group_postgres(pool, &sets, &deletes, &jobs, completions).await?;
    Ok(batches.iter().map(job_ids_of).collect())
}

async fn write_in(tx: &mut Tx, batches: &[StorageBatch]) -> anyhow::Result<Vec<Vec<String>>> {
    engine_kv::apply_in(tx, &final_writes(batches)).await?;
    let jobs: Vec<NewWork> = batches
        .iter()
        .flat_map(|batch| batch.jobs.iter().cloned())
        .collect();
    WorkQueue::insert_in(tx, &jobs).await?;
    Ok(batches.iter().map(job_ids_of).collect())
}

fn job_ids_of(batch: &StorageBatch) -> Vec<String> {
    batch.jobs.iter().map(|job| job.id.clone()).collect()
}

/// The net effect of `batches` applied in order: one write per key.
fn final_writes(batches: &[StorageBatch]) -> Vec<KvWrite<'_>> {
    engine_kv::net_writes(batches.iter().map(|batch| {
        (
            batch.scope(),
            batch.sets.as_slice(),
            batch.deletes.as_slice(),
        )
    }))
}

/// [`write_in`] for a group with conditions or counters: the keys they read are locked and
/// read first ([`engine_kv::lock_in`]); then each batch, in arrival order, is checked against
/// those values as the group's earlier batches left them, and applied only when its
/// conditions hold (its sets, its deletes, then its counters). Only applied batches schedule
/// their jobs.
async fn write_in_order(tx: &mut Tx, batches: &[StorageBatch]) -> anyhow::Result<Vec<Outcome>> {
    let read: Vec<KvKey<'_>> = batches
        .iter()
        .flat_map(|batch| {
            let expected = batch.expect.iter().map(|(key, _)| key);
            let counted = batch.add.iter().map(|(key, _)| key);
            expected.chain(counted).map(|key| batch.key(key))
        })
        .collect();
    let locked = engine_kv::lock_in(tx, &read).await?;
    let mut written: HashMap<KvKey<'_>, Option<Vec<u8>>> = HashMap::new();
    let current = |written: &HashMap<KvKey<'_>, Option<Vec<u8>>>, key: &KvKey<'_>| {
        written
            .get(key)
            .or_else(|| locked.values.get(key))
            .cloned()
            .flatten()
    };
    let mut applied = Vec::with_capacity(batches.len());
    for batch in batches {
        let holds = batch.expect.iter().all(|(key, expected)| {
            current(&written, &batch.key(key)).as_deref() == expected.as_deref()
        });
        applied.push(holds);
        if !holds {
            continue;
        }
        for (key, value) in &batch.sets {
            written.insert(batch.key(key), Some(value.clone()));
        }
        for key in &batch.deletes {
            written.insert(batch.key(key), None);
        }
        for (key, amount) in &batch.add {
            let key = batch.key(key);
            let counted = counter_value(key.key, current(&written, &key).as_deref())
                .map_err(anyhow::Error::msg)?;
            let sum = counted
                .checked_add(*amount)
                .with_context(|| format!("adding {amount} to {} ({counted}) overflows", key.key))?;
            written.insert(key, Some(sum.to_string().into_bytes()));
        }
    }
    // A placeholder nothing wrote is removed again.
    for key in &locked.placeholders {
        written.entry(*key).or_insert(None);
    }
    let writes: Vec<KvWrite<'_>> = written
        .iter()
        .map(|(key, value)| KvWrite {
            engine_code: key.engine_code,
            tenant_id: key.tenant_id,
            key: key.key,
            value: value.as_deref(),
        })
        .collect();
    engine_kv::apply_in(tx, &writes).await?;
    let jobs: Vec<NewWork> = batches
        .iter()
        .zip(&applied)
        .filter(|(_, applied)| **applied)
        .flat_map(|(batch, _)| batch.jobs.iter().cloned())
        .collect();
    WorkQueue::insert_in(tx, &jobs).await?;
    Ok(batches
        .iter()
        .zip(applied)
        .map(|(batch, applied)| applied.then(|| job_ids_of(batch)))
        .collect())
}

/// The integer a counter holds: decimal text, absent is 0.
pub fn counter_value(key: &str, value: Option<&[u8]>) -> Result<i64, String> {
    let Some(value) = value else {
        return Ok(0);
    };
    std::str::from_utf8(value)
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .ok_or_else(|| format!("{key} does not hold an integer, so it cannot be added to"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(tenant_id: &str, sets: &[(&str, &str)], deletes: &[&str]) -> StorageBatch {
        StorageBatch {
            engine_code: "chat".to_owned(),
            tenant_id: tenant_id.to_owned(),
            expect: Vec::new(),
            add: Vec::new(),
            sets: sets
                .iter()
                .map(|(key, value)| ((*key).to_owned(), value.as_bytes().to_vec()))
                .collect(),
            deletes: deletes.iter().map(|key| (*key).to_owned()).collect(),
            ..StorageBatch::default()
        }
    }

    fn effects(batches: &[StorageBatch]) -> Vec<(String, String, Option<String>)> {
        let mut effects: Vec<_> = final_writes(batches)
            .into_iter()
            .map(|write| {
                (
                    write.tenant_id.to_owned(),
                    write.key.to_owned(),
                    write
                        .value
                        .map(|value| String::from_utf8(value.to_vec()).unwrap()),
                )
            })
            .collect();
        effects.sort();
        effects
    }

    #[test]
    fn the_last_write_of_a_key_wins_in_arrival_order() {
        let batches = [
            batch("t1", &[("a", "1"), ("b", "1")], &["c"]),
            batch("t1", &[("c", "2")], &["a"]),
            batch("t2", &[("a", "3")], &[]),
            // Inside one batch the sets come first, then the deletes.
            batch("t1", &[("b", "4")], &["b"]),
        ];
        assert_eq!(
            effects(&batches),
            vec![
                ("t1".to_owned(), "a".to_owned(), None),
                ("t1".to_owned(), "b".to_owned(), None),
                ("t1".to_owned(), "c".to_owned(), Some("2".to_owned())),
                ("t2".to_owned(), "a".to_owned(), Some("3".to_owned())),
            ]
        );
    }
}
