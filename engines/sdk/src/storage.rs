//! Typed helpers over the host's key-value storage. Storage is already scoped by the host to
//! (this engine, tenant of the current call): keys never include the tenant id. Keys are ordered
//! byte-wise, so `prefix/` scans with `after` page through a collection.
//!
//! Writes are buffered in the call's unit of work and committed when the call succeeds (see
//! the crate's documentation); every read here sees the call's own writes.
//! [`compare_and_swap`] and [`Transaction::commit`] are synchronisation points: they commit the
//! call's writes so far together with their own, at once, when their conditions hold
//! ([`commit_now`] is one without conditions).
//!
//! Scans are bounded by the host: one scan returns at most a page of entries
//! ([`ScanLimits::page`], `TESSERA_ENGINE_SCAN_PAGE`, default 1000) whatever it asks, and all
//! the scans of one call (a request, a job, an event, a lifecycle call) return at most a budget
//! of entries together ([`ScanLimits::budget`], `TESSERA_ENGINE_SCAN_BUDGET`, default 10,000);
//! past it a scan fails with `scan budget exhausted`. So no call reads a tenant's whole key
//! space: [`scan`] tells when a prefix is exhausted, and [`find`] / [`find_json`] read a
//! filtered list up to a bound and say where to continue (a short page with a cursor, see
//! [`CursorPage::finish_found`]).

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::HostError;
use crate::imports::storage as host;
use crate::paging::{CursorMeta, CursorPage};

/// Key-value entries in key order, as lists return them: raw bytes by default, or decoded JSON.
pub type Entries<T = Vec<u8>> = Vec<(String, T)>;

/// The raw bytes under `key`.
pub fn get(key: &str) -> Result<Option<Vec<u8>>, HostError> {
    host::get(key).map_err(|error| HostError::new("storage.get", error))
}

/// The raw bytes under each of `keys`, in the order of `keys` (`None` where a key is
/// absent), read in one round trip to the database and from one snapshot: cheaper than one
/// [`get`] per key when a call needs several entries. At most 1000 keys.
pub fn get_many(keys: &[&str]) -> Result<Vec<Option<Vec<u8>>>, HostError> {
    let keys: Vec<String> = keys.iter().map(|key| (*key).to_owned()).collect();
    host::get_many(&keys).map_err(|error| HostError::new("storage.get-many", error))
}

/// Stores raw bytes under `key`.
pub fn set(key: &str, value: &[u8]) -> Result<(), HostError> {
    host::set(key, value).map_err(|error| HostError::new("storage.set", error))
}

/// Removes `key`; true when it existed.
pub fn delete(key: &str) -> Result<bool, HostError> {
    host::delete(key).map_err(|error| HostError::new("storage.delete", error))
}

/// Replaces the value under `key` only when it is currently `expected` (`None`: the key is
/// absent), atomically; `value` `None` deletes it. True when it did; false (nothing changed)
/// when the current value differs. [`update_json`] builds read-modify-write on it.
pub fn compare_and_swap(
    key: &str,
    expected: Option<&[u8]>,
    value: Option<&[u8]>,
) -> Result<bool, HostError> {
    host::compare_and_swap(key, expected, value)
        .map_err(|error| HostError::new("storage.compare-and-swap", error))
}

/// Writes `sets`, removes `deletes` and schedules `jobs` (`(at_unix_ms, payload)`, as
/// [`scheduler::schedule`](crate::scheduler::schedule) does) in one transaction: all of them or
/// none. Returns the job ids in order. Use it when a state change and the job that must follow
/// it may never be separated by a crash.
pub fn write_batch(
    sets: &[(String, Vec<u8>)],
    deletes: &[String],
    jobs: &[(u64, Vec<u8>)],
) -> Result<Vec<String>, HostError> {
    host::write_batch(sets, deletes, jobs)
        .map_err(|error| HostError::new("storage.write-batch", error))
}

