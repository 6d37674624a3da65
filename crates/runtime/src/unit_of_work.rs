//! One engine call's unit of work: everything the call writes (storage, blobs), the events it
//! publishes and the jobs it schedules, buffered by the host while the call runs and committed
//! in one transaction when it returns successfully (`engine.rs`, `batch_writer.rs`), or earlier
//! together with a synchronisation point (`compare-and-swap`, `transact`, a blob put with a
//! quota: `imports.rs`). Reads made in the call see its own buffered writes: this module keeps
//! the overlay they are read through.
//!
//! The overlay is exact: a key's value in the call's view is its last buffered write, else
//! absent when a buffered prefix deletion covers it, else the committed value (plus any
//! counter amounts the call added). Prefix deletions are kept disjoint and remove the buffered
//! writes they cover, so at commit they run first and the buffered writes after them.

use std::collections::BTreeMap;

pub use super::batch_writer::counter_value;
use super::batch_writer::{BlobWrites, StorageBatch};
use crate::realtime::Publication;
use crate::work_queue::NewWork;
use tessera_auth::audit::EngineAuditEntry;

/// Most entries (writes, deletions, counters, jobs, events) one unit holds.
pub const MAX_UNIT_ENTRIES: usize = 10_000;
/// Most bytes of storage values one unit holds.
pub const MAX_UNIT_VALUE_BYTES: usize = 16 * 1024 * 1024;
/// Most bytes of blobs one unit holds.
pub const MAX_UNIT_BLOB_BYTES: usize = 64 * 1024 * 1024;

/// A buffered change of one storage key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pending {
    /// The key's new value (`None`: deleted).
    Value(Option<Vec<u8>>),
    /// An amount added to the committed counter (decimal text, absent is 0).
    Add(i64),
}

/// What the call's view holds under a key, as far as the unit knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Known {
    /// Decided by the unit alone.
    Value(Option<Vec<u8>>),
    /// The committed value, plus this counter amount (0: the committed value as it is).
    Committed { add: i64 },
}

/// The buffered writes, events and jobs of one call.
#[derive(Debug, Default, Clone)]
pub struct UnitOfWork {
    writes: BTreeMap<String, Pending>,
    /// The bytes of the values in `writes`, kept as they change (checked on every write).
    value_bytes: usize,
    /// Disjoint prefixes whose committed entries are deleted (before `writes`) at commit.
    prefix_deletes: Vec<String>,
    /// Jobs scheduled and event deliveries, in order.
    jobs: Vec<NewWork>,
    blobs: BlobUnit,
    /// The engine work items (`(id, attempt)`) this call ran to completion: deleted when the
    /// unit commits, so a delivery's effects and its completion commit together.
    completes: Vec<(String, u32)>,
    /// The audit entries of the call's audited operation (recorded by the host after the
    /// engine answered with a success; never by the engine).
    audit: Vec<EngineAuditEntry>,
    /// What the call published to its engine's realtime topics, in order.
    publications: Vec<Publication>,
}

/// The blob side of a unit.
#[derive(Debug, Default, Clone)]
pub struct BlobUnit {
    /// Blobs written by the call.
    puts: BTreeMap<String, Vec<u8>>,
    /// Committed blobs the call deleted (their committed sizes).
    deletes: BTreeMap<String, u64>,
    /// Disjoint prefixes whose committed blobs are deleted (before `deletes` and `puts`).
    prefix_deletes: Vec<String>,
    /// The committed sizes of blobs the call replaced with a put (`None`: there was none).
    replaced: BTreeMap<String, Option<u64>>,
    /// The smallest quota any put of the call named.
    quota: Option<u64>,
}

fn covered(prefixes: &[String], key: &str) -> bool {
    prefixes
        .iter()
        .any(|prefix| key.starts_with(prefix.as_str()))
}

/// The prefixes of `prefixes` inside `prefix` (starting with it).
fn inside(prefixes: &[String], prefix: &str) -> Vec<String> {
    prefixes
        .iter()
        .filter(|inner| inner.starts_with(prefix))
        .cloned()
        .collect()
}

