//! The per-tenant bookkeeping of first-party engines: the `tenant` record written by
//! provisioning, the `users/<user_id>` records, the `GET /api/v1/status` answer built from
//! them, and the removal of a user's data in chunks that durable jobs carry on. Keys are
//! relative to the engine's tenant-scoped storage.
//!
//! # Removing a user in chunks
//!
//! The host calls `deprovision-user` once and does not retry it, and one call may only scan a
//! bounded number of entries ([`storage::ScanLimits`]). So an engine whose users may own more
//! than that removes them in chunks ([`remove_user_in_chunks`]):
//!
//! 1. `deprovision_user` removes a first chunk (a few hundred entries at most,
//!    [`REMOVAL_CHUNK_ENTRIES`], and half of what the call may scan). When that was everything,
//!    it forgets the user's record and is done. Otherwise it commits, in one
//!    `storage::write_batch` with the chunk's last writes, a marker `removals/<user_id>` =
//!    `{"removal_id": …}` (a fresh id), a [`RemovalJob`] `{"remove_user", "removal_id",
//!    "after"?}` and the removal of the user's record: the user no longer exists for the
//!    engine, and the removal is durable. (Deletions that cannot join a storage batch, such as
//!    blobs, are committed as the chunk goes; the marker and the job follow right after.)
//! 2. The job ([`continue_removal`], from the engine's `run_job`) goes on only while the marker
//!    still holds its `removal_id`: it removes the next chunk and schedules its successor in
//!    the same batch as that chunk's last writes; once nothing is left it deletes the marker.
//!    A failed run is retried by the host like any job.
//! 3. Provisioning the user again cancels a pending removal ([`cancel_removal`], before
//!    anything else): the marker goes and the removal stops, so nothing the user creates from
//!    then on is removed by it, and what it had not reached yet stays the user's.
//!    Deprovisioning again replaces the marker, so only the newest removal goes on.
//!
//! A chunk checks the marker before each of its scans ([`RemovalChunk::next_scan`]), so a
//! removal cancelled while one of its jobs runs stops at that job's next scan.

use serde::{Deserialize, Serialize};

use crate::context::Context;
use crate::error::HostError;
use crate::request::Request;
use crate::response::Response;
use crate::router::HandlerResult;
use crate::storage;
use crate::time::{new_id, now_rfc3339, now_unix_ms};
use crate::types::{Job, TenantInfo, UserInfo};

/// The key of the tenant record.
pub const TENANT_KEY: &str = "tenant";

/// The key of a user's record: `users/<user_id>`.
pub fn user_key(user_id: &str) -> String {
    format!("users/{user_id}")
}

/// What `tenant` holds once the tenant is provisioned: the tenant as provisioning gave it,
/// stored flat (`{tenant_id, tenant_short_id, name, provisioned_at}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TenantRecord {
    /// The tenant.
    #[serde(flatten)]
    pub tenant: TenantInfo,
    /// When it was first provisioned (RFC 3339).
    pub provisioned_at: String,
}

/// What `users/<user_id>` holds once the user is provisioned: the user as provisioning gave
/// it, stored flat (`{tenant_id, user_id, email, …, provisioned_at}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserRecord {
    /// The user.
    #[serde(flatten)]
    pub user: UserInfo,
    /// When it was first provisioned (RFC 3339).
    pub provisioned_at: String,
}

/// Writes the tenant record (idempotent: a second call keeps the first `provisioned_at` and
/// refreshes slug and name).
pub fn record_tenant(tenant: &TenantInfo) -> Result<TenantRecord, HostError> {
    let provisioned_at = tenant_record()?.map_or_else(now_rfc3339, |old| old.provisioned_at);
    let record = TenantRecord {
        tenant: tenant.clone(),
        provisioned_at,
    };
    storage::put_json(TENANT_KEY, &record)?;
    Ok(record)
}

/// The tenant record, when the tenant is provisioned.
pub fn tenant_record() -> Result<Option<TenantRecord>, HostError> {
    storage::get_json(TENANT_KEY)
}

