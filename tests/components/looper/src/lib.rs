//! Test engine `looper`: `GET /api/v1/spin` never returns (a busy loop the optimizer cannot
//! remove), so the host's CPU deadline must interrupt it; `GET /api/v1/ok` → 200
//! `{"data": "ok"}` proves the engine still serves afterwards.

use tessera_sdk::{Context, Descriptor, Engine, HandlerResult, Request, Response, Router};

struct Looper;

impl Engine for Looper {
    fn describe() -> Descriptor {
        Descriptor::new("looper", "Looper", env!("CARGO_PKG_VERSION"))
    }

    fn handle(ctx: &Context, request: Request) -> Response {
        Router::new()
            .get("/api/v1/spin", spin)
            .get("/api/v1/ok", |_, _| Ok(Response::ok(&"ok")))
            .handle(ctx, request)
    }
}

fn spin(_ctx: &Context, _request: &Request) -> HandlerResult {
    let mut counter = 0_u64;
    loop {
        counter = std::hint::black_box(counter.wrapping_add(1));
    }
}

tessera_sdk::export_engine!(Looper);
