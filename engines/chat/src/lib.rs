//! The Chat engine: a tenant's conversations, messages and members, and the chat webhooks of
//! the API spec (signed deliveries with retries, a dead letter queue and automatic disabling),
//! built only on the engine world's imports: storage, the durable scheduler, outbound HTTP,
//! the vault and the event bus.
//!
//! Every chat event (`message.*`, `conversation.*`, `member.*`, `notification.created`) is
//! published on the host's bus and becomes one delivery per active webhook subscribed to it,
//! written in the same storage transaction as the change that caused it, together with the job
//! of its first attempt (`events.rs`). What reads all of a webhook's deliveries (resuming the
//! parked ones when it is enabled again, purging them when it is deleted) runs a chunk per job
//! on the durable scheduler, within the host's scan budget per call (`webhooks/jobs.rs`).
//! Storage layout (tenant-scoped by the host):
//!
//! | key | value |
//! |---|---|
//! | `tenant`, `users/<user_id>` | provisioning records (`tenancy`) |
//! | `conversations/<id>`, `conversation-slugs/<slug>` | conversations, default-conversation index |
//! | `messages/<conversation_id>/<message_id>` | messages (ids are UUID v7: keys sort by time) |
//! | `webhooks/<id>` | webhooks, secrets sealed by the host's vault |
//! | `webhook-failures/<id>` | consecutive failed attempts (compare-and-swap counter) |
//! | `deliveries/<webhook_id>/<delivery_id>` | deliveries with their request body and state |
//! | `dlq/<delivery_id>` | the dead letter queue (the webhook id) |

mod batch;
mod conversations;
mod events;
mod webhooks;

use tessera_sdk::serde_json::{Map, Value, json};
use tessera_sdk::{
    ApiError, Context, Descriptor, Engine, HostError, Job, Request, Response, Router, TenantInfo,
    storage, tenancy, time,
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
            .get("/api/v1/conversations", conversations::list)
            .post("/api/v1/conversations", conversations::create)
            .get("/api/v1/conversations/{id}", conversations::show)
            .patch("/api/v1/conversations/{id}", conversations::update)
            .get(
                "/api/v1/conversations/{id}/messages",
                conversations::messages,
            )
            .post(
                "/api/v1/conversations/{id}/messages",
                conversations::post_message,
            )
            .patch(
                "/api/v1/conversations/{id}/messages/{message_id}",
                conversations::edit_message,
            )
            .delete(
                "/api/v1/conversations/{id}/messages/{message_id}",
                conversations::delete_message,
            )
            .post(
                "/api/v1/conversations/{id}/members",
                conversations::add_member,
            )
            .delete(
                "/api/v1/conversations/{id}/members/{user_id}",
                conversations::remove_member,
            )
            .get("/api/v1/webhooks", webhooks::list)
            .post("/api/v1/webhooks", webhooks::create)
            .get("/api/v1/webhooks/dlq", webhooks::delivery::dead_letters)
            .post(
                "/api/v1/webhooks/dlq/{id}/retry",
                webhooks::delivery::retry_dead_letter,
            )
            .get("/api/v1/webhooks/{id}", webhooks::show)
            .patch("/api/v1/webhooks/{id}", webhooks::update)
            .delete("/api/v1/webhooks/{id}", webhooks::destroy)
            .post("/api/v1/webhooks/{id}/test", webhooks::delivery::test_ping)
            .get(
                "/api/v1/webhooks/{id}/deliveries",
                webhooks::delivery::deliveries,
            )
            .post(
                "/api/v1/webhooks/{id}/deliveries/{delivery_id}/retry",
                webhooks::delivery::retry_delivery,
            )
            .handle(ctx, request)
    }

    fn provision_tenant(tenant: &TenantInfo) -> Result<(), String> {
        ensure_conversation("general", "General")?;
        tenancy::record_tenant(tenant)?;
        Ok(())
    }

    fn run_job(job: &Job) -> Result<(), String> {
        webhooks::jobs::run(job)
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

/// The request body as a JSON object: 400 when it is not JSON or not an object.
fn object_body(req: &Request) -> Result<Map<String, Value>, ApiError> {
    match req.json::<Value>()? {
        Value::Object(map) => Ok(map),
        _ => Err(ApiError::BadRequest(
            "The request body must be a JSON object.".into(),
        )),
    }
}

/// A new identifier that sorts by creation time (UUID v7), so storage keys built from it list
/// in the order things happened.
fn new_ordered_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

tessera_sdk::export_engine!(Chat);
