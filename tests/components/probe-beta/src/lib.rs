//! Test engine `probe-beta`: the raw key-value API of `probe-common` under the engine code
//! `probe-beta`, for storage isolation tests.

use tessera_sdk::{Context, Descriptor, Engine, Request, Response};

struct ProbeBeta;

impl Engine for ProbeBeta {
    fn describe() -> Descriptor {
        probe_common::describe("probe-beta", "Probe Beta", env!("CARGO_PKG_VERSION"))
    }

    fn handle(ctx: &Context, request: Request) -> Response {
        probe_common::handle(ctx, request)
    }
}

tessera_sdk::export_engine!(ProbeBeta);
