//! Test engine `echo`: reflects what the host passed in, to check the caller context, routing
//! under the prefix, query forwarding and bodies; `GET /api/v1/noop` is the benchmark's trivial
//! route.
//!
//! - `GET /api/v1/echo` → 200 `{"data": {"caller": {…}, "method", "path", "query": {…}}}`
//! - `POST /api/v1/echo` → 200 `{"data": <the JSON body>}` (400/422 like any JSON endpoint)
//! - `GET /api/v1/noop` → 204, empty body
//! - `GET /api/v1/instance` → 200 `{"data": {"calls": n}}`: the `handle` calls this instance
//!   served, this one included (1 on a fresh instance; more on one the host kept warm)
//! - `GET /api/v1/panic` panics, which traps the instance
//! - `GET /api/v1/hold/{mib}` → 200 `{"data": {"calls": n}}` after leaking `mib` MiB, so the
//!   instance's linear memory grows by as much and stays grown

use std::sync::atomic::{AtomicU64, Ordering};

use tessera_sdk::serde_json::{Value, json};
use tessera_sdk::{Context, Descriptor, Engine, HandlerResult, Request, Response, Router};

struct Echo;

/// `handle` calls this instance served.
static CALLS: AtomicU64 = AtomicU64::new(0);

impl Engine for Echo {
    fn describe() -> Descriptor {
        Descriptor::new("echo", "Echo", env!("CARGO_PKG_VERSION"))
    }

    fn handle(ctx: &Context, request: Request) -> Response {
        let calls = CALLS.fetch_add(1, Ordering::Relaxed) + 1;
        Router::new()
            .get("/api/v1/echo", echo)
            .post("/api/v1/echo", echo_body)
            .get("/api/v1/noop", |_, _| Ok(Response::no_content()))
            .get("/api/v1/instance", move |_, _| {
                Ok(Response::ok(&json!({ "calls": calls })))
            })
            .get("/api/v1/panic", |_, _| panic!("asked to panic"))
            .get("/api/v1/hold/{mib}", move |_, request| {
                let mib: usize = request.param("mib").parse().unwrap_or(0);
                std::mem::forget(vec![1u8; mib * 1024 * 1024]);
                Ok(Response::ok(&json!({ "calls": calls })))
            })
            .handle(ctx, request)
    }
}

fn echo(ctx: &Context, request: &Request) -> HandlerResult {
    Ok(Response::ok(&json!({
        "caller": ctx,
        "method": request.method,
        "path": request.path,
        "query": request.query_unchecked().to_map(),
    })))
}

fn echo_body(_ctx: &Context, request: &Request) -> HandlerResult {
    let body: Value = request.json()?;
    Ok(Response::ok(&body))
}

tessera_sdk::export_engine!(Echo);
