//! The mail's storage: the records, their keys, and the multi-key changes, each committed in one
//! `storage::write_batch`.
//!
//! Every provisioned user has a mailbox, and a mailbox holds its own copy of every message it
//! sent or received: `messages/<user_id>/<copy_id>`, the truth about that copy (its folder, its
//! read flag, the sender copy's delivery state). Each copy has one index entry in its folder,
//! `folders/<user_id>/<folder>/<copy_id>` `{read}`, written and removed in the same batch as the
//! record; copy ids are UUID v7, so a folder scanned backwards lists newest first. A message's
//! body is stored once, raw UTF-8, at `bodies/<message_id>`, held by one
//! `holders/<message_id>/<copy_id>` entry per copy: the body goes with its last copy.
//!
//! Each folder's size is kept as two counters, `tallies/<user_id>/<folder>/total` and
//! `…/unread`, added to in the same transaction as the copies they count; every change of an
//! existing copy commits only if the copy's record is still what it was read as, so a change
//! is counted once however many calls race. `tallies/<user_id>/counted` marks counters that
//! are complete; a mailbox from before them is counted once, on first use (see [`tallies`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use tessera_sdk::storage::{Committed, Transaction};
use tessera_sdk::tenancy::{RemovalChunk, RemovalWrites, RemovedChunk};
use tessera_sdk::{ApiError, Context, HostError, storage, tenancy};

/// Entries read per storage scan.
pub const SCAN_BATCH: u32 = 200;

/// Most times a change of a copy is read and tried again when another call changed the copy
/// in between.
pub const CHANGE_ROUNDS: usize = 16;

/// The four folders of every mailbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Folder {
    Inbox,
    Sent,
    Outbox,
    Trash,
}

impl Folder {
    pub const ALL: [Folder; 4] = [Folder::Inbox, Folder::Sent, Folder::Outbox, Folder::Trash];

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|folder| folder.as_str() == text)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Inbox => "inbox",
            Self::Sent => "sent",
            Self::Outbox => "outbox",
            Self::Trash => "trash",
        }
    }

    /// The display name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Inbox => "Inbox",
            Self::Sent => "Sent",
            Self::Outbox => "Outbox",
            Self::Trash => "Trash",
        }
    }
}

/// Where a recipient's copy (or the sender copy's external recipients) stand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// A user of the tenant: the copy is in their inbox.
    Delivered,
    /// External, waiting for the relay (or for a relay to exist).
    Queued,
    /// External, accepted by the relay.
    Sent,
    /// External, refused on every attempt.
    Failed,
}

/// One recipient of a message, as the sender's copy tracks it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Recipient {
    pub address: String,
    /// A user of the tenant (internal delivery) rather than an outside address.
    pub internal: bool,
    pub status: Status,
}

/// The delivery state of a sent message, kept on the sender's copy only.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Delivery {
    /// `delivered` when every recipient is a user of the tenant; otherwise the external
    /// recipients' status (`queued`, `sent`, `failed`).
    pub status: Status,
    pub recipients: Vec<Recipient>,
    /// Attempts made to hand the external recipients to the relay.
    pub attempts: u32,
    pub last_attempt_at: Option<String>,
    /// When the next attempt is due; null when none is scheduled.
    pub next_attempt_at: Option<String>,
    /// Why the last attempt failed.
    pub last_error: Option<String>,
    /// When the relay accepted the message.
    pub sent_at: Option<String>,
}

impl Delivery {
    /// The external recipients' addresses.
    pub fn external_addresses(&self) -> Vec<String> {
        self.recipients
            .iter()
            .filter(|recipient| !recipient.internal)
            .map(|recipient| recipient.address.clone())
            .collect()
    }

    /// Sets the status of the external recipients, and so of the delivery.
    pub fn set_external_status(&mut self, status: Status) {
        self.status = status;
        for recipient in self.recipients.iter_mut().filter(|r| !r.internal) {
            recipient.status = status;
        }
    }
}

/// One mailbox's copy of a message.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Message {
    /// The copy's id (UUID v7), unique across mailboxes.
    pub id: String,
    /// The message's id, shared by all its copies (and the `Message-ID` sent to the relay).
    pub message_id: String,
    pub folder: Folder,
    pub read: bool,
    /// The sender's address.
    pub from: String,
    pub sender_id: String,
    pub to: Vec<String>,
    pub cc: Vec<String>,
    pub subject: String,
    /// The sender's copy only.
    pub delivery: Option<Delivery>,
    pub created_at: String,
    pub updated_at: String,
}

impl Message {
    /// The folder the copy belongs in outside the trash: a received copy in `inbox`; the
    /// sender's in `outbox` while external recipients are queued or failed, else in `sent`.
    pub fn home(&self) -> Folder {
        match &self.delivery {
            None => Folder::Inbox,
            Some(delivery) if matches!(delivery.status, Status::Queued | Status::Failed) => {
                Folder::Outbox
            }
            Some(_) => Folder::Sent,
        }
    }
}

