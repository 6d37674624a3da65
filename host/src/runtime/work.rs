//! Durable engine work: jobs engines schedule (`scheduler.schedule` → `run-job`) and events
//! delivered to subscribers (`events.publish` → `on-event`), kept in the `engine_work` table and
//! run by a worker on every serving host. A host claims due items with a lease, so hosts sharing
//! one database never run an item at the same time, and an item whose host died is taken over
//! once its lease runs out. A failed run is retried with backoff, then kept as `failed`.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use chrono::{DateTime, Utc};
use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::bindings::v0_1::tessera::engine::types as wit;
use super::bus::BusEvent;
use super::registry::EngineRegistry;
use crate::storage::{Database, DatabaseKind, Tx, time};
use crate::{on_tx, on_writer};

/// Runs of one item before it is kept as `failed`.
pub const MAX_ATTEMPTS: u32 = 5;
/// Items inserted by one statement (nine parameters each).
const INSERT_CHUNK: usize = 100;

/// Largest job payload or event an engine may enqueue.
pub const MAX_PAYLOAD_BYTES: usize = 256 * 1024;

/// What an item of work delivers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkKind {
    /// A job the engine scheduled, to `run-job`.
    Job,
    /// An event the engine subscribed to, to `on-event`.
    Event,
}

impl WorkKind {
    fn as_str(self) -> &'static str {
        match self {
            Self::Job => "job",
            Self::Event => "event",
        }
    }

    fn parse(text: &str) -> anyhow::Result<Self> {
        match text {
            "job" => Ok(Self::Job),
            "event" => Ok(Self::Event),
            other => anyhow::bail!("unknown work kind {other:?}"),
        }
    }
}

/// An item to enqueue.
#[derive(Debug, Clone)]
pub struct NewWork {
    pub engine_code: String,
    pub tenant_id: String,
    pub kind: WorkKind,
    pub payload: Vec<u8>,
    pub due_at: DateTime<Utc>,
}

/// An item this host claimed and must run.
#[derive(Debug, Clone)]
pub struct ClaimedWork {
    pub id: String,
    pub engine_code: String,
    pub tenant_id: String,
    pub kind: WorkKind,
    pub payload: Vec<u8>,
    /// 1 on the first run.
    pub attempt: u32,
}

/// The delay before run `attempt + 1` after run `attempt` failed: 1 s, 4 s, 16 s, 64 s.
pub fn backoff(attempt: u32) -> Duration {
    Duration::from_secs(4u64.saturating_pow(attempt.saturating_sub(1)).min(3600))
}

/// The queue: cheap to clone, shared by the imports that enqueue and the worker that runs.
#[derive(Clone)]
pub struct WorkQueue {
    database: Database,
    wake: Arc<Notify>,
}

impl WorkQueue {
    pub fn new(database: Database) -> Self {
        Self {
            database,
            wake: Arc::new(Notify::new()),
        }
    }

    /// Stores the items in one transaction and wakes this host's worker; returns their ids.
    pub async fn enqueue(&self, items: &[NewWork]) -> anyhow::Result<Vec<String>> {
        if items.is_empty() {
            return Ok(Vec::new());
        }
        let mut tx = self.database.begin().await?;
        let ids = Self::insert_in(&mut tx, items).await?;
        tx.commit().await?;
        self.wake();
        Ok(ids)
    }

    /// Stores the items in the caller's transaction; returns their ids. Call [`Self::wake`]
    /// once it committed.
    pub async fn insert_in(tx: &mut Tx, items: &[NewWork]) -> anyhow::Result<Vec<String>> {
        let now = time::now();
        let ids: Vec<String> = items
            .iter()
            .map(|_| uuid::Uuid::new_v4().to_string())
            .collect();
        let rows: Vec<(&String, &NewWork, String)> = ids
            .iter()
            .zip(items)
            .map(|(id, item)| (id, item, time::format(item.due_at)))
            .collect();
        for chunk in rows.chunks(INSERT_CHUNK) {
            on_tx!(tx, conn => {
                let mut insert = sqlx::QueryBuilder::new(
                    "INSERT INTO engine_work (id, engine_code, tenant_id, kind, payload, due_at, attempt, status, created_at) ",
                );
                insert.push_values(chunk, |mut row, (id, item, due_at)| {
                    row.push_bind(*id)
                        .push_bind(&item.engine_code)
                        .push_bind(&item.tenant_id)
                        .push_bind(item.kind.as_str())
                        .push_bind(&item.payload)
                        .push_bind(due_at)
                        .push_bind(0_i64)
                        .push_bind("pending")
                        .push_bind(&now);
                });
                insert.build().execute(&mut **conn).await.map(drop)
            })
            .context("enqueuing engine work")?;
        }
        Ok(ids)
    }

