//! Test engine `probe-alpha`: the raw key-value API of `probe-common` under the engine code
//! `probe-alpha`, for storage isolation tests.

use tessera_sdk::{Context, Descriptor, Engine, Request, Response};

struct ProbeAlpha;

impl Engine for ProbeAlpha {
    fn describe() -> Descriptor {
        probe_common::describe("probe-alpha", "Probe Alpha", env!("CARGO_PKG_VERSION"))
    }

    fn handle(ctx: &Context, request: Request) -> Response {
        probe_common::handle(ctx, request)
    }
}

tessera_sdk::export_engine!(ProbeAlpha);
