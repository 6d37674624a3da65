//! Test engine `napper`: `GET /api/v1/nap?ms=N` sleeps N milliseconds (a WASI monotonic-clock
//! wait, which the host serves asynchronously, so the call holds an instance but no CPU), then
//! answers 200 `{"data": {"slept_ms": N}}`, to fill the instance pool cheaply;
//! `GET /api/v1/ok` → 200 `{"data": "ok"}`.

use std::time::Duration;

use tessera_sdk::serde_json::json;
use tessera_sdk::{Context, Descriptor, Engine, HandlerResult, Request, Response, Router};

struct Napper;

impl Engine for Napper {
    fn describe() -> Descriptor {
        Descriptor::new("napper", "Napper", env!("CARGO_PKG_VERSION"))
    }

    fn handle(ctx: &Context, request: Request) -> Response {
        Router::new()
            .get("/api/v1/nap", nap)
            .get("/api/v1/ok", |_, _| Ok(Response::ok(&"ok")))
            .handle(ctx, request)
    }
}

fn nap(_ctx: &Context, request: &Request) -> HandlerResult {
    let ms = request.query(&["ms"])?.get_u64("ms")?.unwrap_or(0);
    std::thread::sleep(Duration::from_millis(ms));
    Ok(Response::ok(&json!({ "slept_ms": ms })))
}

tessera_sdk::export_engine!(Napper);