/// Writes `users/<user_id>` (idempotent like [`record_tenant`]).
pub fn record_user(user: &UserInfo) -> Result<UserRecord, HostError> {
    let key = user_key(&user.user_id);
    let provisioned_at =
        storage::get_json::<UserRecord>(&key)?.map_or_else(now_rfc3339, |old| old.provisioned_at);
    let record = UserRecord {
        user: user.clone(),
        provisioned_at,
    };
    storage::put_json(&key, &record)?;
    Ok(record)
}

/// A user's record, when provisioned.
pub fn user_record(user_id: &str) -> Result<Option<UserRecord>, HostError> {
    storage::get_json(&user_key(user_id))
}

/// Removes `users/<user_id>` and everything under `users/<user_id>/`.
pub fn forget_user(user_id: &str) -> Result<(), HostError> {
    let key = user_key(user_id);
    storage::delete(&key)?;
    storage::delete_prefix(&format!("{key}/"))?;
    Ok(())
}

/// Whether the engine is provisioned for the caller's tenant and the caller (`GET
/// /api/v1/status`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProvisioningStatus {
    /// The engine code.
    pub engine: String,
    /// Whether the tenant is provisioned on the engine.
    pub tenant_provisioned: bool,
    /// Whether the caller is provisioned on the engine.
    pub user_provisioned: bool,
}

/// `GET /api/v1/status`: 200 `{"data": ProvisioningStatus}` for the caller's tenant and user;
/// takes no query parameters. Document the route with [`status_operation`].
pub fn status(code: &str, ctx: &Context, request: &Request) -> HandlerResult {
    request.query(&[])?;
    Ok(Response::ok(&ProvisioningStatus {
        engine: code.to_owned(),
        tenant_provisioned: storage::exists(TENANT_KEY)?,
        user_provisioned: storage::exists(&user_key(&ctx.user_id))?,
    }))
}

/// The documentation of [`status`]'s route.
pub fn status_operation() -> crate::Operation {
    crate::Operation::new("Whether the tenant and the caller are provisioned on the engine")
        .ok::<ProvisioningStatus>()
}

/// Most storage entries one chunk of a user's removal scans (see the
/// [module documentation](self)): a few hundred, well within the host's scan budget of a call.
pub const REMOVAL_CHUNK_ENTRIES: u64 = 300;

/// Fewest entries a chunk may scan when the call's budget allows it, so every chunk progresses.
const REMOVAL_CHUNK_FLOOR: u64 = 8;

/// The key of the marker of a user's pending removal: `removals/<user_id>`.
pub fn removal_marker_key(user_id: &str) -> String {
    format!("removals/{user_id}")
}

/// What `removals/<user_id>` holds while a removal of the user is pending.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemovalMarker {
    /// The id of the pending removal; its jobs go on only while the marker holds it.
    pub removal_id: String,
}

/// The payload of the job that carries a user's removal on:
/// `{"remove_user": user_id, "removal_id": …, "after": …}` (`after` only when the engine
/// continues after a key). Unknown fields are refused, so an engine tells it from its other
/// jobs with [`RemovalJob::of`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemovalJob {
    /// The user whose data is being removed.
    pub remove_user: String,
    /// The removal the job belongs to (the marker's `removal_id`).
    pub removal_id: String,
    /// Where the next chunk starts, for an engine that cannot delete as it goes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
}

impl RemovalJob {
    /// The removal job `job` carries; `None` when its payload is another job of the engine.
    pub fn of(job: &Job) -> Option<Self> {
        serde_json::from_slice(&job.payload).ok()
    }

    /// The job's successor, due now, as `storage::write_batch` takes jobs.
    pub fn next(&self, after: Option<String>) -> Result<(u64, Vec<u8>), HostError> {
        Self {
            remove_user: self.remove_user.clone(),
            removal_id: self.removal_id.clone(),
            after,
        }
        .due_now()
    }

