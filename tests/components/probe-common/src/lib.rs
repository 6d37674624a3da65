//! The shared body of the `probe-alpha` and `probe-beta` test engines: a raw key-value API over
//! the engine's tenant-scoped storage, to prove that one engine cannot read another engine's or
//! another tenant's data.
//!
//! - `PUT /api/v1/kv/{key}` stores the raw body under `kv/{key}` → 204
//! - `GET /api/v1/kv/{key}` → 200 `{"data": "<value as UTF-8>"}`, or 404 `Key not found.`
//! - `GET /api/v1/kv?cursor&limit` → 200 `{"data": ["k1", …], "meta": {next_cursor, has_more}}`
//! - `GET /api/v1/kv-many?keys=k1,k2,…` → 200 `{"data": ["<value>" or null, …]}`: one
//!   `storage.get-many` of `kv/k1`, `kv/k2`, … in that order

use tessera_sdk::{
    ApiError, Context, CursorPage, Descriptor, HandlerResult, Request, Response, Router, storage,
};

/// The storage prefix of the values.
const PREFIX: &str = "kv/";

/// A probe's descriptor: no provisioning, no subscriptions.
pub fn describe(code: &str, name: &str, version: &str) -> Descriptor {
    Descriptor::new(code, name, version)
}

/// Routes a probe's requests.
pub fn handle(ctx: &Context, request: Request) -> Response {
    Router::new()
        .put("/api/v1/kv/{key}", put)
        .get("/api/v1/kv/{key}", get)
        .get("/api/v1/kv", list)
        .get("/api/v1/kv-many", get_many)
        .handle(ctx, request)
}

fn put(_ctx: &Context, request: &Request) -> HandlerResult {
    request.query(&[])?;
    storage::set(&format!("{PREFIX}{}", request.param("key")), &request.body)?;
    Ok(Response::no_content())
}

fn get(_ctx: &Context, request: &Request) -> HandlerResult {
    request.query(&[])?;
    let value = storage::get(&format!("{PREFIX}{}", request.param("key")))?
        .ok_or_else(|| ApiError::not_found("Key"))?;
    Ok(Response::ok(&String::from_utf8_lossy(&value)))
}

fn get_many(_ctx: &Context, request: &Request) -> HandlerResult {
    let query = request.query(&["keys"])?;
    let keys: Vec<String> = query
        .get("keys")
        .unwrap_or_default()
        .split(',')
        .map(|key| format!("{PREFIX}{key}"))
        .collect();
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    let values: Vec<Option<String>> = storage::get_many(&keys)?
        .into_iter()
        .map(|value| value.map(|bytes| String::from_utf8_lossy(&bytes).into_owned()))
        .collect();
    Ok(Response::ok(&values))
}

fn list(_ctx: &Context, request: &Request) -> HandlerResult {
    let page = CursorPage::from_query(request.query(&["cursor", "limit"])?)?;
    let (rows, meta) = storage::page(PREFIX, &page, false)?;
    let keys: Vec<&str> = rows
        .iter()
        .map(|(key, _)| key.strip_prefix(PREFIX).unwrap_or(key))
        .collect();
    Ok(Response::ok_with_meta(&keys, &meta))
}
