//! The User Manager engine: a tenant's user directory (its public API comes in later issues).
//! Provisioning creates the tenant's `directory-settings`; each provisioned user is a directory
//! entry under `users/<user_id>`.
//!
//! Storage (tenant-scoped by the host): `tenant`, `directory-settings`, `users/<user_id>`.

use tessera_sdk::serde_json::json;
use tessera_sdk::{
    Context, Descriptor, Engine, Request, Response, Router, TenantInfo, storage, tenancy, time,
};

/// The engine code, also its path prefix.
const CODE: &str = "usermanager";

struct UserManager;

impl Engine for UserManager {
    fn describe() -> Descriptor {
        Descriptor::new(CODE, "User Manager", env!("CARGO_PKG_VERSION"))
            .tenant_provision(true)
            .user_provision(true)
    }

    fn handle(ctx: &Context, request: Request) -> Response {
        Router::new()
            .get("/api/v1/status", |ctx, req| tenancy::status(CODE, ctx, req))
            .handle(ctx, request)
    }

    fn provision_tenant(tenant: &TenantInfo) -> Result<(), String> {
        storage::put_json_if_absent("directory-settings", || {
            json!({
                "default_role": "editor",
                "allow_guests": true,
                "allow_agents": true,
                "created_at": time::now_rfc3339(),
            })
        })?;
        tenancy::record_tenant(tenant)?;
        Ok(())
    }
}

tessera_sdk::export_engine!(UserManager);
