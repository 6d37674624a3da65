//! The Mail engine: a mailbox per provisioned user with the folders `inbox`, `sent`, `outbox`
//! and `trash`. Sending to users of the tenant delivers a copy into their inbox at once; other
//! addresses wait in the sender's outbox for the operator's SMTP relay (`outbound.rs`), or stay
//! `queued` there when the host has none. Folders list newest first with cursor paging and an
//! unread filter; copies are marked read, moved to the trash and back, and deleted.
//!
//! Storage (tenant-scoped by the host; `store.rs` tells how the keys work together):
//!
//! | key | value |
//! |---|---|
//! | `tenant`, `settings`, `users/<user_id>` | provisioning records (the user's address) |
//! | `by-email/<lower-cased address>` | the user id with that address |
//! | `mailboxes/<user_id>/<folder>` | the user's four folders |
//! | `messages/<user_id>/<copy_id>` | a mailbox's copy of a message (ids are UUID v7) |
//! | `folders/<user_id>/<folder>/<copy_id>` | the folder index: `{read}` |
//! | `bodies/<message_id>`, `holders/<message_id>/<copy_id>` | a body (raw UTF-8), its holders |
//!
//! Events (identifiers only, never addresses, subjects or bodies): `mail.sent`
//! `{message_id, sender_id, internal_recipient_ids, external_count}` and `mail.received`
//! `{message_id, recipient_id, copy_id}` per internal recipient.

mod compose;
mod handlers;
mod outbound;
mod store;

use serde::Serialize;
use tessera_sdk::serde_json::{Map, Value, json};
use tessera_sdk::{
    ApiError, Context, Descriptor, Engine, Job, Permission, Request, Response, Router, TenantInfo,
    UserInfo, events, log, storage, tenancy, time,
};

use crate::store::{Folder, Message};

/// The engine code, also its path prefix.
const CODE: &str = "mail";

struct Mail;

impl Engine for Mail {
    fn describe() -> Descriptor {
        Descriptor::new(CODE, "Mail", env!("CARGO_PKG_VERSION"))
            .tenant_provision(true)
            .user_provision(true)
    }

    /// Mail to addresses outside the platform goes through the operator's relay.
    fn permissions() -> Vec<Permission> {
        vec![Permission::SendMail]
    }

    fn handle(ctx: &Context, request: Request) -> Response {
        Router::new()
            .get("/api/v1/status", |ctx, req| tenancy::status(CODE, ctx, req))
            .get("/api/v1/folders", handlers::folders)
            .get("/api/v1/folders/{folder}/messages", handlers::list)
            .post("/api/v1/messages", compose::send)
            .get("/api/v1/messages/{id}", handlers::show)
            .patch("/api/v1/messages/{id}", handlers::update)
            .delete("/api/v1/messages/{id}", handlers::destroy)
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

    /// Creates the user's four folders, records the user and indexes their address (moving
    /// the index entry when the address changed).
    fn provision_user(user: &UserInfo) -> Result<(), String> {
        // A pending removal of the user stops: what it had not reached yet stays theirs.
        tenancy::cancel_removal(&user.user_id)?;
        for folder in Folder::ALL {
            storage::put_json_if_absent(&store::mailbox_key(&user.user_id, folder), || {
                json!({
                    "id": folder.as_str(),
                    "name": folder.name(),
                    "user_id": user.user_id,
                    "created_at": time::now_rfc3339(),
                })
            })?;
        }
        let previous = tenancy::user_record(&user.user_id)?;
        tenancy::record_user(user)?;
        if let Some(previous) = previous.filter(|previous| {
            store::address_key(&previous.user.email) != store::address_key(&user.email)
        }) {
            forget_address(&previous.user.email, &user.user_id)?;
        }
        storage::put_json(&store::address_key(&user.email), &user.user_id)?;
        // Complete counters from the start (a new mailbox counts nothing); one kept since
        // before counters is counted here, or failing that on first use.
        if let Err(error) = store::tallies(&user.user_id) {
            log::warn(format!("counting the mailbox of {}: {error}", user.user_id));
        }
        Ok(())
    }

    /// Removes the user's mailbox with every copy in it (bodies other mailboxes still hold
    /// stay), their address and their record.
    /// A large mailbox takes several calls: a first chunk here, the rest in jobs
    /// (`tenancy::remove_user_in_chunks`); the user no longer exists for mail either way.
    fn deprovision_user(_tenant_id: &str, user_id: &str) -> Result<(), String> {
        if let Some(record) = tenancy::user_record(user_id)? {
            forget_address(&record.user.email, user_id)?;
        }
        tenancy::remove_user_in_chunks(user_id, |chunk, _| store::remove_mailbox(chunk))?;
        Ok(())
    }

    /// The jobs of a user's removal, and of external deliveries.
    fn run_job(job: &Job) -> Result<(), String> {
        match tenancy::RemovalJob::of(job) {
            Some(removal) => {
                tenancy::continue_removal(&removal, |chunk, _| store::remove_mailbox(chunk))?;
                Ok(())
            }
            None => outbound::run(job),
        }
    }
}

/// Removes `address` from the address index if it names `user_id`.
fn forget_address(address: &str, user_id: &str) -> Result<(), String> {
    let key = store::address_key(address);
    if storage::get_json::<String>(&key)?.as_deref() == Some(user_id) {
        storage::delete(&key)?;
    }
    Ok(())
}

/// A copy with its body, as show, send and update answer it.
#[derive(Serialize)]
struct MessageView<'a> {
    #[serde(flatten)]
    message: &'a Message,
    body: &'a str,
}

fn view<'a>(message: &'a Message, body: &'a str) -> MessageView<'a> {
    MessageView { message, body }
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

/// Publishes an event after its change committed. The change stands either way, so a failed
/// publication is logged rather than turned into an error answer.
fn publish(event_type: &str, payload: &Value) {
    if let Err(error) = events::publish(event_type, payload) {
        log::error(format!("publishing {event_type} failed: {error}"));
    }
}

tessera_sdk::export_engine!(Mail);
