//! Test engine `flaky-provision`: tenant provisioning fails on a tenant's first attempt and
//! succeeds afterwards, to test partial failure and retry. Each attempt is counted in storage key
//! `attempts` before the outcome is decided; deprovisioning removes it.
//!
//! - `GET /api/v1/attempts` → 200 `{"data": {"attempts": n}}`
//! - `GET /api/v1/instance` → 200 `{"data": {"calls": n}}`: the `handle` calls this instance
//!   served, this one included (1 on a fresh instance)

use std::sync::atomic::{AtomicU64, Ordering};

use tessera_sdk::serde_json::json;
use tessera_sdk::{
    Context, Descriptor, Engine, HandlerResult, Request, Response, Router, TenantInfo, storage,
};

/// The storage key of the attempt counter.
const ATTEMPTS_KEY: &str = "attempts";

struct FlakyProvision;

/// `handle` calls this instance served.
static CALLS: AtomicU64 = AtomicU64::new(0);

impl Engine for FlakyProvision {
    fn describe() -> Descriptor {
        Descriptor::new(
            "flaky-provision",
            "Flaky Provision",
            env!("CARGO_PKG_VERSION"),
        )
        .tenant_provision(true)
    }

    fn handle(ctx: &Context, request: Request) -> Response {
        let calls = CALLS.fetch_add(1, Ordering::Relaxed) + 1;
        Router::new()
            .get("/api/v1/attempts", attempts)
            .get("/api/v1/instance", move |_, _| {
                Ok(Response::ok(&json!({ "calls": calls })))
            })
            .handle(ctx, request)
    }

    fn provision_tenant(_tenant: &TenantInfo) -> Result<(), String> {
        let attempt = storage::get_json::<u64>(ATTEMPTS_KEY)?.unwrap_or(0) + 1;
        storage::put_json(ATTEMPTS_KEY, &attempt)?;
        if attempt == 1 {
            // A failing call commits nothing it wrote; keep the count of attempts.
            storage::commit_now()?;
            return Err(format!(
                "simulated provisioning failure on attempt {attempt}"
            ));
        }
        Ok(())
    }

    fn deprovision_tenant(_tenant_id: &str) -> Result<(), String> {
        storage::delete_prefix("")?;
        Ok(())
    }
}

fn attempts(_ctx: &Context, request: &Request) -> HandlerResult {
    request.query(&[])?;
    let attempts = storage::get_json::<u64>(ATTEMPTS_KEY)?.unwrap_or(0);
    Ok(Response::ok(&json!({ "attempts": attempts })))
}

tessera_sdk::export_engine!(FlakyProvision);
