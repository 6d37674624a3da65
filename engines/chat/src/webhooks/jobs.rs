//! The chat engine's jobs on the host's durable scheduler, and the work they carry on over all
//! of one webhook's deliveries a chunk at a time.
//!
//! An automatic attempt of a delivery is one job (`delivery.rs`). Two kinds of work read a
//! webhook's whole `deliveries/<webhook_id>/` prefix, which may hold more entries than one
//! engine call may scan (the host's scan budget, `storage.scan-budget`): resuming the
//! deliveries parked while the webhook was disabled, once it is enabled again, and purging the
//! deliveries (and their dead letters) of a deleted webhook. Each is a chain of jobs: a run
//! reads one chunk of at most [`CHUNK`] deliveries (a single scan, so also at most the host's
//! scan page), writes what that chunk needs and the job of its successor (which goes on after
//! the last key read) in one storage transaction, until the prefix is exhausted. The first job
//! of a purge is written in the same transaction as the webhook's deletion, that of a resume in
//! the same transaction as the re-enabling (`super::update`). So a crash never loses the rest of
//! the work, and no call scans more than a chunk whatever the number of deliveries.
//!
//! Payloads are JSON: an attempt's has no `kind` (the format of the jobs already queued before
//! the other kinds existed, still read as it was), the others are tagged by `kind`.

use serde::{Deserialize, Serialize};
use tessera_sdk::storage::Committed;
use tessera_sdk::{HostError, Job, storage, time};

use super::delivery::{self, AttemptJob, Delivery, dead_letter_key, deliveries_prefix};
use super::{TRANSACTION_ROUNDS, Webhook, webhook_key};
use crate::batch::Batch;

/// Deliveries one job run reads at most.
pub const CHUNK: u32 = 250;
/// How long after its first pass a purge passes over the prefix once more: longer than a job
/// (an attempt, a chunk of a resume) that read the webhook before its deletion may still take
/// to write a delivery back (the host's deadline of a job call, 30 s by default).
const PURGE_SWEEP_DELAY_MS: u64 = 120_000;

/// Every job of the chat engine.
#[derive(Debug, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum ChatJob {
    /// Automatic attempt of a delivery (no `kind`).
    Attempt(AttemptJob),
    /// Work over one webhook's deliveries, a chunk per run.
    Chunk(ChunkJob),
}

/// A run of a chain over one webhook's deliveries, going on after the key `after` (from the
/// start when `None`).
#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ChunkJob {
    /// Gives the webhook's parked deliveries their next automatic attempt, while it is active
    /// and `chain` is the one its latest re-enabling named (`Webhook::resume_chain`). The first
    /// job is written in the same transaction as the re-enabling that names `chain`, so it
    /// finds the webhook enabled. Each run looks first, and stops when the webhook is deleted
    /// (its purge takes the deliveries), disabled again (the deliveries already resumed park
    /// again), or enabled again since (that re-enabling's chain starts over); and it commits
    /// its chunk only if the webhook record is still the one it read (else it looks again), so
    /// one chain at a time resumes a webhook's deliveries, however many re-enablings raced,
    /// and none writes a delivery back after the webhook's deletion.
    ResumeParked {
        webhook_id: String,
        chain: String,
        after: Option<String>,
    },
    /// Deletes the deliveries of a deleted webhook and the dead letter queue item of each
    /// (`dlq/<delivery_id>`, whether there is one or not): the webhook's own prefix is read,
    /// never the whole queue. After the first pass, a `sweep` pass
    /// [`PURGE_SWEEP_DELAY_MS`] later removes what a job that read the webhook before its
    /// deletion wrote back meanwhile.
    PurgeDeliveries {
        webhook_id: String,
        after: Option<String>,
        #[serde(default)]
        sweep: bool,
    },
}