/// A copy's entry in its folder index.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IndexEntry {
    pub read: bool,
}

pub fn message_key(user_id: &str, copy_id: &str) -> String {
    format!("messages/{user_id}/{copy_id}")
}

pub fn folder_prefix(user_id: &str, folder: Folder) -> String {
    format!("folders/{user_id}/{}/", folder.as_str())
}

fn index_key(user_id: &str, folder: Folder, copy_id: &str) -> String {
    format!("{}{copy_id}", folder_prefix(user_id, folder))
}

pub fn mailbox_key(user_id: &str, folder: Folder) -> String {
    format!("mailboxes/{user_id}/{}", folder.as_str())
}

fn body_key(message_id: &str) -> String {
    format!("bodies/{message_id}")
}

fn holder_key(message_id: &str, copy_id: &str) -> String {
    format!("holders/{message_id}/{copy_id}")
}

fn tallies_prefix(user_id: &str) -> String {
    format!("tallies/{user_id}/")
}

fn total_key(user_id: &str, folder: Folder) -> String {
    format!("{}{}/total", tallies_prefix(user_id), folder.as_str())
}

fn unread_key(user_id: &str, folder: Folder) -> String {
    format!("{}{}/unread", tallies_prefix(user_id), folder.as_str())
}

/// Counts every transaction that changed a count of the mailbox: a recount that saw it
/// unchanged saw no change in between.
fn changes_key(user_id: &str) -> String {
    format!("{}changes", tallies_prefix(user_id))
}

/// Present once the counters of the mailbox are complete.
fn counted_key(user_id: &str) -> String {
    format!("{}counted", tallies_prefix(user_id))
}

/// The index of provisioned users by address: `by-email/<lower-cased address>` → user id.
pub fn address_key(address: &str) -> String {
    format!("by-email/{}", address.to_ascii_lowercase())
}

/// A storage transaction under construction: the writes, deletions, counts and jobs of one
/// change, committed together, and only if the copies it changes are still as they were read.
#[derive(Default)]
pub struct Batch {
    transaction: Transaction,
    /// Net change of each folder counter.
    counts: BTreeMap<String, i64>,
    /// The mailboxes whose counts change.
    counted_users: Vec<String>,
}

/// A copy as read from storage: the record and the bytes it was read as (what a change of it
/// expects to find at commit).
pub struct Stored {
    pub message: Message,
    bytes: Vec<u8>,
}

impl Batch {
    pub fn new() -> Self {
        Self::default()
    }

    fn put<T: Serialize + ?Sized>(
        &mut self,
        key: impl Into<String>,
        value: &T,
    ) -> Result<(), HostError> {
        self.transaction.set_json(key, value)?;
        Ok(())
    }

    /// Schedules `payload` as JSON for `at_unix_ms`.
    pub fn job<T: Serialize + ?Sized>(
        &mut self,
        at_unix_ms: u64,
        payload: &T,
    ) -> Result<(), HostError> {
        let bytes = tessera_sdk::serde_json::to_vec(payload)
            .map_err(|error| HostError::new("scheduler.encode", error.to_string()))?;
        self.transaction.job(at_unix_ms, bytes);
        Ok(())
    }

    /// Stores a message's body, held by the copies added with [`Batch::add_copy`].
    pub fn put_body(&mut self, message_id: &str, body: &str) {
        self.transaction
            .set(body_key(message_id), body.as_bytes().to_vec());
    }

    /// Counts `message` in (`sign` 1) or out of (`sign` -1) its folder of `user_id`'s mailbox.
    fn count(&mut self, user_id: &str, message: &Message, sign: i64) {
        *self
            .counts
            .entry(total_key(user_id, message.folder))
            .or_default() += sign;
        if !message.read {
            *self
                .counts
                .entry(unread_key(user_id, message.folder))
                .or_default() += sign;
        }
        if !self.counted_users.iter().any(|counted| counted == user_id) {
            self.counted_users.push(user_id.to_owned());
        }
    }

    /// Adds a new copy to `user_id`'s mailbox: the record, its index entry, its hold on the
    /// body and its count.
    pub fn add_copy(&mut self, user_id: &str, message: &Message) -> Result<(), HostError> {
        self.put(holder_key(&message.message_id, &message.id), user_id)?;
        self.put(message_key(user_id, &message.id), message)?;
        self.put(
            index_key(user_id, message.folder, &message.id),
            &IndexEntry { read: message.read },
        )?;
        self.count(user_id, message, 1);
        Ok(())
    }