/// Several writes committed together on conditions, with counters: the host's `transact`.
/// Build it with [`Transaction::expect`], [`Transaction::set`] / [`Transaction::set_json`],
/// [`Transaction::delete`], [`Transaction::add`] and [`Transaction::job`]; [`Transaction::commit`]
/// writes everything when every expected key still holds what was read, or nothing.
///
/// Use it for state that several calls change at once, and for counters kept beside it:
///
/// ```no_run
/// use tessera_sdk::storage::{self, Committed, Transaction};
///
/// // Marks a task done and counts it, exactly once however many calls race to do it.
/// loop {
///     let Some(before) = storage::get("tasks/42")? else { break };
///     if before == b"done" {
///         break;
///     }
///     let mut transaction = Transaction::new();
///     transaction
///         .expect("tasks/42", Some(&before))
///         .set("tasks/42", b"done".to_vec())
///         .add("counts/done", 1);
///     match transaction.commit()? {
///         Committed::Yes { .. } => break,
///         Committed::Conflict => continue, // another call changed it: read again
///     }
/// }
/// let done = storage::counter("counts/done")?;
/// # Ok::<(), tessera_sdk::HostError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct Transaction {
    expect: Vec<(String, Option<Vec<u8>>)>,
    sets: Vec<(String, Vec<u8>)>,
    deletes: Vec<String>,
    add: Vec<(String, i64)>,
    jobs: Vec<(u64, Vec<u8>)>,
}

/// What [`Transaction::commit`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Committed {
    /// Everything was written; the ids of the jobs scheduled, in order.
    Yes {
        /// The scheduled jobs' ids.
        job_ids: Vec<String>,
    },
    /// An expected key held another value: nothing was written. Read again and retry.
    Conflict,
}

impl Transaction {
    /// An empty transaction.
    pub fn new() -> Self {
        Self::default()
    }

    /// True when it would write, count or schedule nothing.
    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
            && self.deletes.is_empty()
            && self.add.is_empty()
            && self.jobs.is_empty()
    }

    /// Commits only if `key` holds exactly `value` (`None`: absent) at commit time.
    pub fn expect(&mut self, key: impl Into<String>, value: Option<&[u8]>) -> &mut Self {
        self.expect.push((key.into(), value.map(<[u8]>::to_vec)));
        self
    }

    /// Stores `value` under `key`.
    pub fn set(&mut self, key: impl Into<String>, value: Vec<u8>) -> &mut Self {
        self.sets.push((key.into(), value));
        self
    }

    /// Stores `value` as JSON under `key`.
    pub fn set_json<T: Serialize + ?Sized>(
        &mut self,
        key: impl Into<String>,
        value: &T,
    ) -> Result<&mut Self, HostError> {
        self.sets.push(json_entry(key, value)?);
        Ok(self)
    }

    /// Removes `key` (after the sets).
    pub fn delete(&mut self, key: impl Into<String>) -> &mut Self {
        self.deletes.push(key.into());
        self
    }

    /// Adds `amount` to the counter under `key` (read it with [`counter`]); concurrent adds
    /// never conflict. A key counted here may not be set or deleted by the same transaction.
    pub fn add(&mut self, key: impl Into<String>, amount: i64) -> &mut Self {
        if amount != 0 {
            self.add.push((key.into(), amount));
        }
        self
    }

    /// Schedules `payload` for `at_unix_ms` (as [`crate::scheduler::schedule`] does) if the
    /// transaction commits.
    pub fn job(&mut self, at_unix_ms: u64, payload: Vec<u8>) -> &mut Self {
        self.jobs.push((at_unix_ms, payload));
        self
    }

    /// Writes it all, or nothing when an expected key holds another value.
    pub fn commit(&self) -> Result<Committed, HostError> {
        let transaction = host::Transaction {
            expect: self.expect.clone(),
            sets: self.sets.clone(),
            deletes: self.deletes.clone(),
            add: self.add.clone(),
            jobs: self.jobs.clone(),
        };
        match host::transact(&transaction)
            .map_err(|error| HostError::new("storage.transact", error))?
        {
            Some(job_ids) => Ok(Committed::Yes { job_ids }),
            None => Ok(Committed::Conflict),
        }
    }
}

