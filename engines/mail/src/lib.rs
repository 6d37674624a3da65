//! The Mail engine: mailboxes and messages (its public API comes in later issues). Provisioning
//! creates the tenant's `settings`, and each user's `inbox`, `sent`, `outbox` and `trash`.
//!
//! Storage (tenant-scoped by the host): `tenant`, `settings`, `users/<user_id>`,
//! `mailboxes/<user_id>/<mailbox>`.

use tessera_sdk::serde_json::json;
use tessera_sdk::{
    Context, Descriptor, Engine, Request, Response, Router, TenantInfo, UserInfo, storage, tenancy,
    time,
};

/// The engine code, also its path prefix.
const CODE: &str = "mail";

/// Every user's mailboxes: id and display name.
const MAILBOXES: [(&str, &str); 4] = [
    ("inbox", "Inbox"),
    ("sent", "Sent"),
    ("outbox", "Outbox"),
    ("trash", "Trash"),
];

struct Mail;

impl Engine for Mail {
    fn describe() -> Descriptor {
        Descriptor::new(CODE, "Mail", env!("CARGO_PKG_VERSION"))
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
                "retention_days": 365,
                "max_attachment_bytes": 25 * 1024 * 1024,
                "created_at": time::now_rfc3339(),
            })
        })?;
        tenancy::record_tenant(tenant)?;
        Ok(())
    }

    fn provision_user(user: &UserInfo) -> Result<(), String> {
        for (id, name) in MAILBOXES {
            storage::put_json_if_absent(&mailbox_key(&user.user_id, id), || {
                json!({
                    "id": id,
                    "name": name,
                    "user_id": user.user_id,
                    "created_at": time::now_rfc3339(),
                })
            })?;
        }
        tenancy::record_user(user)?;
        Ok(())
    }

    fn deprovision_user(_tenant_id: &str, user_id: &str) -> Result<(), String> {
        storage::delete_prefix(&format!("mailboxes/{user_id}/"))?;
        tenancy::forget_user(user_id)?;
        Ok(())
    }
}

fn mailbox_key(user_id: &str, mailbox: &str) -> String {
    format!("mailboxes/{user_id}/{mailbox}")
}

tessera_sdk::export_engine!(Mail);
