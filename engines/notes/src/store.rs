//! The notes' storage: the records, their keys, and the multi-key changes, each committed in one
//! `storage::write_batch`.
//!
//! The note record (`notes/<id>`) is the truth about a note; who may see it is its `owner_id`
//! and its shares (`shares/<note_id>/<user_id>`). Every user with access has an index entry
//! (`by-user/<user_id>/<note_id>`, with their permission), written and removed in the same
//! batch as the note or the share, so a user's notes are one prefix scan. Note ids are UUID v7,
//! so an index scanned backwards lists newest first.

use serde::{Deserialize, Serialize};
use tessera_sdk::tenancy::{RemovalChunk, RemovalWrites, RemovedChunk};
use tessera_sdk::{HostError, storage};

/// Entries read per storage scan.
pub const SCAN_BATCH: u32 = 200;
/// Most entries a maintenance batch (a user's removal) collects before committing.
const MAX_BATCH_ENTRIES: usize = 1000;

/// What a user may do with a note.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Permission {
    /// Everything: edit, delete, share.
    Owner,
    /// Read and change title, body, tags and pinned.
    Edit,
    /// Read only.
    Read,
}

/// A note as stored (its shares are kept beside it).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Note {
    pub id: String,
    pub title: String,
    pub body: String,
    pub tags: Vec<String>,
    pub pinned: bool,
    pub owner_id: String,
    pub created_at: String,
    pub updated_at: String,
}

/// One user's access to a note other than its owner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Share {
    pub user_id: String,
    pub permission: Permission,
}

/// A user's index entry for a note they own or that is shared with them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IndexEntry {
    pub permission: Permission,
}

pub fn note_key(note_id: &str) -> String {
    format!("notes/{note_id}")
}

pub fn share_key(note_id: &str, user_id: &str) -> String {
    format!("shares/{note_id}/{user_id}")
}

fn shares_prefix(note_id: &str) -> String {
    format!("shares/{note_id}/")
}

/// The prefix of a user's index: `by-user/<user_id>/`.
pub fn index_prefix(user_id: &str) -> String {
    format!("by-user/{user_id}/")
}

pub fn index_key(user_id: &str, note_id: &str) -> String {
    format!("{}{note_id}", index_prefix(user_id))
}

pub fn load_note(note_id: &str) -> Result<Option<Note>, HostError> {
    storage::get_json(&note_key(note_id))
}

pub fn load_share(note_id: &str, user_id: &str) -> Result<Option<Share>, HostError> {
    storage::get_json(&share_key(note_id, user_id))
}

/// What `user_id` may do with `note`, if anything.
pub fn permission_of(note: &Note, user_id: &str) -> Result<Option<Permission>, HostError> {
    if note.owner_id == user_id {
        return Ok(Some(Permission::Owner));
    }
    Ok(load_share(&note.id, user_id)?.map(|share| share.permission))
}

/// Every JSON entry under `prefix`, in key order.
pub fn scan_all<T: serde::de::DeserializeOwned>(
    prefix: &str,
) -> Result<Vec<(String, T)>, HostError> {
    let mut entries = Vec::new();
    loop {
        let after = entries.last().map(|(key, _): &(String, T)| key.clone());
        let scan = storage::scan_json::<T>(prefix, after.as_deref(), SCAN_BATCH, false)?;
        let exhausted = scan.exhausted;
        entries.extend(scan.entries);
        if exhausted {
            return Ok(entries);
        }
    }
}

/// The shares of a note, by user id.
pub fn shares_of(note_id: &str) -> Result<Vec<Share>, HostError> {
    Ok(scan_all::<Share>(&shares_prefix(note_id))?
        .into_iter()
        .map(|(_, share)| share)
        .collect())
}

/// The writes and deletions of one change, committed together (all or none).
#[derive(Default)]
pub struct Batch {
    sets: Vec<(String, Vec<u8>)>,
    deletes: Vec<String>,
}

impl Batch {
    pub fn new() -> Self {
        Self::default()
    }

    /// Stores `value` as JSON under `key`.
    pub fn put<T: Serialize + ?Sized>(
        &mut self,
        key: impl Into<String>,
        value: &T,
    ) -> Result<(), HostError> {
        self.sets.push(storage::json_entry(key, value)?);
        Ok(())
    }

    pub fn delete(&mut self, key: impl Into<String>) {
        self.deletes.push(key.into());
    }

