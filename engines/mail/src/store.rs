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

use serde::{Deserialize, Serialize};
use tessera_sdk::{ApiError, Context, HostError, storage, tenancy};

/// Entries read per storage scan.
pub const SCAN_BATCH: u32 = 200;

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

/// The index of provisioned users by address: `by-email/<lower-cased address>` → user id.
pub fn address_key(address: &str) -> String {
    format!("by-email/{}", address.to_ascii_lowercase())
}

/// A storage transaction under construction: the writes, deletions and jobs of one change.
#[derive(Default)]
pub struct Batch {
    sets: Vec<(String, Vec<u8>)>,
    deletes: Vec<String>,
    jobs: Vec<(u64, Vec<u8>)>,
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
        self.sets.push(storage::json_entry(key, value)?);
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
        self.jobs.push((at_unix_ms, bytes));
        Ok(())
    }

    /// Stores a message's body, held by the copies added with [`Batch::add_copy`].
    pub fn put_body(&mut self, message_id: &str, body: &str) {
        self.sets
            .push((body_key(message_id), body.as_bytes().to_vec()));
    }

    /// Adds a new copy to `user_id`'s mailbox: the record, its index entry and its hold on the
    /// body.
    pub fn add_copy(&mut self, user_id: &str, message: &Message) -> Result<(), HostError> {
        self.put(holder_key(&message.message_id, &message.id), user_id)?;
        self.put_message(user_id, message, None)
    }

    /// Writes a copy of `user_id`'s mailbox and its index entry, removing the entry in
    /// `previous` when the copy moved from there.
    pub fn put_message(
        &mut self,
        user_id: &str,
        message: &Message,
        previous: Option<Folder>,
    ) -> Result<(), HostError> {
        if let Some(previous) = previous.filter(|previous| *previous != message.folder) {
            self.deletes.push(index_key(user_id, previous, &message.id));
        }
        self.put(message_key(user_id, &message.id), message)?;
        self.put(
            index_key(user_id, message.folder, &message.id),
            &IndexEntry { read: message.read },
        )
    }

    /// Removes a copy, its index entry and its hold on the body (release the body after the
    /// commit with [`release_bodies`]).
    pub fn remove_copy(&mut self, user_id: &str, message: &Message) {
        self.deletes.push(message_key(user_id, &message.id));
        self.deletes
            .push(index_key(user_id, message.folder, &message.id));
        self.deletes
            .push(holder_key(&message.message_id, &message.id));
    }

    pub fn commit(self) -> Result<(), HostError> {
        if self.sets.is_empty() && self.deletes.is_empty() && self.jobs.is_empty() {
            return Ok(());
        }
        storage::write_batch(&self.sets, &self.deletes, &self.jobs).map(drop)
    }
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
    Ok(tenancy::user_record(&user_id)?.map(|record| record.user_id))
}

/// `(total, unread)` of a folder, from its index.
pub fn count(user_id: &str, folder: Folder) -> Result<(u64, u64), HostError> {
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

/// Removes a user's mailbox: every copy (and the bodies only it held), the folder index and the
/// folder records.
pub fn remove_mailbox(user_id: &str) -> Result<(), HostError> {
    let prefix = format!("messages/{user_id}/");
    loop {
        let rows = storage::list_json::<Message>(&prefix, None, SCAN_BATCH, false)?;
        if rows.is_empty() {
            break;
        }
        let mut batch = Batch::new();
        let mut message_ids = Vec::with_capacity(rows.len());
        for (_, message) in &rows {
            batch.remove_copy(user_id, message);
            message_ids.push(message.message_id.clone());
        }
        batch.commit()?;
        release_bodies(&message_ids)?;
    }
    storage::delete_prefix(&format!("folders/{user_id}/"))?;
    storage::delete_prefix(&format!("mailboxes/{user_id}/"))?;
    Ok(())
}
