//! Test engine `slowpoke`: `GET /api/v1/sleep?ms=N` busy-waits N milliseconds on the monotonic
//! clock, then answers 200 `{"data": {"slept_ms": N}}`, to test concurrency and deadlines;
//! `GET /api/v1/ok` → 200 `{"data": "ok"}`.

use std::time::{Duration, Instant};

use tessera_sdk::serde_json::json;
use tessera_sdk::{Context, Descriptor, Engine, HandlerResult, Request, Response, Router};

struct Slowpoke;

impl Engine for Slowpoke {
    fn describe() -> Descriptor {
        Descriptor::new("slowpoke", "Slowpoke", env!("CARGO_PKG_VERSION"))
    }

    fn handle(ctx: &Context, request: Request) -> Response {
        Router::new()
            .get("/api/v1/sleep", sleep)
            .get("/api/v1/ok", |_, _| Ok(Response::ok(&"ok")))
            .handle(ctx, request)
    }
}

fn sleep(_ctx: &Context, request: &Request) -> HandlerResult {
    let ms = request.query(&["ms"])?.get_u64("ms")?.unwrap_or(0);
    let deadline = Duration::from_millis(ms);
    let start = Instant::now();
    while start.elapsed() < deadline {
        std::hint::spin_loop();
    }
    Ok(Response::ok(&json!({ "slept_ms": ms })))
}

tessera_sdk::export_engine!(Slowpoke);