    /// Replaces the copy `before` of `user_id`'s mailbox with `message` (same id), moving its
    /// index entry and its count when its folder or read flag changed.
    pub fn change_copy(
        &mut self,
        user_id: &str,
        before: &Stored,
        message: &Message,
    ) -> Result<(), HostError> {
        let key = message_key(user_id, &message.id);
        self.transaction.expect(key.clone(), Some(&before.bytes));
        if before.message.folder != message.folder {
            self.transaction
                .delete(index_key(user_id, before.message.folder, &message.id));
        }
        self.put(key, message)?;
        self.put(
            index_key(user_id, message.folder, &message.id),
            &IndexEntry { read: message.read },
        )?;
        self.count(user_id, &before.message, -1);
        self.count(user_id, message, 1);
        Ok(())
    }

    /// Removes the copy `stored`, its index entry, its hold on the body and its count (release
    /// the body after the commit with [`release_bodies`]).
    pub fn remove_copy(&mut self, user_id: &str, stored: &Stored) {
        let message = &stored.message;
        let key = message_key(user_id, &message.id);
        self.transaction.expect(key.clone(), Some(&stored.bytes));
        self.transaction.delete(key);
        self.transaction
            .delete(index_key(user_id, message.folder, &message.id));
        self.transaction
            .delete(holder_key(&message.message_id, &message.id));
        self.count(user_id, message, -1);
    }

    /// Commits everything; false (nothing written) when a copy it changes was changed by
    /// another call since it was read: read it again and retry.
    pub fn commit(mut self) -> Result<bool, HostError> {
        let mut counted = false;
        for (key, amount) in std::mem::take(&mut self.counts) {
            counted |= amount != 0;
            self.transaction.add(key, amount);
        }
        if counted {
            for user_id in &self.counted_users {
                self.transaction.add(changes_key(user_id), 1);
            }
        }
        if self.transaction.is_empty() {
            return Ok(true);
        }
        Ok(matches!(self.transaction.commit()?, Committed::Yes { .. }))
    }
}

/// The copy `copy_id` of `user_id`'s mailbox with the bytes it was read as.
pub fn load_stored(user_id: &str, copy_id: &str) -> Result<Option<Stored>, HostError> {
    let key = message_key(user_id, copy_id);
    storage::get(&key)?
        .map(|bytes| {
            let message = storage::decode_json(&key, &bytes)?;
            Ok(Stored { message, bytes })
        })
        .transpose()
}

/// The caller's copy `copy_id` as stored; 404 for anyone else's.
pub fn find_stored(ctx: &Context, copy_id: &str) -> Result<Stored, ApiError> {
    load_stored(&ctx.user_id, copy_id)?.ok_or_else(|| ApiError::not_found("Message"))
}

/// The answer when a copy kept changing under [`CHANGE_ROUNDS`] attempts to change it.
pub fn kept_changing() -> ApiError {
    ApiError::Conflict("The message kept changing; try again.".into())
}

pub fn load_message(user_id: &str, copy_id: &str) -> Result<Option<Message>, HostError> {
    storage::get_json(&message_key(user_id, copy_id))
}

/// The caller's copy `copy_id`; 404 for anyone else's.
pub fn find_message(ctx: &Context, copy_id: &str) -> Result<Message, ApiError> {
    load_message(&ctx.user_id, copy_id)?.ok_or_else(|| ApiError::not_found("Message"))
}

/// The body of a message (empty when it is gone).
pub fn load_body(message_id: &str) -> Result<String, HostError> {
    Ok(storage::get(&body_key(message_id))?
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .unwrap_or_default())
}

/// Removes the bodies no copy holds any more. Call it after committing the removal of copies:
/// of two removals at once, the one committed last sees no holder left.
pub fn release_bodies(message_ids: &[String]) -> Result<(), HostError> {
    for message_id in message_ids {
        if storage::list(&format!("holders/{message_id}/"), None, 1, false)?.is_empty() {
            storage::delete(&body_key(message_id))?;
        }
    }
    Ok(())
}

/// The caller's provisioning record (their address): 404 when the caller has no mailbox.
pub fn mailbox_owner(ctx: &Context) -> Result<tenancy::UserRecord, ApiError> {
    tenancy::user_record(&ctx.user_id)?.ok_or_else(|| ApiError::not_found("Mailbox"))
}

/// The provisioned user of the tenant with this address, if any (case-insensitive).
pub fn user_by_address(address: &str) -> Result<Option<String>, HostError> {
    let Some(user_id) = storage::get_json::<String>(&address_key(address))? else {
        return Ok(None);
    };
    Ok(tenancy::user_record(&user_id)?.map(|record| record.user.user_id))
}