/// Adds `prefix` to disjoint `prefixes`: nothing when one covers it; otherwise it replaces
/// those it covers.
fn add_prefix(prefixes: &mut Vec<String>, prefix: &str) {
    if !covered(prefixes, prefix) {
        prefixes.retain(|existing| !existing.starts_with(prefix));
        prefixes.push(prefix.to_owned());
    }
}

/// The value bytes a buffered change holds.
fn pending_bytes(pending: &Pending) -> usize {
    match pending {
        Pending::Value(Some(value)) => value.len(),
        _ => 0,
    }
}

impl UnitOfWork {
    /// Whether the call wrote, published or scheduled nothing.
    pub fn is_empty(&self) -> bool {
        self.writes.is_empty()
            && self.prefix_deletes.is_empty()
            && self.jobs.is_empty()
            && self.blobs.puts.is_empty()
            && self.blobs.deletes.is_empty()
            && self.blobs.prefix_deletes.is_empty()
            && self.completes.is_empty()
            && self.audit.is_empty()
            && self.publications.is_empty()
    }

    fn entries(&self) -> usize {
        self.writes.len()
            + self.prefix_deletes.len()
            + self.jobs.len()
            + self.blobs.puts.len()
            + self.blobs.deletes.len()
            + self.blobs.prefix_deletes.len()
            + self.publications.len()
    }

    /// Refuses growth beyond the unit's limits: `entries` more entries and `bytes` more value
    /// bytes.
    pub fn check_room(&self, entries: usize, bytes: usize) -> Result<(), String> {
        if self.entries() + entries > MAX_UNIT_ENTRIES {
            return Err(format!(
                "one engine call writes at most {MAX_UNIT_ENTRIES} entries (writes, deletions, \
                 counters, jobs and events) between two commits; split the work over jobs"
            ));
        }
        if self.value_bytes + bytes > MAX_UNIT_VALUE_BYTES {
            return Err(format!(
                "one engine call writes at most {MAX_UNIT_VALUE_BYTES} bytes of values; split \
                 the work over jobs"
            ));
        }
        Ok(())
    }

    /// What the unit knows of `key`.
    pub fn known(&self, key: &str) -> Known {
        match self.writes.get(key) {
            Some(Pending::Value(value)) => Known::Value(value.clone()),
            Some(Pending::Add(amount)) if covered(&self.prefix_deletes, key) => {
                Known::Value(Some(amount.to_string().into_bytes()))
            }
            Some(Pending::Add(amount)) => Known::Committed { add: *amount },
            None if covered(&self.prefix_deletes, key) => Known::Value(None),
            None => Known::Committed { add: 0 },
        }
    }

    /// The value of `key` in the call's view, given its committed value.
    pub fn view(&self, key: &str, committed: Option<Vec<u8>>) -> Result<Option<Vec<u8>>, String> {
        match self.known(key) {
            Known::Value(value) => Ok(value),
            Known::Committed { add: 0 } => Ok(committed),
            Known::Committed { add } => {
                let base = counter_value(key, committed.as_deref())?;
                let sum = base
                    .checked_add(add)
                    .ok_or_else(|| format!("adding {add} to {key} ({base}) overflows"))?;
                Ok(Some(sum.to_string().into_bytes()))
            }
        }
    }

    /// Buffers `value` under `key` (`None` deletes).
    pub fn write(&mut self, key: String, value: Option<Vec<u8>>) {
        self.put_pending(key, Pending::Value(value));
    }

    fn put_pending(&mut self, key: String, pending: Pending) {
        self.value_bytes += pending_bytes(&pending);
        if let Some(replaced) = self.writes.insert(key, pending) {
            self.value_bytes -= pending_bytes(&replaced);
        }
    }

