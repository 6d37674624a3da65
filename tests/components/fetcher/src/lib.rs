//! Test engine `fetcher`: `POST /api/v1/fetch` performs one outbound HTTP request through the
//! host's policy and reports the outcome (see `fetch.rs`). It declares the outbound hosts
//! `https://*:*` (any HTTPS URL), the plain-HTTP loopback origins `http://127.0.0.1:*`,
//! `http://localhost:*`, `http://[::1]:*`, and `http://10.0.0.1`, so the tests can tell a
//! refusal by the allow-list from a refusal of private addresses.

use tessera_sdk::{Context, Descriptor, Engine, Request, Response, Router};

mod fetch;

struct Fetcher;

impl Engine for Fetcher {
    fn describe() -> Descriptor {
        Descriptor::new("fetcher", "Fetcher", env!("CARGO_PKG_VERSION")).outbound_hosts(&[
            "https://*:*",
            "http://127.0.0.1:*",
            "http://localhost:*",
            "http://[::1]:*",
            "http://10.0.0.1",
        ])
    }

    fn handle(ctx: &Context, request: Request) -> Response {
        Router::new()
            .post("/api/v1/fetch", fetch::fetch)
            .handle(ctx, request)
    }
}

tessera_sdk::export_engine!(Fetcher);
