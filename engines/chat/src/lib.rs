//! The Chat engine: a tenant's conversations, messages and members (and, in later issues, the
//! chat webhooks of the API spec). Provisioning creates the tenant's `general` conversation.
//!
//! Storage (tenant-scoped by the host): `tenant`, `users/<user_id>`,
//! `conversations/<conversation_id>`, and the index `conversation-slugs/<slug>` → id.

use tessera_sdk::serde_json::{Value, json};
use tessera_sdk::{
    Context, Descriptor, Engine, HostError, Request, Response, Router, TenantInfo, storage,
    tenancy, time,
};

/// The engine code, also its path prefix.
const CODE: &str = "chat";

struct Chat;

impl Engine for Chat {
    fn describe() -> Descriptor {
        Descriptor::new(CODE, "Chat", env!("CARGO_PKG_VERSION"))
            .tenant_provision(true)
            .user_provision(true)
            // Webhook deliveries to the URLs customers register.
            .outbound_hosts(&["https://*:*"])
    }

    fn handle(ctx: &Context, request: Request) -> Response {
        Router::new()
            .get("/api/v1/status", |ctx, req| tenancy::status(CODE, ctx, req))
            .handle(ctx, request)
    }

    fn provision_tenant(tenant: &TenantInfo) -> Result<(), String> {
        ensure_conversation("general", "General")?;
        tenancy::record_tenant(tenant)?;
        Ok(())
    }
}

/// Creates the default conversation `slug` once. The slug index is written before the
/// conversation, so a provisioning retried after a failure finds the id and reuses it.
fn ensure_conversation(slug: &str, title: &str) -> Result<String, HostError> {
    let index_key = format!("conversation-slugs/{slug}");
    let id = match storage::get_json::<String>(&index_key)? {
        Some(id) => id,
        None => {
            let id = time::new_id();
            storage::put_json(&index_key, &id)?;
            id
        }
    };
    storage::put_json_if_absent(&format!("conversations/{id}"), || {
        let now = time::now_rfc3339();
        json!({
            "id": id,
            "slug": slug,
            "title": title,
            "is_default": true,
            "member_ids": Value::Array(Vec::new()),
            "created_by": Value::Null,
            "created_at": now,
            "updated_at": now,
        })
    })?;
    Ok(id)
}

tessera_sdk::export_engine!(Chat);