    /// Buffers adding `amount` to the counter `key`, whose value in the call's view is
    /// `current` when the unit decides it.
    pub fn add(&mut self, key: String, amount: i64) -> Result<(), String> {
        let pending = match self.known(&key) {
            Known::Value(value) => {
                let base = counter_value(&key, value.as_deref())?;
                let sum = base
                    .checked_add(amount)
                    .ok_or_else(|| format!("adding {amount} to {key} ({base}) overflows"))?;
                Pending::Value(Some(sum.to_string().into_bytes()))
            }
            Known::Committed { add } => Pending::Add(
                add.checked_add(amount)
                    .ok_or_else(|| format!("adding {amount} to {key} overflows"))?,
            ),
        };
        self.put_pending(key, pending);
        Ok(())
    }

    /// Buffers the deletion of every key starting with `prefix`.
    pub fn delete_prefix(&mut self, prefix: &str) {
        let mut removed = 0;
        self.writes.retain(|key, pending| {
            let keep = !key.starts_with(prefix);
            if !keep {
                removed += pending_bytes(pending);
            }
            keep
        });
        self.value_bytes -= removed;
        add_prefix(&mut self.prefix_deletes, prefix);
    }

    /// Whether a buffered prefix deletion covers `prefix` (then nothing committed under it is
    /// visible).
    pub fn prefix_deleted(&self, prefix: &str) -> bool {
        covered(&self.prefix_deletes, prefix)
    }

    /// Buffered prefix deletions strictly inside `prefix`.
    pub fn deleted_prefixes_under(&self, prefix: &str) -> Vec<String> {
        inside(&self.prefix_deletes, prefix)
    }

    /// Buffered writes (and counters) of keys starting with `prefix`, in key order.
    pub fn writes_under<'a>(
        &'a self,
        prefix: &'a str,
    ) -> impl Iterator<Item = (&'a String, &'a Pending)> + 'a {
        self.writes
            .range(prefix.to_owned()..)
            .take_while(move |(key, _)| key.starts_with(prefix))
    }

    /// Buffers a job or an event delivery.
    pub fn push_jobs(&mut self, jobs: impl IntoIterator<Item = NewWork>) {
        self.jobs.extend(jobs);
    }

    /// Drops a job this call scheduled; true when it was one.
    pub fn cancel_job(&mut self, job_id: &str) -> bool {
        let before = self.jobs.len();
        self.jobs.retain(|job| job.id != job_id);
        self.jobs.len() != before
    }

    /// Records that the engine work item `work` (`(id, attempt)`) ran to completion in this
    /// call: its item is deleted with the unit's next commit.
    pub fn complete(&mut self, work: (String, u32)) {
        self.completes.push(work);
    }

    /// Adds a realtime publication (checked by the caller): it commits with the unit.
    pub fn publish(&mut self, publication: Publication) -> Result<(), String> {
        let bytes = publication.bytes();
        self.check_room(1, bytes)?;
        self.value_bytes += bytes;
        self.publications.push(publication);
        Ok(())
    }

    /// Adds the audit entry of the call's audited operation: it commits with the unit.
    pub fn record_audit(&mut self, entry: EngineAuditEntry) {
        self.audit.push(entry);
    }

    pub fn blobs(&self) -> &BlobUnit {
        &self.blobs
    }

    pub fn blobs_mut(&mut self) -> &mut BlobUnit {
        &mut self.blobs
    }

    /// The unit as one batch for the writer, committed only if each key of `conditions` holds
    /// the given committed value (`none`: absent).
    pub fn into_batch(
        self,
        engine_code: String,
        tenant_id: String,
        conditions: Vec<(String, Option<Vec<u8>>)>,
    ) -> StorageBatch {
        let mut sets = Vec::new();
        let mut deletes = Vec::new();
        let mut add = Vec::new();
        for (key, pending) in self.writes {
            match pending {
                Pending::Value(Some(value)) => sets.push((key, value)),
                Pending::Value(None) => deletes.push(key),
                Pending::Add(amount) => add.push((key, amount)),
            }
        }
        StorageBatch {
            engine_code,
            tenant_id,
            expect: conditions,
            sets,
            deletes,
            add,
            jobs: self.jobs,
            prefix_deletes: self.prefix_deletes,
            blobs: BlobWrites {
                puts: self.blobs.puts.into_iter().collect(),
                deletes: self.blobs.deletes.into_keys().collect(),
                prefix_deletes: self.blobs.prefix_deletes,
                quota: self.blobs.quota,
            },
            completes: self.completes,
            audit: self.audit,
            publications: self.publications,
        }
    }
}

