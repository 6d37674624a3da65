//! Test engine `oversized`: `GET /api/v1/huge` answers 200 with a 20 MiB body of `x`
//! (`text/plain`), beyond any sensible response cap; `GET /api/v1/ok` → 200 `{"data": "ok"}`.

use tessera_sdk::{Context, Descriptor, Engine, HandlerResult, Request, Response, Router};

/// The size of the huge body.
const HUGE: usize = 20 * 1024 * 1024;

struct Oversized;

impl Engine for Oversized {
    fn describe() -> Descriptor {
        Descriptor::new("oversized", "Oversized", env!("CARGO_PKG_VERSION"))
    }

    fn handle(ctx: &Context, request: Request) -> Response {
        Router::new()
            .get("/api/v1/huge", huge)
            .get("/api/v1/ok", |_, _| Ok(Response::ok(&"ok")))
            .handle(ctx, request)
    }
}

fn huge(_ctx: &Context, _request: &Request) -> HandlerResult {
    Ok(Response::new(200)
        .with_header("content-type", "text/plain")
        .with_body(vec![b'x'; HUGE]))
}

tessera_sdk::export_engine!(Oversized);
