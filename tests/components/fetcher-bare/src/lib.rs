//! Test engine `fetcher-bare`: the same `POST /api/v1/fetch` as `fetcher`, in an engine that
//! declares no outbound hosts, so the host refuses every request unless its operator grants
//! some (`TESSERA_ENGINE_OUTBOUND_HOSTS`).

use tessera_sdk::{Context, Descriptor, Engine, Request, Response, Router};

#[path = "../../fetcher/src/fetch.rs"]
mod fetch;

struct FetcherBare;

impl Engine for FetcherBare {
    fn describe() -> Descriptor {
        Descriptor::new("fetcher-bare", "Fetcher (bare)", env!("CARGO_PKG_VERSION"))
    }

    fn handle(ctx: &Context, request: Request) -> Response {
        Router::new()
            .post("/api/v1/fetch", fetch::fetch)
            .handle(ctx, request)
    }
}

tessera_sdk::export_engine!(FetcherBare);
