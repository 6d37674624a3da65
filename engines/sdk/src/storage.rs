//! Typed helpers over the host's key-value storage. Storage is already scoped by the host to
//! (this engine, tenant of the current call): keys never include the tenant id. Keys are ordered
//! byte-wise, so `prefix/` scans with `after` page through a collection.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::HostError;
use crate::guest::bindings::tessera::engine::storage as host;
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
/// after (before, when `reverse`) `after`, at most `limit` (the host's `scan`).
pub fn list(
    prefix: &str,
    after: Option<&str>,
    limit: u32,
    reverse: bool,
) -> Result<Entries, HostError> {
    host::scan(prefix, after, limit, reverse).map_err(|error| HostError::new("storage.scan", error))
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
    list(prefix, after, limit, reverse)?
        .into_iter()
        .map(|(key, bytes)| decode_json(&key, &bytes).map(|value| (key, value)))
        .collect()
}

/// One cursor page of the entries under `prefix` (keys ascending, or descending when
/// `reverse`), with its `meta`; the cursor position is the full storage key.
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
    let rows = list(prefix, page.after.as_deref(), page.fetch_limit(), reverse)?;
    Ok(page.finish(rows, |(key, _)| key.clone()))
}

/// Like [`page`], with each value decoded from JSON into `T`.
pub fn page_json<T: DeserializeOwned>(
    prefix: &str,
    page: &CursorPage<String>,
    reverse: bool,
) -> Result<(Entries<T>, CursorMeta), HostError> {
    let rows = list_json(prefix, page.after.as_deref(), page.fetch_limit(), reverse)?;
    Ok(page.finish(rows, |(key, _)| key.clone()))
}

/// Decodes the JSON value read under `key` (from [`get_many`], say) into `T`; the error names
/// the key.
pub fn decode_json<T: DeserializeOwned>(key: &str, bytes: &[u8]) -> Result<T, HostError> {
    serde_json::from_slice(bytes)
        .map_err(|error| HostError::new("storage.decode", format!("{key}: {error}")))
}