/// `run-job`.
pub fn run(job: &Job) -> Result<(), String> {
    match job.payload_json::<ChatJob>()? {
        ChatJob::Attempt(attempt) => delivery::run_attempt(attempt)?,
        ChatJob::Chunk(ChunkJob::ResumeParked {
            webhook_id,
            chain,
            after,
        }) => resume_parked(webhook_id, chain, after)?,
        ChatJob::Chunk(ChunkJob::PurgeDeliveries {
            webhook_id,
            after,
            sweep,
        }) => purge_deliveries(webhook_id, after, sweep)?,
    }
    Ok(())
}

/// Adds the first job of `chain`, resuming the parked deliveries of `webhook_id` now, to
/// `batch`, the batch that re-enables the webhook and names `chain` in its record.
pub fn stage_resume(batch: &mut Batch, webhook_id: &str, chain: &str) -> Result<(), HostError> {
    batch.job(
        time::now_unix_ms(),
        &ChunkJob::ResumeParked {
            webhook_id: webhook_id.to_owned(),
            chain: chain.to_owned(),
            after: None,
        },
    )
}

/// Adds the first job purging the deliveries of `webhook_id` to `batch`, the batch that
/// deletes the webhook.
pub fn stage_purge(batch: &mut Batch, webhook_id: &str) -> Result<(), HostError> {
    batch.job(
        time::now_unix_ms(),
        &ChunkJob::PurgeDeliveries {
            webhook_id: webhook_id.to_owned(),
            after: None,
            sweep: false,
        },
    )
}

/// True when the webhook record `bytes` lets `chain` resume its deliveries: active, and
/// `chain` named by its latest re-enabling.
fn chain_may_resume(key: &str, bytes: &[u8], chain: &str) -> Result<bool, HostError> {
    let webhook: Webhook = storage::decode_json(key, bytes)?;
    Ok(webhook.is_active && webhook.resume_chain.as_deref() == Some(chain))
}

/// One run of [`ChunkJob::ResumeParked`]: one chunk, committed on the condition that the
/// webhook record is still the one read.
fn resume_parked(
    webhook_id: String,
    chain: String,
    after: Option<String>,
) -> Result<(), HostError> {
    let key = webhook_key(&webhook_id);
    // Deleted (its purge takes the deliveries), disabled again, or enabled again by another
    // re-enabling (its own chain resumes the deliveries): nothing to do.
    let Some(mut record) = storage::get(&key)? else {
        return Ok(());
    };
    if !chain_may_resume(&key, &record, &chain)? {
        return Ok(());
    }
    let chunk = storage::scan_json::<Delivery>(
        &deliveries_prefix(&webhook_id),
        after.as_deref(),
        CHUNK,
        false,
    )?;
    let now = time::now_unix_ms();
    let last = chunk.entries.last().map(|(key, _)| key.clone());
    let mut batch = Batch::new();
    let resumed = delivery::stage_resumed(&mut batch, chunk.entries, now)?;
    if !chunk.exhausted
        && let Some(last) = last
    {
        batch.job(
            now,
            &ChunkJob::ResumeParked {
                webhook_id,
                chain: chain.clone(),
                after: Some(last),
            },
        )?;
    }
    if batch.len() == 0 {
        return Ok(());
    }
    let writes = batch.into_transaction();
    for _ in 0..TRANSACTION_ROUNDS {
        let mut transaction = writes.clone();
        transaction.expect(key.clone(), Some(record.as_slice()));
        if let Committed::Yes { .. } = transaction.commit()? {
            return delivery::announce_resumed(&resumed);
        }
        // The record changed since it was read: the chunk still stands while the webhook is
        // active with this chain (another field changed); otherwise stop.
        match storage::get(&key)? {
            Some(again) if chain_may_resume(&key, &again, &chain)? => record = again,
            _ => return Ok(()),
        }
    }
    // The host runs the job again.
    Err(HostError::new(
        "storage.transact",
        format!("{key} kept changing; gave up after {TRANSACTION_ROUNDS} rounds"),
    ))
}