/// `(total, unread)` of each folder of `user_id`'s mailbox, in [`Folder::ALL`] order, from its
/// counters; a mailbox without complete counters (kept since before them) is counted first.
pub fn tallies(user_id: &str) -> Result<Vec<(u64, u64)>, HostError> {
    let mut keys = vec![counted_key(user_id)];
    for folder in Folder::ALL {
        keys.push(total_key(user_id, folder));
        keys.push(unread_key(user_id, folder));
    }
    let key_refs: Vec<&str> = keys.iter().map(String::as_str).collect();
    let values = storage::get_many(&key_refs)?;
    if values[0].is_none() {
        return recount(user_id);
    }
    let number = |index: usize| -> Result<u64, HostError> {
        let value = values[index]
            .as_deref()
            .map(|bytes| storage::decode_json::<i64>(&keys[index], bytes))
            .transpose()?
            .unwrap_or(0);
        Ok(u64::try_from(value).unwrap_or(0))
    };
    (0..Folder::ALL.len())
        .map(|folder| Ok((number(1 + 2 * folder)?, number(2 + 2 * folder)?)))
        .collect()
}

/// Counts a mailbox whose counters are not complete from its folder indexes, and stores the
/// counts as its counters, marked complete, unless a change was counted meanwhile (then it
/// counts again). The counting reads every index entry, within one call's scan budget: only
/// mailboxes from before the counters, counted once, pay it.
pub fn recount(user_id: &str) -> Result<Vec<(u64, u64)>, HostError> {
    for _ in 0..CHANGE_ROUNDS {
        let changes = storage::get(&changes_key(user_id))?;
        let mut counts = Vec::with_capacity(Folder::ALL.len());
        let mut transaction = Transaction::new();
        transaction
            .expect(counted_key(user_id), None)
            .expect(changes_key(user_id), changes.as_deref())
            .set_json(counted_key(user_id), &true)?;
        for folder in Folder::ALL {
            let (total, unread) = count_index(user_id, folder)?;
            transaction
                .set_json(total_key(user_id, folder), &total)?
                .set_json(unread_key(user_id, folder), &unread)?;
            counts.push((total, unread));
        }
        if let Committed::Yes { .. } = transaction.commit()? {
            return Ok(counts);
        }
        if storage::exists(&counted_key(user_id))? {
            // Counted by another call meanwhile: read its counters.
            return tallies(user_id);
        }
    }
    Err(HostError::new(
        "mail.recount",
        "the mailbox kept changing while it was counted",
    ))
}

/// `(total, unread)` of a folder, read from its index.
fn count_index(user_id: &str, folder: Folder) -> Result<(u64, u64), HostError> {
    let prefix = folder_prefix(user_id, folder);
    let (mut total, mut unread) = (0, 0);
    let mut after: Option<String> = None;
    loop {
        let scan = storage::scan_json::<IndexEntry>(&prefix, after.as_deref(), 1000, false)?;
        let (rows, exhausted) = (scan.entries, scan.exhausted);
        after = rows.last().map(|(key, _)| key.clone());
        total += rows.len() as u64;
        unread += rows.iter().filter(|(_, entry)| !entry.read).count() as u64;
        if exhausted {
            return Ok((total, unread));
        }
    }
}

/// Removes what `chunk` allows of a user's mailbox: copies (each with its index entry, count
/// and hold on the body; the bodies only they held go too), and once no copy is left the
/// folder indexes, records and counters. Copies are deleted as they are read, so the next chunk
/// starts again at the first one left.
pub fn remove_mailbox(chunk: &RemovalChunk) -> Result<RemovedChunk, HostError> {
    let user_id = chunk.user_id();
    let prefix = format!("messages/{user_id}/");
    let unfinished = || RemovedChunk {
        finished: false,
        after: None,
        last_writes: RemovalWrites::default(),
    };
    loop {
        // Half for the copies, half for the look-ups of their bodies' other holders.
        let limit = chunk.next_scan(
            SCAN_BATCH
                .min(u32::try_from(chunk.left() / 2).unwrap_or(u32::MAX))
                .max(1),
        )?;
        if limit == 0 {
            return Ok(unfinished());
        }
        let rows = storage::list(&prefix, None, limit, false)?;
        if rows.is_empty() {
            break;
        }
        let mut batch = Batch::new();
        let mut message_ids = Vec::with_capacity(rows.len());
        for (key, bytes) in rows {
            let message: Message = storage::decode_json(&key, &bytes)?;
            message_ids.push(message.message_id.clone());
            batch.remove_copy(user_id, &Stored { message, bytes });
        }
        // A copy changed meanwhile is read again in the next round.
        if batch.commit()? {
            release_bodies(&message_ids)?;
        }
    }
    storage::delete_prefix(&format!("folders/{user_id}/"))?;
    storage::delete_prefix(&format!("mailboxes/{user_id}/"))?;
    storage::delete_prefix(&tallies_prefix(user_id))?;
    Ok(RemovedChunk {
        finished: true,
        ..unfinished()
    })
}
