//! Test engine `scanner`: the host's `storage.scan` seen raw (without the SDK's own clamping),
//! to check the page a scan returns at most and the budget of entries one call may scan.
//!
//! - `POST /api/v1/fill` `{"count": n}` → 201 `{"data": {"written": n}}`: `items/000000` …
//! - `GET /api/v1/scan?limit=n` → 200 `{"data": {"count"}}`: one scan of `items/` asking for
//!   `n` entries.
//! - `GET /api/v1/drain?limit=n` → 200 `{"data": {"read", "error"}}`: scans of `items/`, each
//!   asking for `n` entries after the last one read, until one returns nothing or fails
//!   (`error`: the host's message, else null).

use tessera_sdk::__private::bindings::tessera::engine::storage as raw;
use tessera_sdk::serde_json::{Value, json};
use tessera_sdk::{
    ApiError, Context, Descriptor, Engine, HandlerResult, Request, Response, Router, storage,
};

struct Scanner;

impl Engine for Scanner {
    fn describe() -> Descriptor {
        Descriptor::new("scanner", "Scanner", env!("CARGO_PKG_VERSION"))
    }

    fn handle(ctx: &Context, request: Request) -> Response {
        Router::new()
            .post("/api/v1/fill", fill)
            .get("/api/v1/scan", scan)
            .get("/api/v1/drain", drain)
            .handle(ctx, request)
    }
}

fn fill(_ctx: &Context, request: &Request) -> HandlerResult {
    let body: Value = request.json()?;
    let count = body["count"].as_u64().unwrap_or(0);
    let entries: Vec<(String, Vec<u8>)> = (0..count)
        .map(|index| (format!("items/{index:06}"), b"{}".to_vec()))
        .collect();
    for chunk in entries.chunks(1000) {
        storage::write_batch(chunk, &[], &[])?;
    }
    Ok(Response::created(&json!({ "written": count })))
}

fn limit(request: &Request) -> Result<u32, ApiError> {
    Ok(request.query(&["limit"])?.get_u32("limit")?.unwrap_or(100))
}

fn scan(_ctx: &Context, request: &Request) -> HandlerResult {
    let limit = limit(request)?;
    let rows = raw::scan("items/", None, limit, false).map_err(ApiError::Conflict)?;
    Ok(Response::ok(&json!({ "count": rows.len() })))
}

fn drain(_ctx: &Context, request: &Request) -> HandlerResult {
    let limit = limit(request)?;
    let mut read = 0;
    let mut after: Option<String> = None;
    let error = loop {
        match raw::scan("items/", after.as_deref(), limit, false) {
            Ok(rows) if rows.is_empty() => break None,
            Ok(rows) => {
                read += rows.len();
                after = rows.last().map(|(key, _)| key.clone());
            }
            Err(error) => break Some(error),
        }
    };
    Ok(Response::ok(&json!({ "read": read, "error": error })))
}

tessera_sdk::export_engine!(Scanner);