    /// The job, due now, as `storage::write_batch` takes jobs.
    fn due_now(&self) -> Result<(u64, Vec<u8>), HostError> {
        let payload = serde_json::to_vec(self)
            .map_err(|error| HostError::new("scheduler.encode", error.to_string()))?;
        Ok((now_unix_ms(), payload))
    }
}

/// Storage writes and jobs committed together in one `storage::write_batch`: a chunk's last
/// writes, with what carries the removal on or finishes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RemovalWrites {
    /// Entries to write.
    pub sets: Vec<(String, Vec<u8>)>,
    /// Keys to remove.
    pub deletes: Vec<String>,
    /// Jobs to schedule: `(due at, Unix ms; payload)`.
    pub jobs: Vec<(u64, Vec<u8>)>,
}

impl RemovalWrites {
    /// Adds `other`'s writes and jobs.
    pub fn append(&mut self, other: Self) {
        self.sets.extend(other.sets);
        self.deletes.extend(other.deletes);
        self.jobs.extend(other.jobs);
    }

    /// True when there is nothing to commit.
    pub fn is_empty(&self) -> bool {
        self.sets.is_empty() && self.deletes.is_empty() && self.jobs.is_empty()
    }

    /// Commits everything in one `storage::write_batch` (nothing when empty).
    pub fn commit(self) -> Result<(), HostError> {
        if self.is_empty() {
            return Ok(());
        }
        storage::write_batch(&self.sets, &self.deletes, &self.jobs).map(drop)
    }
}

/// What starts a removal of `user_id` that continues in jobs: a marker with a fresh
/// `removal_id` (replacing any other pending removal's), the first [`RemovalJob`] (continuing
/// after `after`), and the removal of the user's record. Commit it with the first chunk's last
/// writes; [`remove_user_in_chunks`] does.
pub fn start_removal(user_id: &str, after: Option<String>) -> Result<RemovalWrites, HostError> {
    let job = RemovalJob {
        remove_user: user_id.to_owned(),
        removal_id: new_id(),
        after,
    };
    let marker = RemovalMarker {
        removal_id: job.removal_id.clone(),
    };
    Ok(RemovalWrites {
        sets: vec![storage::json_entry(removal_marker_key(user_id), &marker)?],
        deletes: vec![user_key(user_id)],
        jobs: vec![job.due_now()?],
    })
}

/// True while `removal_id` is the pending removal of `user_id` (its marker holds that id);
/// false once it finished, was cancelled, or another removal replaced it.
pub fn removal_in_progress(user_id: &str, removal_id: &str) -> Result<bool, HostError> {
    Ok(
        storage::get_json::<RemovalMarker>(&removal_marker_key(user_id))?
            .is_some_and(|marker| marker.removal_id == removal_id),
    )
}

/// Cancels the pending removal of `user_id`, if any (its next chunk does not run); true when
/// one was pending. Call it first when the user is provisioned again: what the removal had not
/// reached yet stays the user's, and nothing they create is removed by it.
pub fn cancel_removal(user_id: &str) -> Result<bool, HostError> {
    storage::delete(&removal_marker_key(user_id))
}

/// Ends the removal `job` belongs to: deletes the marker, unless another removal replaced it
/// or it was cancelled meanwhile. True when it did.
pub fn finish_removal(job: &RemovalJob) -> Result<bool, HostError> {
    let key = removal_marker_key(&job.remove_user);
    let Some(bytes) = storage::get(&key)? else {
        return Ok(false);
    };
    let marker: RemovalMarker = storage::decode_json(&key, &bytes)?;
    if marker.removal_id != job.removal_id {
        return Ok(false);
    }
    storage::compare_and_swap(&key, Some(&bytes), None)
}

/// The bound of one chunk of a user's removal: the entries it may scan (at most
/// [`REMOVAL_CHUNK_ENTRIES`] and half of what the call may still scan, or 8 when that half is
/// less and the budget allows), and, in a job, whether the removal is still wanted.
#[derive(Debug)]
pub struct RemovalChunk {
    user_id: String,
    removal_id: Option<String>,
    /// The call's scan budget left at which the chunk stops.
    stop_at: u64,
    cancelled: std::cell::Cell<bool>,
}