/// One run of [`ChunkJob::PurgeDeliveries`]. Deliveries are read raw: a value that does not
/// decode is deleted like any other.
fn purge_deliveries(
    webhook_id: String,
    after: Option<String>,
    sweep: bool,
) -> Result<(), HostError> {
    let prefix = deliveries_prefix(&webhook_id);
    let chunk = storage::scan(&prefix, after.as_deref(), CHUNK, false)?;
    let now = time::now_unix_ms();
    let mut batch = Batch::new();
    let last = chunk.entries.last().map(|(key, _)| key.clone());
    for (key, _) in chunk.entries {
        batch.delete(dead_letter_key(&key[prefix.len()..]));
        batch.delete(key);
    }
    match (chunk.exhausted, last) {
        (false, Some(last)) => batch.job(
            now,
            &ChunkJob::PurgeDeliveries {
                webhook_id,
                after: Some(last),
                sweep,
            },
        )?,
        (true, _) if !sweep => batch.job(
            now + PURGE_SWEEP_DELAY_MS,
            &ChunkJob::PurgeDeliveries {
                webhook_id,
                after: None,
                sweep: true,
            },
        )?,
        _ => {}
    }
    batch.commit()
}

#[cfg(test)]
mod tests {
    use tessera_sdk::serde_json;

    use super::*;

    fn parse(payload: &str) -> Result<ChatJob, serde_json::Error> {
        serde_json::from_str(payload)
    }

    #[test]
    fn attempt_payloads_queued_before_the_kinds_existed_still_parse() {
        let queued = r#"{"webhook_id":"w","delivery_id":"d","attempt":3}"#;
        assert_eq!(
            parse(queued).unwrap(),
            ChatJob::Attempt(AttemptJob {
                webhook_id: "w".into(),
                delivery_id: "d".into(),
                attempt: 3,
            })
        );
        // And an attempt is still written that way.
        let written = serde_json::to_string(&AttemptJob {
            webhook_id: "w".into(),
            delivery_id: "d".into(),
            attempt: 3,
        })
        .unwrap();
        assert_eq!(written, queued);
    }

    #[test]
    fn chunk_jobs_round_trip_by_kind() {
        for job in [
            ChunkJob::ResumeParked {
                webhook_id: "w".into(),
                chain: "c".into(),
                after: Some("deliveries/w/d".into()),
            },
            ChunkJob::ResumeParked {
                webhook_id: "w".into(),
                chain: "c".into(),
                after: None,
            },
            ChunkJob::PurgeDeliveries {
                webhook_id: "w".into(),
                after: None,
                sweep: true,
            },
        ] {
            let payload = serde_json::to_string(&job).unwrap();
            assert_eq!(parse(&payload).unwrap(), ChatJob::Chunk(job), "{payload}");
        }
        assert_eq!(
            parse(r#"{"kind":"purge_deliveries","webhook_id":"w","after":null}"#).unwrap(),
            ChatJob::Chunk(ChunkJob::PurgeDeliveries {
                webhook_id: "w".into(),
                after: None,
                sweep: false,
            })
        );
    }

    #[test]
    fn unknown_payloads_are_refused() {
        for payload in [
            r#"{"webhook_id":"w","delivery_id":"d","attempt":1,"extra":true}"#,
            r#"{"kind":"resume_parked","webhook_id":"w","chain":"c","after":null,"x":1}"#,
            // The wait of the resume jobs once written before their re-enabling (never
            // released) is no field any more.
            r#"{"kind":"resume_parked","webhook_id":"w","chain":"c","after":null,"wait_until_ms":7}"#,
            r#"{"kind":"launch","webhook_id":"w","after":null}"#,
            r#"{"webhook_id":"w","after":null}"#,
        ] {
            assert!(parse(payload).is_err(), "{payload}");
        }
    }
}
