//! Test engine `trapper`: `GET /api/v1/trap` panics, which traps the component instance;
//! `GET /api/v1/ok` → 200 `{"data": "ok"}` proves the engine still serves afterwards.

use tessera_sdk::{Context, Descriptor, Engine, HandlerResult, Request, Response, Router};

struct Trapper;

impl Engine for Trapper {
    fn describe() -> Descriptor {
        Descriptor::new("trapper", "Trapper", env!("CARGO_PKG_VERSION"))
    }

    fn handle(ctx: &Context, request: Request) -> Response {
        Router::new()
            .get("/api/v1/trap", trap)
            .get("/api/v1/ok", |_, _| Ok(Response::ok(&"ok")))
            .handle(ctx, request)
    }
}

fn trap(_ctx: &Context, _request: &Request) -> HandlerResult {
    panic!("trapper: deliberate panic for the host's trap handling");
}

tessera_sdk::export_engine!(Trapper);
