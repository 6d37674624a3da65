//! Group commit for engines' storage batches (`storage.write-batch`): one writer task per host
//! takes every batch waiting at the moment it starts a transaction (up to [`MAX_GROUP`]) and
//! commits them together, instead of one write transaction per call. Concurrent engine calls
//! (32 webhook deliveries recording their outcomes, say) then cost SQLite's single writer one
//! transaction, and PostgreSQL one round trip per statement, for the whole group.
//!
//! Each batch stays all-or-nothing and is answered only after its group committed. The group's
//! effect is exactly that of its batches applied one after another in arrival order (the last
//! write of a key wins; inside one batch, as `write-batch` documents, the sets come before the
//! deletes). If the group's transaction fails, every batch is retried alone, so one failing
//! batch cannot take the others down with it.

use anyhow::Context as _;
use tokio::sync::{mpsc, oneshot};

use super::work::{NewWork, WorkQueue};
use crate::storage::engine_kv::{self, KvScope, KvWrite};
use crate::storage::{Database, Tx};

/// The most batches one transaction takes.
const MAX_GROUP: usize = 64;

/// How many batches may wait for the writer before callers wait to enqueue.
const QUEUE: usize = 1024;

/// One engine call's `write-batch`, scoped to the engine and tenant of the call.
#[derive(Debug, Clone)]
pub struct StorageBatch {
    pub engine_code: String,
    pub tenant_id: String,
    pub sets: Vec<(String, Vec<u8>)>,
    pub deletes: Vec<String>,
    /// Jobs to schedule in the same transaction.
    pub jobs: Vec<NewWork>,
}

struct Job {
    batch: StorageBatch,
    reply: oneshot::Sender<anyhow::Result<Vec<String>>>,
}

/// The handle engine calls use; cheap to clone.
#[derive(Clone)]
pub struct BatchWriter {
    jobs: mpsc::Sender<Job>,
}

impl BatchWriter {
    /// Starts the writer task on the current runtime; it ends when every handle is dropped.
    pub fn start(database: Database, queue: WorkQueue) -> Self {
        let (jobs, receiver) = mpsc::channel(QUEUE);
        tokio::spawn(run(database, queue, receiver));
        Self { jobs }
    }

    /// Writes `batch` (all of it or nothing) and answers once it is committed, with the ids of
    /// its jobs in order.
    pub async fn write(&self, batch: StorageBatch) -> anyhow::Result<Vec<String>> {
        let (reply, answer) = oneshot::channel();
        self.jobs
            .send(Job { batch, reply })
            .await
            .map_err(|_| anyhow::anyhow!("the storage batch writer has stopped"))?;
        answer
            .await
            .map_err(|_| anyhow::anyhow!("the storage batch writer dropped a batch"))?
    }
}

async fn run(database: Database, queue: WorkQueue, mut receiver: mpsc::Receiver<Job>) {
    let mut group = Vec::with_capacity(MAX_GROUP);
    while receiver.recv_many(&mut group, MAX_GROUP).await > 0 {
        let (batches, replies): (Vec<StorageBatch>, Vec<_>) =
            group.drain(..).map(|job| (job.batch, job.reply)).unzip();
        let scheduled = batches.iter().any(|batch| !batch.jobs.is_empty());
        let outcomes = match write_group(&database, &batches).await {
            Ok(ids) => ids.into_iter().map(Ok).collect(),
            Err(error) if batches.len() > 1 => {
                tracing::warn!(
                    batches = batches.len(),
                    error = format!("{error:#}"),
                    "a group of storage batches failed; writing each alone"
                );
                let mut outcomes = Vec::with_capacity(batches.len());
                for batch in &batches {
                    outcomes.push(
                        write_group(&database, std::slice::from_ref(batch))
                            .await
                            .map(|mut ids| ids.remove(0)),
                    );
                }
                outcomes
            }
            Err(error) => vec![Err(error)],
        };
        if scheduled {
            queue.wake();
        }
        for (reply, outcome) in replies.into_iter().zip(outcomes) {
            let _ = reply.send(outcome);
        }
    }
}

/// Writes `batches` in one transaction; the job ids of each, in order.
async fn write_group(
    database: &Database,
    batches: &[StorageBatch],
) -> anyhow::Result<Vec<Vec<String>>> {
    let mut tx = database.begin().await?;
    let ids = write_in(&mut tx, batches).await?;
    tx.commit()
        .await
        .context("committing a group of storage batches")?;
    Ok(ids)
}

async fn write_in(tx: &mut Tx, batches: &[StorageBatch]) -> anyhow::Result<Vec<Vec<String>>> {
    engine_kv::apply_in(tx, &final_writes(batches)).await?;
    let jobs: Vec<NewWork> = batches
        .iter()
        .flat_map(|batch| batch.jobs.iter().cloned())
        .collect();
    let mut ids = WorkQueue::insert_in(tx, &jobs).await?.into_iter();
    Ok(batches
        .iter()
        .map(|batch| ids.by_ref().take(batch.jobs.len()).collect())
        .collect())
}

/// The net effect of `batches` applied in order: one write per key.
fn final_writes(batches: &[StorageBatch]) -> Vec<KvWrite<'_>> {
    engine_kv::net_writes(batches.iter().map(|batch| {
        let scope = KvScope {
            engine_code: &batch.engine_code,
            tenant_id: &batch.tenant_id,
        };
        (scope, batch.sets.as_slice(), batch.deletes.as_slice())
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(tenant_id: &str, sets: &[(&str, &str)], deletes: &[&str]) -> StorageBatch {
        StorageBatch {
            engine_code: "chat".to_owned(),
            tenant_id: tenant_id.to_owned(),
            sets: sets
                .iter()
                .map(|(key, value)| ((*key).to_owned(), value.as_bytes().to_vec()))
                .collect(),
            deletes: deletes.iter().map(|key| (*key).to_owned()).collect(),
            jobs: Vec::new(),
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