impl RemovalChunk {
    /// A chunk starting now, of the removal `removal_id` (`None`: the first chunk, run by
    /// `deprovision_user` before any marker exists).
    pub fn new(user_id: &str, removal_id: Option<&str>) -> Self {
        let left = storage::scan_budget_left();
        let allowance = REMOVAL_CHUNK_ENTRIES.min((left / 2).max(left.min(REMOVAL_CHUNK_FLOOR)));
        Self {
            user_id: user_id.to_owned(),
            removal_id: removal_id.map(str::to_owned),
            stop_at: left - allowance,
            cancelled: std::cell::Cell::new(false),
        }
    }

    /// The user being removed.
    pub fn user_id(&self) -> &str {
        &self.user_id
    }

    /// How many more entries the chunk may scan.
    pub fn left(&self) -> u64 {
        storage::scan_budget_left().saturating_sub(self.stop_at)
    }

    /// The limit for the chunk's next scan, at most `wanted`: 0 when the chunk has scanned its
    /// share, or when its removal was cancelled or replaced meanwhile (checked before each
    /// scan of a job's chunk). On 0 the chunk stops and leaves the rest to the next one.
    pub fn next_scan(&self, wanted: u32) -> Result<u32, HostError> {
        if self.cancelled.get() {
            return Ok(0);
        }
        let limit = u32::try_from(self.left()).unwrap_or(u32::MAX).min(wanted);
        if limit == 0 {
            return Ok(0);
        }
        if let Some(removal_id) = &self.removal_id
            && !removal_in_progress(&self.user_id, removal_id)?
        {
            self.cancelled.set(true);
            return Ok(0);
        }
        Ok(limit)
    }

    /// True when the chunk stopped because its removal was cancelled or replaced.
    pub fn cancelled(&self) -> bool {
        self.cancelled.get()
    }
}

/// What one chunk of a user's removal did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RemovedChunk {
    /// True when nothing of the user is left to remove.
    pub finished: bool,
    /// Where the next chunk starts, for an engine that cannot delete as it goes (`None`: from
    /// the start of what is left).
    pub after: Option<String>,
    /// The chunk's last writes, not committed yet: they are committed in one batch with what
    /// carries the removal on (or ends it).
    pub last_writes: RemovalWrites,
}

/// `deprovision_user` of an engine that removes a user's data in chunks (see the
/// [module documentation](self)). `remove_chunk(chunk, after)` removes what `chunk` allows of
/// the user's data, continuing after `after`, and says whether that was everything. When it
/// was, the user's record is forgotten (and an older pending removal ends); otherwise a
/// removal starts ([`start_removal`]) in the batch of the chunk's last writes, and the engine's
/// `run_job` carries it on with [`continue_removal`]. Either way the user no longer exists for
/// the engine when this returns `Ok`.
///
/// ```no_run
/// use tessera_sdk::tenancy::{self, RemovalChunk, RemovalJob, RemovedChunk};
/// use tessera_sdk::{HostError, Job, storage};
///
/// /// Removes what `chunk` allows of `items/<user_id>/…` (each deleted as it is read).
/// fn remove_items(chunk: &RemovalChunk) -> Result<RemovedChunk, HostError> {
///     let prefix = format!("items/{}/", chunk.user_id());
///     let mut deletes = Vec::new();
///     let mut after: Option<String> = None;
///     loop {
///         let limit = chunk.next_scan(200)?;
///         if limit == 0 {
///             break;
///         }
///         let scan = storage::scan(&prefix, after.as_deref(), limit, false)?;
///         after = scan.entries.last().map(|(key, _)| key.clone());
///         deletes.extend(scan.entries.into_iter().map(|(key, _)| key));
///         if scan.exhausted {
///             let last_writes = tenancy::RemovalWrites { deletes, ..Default::default() };
///             return Ok(RemovedChunk { finished: true, after: None, last_writes });
///         }
///     }
///     let last_writes = tenancy::RemovalWrites { deletes, ..Default::default() };
///     Ok(RemovedChunk { finished: false, after: None, last_writes })
/// }
///
/// /// `Engine::deprovision_user`.
/// fn deprovision_user(user_id: &str) -> Result<(), HostError> {
///     tenancy::remove_user_in_chunks(user_id, |chunk, _| remove_items(chunk))
/// }
///
/// /// `Engine::run_job`.
/// fn run_job(job: &Job) -> Result<(), HostError> {
///     match RemovalJob::of(job) {
///         Some(removal) => tenancy::continue_removal(&removal, |chunk, _| remove_items(chunk)),
///         None => Ok(()),
///     }
/// }
/// ```
pub fn remove_user_in_chunks<F, E>(user_id: &str, remove_chunk: F) -> Result<(), E>
where
    F: FnOnce(&RemovalChunk, Option<&str>) -> Result<RemovedChunk, E>,
    E: From<HostError>,
{
    let chunk = RemovalChunk::new(user_id, None);
    let removed = remove_chunk(&chunk, None)?;
    let mut writes = removed.last_writes;
    if removed.finished {
        writes.deletes.push(removal_marker_key(user_id));
    } else {
        writes.append(start_removal(user_id, removed.after)?);
    }
    writes.commit()?;
    Ok(forget_user(user_id)?)
}

