//! Where profiles live and how one user's entry changes: every change of a user is one
//! transaction that expects the profile it read, so the profile, its directory entry (the
//! name-ordered copy lists read) and the SDK's `users/<id>` record always agree, and two
//! concurrent edits of one user never lose each other: a change whose profile moved meanwhile
//! is decided again on the new one. (Earlier versions held a per-user lease instead; a lease
//! key they left is ignored.)
//!
//! Keys (tenant-scoped by the host):
//!
//! | key | value |
//! |---|---|
//! | `profiles/<user_id>` | the [`Profile`] |
//! | `directory/<lower-cased display name>\x01<user_id>` | the same [`Profile`], for lists in name order |
//! | `users/<user_id>` | the SDK's provisioning record (`tenancy`) |

use std::time::Duration;

use tessera_sdk::storage::{self, Committed, Transaction};
use tessera_sdk::tenancy::{self, UserRecord};
use tessera_sdk::{ApiError, HostError, time};

use crate::profile::Profile;

/// The prefix of the name-ordered directory entries.
pub const DIRECTORY_PREFIX: &str = "directory/";

/// How many times a change is made again on a profile that changed before it committed
/// (about 2 s of back-off in all, then 409).
const CHANGE_ROUNDS: u32 = 48;
/// The longest pause between two rounds.
const MAX_BACKOFF_MS: u64 = 50;
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

/// Changes `user_id`'s entry: `decide` sees the current profile and says what to do (and what
/// to answer); the change is one transaction expecting the profile `decide` saw, made again on
/// the new profile, after a short back-off, when another change of the user committed in
/// between (409 after [`CHANGE_ROUNDS`] such rounds).
pub fn change<T>(
    user_id: &str,
    mut decide: impl FnMut(Option<Profile>) -> Result<(Change, T), ApiError>,
) -> Result<T, ApiError> {
    if !is_plausible(user_id) {
        return Err(ApiError::not_found("User"));
    }
    for round in 0..CHANGE_ROUNDS {
        if let Some(answer) = change_once(user_id, &mut decide)? {
            return Ok(answer);
        }
        // Another change of the user won the round: back off (1, 2, 4 … 32 ms, then 50 ms,
        // with jitter) so that many concurrent changes of one user take turns instead of all
        // retrying at once.
        let ceiling_ms = (1_u64 << round.min(5)).min(MAX_BACKOFF_MS);
        let jitter_ms = time::now_unix_micros().unsigned_abs() % (ceiling_ms + 1);
        std::thread::sleep(Duration::from_millis(ceiling_ms / 2 + jitter_ms / 2 + 1));
    }
    Err(ApiError::Conflict(
        "Another change of this user is in progress; try again.".into(),
    ))
}

/// One round of [`change`]: `None` when the profile changed before the transaction committed.
fn change_once<T>(
    user_id: &str,
    decide: &mut impl FnMut(Option<Profile>) -> Result<(Change, T), ApiError>,
) -> Result<Option<T>, ApiError> {
    let key = profile_key(user_id);
    let stored = storage::get(&key)?;
    let current = stored
        .as_deref()
        .map(|bytes| storage::decode_json::<Profile>(&key, bytes))
        .transpose()?;
    let old_entry = current.as_ref().map(directory_key);
    let (change, answer) = decide(current)?;
    let mut transaction = Transaction::new();
    transaction.expect(key.clone(), stored.as_deref());
    let profile = match change {
        Change::Keep => return Ok(Some(answer)),
        Change::Save(profile) => profile,
        Change::Provision(profile, record) => {
            let (record_key, record) = storage::json_entry(tenancy::user_key(user_id), &record)?;
            transaction.set(record_key, record);
            profile
        }
        Change::Remove => {
            transaction.delete(key).delete(tenancy::user_key(user_id));
            if let Some(old_entry) = old_entry {
                transaction.delete(old_entry);
            }
            return commit(&transaction, answer);
        }
    };
    let new_entry = directory_key(&profile);
    if let Some(old_entry) = old_entry.filter(|old| *old != new_entry) {
        transaction.delete(old_entry);
    }
    transaction.set_json(key, &profile)?;
    transaction.set_json(new_entry, &profile)?;
    commit(&transaction, answer)
}

/// Commits `transaction` (with everything the call wrote before it): `Some(answer)`, or `None`
/// when the profile it expects changed meanwhile.
fn commit<T>(transaction: &Transaction, answer: T) -> Result<Option<T>, ApiError> {
    match transaction.commit()? {
        Committed::Yes { .. } => Ok(Some(answer)),
        Committed::Conflict => Ok(None),
    }
}
