//! The Drive engine: a tenant's folders and files (its public API comes in later issues).
//! Provisioning creates the root folder `folders/root`.
//!
//! Storage (tenant-scoped by the host): `tenant`, `folders/<folder_id>`, `users/<user_id>`.

use tessera_sdk::serde_json::{Value, json};
use tessera_sdk::{
    Context, Descriptor, Engine, Request, Response, Router, TenantInfo, storage, tenancy, time,
};

/// The engine code, also its path prefix.
const CODE: &str = "drive";

/// The key of the tenant's root folder.
const ROOT_FOLDER_KEY: &str = "folders/root";

struct Drive;

impl Engine for Drive {
    fn describe() -> Descriptor {
        Descriptor::new(CODE, "Drive", env!("CARGO_PKG_VERSION"))
            .tenant_provision(true)
            .user_provision(true)
    }

    fn handle(ctx: &Context, request: Request) -> Response {
        Router::new()
            .get("/api/v1/status", |ctx, req| tenancy::status(CODE, ctx, req))
            .handle(ctx, request)
    }

    fn provision_tenant(tenant: &TenantInfo) -> Result<(), String> {
        storage::put_json_if_absent(ROOT_FOLDER_KEY, || {
            let now = time::now_rfc3339();
            json!({
                "id": "root",
                "name": "/",
                "parent_id": Value::Null,
                "created_at": now,
                "updated_at": now,
            })
        })?;
        tenancy::record_tenant(tenant)?;
        Ok(())
    }
}

tessera_sdk::export_engine!(Drive);