    /// Wakes this host's worker: work was enqueued.
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// Cancels a pending job of this engine and tenant; true when it was still pending.
    pub async fn cancel_job(
        &self,
        engine_code: &str,
        tenant_id: &str,
        job_id: &str,
    ) -> anyhow::Result<bool> {
        let deleted = on_writer!(self.database, pool => sqlx::query(
            "DELETE FROM engine_work WHERE id = $1 AND engine_code = $2 AND tenant_id = $3
             AND kind = 'job' AND status = 'pending'",
        )
        .bind(job_id)
        .bind(engine_code)
        .bind(tenant_id)
        .execute(pool)
        .await
        .map(|result| result.rows_affected()))
        .context("cancelling a job")?;
        Ok(deleted > 0)
    }

    /// Claims up to `limit` due items of the given engines (pending and due, or running with
    /// an expired lease) for `lease`, counting the run.
    pub async fn claim(
        &self,
        engine_codes: &[String],
        limit: u32,
        lease: Duration,
    ) -> anyhow::Result<Vec<ClaimedWork>> {
        if engine_codes.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let now = time::now();
        let lease_until = time::format(Utc::now() + lease);
        let placeholders = (0..engine_codes.len())
            .map(|index| format!("${}", index + 3))
            .collect::<Vec<_>>()
            .join(", ");
        let limit_parameter = engine_codes.len() + 3;
        // PostgreSQL: rows another host is claiming right now are skipped. SQLite: one
        // statement is one write transaction, which excludes every other claimer.
        let locking = match self.database.kind() {
            DatabaseKind::Postgres => " FOR UPDATE SKIP LOCKED",
            DatabaseKind::Sqlite => "",
        };
        // One statement: the oldest due items and their claim. Due pending items and items
        // whose lease ran out are read separately, each in the order of the (status, due_at)
        // index and cut at `limit`, so a claim reads `limit` rows however long the backlog is
        // (one OR-ed query would sort every due item each time). Returned rows carry no order:
        // they are put back in due order below.
        let claim = format!(
            "WITH
               pending AS (SELECT id, due_at FROM engine_work
                           WHERE status = 'pending' AND due_at <= $1 AND engine_code IN ({placeholders})
                           ORDER BY due_at LIMIT ${limit_parameter}{locking}),
               expired AS (SELECT id, due_at FROM engine_work
                           WHERE status = 'running' AND locked_until <= $1 AND engine_code IN ({placeholders})
                           ORDER BY due_at LIMIT ${limit_parameter}{locking}),
               chosen AS (SELECT id FROM (SELECT id, due_at FROM pending
                                          UNION ALL SELECT id, due_at FROM expired) AS due
                          ORDER BY due_at LIMIT ${limit_parameter})
             UPDATE engine_work SET status = 'running', locked_until = $2, attempt = attempt + 1
             WHERE id IN (SELECT id FROM chosen)
             RETURNING id, engine_code, tenant_id, kind, payload, attempt, due_at"
        );
        type ClaimedRow = (String, String, String, String, Vec<u8>, i64, String);
        let mut rows: Vec<ClaimedRow> = on_writer!(self.database, pool => {
            let mut query = sqlx::query_as(sqlx::AssertSqlSafe(claim.clone()))
                .bind(&now)
                .bind(&lease_until);
            for code in engine_codes {
                query = query.bind(code);
            }
            query.bind(i64::from(limit)).fetch_all(pool).await
        })
        .context("claiming due engine work")?;
        rows.sort_by(|left, right| left.6.cmp(&right.6));
        rows.into_iter()
            .map(|(id, engine_code, tenant_id, kind, payload, attempt, _)| {
                Ok(ClaimedWork {
                    id,
                    engine_code,
                    tenant_id,
                    kind: WorkKind::parse(&kind)?,
                    payload,
                    attempt: u32::try_from(attempt).unwrap_or(u32::MAX),
                })
            })
            .collect()
    }

