//! The durable queue of engine work: jobs engines schedule (`scheduler.schedule` → `run-job`)
//! and events delivered to subscribers (`events.publish` → `on-event`), kept in the
//! `engine_work` table. A host claims due items with a lease, so hosts sharing one database
//! never run an item at the same time, and an item whose host died is taken over once its lease
//! runs out. A failed run is retried with backoff, then kept as `failed`. The worker that runs
//! what this queue hands out is `work.rs`.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use chrono::{DateTime, Utc};
use tokio::sync::Notify;

use crate::store::work as store;
pub use crate::store::work::LeaseLost;
use tessera_http::backpressure::BacklogSample;
use tessera_storage::{Database, Tx, time};

/// Runs of one item before it is kept as `failed`.
pub const MAX_ATTEMPTS: u32 = 5;

/// Largest job payload or event an engine may enqueue.
pub const MAX_PAYLOAD_BYTES: usize = 256 * 1024;

/// Most events of one engine and tenant delivered in one run: one instance, one unit of work
/// (one commit for the effects and completions of all of them).
pub const MAX_DELIVERY_BATCH: usize = 32;

/// Most items deleted or handed back by one statement (two parameters each).
const COMPLETION_CHUNK: usize = 256;

/// What an item of work delivers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkKind {
    /// A job the engine scheduled, to `run-job`.
    Job,
    /// An event the engine subscribed to, to `on-event`.
    Event,
}

impl WorkKind {
    pub(crate) fn as_str(self) -> &'static str {
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

/// An item to enqueue. Its id is chosen when it is made, so a call's unit of work can answer
/// `scheduler.schedule` with it before the unit commits.
#[derive(Debug, Clone)]
pub struct NewWork {
    pub id: String,
    pub engine_code: String,
    pub tenant_id: String,
    pub kind: WorkKind,
    pub payload: Vec<u8>,
    pub due_at: DateTime<Utc>,
    /// The W3C `traceparent` of the span it was queued in (tracing on), which its run
    /// continues.
    pub traceparent: Option<String>,
}

impl NewWork {
    /// The row of the `engine_work` table that holds it.
    pub(crate) fn row(&self) -> store::WorkRow<'_> {
        store::WorkRow {
            id: &self.id,
            engine_code: &self.engine_code,
            tenant_id: &self.tenant_id,
            kind: self.kind.as_str(),
            payload: &self.payload,
            due_at: time::format(self.due_at),
            traceparent: self.traceparent.as_deref(),
        }
    }
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
    /// The trace it was queued in, if any ([`NewWork::traceparent`]).
    pub traceparent: Option<String>,
}

impl ClaimedWork {
    /// How many calls it makes: the events of a delivery (a pack holds several,
    /// `bus.rs`), or 1.
    pub(crate) fn calls(&self) -> usize {
        if self.kind == WorkKind::Event && self.payload.trim_ascii_start().starts_with(b"[") {
            serde_json::from_slice::<Vec<serde::de::IgnoredAny>>(&self.payload)
                .map_or(1, |events| events.len().max(1))
        } else {
            1
        }
    }

    /// A delivery of several events, which a failure splits ([`WorkQueue::split`]).
    pub(crate) fn is_pack(&self) -> bool {
        self.calls() > 1
    }
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
    /// The items of `engine_codes` due and not yet run (event deliveries and jobs; counted up
    /// to `cap`) and how long the oldest has been due: the engines' part of the platform's
    /// backlog. Only engines that run here count: the items of an engine removed from
    /// `plugins/` wait for it without holding up everything else.
    pub async fn backlog(
        &self,
        engine_codes: &[String],
        cap: u64,
    ) -> anyhow::Result<BacklogSample> {
        let now = Utc::now();
        let (items, oldest) =
            store::due_backlog(&self.database, engine_codes, &time::format(now), cap).await?;
        let oldest_age = oldest
            .and_then(|due_at| DateTime::parse_from_rfc3339(&due_at).ok())
            .and_then(|due_at| (now - due_at.with_timezone(&Utc)).to_std().ok())
            .unwrap_or_default();
        Ok(BacklogSample {
            items: u64::try_from(items).unwrap_or(0),
            oldest_age,
        })
    }

