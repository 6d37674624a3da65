//! Test engine `looper`: `GET /api/v1/spin` never returns (a busy loop the optimizer cannot
//! remove), so the host's CPU deadline must interrupt it; `GET /api/v1/ok` → 200
//! `{"data": "ok"}` proves the engine still serves afterwards. `GET /api/v1/count?n=N` does N
//! rounds of arithmetic and answers `{"data": <result>}`: a fixed amount of CPU work, for the
//! tests of how tenants share the CPU.

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
            .get("/api/v1/count", count)
            .handle(ctx, request)
    }
}

fn spin(_ctx: &Context, _request: &Request) -> HandlerResult {
    let mut counter = 0_u64;
    loop {
        counter = std::hint::black_box(counter.wrapping_add(1));
    }
}

fn count(_ctx: &Context, request: &Request) -> HandlerResult {
    let rounds = request.query(&["n"])?.get_u64("n")?.unwrap_or(0);
    let mut counter = 0_u64;
    for round in 0..rounds {
        counter = std::hint::black_box(counter.wrapping_mul(31).wrapping_add(round));
    }
    Ok(Response::ok(&counter))
}

tessera_sdk::export_engine!(Looper);
