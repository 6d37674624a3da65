//! The drive's storage: folder and file records, each folder's name index, name claims, and the
//! removal of whole trees.
//!
//! A record (`folders/<id>`, `files/<id>`) is the truth about an item. Each item in a folder has
//! an index entry `children/<folder_id>/<d|f>/<lowercased name>` (`d` folders, `f` files: a scan
//! lists folders first, each kind by name), which is also how names stay unique: an entry is
//! claimed with compare-and-swap before the item is written, or (an upload: [`free_name`])
//! written by the transaction that writes the item, on the condition that neither kind's entry
//! for the name changed since it was found free. An entry is *live* when the record
//! it names is really in that folder under that name; anything else (the claim of an upload
//! still running, an entry left by a crash or by two renames racing) is skipped by lists and,
//! once older than [`CLAIM_GRACE_MICROS`], free for the next claim.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tessera_sdk::{CursorMeta, CursorPage, HostError, blobs, storage, time};

/// The id of the tenant's shared drive's root folder.
pub const ROOT_ID: &str = "root";
/// Entries read per storage scan.
const SCAN_BATCH: u32 = 500;
/// How long a claim that is not live yet still holds its name: longer than any request runs.
const CLAIM_GRACE_MICROS: i64 = 30_000_000;
/// Most compare-and-swap rounds for one claim.
const CLAIM_ROUNDS: usize = 16;
/// Most folders walked up from one folder (a guard against a corrupted parent chain).
const MAX_ANCESTRY: usize = 10_000;

/// The id of a user's home folder.
pub fn home_id(user_id: &str) -> String {
    format!("home-{user_id}")
}

/// Folder or file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Folder,
    File,
}

impl Kind {
    fn segment(self) -> &'static str {
        match self {
            Self::Folder => "d",
            Self::File => "f",
        }
    }

    fn other(self) -> Self {
        match self {
            Self::Folder => Self::File,
            Self::File => Self::Folder,
        }
    }

    fn from_segment(segment: &str) -> Option<Self> {
        match segment {
            "d" => Some(Self::Folder),
            "f" => Some(Self::File),
            _ => None,
        }
    }
}

/// A folder: the shared drive's root (`root`), a user's home (`home-<user_id>`), or one made
/// by a user (a UUID v7).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Folder {
    pub id: String,
    pub name: String,
    /// `None` for the root and home folders.
    pub parent_id: Option<String>,
    /// The user whose home drive holds the folder; `None` in the shared drive.
    pub owner_id: Option<String>,
    /// `None` for the root and home folders.
    pub created_by: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

/// A file's metadata; its bytes are the blob `files/<id>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct File {
    pub id: String,
    pub name: String,
    pub folder_id: String,
    /// The user whose home drive holds the file; `None` in the shared drive.
    pub owner_id: Option<String>,
    pub content_type: String,
    pub size_bytes: u64,
    pub created_by: String,
    pub created_at: String,
    pub updated_at: String,
}

/// A folder or a file as the API shows it: the record with its `kind`.
#[derive(Debug, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Item {
    Folder(Folder),
    File(File),
}

/// What folders and files have in common.
pub trait Node: Serialize + DeserializeOwned {
    const KIND: Kind;
    fn id(&self) -> &str;
    fn name(&self) -> &str;
    /// The folder holding it (`None` for the root and home folders).
    fn parent(&self) -> Option<&str>;
    /// The user whose home drive holds it; `None` in the shared drive.
    fn owner(&self) -> Option<&str>;
    fn creator(&self) -> Option<&str>;

    fn key(&self) -> String {
        record_key(Self::KIND, self.id())
    }

    /// Its entry in its folder's index.
    fn index_key(&self) -> Option<String> {
        self.parent()
            .map(|parent| index_key(parent, Self::KIND, self.name()))
    }
}

impl Node for Folder {
    const KIND: Kind = Kind::Folder;
    fn id(&self) -> &str {
        &self.id
    }
    fn name(&self) -> &str {
        &self.name
    }
    fn parent(&self) -> Option<&str> {
        self.parent_id.as_deref()
    }
    fn owner(&self) -> Option<&str> {
        self.owner_id.as_deref()
    }
    fn creator(&self) -> Option<&str> {
        self.created_by.as_deref()
    }
}

impl Node for File {
    const KIND: Kind = Kind::File;
    fn id(&self) -> &str {
        &self.id
    }
    fn name(&self) -> &str {
        &self.name
    }
    fn parent(&self) -> Option<&str> {
        Some(&self.folder_id)
    }
    fn owner(&self) -> Option<&str> {
        self.owner_id.as_deref()
    }
    fn creator(&self) -> Option<&str> {
        Some(&self.created_by)
    }
}