impl BlobUnit {
    /// What the call's view holds under the blob `key`, as far as the unit knows: `None` when
    /// only the committed blob can tell.
    pub fn known(&self, key: &str) -> Option<Option<&[u8]>> {
        if let Some(content) = self.puts.get(key) {
            return Some(Some(content));
        }
        if self.deletes.contains_key(key) || covered(&self.prefix_deletes, key) {
            return Some(None);
        }
        None
    }

    /// Whether the unit decides `key` alone.
    pub fn touched(&self, key: &str) -> bool {
        self.known(key).is_some() || self.replaced.contains_key(key)
    }

    fn bytes(&self) -> usize {
        self.puts.values().map(Vec::len).sum()
    }

    /// How the unit changes the scope's committed usage: (bytes added, bytes removed).
    pub fn usage_change(&self) -> (u64, u64) {
        let added = self.bytes() as u64;
        let removed =
            self.deletes.values().sum::<u64>() + self.replaced.values().flatten().sum::<u64>();
        (added, removed)
    }

    /// Buffers `content` under `key`, which held `committed_size` when committed (asked only
    /// when the unit did not decide `key`).
    pub fn put(
        &mut self,
        key: String,
        content: Vec<u8>,
        committed_size: Option<u64>,
        quota: Option<u64>,
    ) -> Result<(), String> {
        if self.bytes() + content.len() > MAX_UNIT_BLOB_BYTES {
            return Err(format!(
                "one engine call writes at most {MAX_UNIT_BLOB_BYTES} bytes of blobs"
            ));
        }
        if !self.touched(&key) {
            self.replaced.insert(key.clone(), committed_size);
        } else if let Some(size) = self.deletes.remove(&key) {
            // Deleted, then written again: the committed blob is replaced.
            self.replaced.insert(key.clone(), Some(size));
        }
        self.puts.insert(key, content);
        self.quota = match (self.quota, quota) {
            (Some(old), Some(new)) => Some(old.min(new)),
            (old, new) => old.or(new),
        };
        Ok(())
    }

    /// Buffers the deletion of `key`, which held `committed_size` when committed (asked only
    /// when the unit did not decide `key`); true when it existed in the call's view.
    pub fn delete(&mut self, key: &str, committed_size: Option<u64>) -> bool {
        if self.puts.remove(key).is_some() {
            if let Some(Some(size)) = self.replaced.remove(key) {
                self.deletes.insert(key.to_owned(), size);
            }
            return true;
        }
        if self.touched(key) {
            return false;
        }
        match committed_size {
            Some(size) => {
                self.deletes.insert(key.to_owned(), size);
                true
            }
            None => false,
        }
    }

    /// Buffers the deletion of every blob starting with `prefix`.
    pub fn delete_prefix(&mut self, prefix: &str) {
        self.puts.retain(|key, _| !key.starts_with(prefix));
        self.deletes.retain(|key, _| !key.starts_with(prefix));
        self.replaced.retain(|key, _| !key.starts_with(prefix));
        add_prefix(&mut self.prefix_deletes, prefix);
    }

    pub fn prefix_deleted(&self, prefix: &str) -> bool {
        covered(&self.prefix_deletes, prefix)
    }

    pub fn deleted_prefixes_under(&self, prefix: &str) -> Vec<String> {
        inside(&self.prefix_deletes, prefix)
    }