    /// The tenants with the most of [`Self::backlog`]'s items (at most `limit`).
    pub async fn backlog_by_tenant(
        &self,
        engine_codes: &[String],
        cap: u64,
        limit: u64,
    ) -> anyhow::Result<Vec<(String, u64)>> {
        let now = time::format(Utc::now());
        let rows = store::due_by_tenant(&self.database, engine_codes, &now, cap, limit).await?;
        Ok(rows
            .into_iter()
            .map(|(tenant_id, items)| (tenant_id, u64::try_from(items).unwrap_or(0)))
            .collect())
    }

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
        let ids: Vec<String> = items.iter().map(|item| item.id.clone()).collect();
        let rows: Vec<store::WorkRow<'_>> = items.iter().map(NewWork::row).collect();
        store::insert(tx, &rows).await?;
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
        store::delete_pending_job(&self.database, engine_code, tenant_id, job_id).await
    }

    /// Claims up to `limit` due items of the given engines (pending and due, or running with
    /// an expired lease) for `lease`, counting the run; oldest due first.
    ///
    /// One statement reads each kind of claimable row from its own partial index, in order,
    /// and stops at `limit`, so a claim reads `limit` rows however long the backlog is. On
    /// PostgreSQL it is the `engine_work_claim` function (migration 12), whose plan does not
    /// depend on the table's statistics, and rows another host is claiming at the same moment
    /// are skipped (`SKIP LOCKED`); on SQLite the statement is one write transaction, which
    /// excludes every other claimer.
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
        let limit = i64::from(limit);
        let mut rows =
            store::claim(&self.database, engine_codes, &now, &lease_until, limit).await?;
        // The returned rows carry no order: put them back in due order.
        rows.sort_by(|left, right| left.6.cmp(&right.6));
        rows.into_iter()
            .map(
                |(id, engine_code, tenant_id, kind, payload, attempt, _, traceparent)| {
                    Ok(ClaimedWork {
                        id,
                        engine_code,
                        tenant_id,
                        kind: WorkKind::parse(&kind)?,
                        payload,
                        attempt: u32::try_from(attempt).unwrap_or(u32::MAX),
                        traceparent,
                    })
                },
            )
            .collect()
    }

    /// Hands back claimed items whose runs never started or whose effects were not kept (a
    /// host stopping with claimed items still waiting for a slot, the other items of a batch
    /// one item of which failed): pending again, due as before, their claims not counted as
    /// runs. An item claimed again since (`attempt` moved on) or completed is left alone.
    pub async fn release(&self, items: &[ClaimedWork]) -> anyhow::Result<()> {
        for chunk in items.chunks(COMPLETION_CHUNK) {
            store::hand_back(&self.database, &Self::runs_of(chunk), None).await?;
        }
        Ok(())
    }

    /// Hands back claimed items that found no engine slot free: pending again, due after
    /// `delay`, the claims not counted as runs (running out of capacity is not a failure). An
    /// item claimed again since (`attempt` moved on) is left alone.
    pub async fn postpone(&self, items: &[ClaimedWork], delay: Duration) -> anyhow::Result<()> {
        let due_at = time::format(Utc::now() + delay);
        for chunk in items.chunks(COMPLETION_CHUNK) {
            store::hand_back(&self.database, &Self::runs_of(chunk), Some(&due_at))
                .await
                .context("postponing engine work that found no engine slot")?;
        }
        Ok(())
    }

    fn runs_of(items: &[ClaimedWork]) -> Vec<(String, u32)> {
        items
            .iter()
            .map(|item| (item.id.clone(), item.attempt))
            .collect()
    }

    /// The runs of `done` (`(id, attempt)`) succeeded: their items are deleted in one
    /// transaction (see [`Self::complete_in`]).
    pub async fn complete_many(&self, done: &[(String, u32)]) -> anyhow::Result<()> {
        let mut tx = self.database.begin().await?;
        Self::complete_in(&mut tx, done).await?;
        tx.commit()
            .await
            .context("committing completed engine work")
    }

    /// Deletes the items of the successful runs `done` (`(id, attempt)`) in the caller's
    /// transaction, one statement per [`COMPLETION_CHUNK`] items. An item another host has
    /// claimed again since (this host's lease ran out: a newer attempt) stays.
    pub async fn complete_in(tx: &mut Tx, done: &[(String, u32)]) -> anyhow::Result<()> {
        for chunk in done.chunks(COMPLETION_CHUNK) {
            store::delete_completed(tx, chunk).await?;
        }
        Ok(())
    }

    /// [`Self::complete_in`] for the runs whose effects commit in `tx` (a delivery's unit of
    /// work): it fails, so the caller rolls the effects back, unless every item is still held
    /// by the attempt named. A host whose lease ran out, and whose work another host claimed
    /// and ran again, cannot commit the same effects a second time, even when its statement
    /// reaches the database after the host itself died (the fence).
    pub async fn complete_fenced_in(tx: &mut Tx, done: &[(String, u32)]) -> anyhow::Result<()> {
        for chunk in done.chunks(COMPLETION_CHUNK) {
            let deleted = store::delete_completed(tx, chunk).await?;
            if deleted != chunk.len() as u64 {
                return Err(LeaseLost {
                    held: chunk.len(),
                    still_held: deleted,
                }
                .into());
            }
        }
        Ok(())
    }

    /// Replaces the pack `work` (a delivery of several events, claimed by this run) by one
    /// delivery per event, due now and not yet run: a pack that failed or could not commit is
    /// retried event by event, each failing and retrying on its own (its attempt not counted,
    /// as for the other items of a failed batch). Its first `kept` events are left out: a
    /// synchronisation point committed their effects. Nothing happens when the pack is no
    /// longer held by this run.
    pub async fn split(&self, work: &ClaimedWork, kept: usize) -> anyhow::Result<()> {
        let events = delivered_events(&work.payload)
            .context("reading the events of a pack of deliveries")?;
        let singles = events
            .iter()
            .skip(kept)
            .map(|event| {
                Ok(NewWork {
                    id: delivery_id(&work.tenant_id, &work.engine_code, &event.id),
                    engine_code: work.engine_code.clone(),
                    tenant_id: work.tenant_id.clone(),
                    kind: WorkKind::Event,
                    payload: serde_json::to_vec(event)?,
                    due_at: Utc::now(),
                    traceparent: work.traceparent.clone(),
                })
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let mut tx = self.database.begin().await?;
        let held = store::delete_completed(&mut tx, &[(work.id.clone(), work.attempt)]).await?;
        if held == 1 {
            Self::insert_in(&mut tx, &singles).await?;
        }
        tx.commit()
            .await
            .context("committing the split of a pack of deliveries")?;
        self.wake();
        Ok(())
    }

    /// The run failed: retried after [`backoff`], or kept as `failed` after [`MAX_ATTEMPTS`].
    pub async fn fail(&self, work: &ClaimedWork, error: &str) -> anyhow::Result<()> {
        let (status, due_at) = if work.attempt >= MAX_ATTEMPTS {
            ("failed", time::now())
        } else {
            ("pending", time::format(Utc::now() + backoff(work.attempt)))
        };
        store::record_failure(
            &self.database,
            &work.id,
            work.attempt,
            status,
            &due_at,
            error,
        )
        .await
    }

    /// Resolves when an item was enqueued on this host.
    pub(crate) async fn enqueued(&self) {
        self.wake.notified().await;
    }
}

/// An event as the bus stores it in a delivery's payload: `tessera-wire`'s (`bus::BusEvent`).
type DeliveredEvent = tessera_wire::engine::Event;

/// The events of an event delivery's payload: one event, or a pack's JSON array of them.
pub fn delivered_events(payload: &[u8]) -> serde_json::Result<Vec<DeliveredEvent>> {
    if payload.trim_ascii_start().starts_with(b"[") {
        serde_json::from_slice(payload)
    } else {
        Ok(vec![serde_json::from_slice(payload)?])
    }
}

/// The id of the delivery of the event `event_id` to `engine_code` in `tenant_id`: a UUID v5
/// of the three (lengths first, so no two triples run together).
pub(crate) fn delivery_id(tenant_id: &str, engine_code: &str, event_id: &str) -> String {
    let name = format!(
        "{}:{}:{}:{tenant_id}{engine_code}{event_id}",
        tenant_id.len(),
        engine_code.len(),
        event_id.len()
    );
    uuid::Uuid::new_v5(&DELIVERY_NAMESPACE, name.as_bytes()).to_string()
}

/// The namespace of delivery ids (a fixed random UUID).
const DELIVERY_NAMESPACE: uuid::Uuid = uuid::uuid!("5b0c7f8e-3d2a-4e61-9a4f-1c7d2e9b8a60");

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