fn record_key(kind: Kind, id: &str) -> String {
    match kind {
        Kind::Folder => format!("folders/{id}"),
        Kind::File => format!("files/{id}"),
    }
}

/// The key of a file's bytes in the host's blobs.
pub fn blob_key(file_id: &str) -> String {
    format!("files/{file_id}")
}

fn children_prefix(folder_id: &str) -> String {
    format!("children/{folder_id}/")
}

/// Names are unique in a folder without regard to case, and listed in that order.
fn index_key(folder_id: &str, kind: Kind, name: &str) -> String {
    format!(
        "{}{}/{}",
        children_prefix(folder_id),
        kind.segment(),
        name.to_lowercase()
    )
}

pub fn load<N: Node>(id: &str) -> Result<Option<N>, HostError> {
    storage::get_json(&record_key(N::KIND, id))
}

/// An index entry: the item holding (or claiming) the name.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct IndexEntry {
    id: String,
    claimed_at: String,
}

/// The item `entry` names when it is live under `key`.
fn live<N: Node>(key: &str, entry: &IndexEntry) -> Result<Option<N>, HostError> {
    Ok(load::<N>(&entry.id)?.filter(|node| node.index_key().as_deref() == Some(key)))
}

fn live_item(kind: Kind, key: &str, entry: &IndexEntry) -> Result<Option<Item>, HostError> {
    Ok(match kind {
        Kind::Folder => live::<Folder>(key, entry)?.map(Item::Folder),
        Kind::File => live::<File>(key, entry)?.map(Item::File),
    })
}

/// Whether `entry` keeps its name from another item: live, or claimed moments ago.
fn holds_name(kind: Kind, key: &str, entry: &IndexEntry) -> Result<bool, HostError> {
    let grace_start = time::format_rfc3339_micros(time::now_unix_micros() - CLAIM_GRACE_MICROS);
    Ok(entry.claimed_at > grace_start || live_item(kind, key, entry)?.is_some())
}

/// Whether the index entry `bytes` under `key` keeps its name from the item `id` of `kind`:
/// another item holds it (live, or claimed moments ago).
fn held_by_another(kind: Kind, key: &str, bytes: &[u8], id: &str) -> Result<bool, HostError> {
    let holder = decode_entry(key, bytes)?;
    Ok(holder.id != id && holds_name(kind, key, &holder)?)
}

/// A name claimed in a folder's index, for an item about to be written.
pub struct Claim {
    key: String,
    value: Vec<u8>,
}

impl Claim {
    /// The index entry, to write again with the item (so a deletion of the folder racing the
    /// upload finds it).
    pub fn entry(&self) -> (String, Vec<u8>) {
        (self.key.clone(), self.value.clone())
    }

    /// Gives the name up again, unless someone took it over meanwhile.
    pub fn release(self) -> Result<(), HostError> {
        storage::compare_and_swap(&self.key, Some(&self.value), None).map(drop)
    }
}

/// Claims `name` in `folder_id` for the item `id` of `kind`; `None` when another folder or file
/// holds it (whatever the case of its letters).
pub fn claim_name(
    folder_id: &str,
    kind: Kind,
    name: &str,
    id: &str,
) -> Result<Option<Claim>, HostError> {
    let key = index_key(folder_id, kind, name);
    let entry = IndexEntry {
        id: id.to_owned(),
        claimed_at: time::now_rfc3339(),
    };
    let value = storage::json_entry(key.as_str(), &entry)?.1;
    let mut claimed = false;
    for _ in 0..CLAIM_ROUNDS {
        let current = storage::get(&key)?;
        if let Some(bytes) = &current
            && held_by_another(kind, &key, bytes, id)?
        {
            return Ok(None);
        }
        if storage::compare_and_swap(&key, current.as_deref(), Some(&value))? {
            claimed = true;
            break;
        }
    }
    if !claimed {
        return Err(HostError::new(
            "drive.claim",
            format!("{key} kept changing"),
        ));
    }
    let claim = Claim { key, value };
    // The same name held by an item of the other kind.
    let other_key = index_key(folder_id, kind.other(), name);
    if let Some(bytes) = storage::get(&other_key)?
        && held_by_another(kind.other(), &other_key, &bytes, id)?
    {
        claim.release()?;
        return Ok(None);
    }
    Ok(Some(claim))
}

/// A name found free in a folder, to be claimed by the transaction that writes its item.
pub struct FreeName {
    entry: (String, Vec<u8>),
    /// Both kinds' index entries for the name, as they were found.
    found: [(String, Option<Vec<u8>>); 2],
}