    /// Blobs the unit decides under `prefix`: (how many exist in the view, how many of those
    /// and of the deleted ones were committed, with their committed bytes).
    pub fn decided_under(&self, prefix: &str) -> DecidedUnder {
        let mut decided = DecidedUnder::default();
        for key in self.puts.keys().filter(|key| key.starts_with(prefix)) {
            decided.visible += 1;
            if let Some(Some(size)) = self.replaced.get(key) {
                decided.committed += 1;
                decided.committed_bytes += size;
            }
        }
        for (_, size) in self
            .deletes
            .iter()
            .filter(|(key, _)| key.starts_with(prefix))
        {
            decided.committed += 1;
            decided.committed_bytes += size;
        }
        decided
    }
}

/// See [`BlobUnit::decided_under`].
#[derive(Debug, Default, Clone, Copy)]
pub struct DecidedUnder {
    pub visible: u64,
    pub committed: u64,
    pub committed_bytes: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(text: &str) -> Option<Vec<u8>> {
        Some(text.as_bytes().to_vec())
    }

    #[test]
    fn the_view_is_the_last_write_then_prefix_deletions_then_the_committed_value() {
        let mut unit = UnitOfWork::default();
        assert_eq!(unit.view("a/1", bytes("old")).unwrap(), bytes("old"));
        unit.write("a/1".into(), bytes("new"));
        assert_eq!(unit.view("a/1", bytes("old")).unwrap(), bytes("new"));
        unit.delete_prefix("a/");
        assert_eq!(unit.view("a/1", bytes("old")).unwrap(), None);
        assert_eq!(unit.view("a/2", bytes("old")).unwrap(), None);
        assert_eq!(unit.view("b/1", bytes("old")).unwrap(), bytes("old"));
        unit.write("a/2".into(), bytes("again"));
        assert_eq!(unit.view("a/2", None).unwrap(), bytes("again"));
        // A narrower deletion inside a wider one changes nothing; a wider one replaces it.
        unit.delete_prefix("a/x");
        assert_eq!(unit.prefix_deletes, vec!["a/".to_owned()]);
        unit.delete_prefix("");
        assert_eq!(unit.prefix_deletes, vec![String::new()]);
        assert!(unit.writes.is_empty());
    }

    #[test]
    fn counters_add_to_the_committed_value_or_to_what_the_call_wrote() {
        let mut unit = UnitOfWork::default();
        unit.add("n".into(), 2).unwrap();
        unit.add("n".into(), 3).unwrap();
        assert_eq!(unit.view("n", bytes("10")).unwrap(), bytes("15"));
        assert_eq!(unit.view("n", None).unwrap(), bytes("5"));
        unit.write("m".into(), bytes("7"));
        unit.add("m".into(), 1).unwrap();
        assert_eq!(unit.known("m"), Known::Value(bytes("8")));
        unit.write("text".into(), bytes("x"));
        assert!(unit.add("text".into(), 1).is_err());
        let batch = unit.into_batch("e".into(), "t".into(), Vec::new());
        assert_eq!(batch.add, vec![("n".to_owned(), 5)]);
        assert_eq!(
            batch.sets,
            vec![
                ("m".to_owned(), b"8".to_vec()),
                ("text".to_owned(), b"x".to_vec())
            ]
        );
    }

    #[test]
    fn blobs_track_what_they_replace_and_free() {
        let mut blobs = BlobUnit::default();
        blobs
            .put("f/1".into(), vec![0; 10], Some(4), Some(100))
            .unwrap();
        blobs.put("f/2".into(), vec![0; 5], None, Some(50)).unwrap();
        assert_eq!(blobs.usage_change(), (15, 4));
        assert_eq!(blobs.quota, Some(50));
        assert!(blobs.delete("f/1", None));
        assert_eq!(blobs.usage_change(), (5, 4));
        assert!(!blobs.delete("f/1", Some(99)));
        assert!(blobs.delete("g/1", Some(3)));
        assert!(!blobs.delete("g/2", None));
        let decided = blobs.decided_under("f/");
        assert_eq!((decided.visible, decided.committed), (1, 1));
        blobs.delete_prefix("f/");
        assert_eq!(blobs.known("f/2"), Some(None));
        assert_eq!(blobs.usage_change(), (0, 3));
    }
}
