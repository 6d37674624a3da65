//! Retention: a daily job per tenant removes the items recorded more than `retention_days`
//! (`feed-settings`, 90 by default) ago, with their index entries and event markers.
//!
//! `retention-schedule` holds the due time of the one pending run, and each job carries the due
//! time it was scheduled for: a job whose time is not the stored one (a duplicate chain after
//! concurrent provisionings, a job of a deprovisioned tenant) does nothing. A run deletes at
//! most [`PRUNE_BATCH`] items and schedules the next run in the same storage transaction: in a
//! day, or in a minute when old items remain.

use serde::{Deserialize, Serialize};
use tessera_sdk::{HostError, Job, storage, tenancy, time};

use crate::items::{self, FeedItem, ITEMS_PREFIX};
use crate::{FeedSettings, SETTINGS_KEY};

const SCHEDULE_KEY: &str = "retention-schedule";
const DAY_MS: u64 = 86_400_000;
/// The delay before the next run when old items remain.
const CATCH_UP_MS: u64 = 60_000;
/// Most items one run removes.
const PRUNE_BATCH: u32 = 500;

/// A pruning run, as scheduled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct PruneRun {
    due_at_ms: u64,
}

/// Schedules the first run, a day from now, unless one is scheduled.
pub fn ensure_scheduled() -> Result<(), HostError> {
    if storage::exists(SCHEDULE_KEY)? {
        return Ok(());
    }
    schedule_next(time::now_unix_ms() + DAY_MS, &[])
}

/// Stores `due_at_ms` as the pending run and schedules its job, deleting `deletes`, in one
/// transaction.
fn schedule_next(due_at_ms: u64, deletes: &[String]) -> Result<(), HostError> {
    let run = PruneRun { due_at_ms };
    let (key, bytes) = storage::json_entry(SCHEDULE_KEY, &run)?;
    storage::write_batch(&[(key, bytes.clone())], deletes, &[(due_at_ms, bytes)]).map(drop)
}

/// Runs a pruning job (anything else, or a stale run, is a no-op).
pub fn run(job: &Job) -> Result<(), String> {
    let Ok(run) = job.payload_json::<PruneRun>() else {
        return Ok(());
    };
    if tenancy::tenant_record()?.is_none()
        || storage::get_json::<PruneRun>(SCHEDULE_KEY)?.as_ref() != Some(&run)
    {
        return Ok(());
    }
    let retention_days = storage::get_json::<FeedSettings>(SETTINGS_KEY)?
        .map_or(crate::RETENTION_DAYS, |settings| settings.retention_days);
    let now_ms = time::now_unix_ms();
    let cutoff_ms = now_ms.saturating_sub(retention_days.saturating_mul(DAY_MS));
    let scan = storage::scan(ITEMS_PREFIX, None, PRUNE_BATCH, false)?;
    let full_batch = !scan.exhausted;
    let read = scan.entries.len();
    let oldest = scan
        .entries
        .iter()
        .map(|(key, value)| items::decode(key, value))
        .collect::<Result<Vec<FeedItem>, _>>()?;
    let expired: Vec<FeedItem> = oldest
        .into_iter()
        .take_while(|item| items::recorded_at_ms(item).is_some_and(|at| at < cutoff_ms))
        .collect();
    let more_remain = full_batch && expired.len() == read;
    let deletes: Vec<String> = expired.iter().flat_map(items::all_keys).collect();
    let delay = if more_remain { CATCH_UP_MS } else { DAY_MS };
    schedule_next(now_ms + delay, &deletes)?;
    Ok(())
}
