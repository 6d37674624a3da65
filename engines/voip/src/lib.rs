//! The VoIP engine: calls and telephony settings of a tenant (its public API comes in later
//! issues). Provisioning creates the tenant's default `settings`.
//!
//! Storage (tenant-scoped by the host): `tenant`, `settings`, `users/<user_id>`.

use tessera_sdk::serde_json::json;
use tessera_sdk::{
    Context, Descriptor, Engine, Request, Response, Router, TenantInfo, storage, tenancy, time,
};

/// The engine code, also its path prefix.
const CODE: &str = "voip";

struct Voip;

impl Engine for Voip {
    fn describe() -> Descriptor {
        Descriptor::new(CODE, "VoIP", env!("CARGO_PKG_VERSION"))
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
                "ring_timeout_seconds": 30,
                "voicemail_enabled": true,
                "recording_enabled": false,
                "created_at": time::now_rfc3339(),
            })
        })?;
        tenancy::record_tenant(tenant)?;
        Ok(())
    }
}

tessera_sdk::export_engine!(Voip);
