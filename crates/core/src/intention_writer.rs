//! Group commit for intentions: one writer task per host takes every intention waiting at
//! the moment it starts a transaction (up to [`MAX_BATCH`]), decides and writes them together
//! and commits once. Under load this turns dozens of small transactions into one, which is
//! what SQLite (one writer at a time) and a hot tenant's sequence row on PostgreSQL need; a
//! lone intention still goes straight through, without waiting for company.
//!
//! Each caller waits for its own answer, sent only after the commit: an acknowledged
//! intention is durable. If the batch's transaction fails, every intention in it is answered
//! with a 500 and none is stored.

use anyhow::Context as _;
use tokio::sync::{mpsc, oneshot};

use crate::families::FamilyCache;
use crate::intention_batch::{self, IntentionError, Prepared, ProcessedIntention, Submitter};
use crate::projections::signal::EventSignal;
use tessera_storage::Database;

/// The most intentions one transaction takes.
pub const MAX_BATCH: usize = 128;

/// The longest a batch waits for company under concurrent load.
const LINGER: std::time::Duration = std::time::Duration::from_millis(1);

/// How many intentions may wait for the writer before submitters wait to enqueue.
const QUEUE: usize = 4096;

type Reply = oneshot::Sender<Result<ProcessedIntention, IntentionError>>;

struct Job {
    submitter: Submitter,
    prepared: Prepared,
    reply: Reply,
}

/// The handle submitters use; cheap to clone.
#[derive(Clone)]
pub struct IntentionWriter {
    jobs: mpsc::Sender<Job>,
    families: FamilyCache,
}

impl IntentionWriter {
    /// Starts the writer task on the current runtime; it ends when every handle is dropped.
    pub fn start(database: Database, signal: EventSignal) -> Self {
        let (jobs, queue) = mpsc::channel(QUEUE);
        tokio::spawn(run(database, signal, queue));
        Self {
            jobs,
            families: FamilyCache::default(),
        }
    }

    /// The families intentions are prepared against.
    pub fn families(&self) -> &FamilyCache {
        &self.families
    }

    /// Writes one prepared intention and answers once it is committed (or refused).
    pub async fn submit(
        &self,
        submitter: Submitter,
        prepared: Prepared,
    ) -> Result<ProcessedIntention, IntentionError> {
        let (reply, answer) = oneshot::channel();
        let job = Job {
            submitter,
            prepared,
            reply,
        };
        self.jobs
            .send(job)
            .await
            .map_err(|_| anyhow::anyhow!("the intention writer has stopped"))?;
        answer
            .await
            .map_err(|_| anyhow::anyhow!("the intention writer dropped an intention"))?
    }
}

async fn run(database: Database, signal: EventSignal, mut queue: mpsc::Receiver<Job>) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    let mut last_batch = 0;
    while queue.recv_many(&mut batch, MAX_BATCH).await > 0 {
        // Under concurrent load (the last batch had company), linger for the submitters
        // whose answers just went out: their next intentions join this batch instead of each
        // paying for a transaction. The linger ends as soon as the batch is as large as the
        // last one (under steady load every submitter of the last batch is back well within
        // it), so it costs a straggler's wait only; a fixed sleep cost every batch the whole
        // linger, rounded up to the timer's millisecond (BENCHMARKS.md). A lone
        // intention never waits.
        if last_batch > 1 && batch.len() < last_batch {
            let deadline = tokio::time::Instant::now() + LINGER;
            while batch.len() < last_batch {
                let room = MAX_BATCH - batch.len();
                tokio::select! {
                    biased;
                    received = queue.recv_many(&mut batch, room) => {
                        if received == 0 {
                            break;
                        }
                    }
                    () = tokio::time::sleep_until(deadline) => break,
                }
            }
        }
        last_batch = batch.len();
        let (work, replies): (Vec<(Submitter, Prepared)>, Vec<Reply>) = batch
            .drain(..)
            .map(|job| ((job.submitter, job.prepared), job.reply))
            .unzip();
        match write(&database, &work).await {
            Ok(outcomes) => {
                signal.appended();
                for (reply, outcome) in replies.into_iter().zip(outcomes) {
                    let _ = reply.send(outcome);
                }
            }
            Err(error) => {
                tracing::error!(
                    error = format!("{error:#}"),
                    intentions = work.len(),
                    "a batch of intentions failed; none was stored"
                );
                for reply in replies {
                    let _ = reply.send(Err(IntentionError::Internal(anyhow::anyhow!(
                        "the intention's batch failed"
                    ))));
                }
            }
        }
    }
}

async fn write(
    database: &Database,
    work: &[(Submitter, Prepared)],
) -> anyhow::Result<Vec<Result<ProcessedIntention, IntentionError>>> {
    let mut tx = database.begin().await?;
    let outcomes = intention_batch::apply_batch(&mut tx, work)
        .await
        .context("writing a batch of intentions")?;
    tx.commit().await?;
    Ok(outcomes)
}
