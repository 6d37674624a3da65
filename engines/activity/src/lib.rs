//! The Activity engine: a tenant's activity feed, fed by domain and chat events (its public API
//! comes in later issues). Provisioning creates the tenant's `feed-settings`.
//!
//! Storage (tenant-scoped by the host): `tenant`, `feed-settings`, `users/<user_id>`.

use tessera_sdk::serde_json::json;
use tessera_sdk::{
    Context, Descriptor, Engine, Request, Response, Router, TenantInfo, storage, tenancy, time,
};

/// The engine code, also its path prefix.
const CODE: &str = "activity";

/// The events the feed is built from.
const SUBSCRIPTIONS: [&str; 5] = [
    "entity.created",
    "entity.updated",
    "entity.deleted",
    "entity.status_changed",
    "message.created",
];

struct Activity;

impl Engine for Activity {
    fn describe() -> Descriptor {
        SUBSCRIPTIONS.into_iter().fold(
            Descriptor::new(CODE, "Activity", env!("CARGO_PKG_VERSION"))
                .tenant_provision(true)
                .user_provision(true),
            Descriptor::subscribe,
        )
    }

    fn handle(ctx: &Context, request: Request) -> Response {
        Router::new()
            .get("/api/v1/status", |ctx, req| tenancy::status(CODE, ctx, req))
            .handle(ctx, request)
    }

    fn provision_tenant(tenant: &TenantInfo) -> Result<(), String> {
        storage::put_json_if_absent("feed-settings", || {
            json!({
                "retention_days": 90,
                "event_types": SUBSCRIPTIONS,
                "created_at": time::now_rfc3339(),
            })
        })?;
        tenancy::record_tenant(tenant)?;
        Ok(())
    }
}

tessera_sdk::export_engine!(Activity);