    /// The runs of `done` (`(id, attempt)`) succeeded: their items are deleted, with one
    /// statement per [`COMPLETION_CHUNK`] items. An item another host has claimed again since
    /// (this host's lease ran out: a newer attempt) stays.
    pub async fn complete_many(&self, done: &[(String, u32)]) -> anyhow::Result<()> {
        for chunk in done.chunks(COMPLETION_CHUNK) {
            on_writer!(self.database, pool => {
                let mut delete = sqlx::QueryBuilder::new(
                    "DELETE FROM engine_work WHERE (id, attempt) IN (VALUES ",
                );
                let mut rows = delete.separated(", ");
                for (id, attempt) in chunk {
                    rows.push("(");
                    rows.push_bind_unseparated(id);
                    rows.push_unseparated(", ");
                    rows.push_bind_unseparated(i64::from(*attempt));
                    rows.push_unseparated(")");
                }
                delete.push(")");
                delete.build().execute(pool).await.map(drop)
            })
            .context("completing engine work")?;
        }
        Ok(())
    }

    /// The run failed: retried after [`backoff`], or kept as `failed` after [`MAX_ATTEMPTS`].
    pub async fn fail(&self, work: &ClaimedWork, error: &str) -> anyhow::Result<()> {
        let (status, due_at) = if work.attempt >= MAX_ATTEMPTS {
            ("failed", time::now())
        } else {
            ("pending", time::format(Utc::now() + backoff(work.attempt)))
        };
        on_writer!(self.database, pool => sqlx::query(
            "UPDATE engine_work SET status = $3, due_at = $4, locked_until = NULL, last_error = $5
             WHERE id = $1 AND attempt = $2",
        )
        .bind(&work.id)
        .bind(i64::from(work.attempt))
        .bind(status)
        .bind(due_at)
        .bind(error)
        .execute(pool)
        .await
        .map(drop))
        .context("recording failed engine work")
    }

    /// Resolves when an item was enqueued on this host.
    async fn enqueued(&self) {
        self.wake.notified().await;
    }
}

/// How the worker runs.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// Items run at once on this host (default 32: most runs wait on the network or the
    /// database, e.g. a webhook delivery waiting for its receiver, so a slow receiver does
    /// not hold up the others).
    pub concurrency: usize,
    /// How often the worker looks for due items when nothing woke it.
    pub poll_interval: Duration,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        Self {
            concurrency: 32,
            poll_interval: Duration::from_millis(500),
        }
    }
}

/// Runs due work of the engines loaded on this host until `shutdown`, then waits for the runs
/// in flight (each bounded by the lifecycle deadline).
pub async fn run_worker(
    engines: Arc<EngineRegistry>,
    queue: WorkQueue,
    config: WorkerConfig,
    shutdown: CancellationToken,
) {
    let permits = Arc::new(Semaphore::new(config.concurrency));
    let running = TaskTracker::new();
    // Successful runs are deleted in batches by one task: one write transaction for many items
    // instead of one each (the single SQLite writer is the bottleneck under load). Until its
    // batch commits an item stays `running` under its lease, so nobody claims it again.
    let (completed, completions) = tokio::sync::mpsc::unbounded_channel();
    let completer = tokio::spawn(complete_in_batches(queue.clone(), completions));
    // A run may take the whole lifecycle deadline; the lease outlives it.
    let lease = engines.runtime().config().lifecycle_timeout + Duration::from_secs(30);
    while !shutdown.is_cancelled() {
        let codes: Vec<String> = engines
            .loaded()
            .iter()
            .map(|engine| engine.descriptor.code.clone())
            .collect();
        // Wait for a free slot first: claiming with none free would find nothing and sleep a
        // whole poll interval while runs finish (deliveries in bursts of `concurrency`).
        let first_permit = tokio::select! {
            permit = permits.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
            () = shutdown.cancelled() => break,
        };
        let free = u32::try_from(1 + permits.available_permits()).unwrap_or(u32::MAX);
        let claimed = match queue.claim(&codes, free, lease).await {
            Ok(claimed) => claimed,
            Err(error) => {
                tracing::error!(error = format!("{error:#}"), "claiming engine work failed");
                Vec::new()
            }
        };
        if claimed.is_empty() {
            drop(first_permit);
            tokio::select! {
                () = queue.enqueued() => {}
                () = tokio::time::sleep(config.poll_interval) => {}
                () = shutdown.cancelled() => break,
            }
            continue;
        }
        let mut first_permit = Some(first_permit);
        for work in claimed {
            let permit = match first_permit.take() {
                Some(permit) => permit,
                None => match permits.clone().acquire_owned().await {
                    Ok(permit) => permit,
                    Err(_) => break,
                },
            };
            let engines = engines.clone();
            let queue = queue.clone();
            let completed = completed.clone();
            running.spawn(async move {
                run_one(&engines, &queue, &completed, work).await;
                drop(permit);
            });
        }
    }
    running.close();
    running.wait().await;
    drop(completed);
    if let Err(error) = completer.await {
        tracing::error!(%error, "the engine work completer stopped");
    }
}