    pub fn len(&self) -> usize {
        self.sets.len() + self.deletes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn commit(self) -> Result<(), HostError> {
        if self.is_empty() {
            return Ok(());
        }
        storage::write_batch(&self.sets, &self.deletes, &[]).map(drop)
    }

    /// The outcome of a removal chunk whose last writes are this batch's, uncommitted.
    fn into_chunk(self, finished: bool) -> RemovedChunk {
        RemovedChunk {
            finished,
            after: None,
            last_writes: RemovalWrites {
                sets: self.sets,
                deletes: self.deletes,
                jobs: Vec::new(),
            },
        }
    }

    /// Commits when the batch has grown large, and carries on with an empty one.
    fn commit_if_large(&mut self) -> Result<(), HostError> {
        if self.len() >= MAX_BATCH_ENTRIES {
            std::mem::take(self).commit()?;
        }
        Ok(())
    }
}

/// Adds a new note and its owner's index entry.
pub fn stage_new_note(batch: &mut Batch, note: &Note) -> Result<(), HostError> {
    batch.put(note_key(&note.id), note)?;
    batch.put(
        index_key(&note.owner_id, &note.id),
        &IndexEntry {
            permission: Permission::Owner,
        },
    )
}

/// Adds or changes a share and the user's index entry.
pub fn stage_share(batch: &mut Batch, note_id: &str, share: &Share) -> Result<(), HostError> {
    batch.put(share_key(note_id, &share.user_id), share)?;
    batch.put(
        index_key(&share.user_id, note_id),
        &IndexEntry {
            permission: share.permission,
        },
    )
}

/// Removes a share and the user's index entry.
pub fn stage_unshare(batch: &mut Batch, note_id: &str, user_id: &str) {
    batch.delete(share_key(note_id, user_id));
    batch.delete(index_key(user_id, note_id));
}

/// Removes a note, its owner's index entry, and every share with its index entry.
pub fn stage_note_removal(
    batch: &mut Batch,
    note_id: &str,
    owner_id: &str,
) -> Result<(), HostError> {
    batch.delete(note_key(note_id));
    batch.delete(index_key(owner_id, note_id));
    for share in shares_of(note_id)? {
        stage_unshare(batch, note_id, &share.user_id);
    }
    Ok(())
}

/// Removes a chunk of what a user leaves behind, as far as `chunk` allows: the notes they own
/// (each with its shares) and their shares of other notes, index entry by index entry. Each
/// note goes with the index entry that led to it, after its shares (a note with more shares
/// than the chunk may scan keeps its entry and the shares not reached yet), so what is left is
/// consistent and the next chunk starts again at the user's first index entry. The chunk's
/// last writes come back uncommitted, for the batch that carries the removal on.
pub fn remove_user_notes(chunk: &RemovalChunk) -> Result<RemovedChunk, HostError> {
    let user_id = chunk.user_id();
    let prefix = index_prefix(user_id);
    let mut batch = Batch::new();
    let mut after: Option<String> = None;
    loop {
        // Index entries take at most half of what is left: an owned note's shares need a scan.
        let wanted = SCAN_BATCH.min(u32::try_from(chunk.left() / 2).unwrap_or(u32::MAX));
        let limit = chunk.next_scan(wanted.max(1))?;
        if limit == 0 {
            return Ok(batch.into_chunk(false));
        }
        let scan = storage::scan_json::<IndexEntry>(&prefix, after.as_deref(), limit, false)?;
        for (key, entry) in scan.entries {
            let note_id = &key[prefix.len()..];
            let staged = match entry.permission {
                Permission::Owner => stage_owned_note_removal(&mut batch, note_id, chunk)?,
                Permission::Edit | Permission::Read => {
                    stage_unshare(&mut batch, note_id, user_id);
                    true
                }
            };
            if !staged {
                return Ok(batch.into_chunk(false));
            }
            batch.commit_if_large()?;
            after = Some(key);
        }
        if scan.exhausted {
            return Ok(batch.into_chunk(true));
        }
    }
}

/// Stages the removal of a note the chunk's user owns: its shares with their index entries as
/// far as `chunk` allows, then, when none is left, the note and its owner's index entry. False
/// when the chunk ran out first.
fn stage_owned_note_removal(
    batch: &mut Batch,
    note_id: &str,
    chunk: &RemovalChunk,
) -> Result<bool, HostError> {
    let prefix = shares_prefix(note_id);
    let mut after: Option<String> = None;
    loop {
        let limit = chunk.next_scan(SCAN_BATCH)?;
        if limit == 0 {
            return Ok(false);
        }
        let scan = storage::scan_json::<Share>(&prefix, after.as_deref(), limit, false)?;
        for (key, share) in scan.entries {
            stage_unshare(batch, note_id, &share.user_id);
            after = Some(key);
        }
        if scan.exhausted {
            batch.delete(note_key(note_id));
            batch.delete(index_key(chunk.user_id(), note_id));
            return Ok(true);
        }
    }
}
