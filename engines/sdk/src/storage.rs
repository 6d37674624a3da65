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

/// Stores raw bytes under `key`.
pub fn set(key: &str, value: &[u8]) -> Result<(), HostError> {
    host::set(key, value).map_err(|error| HostError::new("storage.set", error))
}

/// Removes `key`; true when it existed.
pub fn delete(key: &str) -> Result<bool, HostError> {
    host::delete(key).map_err(|error| HostError::new("storage.delete", error))
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
    get(key)?.map(|bytes| decode(key, &bytes)).transpose()
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
        .map(|(key, bytes)| decode(&key, &bytes).map(|value| (key, value)))
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

fn decode<T: DeserializeOwned>(key: &str, bytes: &[u8]) -> Result<T, HostError> {
    serde_json::from_slice(bytes)
        .map_err(|error| HostError::new("storage.decode", format!("{key}: {error}")))
}