impl FreeName {
    /// Writes the name's index entry in `transaction`, on the condition that neither kind's
    /// entry for the name changed since it was found free.
    pub fn claim_in(&self, transaction: &mut storage::Transaction) {
        for (key, value) in &self.found {
            transaction.expect(key.clone(), value.as_deref());
        }
        let (key, value) = &self.entry;
        transaction.set(key.clone(), value.clone());
    }

    /// Whether both kinds' index entries for the name are still as they were found.
    pub fn unchanged(&self) -> Result<bool, HostError> {
        let keys = self.found.each_ref().map(|(key, _)| key.as_str());
        let now = storage::get_many(&keys)?;
        Ok(now
            .iter()
            .zip(&self.found)
            .all(|(now, (_, found))| now == found))
    }
}

/// Whether `name` is free in `folder_id` for the item `id` of `kind` (no folder or file holds
/// it, whatever the case of its letters, nor claimed it moments ago); `None` when it is taken.
pub fn free_name(
    folder_id: &str,
    kind: Kind,
    name: &str,
    id: &str,
) -> Result<Option<FreeName>, HostError> {
    let key = index_key(folder_id, kind, name);
    let other_key = index_key(folder_id, kind.other(), name);
    let mut found = storage::get_many(&[key.as_str(), other_key.as_str()])?.into_iter();
    let (current, other) = (found.next().flatten(), found.next().flatten());
    for (kind, key, bytes) in [(kind, &key, &current), (kind.other(), &other_key, &other)] {
        if let Some(bytes) = bytes
            && held_by_another(kind, key, bytes, id)?
        {
            return Ok(None);
        }
    }
    let entry = IndexEntry {
        id: id.to_owned(),
        claimed_at: time::now_rfc3339(),
    };
    let entry = storage::json_entry(key.as_str(), &entry)?;
    Ok(Some(FreeName {
        entry,
        found: [(key, current), (other_key, other)],
    }))
}

fn decode_entry(key: &str, bytes: &[u8]) -> Result<IndexEntry, HostError> {
    tessera_sdk::serde_json::from_slice(bytes)
        .map_err(|error| HostError::new("storage.decode", format!("{key}: {error}")))
}

/// Writes `updated` in place of `current` (renamed, moved or both): claims the new name, then
/// writes the record and drops the old index entry in one batch. `false`: the name is taken.
pub fn relocate<N: Node>(current: &N, updated: &N) -> Result<bool, HostError> {
    let (old_key, new_key) = (current.index_key(), updated.index_key());
    let mut sets = vec![storage::json_entry(updated.key(), updated)?];
    let mut deletes = Vec::new();
    if old_key != new_key {
        let (Some(parent), Some(old_key)) = (updated.parent(), old_key) else {
            return Err(HostError::new("drive.relocate", "the root cannot move"));
        };
        let Some(claim) = claim_name(parent, N::KIND, updated.name(), updated.id())? else {
            return Ok(false);
        };
        sets.push(claim.entry());
        deletes.push(old_key);
    }
    storage::write_batch(&sets, &deletes, &[])?;
    Ok(true)
}

/// One page of a folder's items: folders first, then files, each by name without regard to
/// case. The cursor position is the index key after the folder's prefix.
pub fn children(
    folder_id: &str,
    page: &CursorPage<String>,
) -> Result<(Vec<Item>, CursorMeta), HostError> {
    let prefix = children_prefix(folder_id);
    let after = page.after.as_ref().map(|rest| format!("{prefix}{rest}"));
    // At most a bounded number of entries per request: then a short page with a cursor.
    let found = storage::find::<_, HostError>(
        &prefix,
        after.as_deref(),
        false,
        page.fetch_limit() as usize,
        storage::LIST_SCAN_BOUND,
        SCAN_BATCH,
        |key, bytes| {
            let rest = &key[prefix.len()..];
            let Some(kind) = rest.split('/').next().and_then(Kind::from_segment) else {
                return Ok(None);
            };
            Ok(live_item(kind, &key, &decode_entry(&key, &bytes)?)?
                .map(|item| (rest.to_owned(), item)))
        },
    )?;
    let stopped_after = found
        .stopped_after
        .map(|key| key[prefix.len()..].to_owned());
    let (rows, meta) = page.finish_found(found.items, |(rest, _)| rest.clone(), stopped_after);
    Ok((rows.into_iter().map(|(_, item)| item).collect(), meta))
}

/// Whether the folder holds anything.
pub fn has_children(folder_id: &str) -> Result<bool, HostError> {
    let page = CursorPage {
        after: None,
        limit: 1,
    };
    // A page cut short by the scan bound may be empty while more entries follow.
    let (items, meta) = children(folder_id, &page)?;
    Ok(!items.is_empty() || meta.has_more)
}