/// Commits what this call wrote, published and scheduled so far, now (an empty
/// [`Transaction`], a synchronisation point): it then stays whatever the call does next, a
/// failure included. For what must outlive a failing call, such as the count of failed
/// attempts a retried job or event keeps.
pub fn commit_now() -> Result<(), HostError> {
    Transaction::new().commit().map(drop)
}

/// The counter under `key` that [`Transaction::add`] keeps (absent: 0).
pub fn counter(key: &str) -> Result<i64, HostError> {
    get(key)?.map_or(Ok(0), |bytes| decode_json(key, &bytes))
}

/// Encodes `value` as JSON for [`write_batch`].
pub fn json_entry<T: Serialize + ?Sized>(
    key: impl Into<String>,
    value: &T,
) -> Result<(String, Vec<u8>), HostError> {
    let key = key.into();
    let bytes = serde_json::to_vec(value)
        .map_err(|error| HostError::new("storage.encode", format!("{key}: {error}")))?;
    Ok((key, bytes))
}

/// What [`update_json`] should do with the current value.
#[derive(Debug, Clone, PartialEq)]
pub enum Update<T> {
    /// Store this value.
    Set(T),
    /// Remove the key.
    Delete,
    /// Leave everything as it is.
    Keep,
}

/// Most rounds [`update_json`] tries before giving up on a key that keeps changing.
const UPDATE_ROUNDS: usize = 64;

/// Read-modify-write of the JSON value under `key` that loses no concurrent update: reads the
/// current value (`None` when absent), asks `change` what to do, and writes with
/// [`compare_and_swap`], starting again when another call changed the key in between.
/// Returns what was decided in the round that won. `change` may run several times.
///
/// ```no_run
/// use tessera_sdk::storage::{self, Update};
///
/// // A counter that concurrent jobs increment without losing a step.
/// let count = storage::update_json::<u64, _>("counters/failures", |current| {
///     Update::Set(current.unwrap_or(0) + 1)
/// })?;
/// # Ok::<(), tessera_sdk::HostError>(())
/// ```
pub fn update_json<T, F>(key: &str, mut change: F) -> Result<Update<T>, HostError>
where
    T: Serialize + DeserializeOwned,
    F: FnMut(Option<T>) -> Update<T>,
{
    for _ in 0..UPDATE_ROUNDS {
        let current = get(key)?;
        let decoded = current
            .as_deref()
            .map(|bytes| decode_json::<T>(key, bytes))
            .transpose()?;
        let decision = change(decoded);
        let written = match &decision {
            Update::Keep => return Ok(decision),
            Update::Delete => match &current {
                None => return Ok(decision),
                Some(bytes) => compare_and_swap(key, Some(bytes), None)?,
            },
            Update::Set(value) => {
                let bytes = serde_json::to_vec(value)
                    .map_err(|error| HostError::new("storage.encode", format!("{key}: {error}")))?;
                compare_and_swap(key, current.as_deref(), Some(&bytes))?
            }
        };
        if written {
            return Ok(decision);
        }
    }
    Err(HostError::new(
        "storage.update",
        format!("{key} kept changing; gave up after {UPDATE_ROUNDS} rounds"),
    ))
}

/// True when `key` exists.
pub fn exists(key: &str) -> Result<bool, HostError> {
    Ok(get(key)?.is_some())
}

