//! The Notes engine: a tenant's notes (its public API comes in later issues). Provisioning
//! creates the tenant's default `settings`.
//!
//! Storage (tenant-scoped by the host): `tenant`, `settings`, `users/<user_id>`.

use tessera_sdk::serde_json::json;
use tessera_sdk::{
    Context, Descriptor, Engine, Request, Response, Router, TenantInfo, storage, tenancy, time,
};

/// The engine code, also its path prefix.
const CODE: &str = "notes";

struct Notes;

impl Engine for Notes {
    fn describe() -> Descriptor {
        Descriptor::new(CODE, "Notes", env!("CARGO_PKG_VERSION"))
            .tenant_provision(true)
            .user_provision(true)
    }

    fn handle(ctx: &Context, request: Request) -> Response {
        Router::new()
            .get("/api/v1/status", |ctx, req| tenancy::status(CODE, ctx, req))
            .handle(ctx, request)
    }

    fn provision_tenant(tenant: &TenantInfo) -> Result<(), String> {
        storage::put_json_if_absent("settings", || {
            json!({
                "default_visibility": "private",
                "max_note_length": 100_000,
                "created_at": time::now_rfc3339(),
            })
        })?;
        tenancy::record_tenant(tenant)?;
        Ok(())
    }
}

tessera_sdk::export_engine!(Notes);