/// True when `folder_id` is `ancestor_id` or lies somewhere inside it.
pub fn is_within(folder_id: &str, ancestor_id: &str) -> Result<bool, HostError> {
    let mut current = Some(folder_id.to_owned());
    for _ in 0..MAX_ANCESTRY {
        let Some(id) = current else {
            return Ok(false);
        };
        if id == ancestor_id {
            return Ok(true);
        }
        current = load::<Folder>(&id)?.and_then(|folder| folder.parent_id);
    }
    Err(HostError::new(
        "drive.ancestry",
        format!("{folder_id} is nested more than {MAX_ANCESTRY} levels deep"),
    ))
}

/// Removes the folder `top` with everything in it. Files go with their blobs and index entries
/// in one transaction per batch, deepest folders first, and a folder only once a fresh scan
/// finds it empty: an interrupted run leaves a smaller, consistent tree that a second run
/// finishes, and an upload racing the removal is found by the next scan. Returns the bytes
/// freed.
pub fn remove_tree(top: &Folder) -> Result<u64, HostError> {
    Ok(remove_tree_within(top, Ok)?.freed)
}

/// What [`remove_tree_within`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeRemoval {
    /// The bytes of the files removed.
    pub freed: u64,
    /// True when the whole tree, `top` included, is gone.
    pub finished: bool,
}

/// [`remove_tree`], each scan asking `next_scan(wanted)` for its limit: 0 stops the removal
/// there, the tree partly removed and consistent (`finished` false), for a later run to go on.
/// A folder is probed for a subfolder with a scan of one entry before its files are read
/// (folders list first), so walking down to the deepest folder costs one entry per level and
/// every run that may scan more entries than the tree is deep removes something.
pub fn remove_tree_within(
    top: &Folder,
    mut next_scan: impl FnMut(u32) -> Result<u32, HostError>,
) -> Result<TreeRemoval, HostError> {
    let mut freed = 0;
    let unfinished = |freed| TreeRemoval {
        freed,
        finished: false,
    };
    let mut stack = vec![top.clone()];
    while let Some(folder) = stack.last() {
        let prefix = children_prefix(&folder.id);
        if next_scan(1)? == 0 {
            return Ok(unfinished(freed));
        }
        let folders_prefix = format!("{prefix}{}/", Kind::Folder.segment());
        if let Some((key, bytes)) = storage::list(&folders_prefix, None, 1, false)?.pop() {
            match live::<Folder>(&key, &decode_entry(&key, &bytes)?)? {
                Some(sub) if !stack.iter().any(|open| open.id == sub.id) => stack.push(sub),
                _ => {
                    storage::write_batch(&[], &[key], &[])?;
                }
            }
            continue;
        }
        let limit = next_scan(SCAN_BATCH)?;
        if limit == 0 {
            return Ok(unfinished(freed));
        }
        let rows = storage::list(&prefix, None, limit, false)?;
        if rows.is_empty() {
            let mut deletes = vec![folder.key()];
            deletes.extend(folder.index_key());
            storage::write_batch(&[], &deletes, &[])?;
            stack.pop();
            continue;
        }
        let (mut blob_keys, mut deletes) = (Vec::new(), Vec::new());
        let mut subfolder = None;
        for (key, bytes) in rows {
            let entry = decode_entry(&key, &bytes)?;
            match Kind::from_segment(key[prefix.len()..].split('/').next().unwrap_or("")) {
                // A folder created since the probe.
                Some(Kind::Folder) => match live::<Folder>(&key, &entry)? {
                    Some(sub) if !stack.iter().any(|open| open.id == sub.id) => {
                        subfolder = Some(sub);
                        break;
                    }
                    _ => deletes.push(key),
                },
                Some(Kind::File) => {
                    if let Some(file) = live::<File>(&key, &entry)? {
                        blob_keys.push(blob_key(&file.id));
                        deletes.push(file.key());
                        freed += file.size_bytes;
                    }
                    deletes.push(key);
                }
                None => deletes.push(key),
            }
        }
        if !deletes.is_empty() {
            blobs::delete(&blob_keys, &deletes)?;
        }
        stack.extend(subfolder);
    }
    Ok(TreeRemoval {
        freed,
        finished: true,
    })
}

/// Removes a file: its blob, record and index entry in one transaction.
pub fn remove_file(file: &File) -> Result<(), HostError> {
    let mut deletes = vec![file.key()];
    deletes.extend(file.index_key());
    blobs::delete(&[blob_key(&file.id)], &deletes).map(drop)
}