/// Entries whose key starts with `prefix`, in key order (descending when `reverse`), strictly
/// after (before, when `reverse`) `after`, at most `limit` (the host's `scan`) and at most a
/// page ([`ScanLimits::page`]): fewer than `limit` entries do not by themselves mean the prefix
/// is exhausted; use [`scan`] to page through. Fails with `scan budget exhausted` once this call
/// has scanned its budget.
pub fn list(
    prefix: &str,
    after: Option<&str>,
    limit: u32,
    reverse: bool,
) -> Result<Entries, HostError> {
    Ok(scan(prefix, after, limit, reverse)?.entries)
}

/// What the host lets one call scan: the settings `storage.scan-page` and
/// `storage.scan-budget` (see `wit/engine.wit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanLimits {
    /// Most entries one scan returns.
    pub page: u32,
    /// Most entries the scans of one call return together.
    pub budget: u64,
}

impl ScanLimits {
    /// The host's defaults, used when it does not say.
    pub const DEFAULT: Self = Self {
        page: 1000,
        budget: 10_000,
    };

    /// How many entries a scan asking for `limit` returns at most, after `scanned` entries
    /// this call: the host's rule.
    pub fn allowed(&self, limit: u32, scanned: u64) -> u32 {
        let left = self.budget.saturating_sub(scanned);
        limit
            .min(self.page)
            .min(u32::try_from(left).unwrap_or(u32::MAX))
    }
}

