//! Test engine `echo`: reflects what the host passed in, to check the caller context, routing
//! under the prefix, query forwarding and bodies; `GET /api/v1/noop` is the benchmark's trivial
//! route.
//!
//! - `GET /api/v1/echo` → 200 `{"data": {"caller": {…}, "method", "path", "query": {…}}}`
//! - `POST /api/v1/echo` → 200 `{"data": <the JSON body>}` (400/422 like any JSON endpoint)
//! - `GET /api/v1/noop` → 204, empty body

use tessera_sdk::serde_json::{Value, json};
use tessera_sdk::{Context, Descriptor, Engine, HandlerResult, Request, Response, Router};

struct Echo;

impl Engine for Echo {
    fn describe() -> Descriptor {
        Descriptor::new("echo", "Echo", env!("CARGO_PKG_VERSION"))
    }

    fn handle(ctx: &Context, request: Request) -> Response {
        Router::new()
            .get("/api/v1/echo", echo)
            .post("/api/v1/echo", echo_body)
            .get("/api/v1/noop", |_, _| Ok(Response::no_content()))
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