/// `run_job` of a [`RemovalJob`]: nothing when its removal is no longer pending (cancelled,
/// replaced or finished); else `remove_chunk` (as for [`remove_user_in_chunks`]) removes the
/// next chunk, committed in one batch with the job's successor, or, when nothing is left, the
/// marker is deleted.
pub fn continue_removal<F, E>(job: &RemovalJob, remove_chunk: F) -> Result<(), E>
where
    F: FnOnce(&RemovalChunk, Option<&str>) -> Result<RemovedChunk, E>,
    E: From<HostError>,
{
    if !removal_in_progress(&job.remove_user, &job.removal_id)? {
        return Ok(());
    }
    let chunk = RemovalChunk::new(&job.remove_user, Some(&job.removal_id));
    let removed = remove_chunk(&chunk, job.after.as_deref())?;
    let mut writes = removed.last_writes;
    if removed.finished {
        writes.commit()?;
        finish_removal(job)?;
        return Ok(());
    }
    if !chunk.cancelled() {
        writes.jobs.push(job.next(removed.after)?);
    }
    Ok(writes.commit()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_removal_job_is_told_from_other_jobs_and_keeps_its_shape() {
        let job = |payload: &str| Job {
            id: "j".into(),
            tenant_id: "t".into(),
            payload: payload.as_bytes().to_vec(),
            attempt: 1,
        };
        assert_eq!(
            RemovalJob::of(&job(r#"{"remove_user":"u","removal_id":"r"}"#)),
            Some(RemovalJob {
                remove_user: "u".into(),
                removal_id: "r".into(),
                after: None,
            })
        );
        assert_eq!(
            RemovalJob::of(&job(r#"{"remove_user":"u","removal_id":"r","after":"k"}"#))
                .and_then(|job| job.after),
            Some("k".to_owned())
        );
        // Other jobs of an engine are not removal jobs.
        assert_eq!(RemovalJob::of(&job(r#"{"call_id":"c"}"#)), None);
        assert_eq!(
            RemovalJob::of(&job(
                r#"{"remove_user":"u","removal_id":"r","call_id":"c"}"#
            )),
            None
        );
        let written = serde_json::to_value(RemovalJob {
            remove_user: "u".into(),
            removal_id: "r".into(),
            after: None,
        })
        .unwrap();
        assert_eq!(
            written,
            serde_json::json!({ "remove_user": "u", "removal_id": "r" })
        );
        assert_eq!(removal_marker_key("u"), "removals/u");
    }
}