/// Most items the completer takes at once.
const COMPLETION_BATCH: usize = 256;

/// Most items deleted by one statement (two parameters each).
const COMPLETION_CHUNK: usize = 256;

/// Deletes completed items as they come, each batch what arrived since the last commit; ends
/// when every sender is gone and everything received is committed.
async fn complete_in_batches(
    queue: WorkQueue,
    mut completions: tokio::sync::mpsc::UnboundedReceiver<(String, u32)>,
) {
    let mut batch = Vec::with_capacity(COMPLETION_BATCH);
    while completions.recv_many(&mut batch, COMPLETION_BATCH).await > 0 {
        if let Err(error) = queue.complete_many(&batch).await {
            tracing::error!(
                items = batch.len(),
                error = format!("{error:#}"),
                "recording completed engine work failed; it runs again when its lease ends"
            );
        }
        batch.clear();
    }
}

/// Runs one claimed item and records its outcome (a success through the completer).
async fn run_one(
    engines: &EngineRegistry,
    queue: &WorkQueue,
    completed: &tokio::sync::mpsc::UnboundedSender<(String, u32)>,
    work: ClaimedWork,
) {
    let outcome = deliver(engines, &work).await;
    let recorded = match &outcome {
        Ok(()) => completed
            .send((work.id.clone(), work.attempt))
            .map_err(|_| anyhow::anyhow!("the completer has stopped")),
        Err(error) => {
            tracing::warn!(engine = %work.engine_code, work_id = %work.id, kind = work.kind.as_str(), attempt = work.attempt, %error, "engine work failed");
            queue.fail(&work, error).await
        }
    };
    if let Err(error) = recorded {
        tracing::error!(work_id = %work.id, error = format!("{error:#}"), "recording the outcome of engine work failed; it runs again when its lease ends");
    }
}

async fn deliver(engines: &EngineRegistry, work: &ClaimedWork) -> Result<(), String> {
    let engine = engines
        .get(&work.engine_code)
        .ok_or_else(|| format!("the engine {} is not loaded", work.engine_code))?;
    let event = match work.kind {
        WorkKind::Event => Some(
            serde_json::from_slice::<BusEvent>(&work.payload)
                .map_err(|error| format!("an undeliverable event: {error}"))?,
        ),
        WorkKind::Job => None,
    };
    let correlation_id = event
        .as_ref()
        .map_or_else(|| work.id.clone(), |event| event.correlation_id.clone());
    let scope = engine.scope(&work.tenant_id, Some(correlation_id));
    let runtime = engines.runtime();
    let outcome = runtime
        .call(
            &engine.pre,
            scope,
            runtime.config().lifecycle_timeout,
            async |guest, store| match &event {
                Some(event) => guest.call_on_event(store, &event.to_wit()).await,
                None => {
                    let job = wit::Job {
                        id: work.id.clone(),
                        tenant_id: work.tenant_id.clone(),
                        payload: work.payload.clone(),
                        attempt: work.attempt,
                    };
                    guest.call_run_job(store, &job).await
                }
            },
        )
        .await;
    match outcome {
        Ok(result) => result,
        Err(error) => Err(error.into_reason(&engine.descriptor.code)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_back_off_and_stop() {
        assert_eq!(backoff(1), Duration::from_secs(1));
        assert_eq!(backoff(2), Duration::from_secs(4));
        assert_eq!(backoff(4), Duration::from_secs(64));
        assert_eq!(backoff(40), Duration::from_secs(3600));
        assert_eq!(WorkKind::parse("job").unwrap(), WorkKind::Job);
        assert_eq!(
            WorkKind::parse(WorkKind::Event.as_str()).unwrap(),
            WorkKind::Event
        );
        assert!(WorkKind::parse("other").is_err());
    }
}
