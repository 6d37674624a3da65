//! Where profiles live and how one user's entry changes: every change of a user runs under a
//! short per-user lease and commits in one `write_batch`, so the profile, its directory entry
//! (the name-ordered copy lists read) and the SDK's `users/<id>` record always agree, and two
//! concurrent edits of one user never lose each other.
//!
//! Keys (tenant-scoped by the host):
//!
//! | key | value |
//! |---|---|
//! | `profiles/<user_id>` | the [`Profile`] |
//! | `directory/<lower-cased display name>\x01<user_id>` | the same [`Profile`], for lists in name order |
//! | `users/<user_id>` | the SDK's provisioning record (`tenancy`) |
//! | `leases/<user_id>` | `{holder, expires_at_ms}` while a change of that user is under way |

use std::time::Duration;

use serde::{Deserialize, Serialize};
use tessera_sdk::tenancy::{self, UserRecord};
use tessera_sdk::{ApiError, HostError, serde_json, storage, time};

use crate::profile::Profile;

/// The prefix of the name-ordered directory entries.
pub const DIRECTORY_PREFIX: &str = "directory/";

/// How long a lease holds: longer than any engine call may run (lifecycle calls stop after
/// 30 s, requests after 5 s), so a lease outlives its holder and is then taken over.
const LEASE_MS: u64 = 60_000;
/// How often, and how long apart, a change waits for another change of the same user.
const LEASE_WAIT_ROUNDS: u32 = 40;
const LEASE_WAIT: Duration = Duration::from_millis(50);
/// Most bytes of the lower-cased display name in a directory key (keys are at most 1 KiB).
const MAX_SORT_NAME_BYTES: usize = 400;
/// Longest user id looked up (longer ones are unknown users, never storage keys).
const MAX_USER_ID_BYTES: usize = 100;

/// Whether `user_id` could name a user (and so fits in storage keys).
fn is_plausible(user_id: &str) -> bool {
    !user_id.is_empty() && user_id.len() <= MAX_USER_ID_BYTES
}

fn profile_key(user_id: &str) -> String {
    format!("profiles/{user_id}")
}

fn lease_key(user_id: &str) -> String {
    format!("leases/{user_id}")
}

/// The directory key of `profile`: its lower-cased display name, then `\x01` (below every
/// printable character, so "Ann" sorts before "Ann Lee") and the user id, which makes it unique.
pub fn directory_key(profile: &Profile) -> String {
    let mut name = profile.display_name.to_lowercase();
    if name.len() > MAX_SORT_NAME_BYTES {
        let mut end = MAX_SORT_NAME_BYTES;
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        name.truncate(end);
    }
    format!("{DIRECTORY_PREFIX}{name}\u{1}{}", profile.user_id)
}

/// The profile of `user_id`, when the user is in the directory.
pub fn load(user_id: &str) -> Result<Option<Profile>, HostError> {
    if !is_plausible(user_id) {
        return Ok(None);
    }
    storage::get_json(&profile_key(user_id))
}

/// The profile of `user_id`, or 404.
pub fn require(user_id: &str) -> Result<Profile, ApiError> {
    load(user_id)?.ok_or_else(|| ApiError::not_found("User"))
}

/// What a change does to a user's entry.
pub enum Change {
    /// Nothing.
    Keep,
    /// Stores the profile (and moves its directory entry when the display name changed).
    Save(Profile),
    /// Stores the profile and the SDK's provisioning record.
    Provision(Profile, UserRecord),
    /// Removes the profile, its directory entry and the provisioning record.
    Remove,
}

/// Changes `user_id`'s entry under its lease: `decide` sees the current profile and says what
/// to do (and what to answer); the change commits in one transaction.
pub fn change<T>(
    user_id: &str,
    decide: impl FnOnce(Option<Profile>) -> Result<(Change, T), ApiError>,
) -> Result<T, ApiError> {
    if !is_plausible(user_id) {
        return Err(ApiError::not_found("User"));
    }
    let lease = Lease::acquire(user_id)?;
    let outcome = load(user_id).map_err(ApiError::from).and_then(|current| {
        let old_entry = current.as_ref().map(directory_key);
        let (change, answer) = decide(current)?;
        let committed = commit(user_id, old_entry, change, &lease)?;
        Ok((committed, answer))
    });
    match outcome {
        Ok((true, answer)) => Ok(answer),
        Ok((false, answer)) => {
            lease.release();
            Ok(answer)
        }
        Err(error) => {
            lease.release();
            Err(error)
        }
    }
}

/// Writes `change` with the lease's removal in one batch; false when there was nothing to write.
fn commit(
    user_id: &str,
    old_entry: Option<String>,
    change: Change,
    lease: &Lease,
) -> Result<bool, HostError> {
    let mut sets = Vec::new();
    let mut deletes = vec![lease.key.clone()];
    let profile = match change {
        Change::Keep => return Ok(false),
        Change::Save(profile) => profile,
        Change::Provision(profile, record) => {
            sets.push(storage::json_entry(tenancy::user_key(user_id), &record)?);
            profile
        }
        Change::Remove => {
            deletes.push(profile_key(user_id));
            deletes.push(tenancy::user_key(user_id));
            deletes.extend(old_entry);
            storage::write_batch(&sets, &deletes, &[])?;
            return Ok(true);
        }
    };
    let new_entry = directory_key(&profile);
    deletes.extend(old_entry.filter(|old| *old != new_entry));
    sets.push(storage::json_entry(profile_key(user_id), &profile)?);
    sets.push(storage::json_entry(new_entry, &profile)?);
    storage::write_batch(&sets, &deletes, &[])?;
    Ok(true)
}

/// A lease's stored value.
#[derive(Serialize, Deserialize)]
struct LeaseRecord {
    holder: String,
    expires_at_ms: u64,
}

/// This call's hold on one user's entry.
struct Lease {
    key: String,
    value: Vec<u8>,
}

impl Lease {
    /// Takes the lease of `user_id` when it is free or expired (compare-and-swap), waiting up to
    /// about two seconds for another change of the same user; 409 after that.
    fn acquire(user_id: &str) -> Result<Self, ApiError> {
        let key = lease_key(user_id);
        for _ in 0..LEASE_WAIT_ROUNDS {
            let now = time::now_unix_ms();
            let current = storage::get(&key)?;
            let held = current
                .as_deref()
                .and_then(|bytes| serde_json::from_slice::<LeaseRecord>(bytes).ok())
                .is_some_and(|lease| lease.expires_at_ms > now);
            if held {
                std::thread::sleep(LEASE_WAIT);
                continue;
            }
            let value = serde_json::to_vec(&LeaseRecord {
                holder: time::new_id(),
                expires_at_ms: now + LEASE_MS,
            })
            .map_err(ApiError::internal)?;
            if storage::compare_and_swap(&key, current.as_deref(), Some(&value))? {
                return Ok(Self { key, value });
            }
        }
        Err(ApiError::Conflict(
            "Another change of this user is in progress; try again.".into(),
        ))
    }

    /// Gives the lease back without a change (only if it is still this call's).
    fn release(self) {
        if let Err(error) = storage::compare_and_swap(&self.key, Some(&self.value), None) {
            tessera_sdk::log::warn(format!("releasing {} failed: {error}", self.key));
        }
    }
}