thread_local! {
    /// The host's limits, read once per instance (an operator's change reaches new instances).
    static LIMITS: std::cell::OnceCell<ScanLimits> = const { std::cell::OnceCell::new() };
    /// Entries the scans of this call returned so far.
    static SCANNED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// The host's scan limits for this call.
pub fn scan_limits() -> ScanLimits {
    LIMITS.with(|limits| {
        *limits.get_or_init(|| {
            fn setting<T: std::str::FromStr>(name: &str) -> Option<T> {
                crate::settings::get(name).and_then(|text| text.parse().ok())
            }
            ScanLimits {
                page: setting("storage.scan-page").unwrap_or(ScanLimits::DEFAULT.page),
                budget: setting("storage.scan-budget").unwrap_or(ScanLimits::DEFAULT.budget),
            }
        })
    })
}

/// Starts a new call's count of scanned entries (an instance may serve several calls one after
/// another: the events of a batch of deliveries, and the calls of one tenant on an instance the
/// host keeps warm). Every export calls it first.
pub(crate) fn begin_call() {
    SCANNED.with(|count| count.set(0));
}

/// How many more entries this call may scan.
pub fn scan_budget_left() -> u64 {
    scan_limits()
        .budget
        .saturating_sub(SCANNED.with(std::cell::Cell::get))
}

/// One scan's entries, and whether the prefix has no more entries past them.
#[derive(Debug, Clone, PartialEq)]
pub struct Scan<T = Vec<u8>> {
    /// In key order (descending when the scan was `reverse`).
    pub entries: Entries<T>,
    /// True when no entry under the prefix follows the last one (in the scan's direction).
    pub exhausted: bool,
}

/// Entries whose key starts with `prefix`, in key order (descending when `reverse`), strictly
/// after (before, when `reverse`) `after`: at most `limit`, at most a page and at most what
/// this call's budget has left ([`ScanLimits::allowed`]); `exhausted` when the prefix has no
/// more. Continue with `after` = the last key. Fails with `scan budget exhausted` when the
/// budget has nothing left.
pub fn scan(
    prefix: &str,
    after: Option<&str>,
    limit: u32,
    reverse: bool,
) -> Result<Scan, HostError> {
    let scanned = SCANNED.with(std::cell::Cell::get);
    let allowed = scan_limits().allowed(limit, scanned);
    // With nothing left, the host answers its own error.
    let asked = if allowed == 0 { limit } else { allowed };
    let entries = host::scan(prefix, after, asked, reverse)
        .map_err(|error| HostError::new("storage.scan", error))?;
    SCANNED.with(|count| count.set(scanned + entries.len() as u64));
    Ok(Scan {
        exhausted: entries.len() < asked as usize,
        entries,
    })
}

/// Like [`scan`], with each value decoded from JSON into `T`.
pub fn scan_json<T: DeserializeOwned>(
    prefix: &str,
    after: Option<&str>,
    limit: u32,
    reverse: bool,
) -> Result<Scan<T>, HostError> {
    let Scan { entries, exhausted } = scan(prefix, after, limit, reverse)?;
    let entries = entries
        .into_iter()
        .map(|(key, bytes)| decode_json(&key, &bytes).map(|value| (key, value)))
        .collect::<Result<_, _>>()?;
    Ok(Scan { entries, exhausted })
}

/// Most entries a filtered list reads per request by default ([`find`]'s `bound`), unless the
/// call's scan budget has less left.
pub const LIST_SCAN_BOUND: usize = 2000;

/// What a bounded read of a filtered list found.
#[derive(Debug, Clone, PartialEq)]
pub struct Found<R> {
    /// The items kept, in scan order.
    pub items: Vec<R>,
    /// `Some(key of the last entry read)` when reading stopped at the bound, before `wanted`
    /// items and before the end of the prefix: the list continues after that key.
    pub stopped_after: Option<String>,
}

/// Reads the entries under `prefix` after `after` (descending when `reverse`), `batch` per
/// scan, handing each to `keep`, until `wanted` items are kept, the prefix is exhausted, or
/// `bound` entries (or what this call's scan budget has left, if less) were read. A filtered
/// list thus costs at most a bounded read per request whatever the filter matches: it answers
/// the items found, and `stopped_after` says where the next page goes on
/// ([`CursorPage::finish_found`](crate::CursorPage::finish_found)).
pub fn find<R, E: From<HostError>>(
    prefix: &str,
    after: Option<&str>,
    reverse: bool,
    wanted: usize,
    bound: usize,
    batch: u32,
    keep: impl FnMut(String, Vec<u8>) -> Result<Option<R>, E>,
) -> Result<Found<R>, E> {
    find_by(
        |after, limit| scan(prefix, after, limit, reverse),
        after,
        wanted,
        bound,
        batch,
        keep,
    )
}

/// [`find`] over any ordered read: `read(after, limit)` answers the next at most `limit`
/// entries after the key `after` (from the start when `None`), and whether it reached the end.
/// For a list that is not one prefix, e.g. several prefixes merged into one order under keys
/// of the engine's choosing.
pub fn find_by<R, E: From<HostError>>(
    read: impl FnMut(Option<&str>, u32) -> Result<Scan, HostError>,
    after: Option<&str>,
    wanted: usize,
    bound: usize,
    batch: u32,
    keep: impl FnMut(String, Vec<u8>) -> Result<Option<R>, E>,
) -> Result<Found<R>, E> {
    let bound = bound.min(usize::try_from(scan_budget_left()).unwrap_or(usize::MAX));
    find_with(read, after, wanted, bound, batch, keep)
}

/// Like [`find`], with each value decoded from JSON into `T`.
pub fn find_json<T: DeserializeOwned, R, E: From<HostError>>(
    prefix: &str,
    after: Option<&str>,
    reverse: bool,
    wanted: usize,
    bound: usize,
    batch: u32,
    mut keep: impl FnMut(String, T) -> Result<Option<R>, E>,
) -> Result<Found<R>, E> {
    find(
        prefix,
        after,
        reverse,
        wanted,
        bound,
        batch,
        |key, bytes| {
            let value = decode_json(&key, &bytes)?;
            keep(key, value)
        },
    )
}

/// [`find`] over any `scan(after, limit)`.
fn find_with<R, E: From<HostError>>(
    mut scan: impl FnMut(Option<&str>, u32) -> Result<Scan, HostError>,
    after: Option<&str>,
    wanted: usize,
    bound: usize,
    batch: u32,
    mut keep: impl FnMut(String, Vec<u8>) -> Result<Option<R>, E>,
) -> Result<Found<R>, E> {
    let mut items = Vec::new();
    let mut last: Option<String> = after.map(str::to_owned);
    let mut read = 0;
    if wanted == 0 {
        return Ok(Found {
            items,
            stopped_after: None,
        });
    }
    loop {
        // Nothing left to read at all: let the scan answer the host's error.
        let left = if read == 0 {
            bound.max(1)
        } else {
            bound - read
        };
        let limit = batch.min(u32::try_from(left).unwrap_or(u32::MAX)).max(1);
        let Scan { entries, exhausted } = scan(last.as_deref(), limit)?;
        for (key, value) in entries {
            read += 1;
            last = Some(key.clone());
            if let Some(item) = keep(key, value)? {
                items.push(item);
                if items.len() == wanted {
                    return Ok(Found {
                        items,
                        stopped_after: None,
                    });
                }
            }
        }
        if exhausted {
            return Ok(Found {
                items,
                stopped_after: None,
            });
        }
        if read >= bound {
            return Ok(Found {
                items,
                stopped_after: last,
            });
        }
    }
}

/// Removes every entry whose key starts with `prefix` (`""`: everything of the tenant for this
/// engine); returns how many.
pub fn delete_prefix(prefix: &str) -> Result<u64, HostError> {
    host::delete_prefix(prefix).map_err(|error| HostError::new("storage.delete-prefix", error))
}

/// The JSON value under `key`, decoded into `T`.
pub fn get_json<T: DeserializeOwned>(key: &str) -> Result<Option<T>, HostError> {
    get(key)?.map(|bytes| decode_json(key, &bytes)).transpose()
}

/// Stores `value` as JSON under `key`.
pub fn put_json<T: Serialize + ?Sized>(key: &str, value: &T) -> Result<(), HostError> {
    let bytes = serde_json::to_vec(value)
        .map_err(|error| HostError::new("storage.encode", format!("{key}: {error}")))?;
    set(key, &bytes)
}

/// Stores `make()` as JSON under `key` unless the key already exists (idempotent defaults);
/// true when it wrote.
pub fn put_json_if_absent<T: Serialize>(
    key: &str,
    make: impl FnOnce() -> T,
) -> Result<bool, HostError> {
    if exists(key)? {
        return Ok(false);
    }
    put_json(key, &make())?;
    Ok(true)
}

/// Like [`list`], with each value decoded from JSON into `T`.
pub fn list_json<T: DeserializeOwned>(
    prefix: &str,
    after: Option<&str>,
    limit: u32,
    reverse: bool,
) -> Result<Entries<T>, HostError> {
    Ok(scan_json(prefix, after, limit, reverse)?.entries)
}

/// One cursor page of the entries under `prefix` (keys ascending, or descending when
/// `reverse`), with its `meta`; the cursor position is the full storage key. A page the host's
/// scan page cuts short comes back with `has_more` and a cursor after its last entry.
///
/// ```
/// use tessera_sdk::{Context, CursorPage, HandlerResult, Request, Response, storage};
///
/// fn list_keys(_ctx: &Context, req: &Request) -> HandlerResult {
///     let page = CursorPage::from_query(req.query(&["cursor", "limit"])?)?;
///     let (rows, meta) = storage::page("kv/", &page, false)?;
///     let keys: Vec<&str> = rows.iter().map(|(key, _)| key.as_str()).collect();
///     Ok(Response::ok_with_meta(&keys, &meta))
/// }
/// ```
pub fn page(
    prefix: &str,
    page: &CursorPage<String>,
    reverse: bool,
) -> Result<(Entries, CursorMeta), HostError> {
    let Scan { entries, exhausted } =
        scan(prefix, page.after.as_deref(), page.fetch_limit(), reverse)?;
    let stopped_after = (!exhausted)
        .then(|| entries.last().map(|(key, _)| key.clone()))
        .flatten();
    Ok(page.finish_found(entries, |(key, _)| key.clone(), stopped_after))
}

/// Like [`page`], with each value decoded from JSON into `T`.
pub fn page_json<T: DeserializeOwned>(
    prefix: &str,
    page: &CursorPage<String>,
    reverse: bool,
) -> Result<(Entries<T>, CursorMeta), HostError> {
    let Scan { entries, exhausted } =
        scan_json(prefix, page.after.as_deref(), page.fetch_limit(), reverse)?;
    let stopped_after = (!exhausted)
        .then(|| entries.last().map(|(key, _)| key.clone()))
        .flatten();
    Ok(page.finish_found(entries, |(key, _)| key.clone(), stopped_after))
}

/// Decodes the JSON value read under `key` (from [`get_many`], say) into `T`; the error names
/// the key.
pub fn decode_json<T: DeserializeOwned>(key: &str, bytes: &[u8]) -> Result<T, HostError> {
    serde_json::from_slice(bytes)
        .map_err(|error| HostError::new("storage.decode", format!("{key}: {error}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `find_with` over `count` keys `k/000…`, in order, scanning like the host with `limits`;
    /// returns what was found and how many entries were scanned.
    fn find_in(
        count: usize,
        limits: ScanLimits,
        wanted: usize,
        bound: usize,
        keep: impl Fn(&str) -> bool,
    ) -> (Found<String>, u64) {
        let keys: Vec<String> = (0..count).map(|index| format!("k/{index:03}")).collect();
        let mut scanned = 0u64;
        let found = find_with(
            |after, limit| {
                let allowed = limits.allowed(limit, scanned);
                if allowed == 0 {
                    return Err(HostError::new("storage.scan", "scan budget exhausted"));
                }
                let entries: Entries = keys
                    .iter()
                    .filter(|key| after.is_none_or(|after| key.as_str() > after))
                    .take(allowed as usize)
                    .map(|key| (key.clone(), Vec::new()))
                    .collect();
                scanned += entries.len() as u64;
                Ok(Scan {
                    exhausted: entries.len() < allowed as usize,
                    entries,
                })
            },
            None,
            wanted,
            bound,
            200,
            |key, _| Ok::<_, HostError>(keep(&key).then_some(key)),
        )
        .unwrap();
        (found, scanned)
    }

    #[test]
    fn a_filtered_read_stops_at_its_bound_and_says_where() {
        let limits = ScanLimits {
            page: 30,
            budget: 10_000,
        };
        // Nothing matches: 100 entries read, then a stop after the 100th.
        let (found, scanned) = find_in(500, limits, 3, 100, |_| false);
        assert_eq!(scanned, 100);
        assert!(found.items.is_empty());
        assert_eq!(found.stopped_after.as_deref(), Some("k/099"));
        // Enough matches before the bound: no stop.
        let (found, scanned) = find_in(500, limits, 3, 100, |key| key.ends_with('5'));
        assert_eq!(found.items, vec!["k/005", "k/015", "k/025"]);
        assert_eq!(found.stopped_after, None);
        assert!(scanned <= 30);
        // The end before the bound, although pages are short: no stop.
        let (found, scanned) = find_in(50, limits, 3, 100, |key| key == "k/049");
        assert_eq!(found.items, vec!["k/049"]);
        assert_eq!(found.stopped_after, None);
        assert_eq!(scanned, 50);
    }

    #[test]
    fn scans_are_cut_at_the_page_and_the_budget_left() {
        let limits = ScanLimits {
            page: 50,
            budget: 120,
        };
        assert_eq!(limits.allowed(1000, 0), 50);
        assert_eq!(limits.allowed(10, 0), 10);
        assert_eq!(limits.allowed(1000, 100), 20);
        assert_eq!(limits.allowed(1000, 120), 0);
        assert_eq!(limits.allowed(1000, 500), 0);
    }
}
