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

mod api;
mod compose;
mod handlers;
mod outbound;
mod store;

use serde::Serialize;
use tessera_sdk::serde_json::{Map, Value, json};
use tessera_sdk::{
    ApiError, Descriptor, Engine, Job, Operation, Permission, Request, Router, TenantInfo,
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

    fn router() -> Router {
        Router::new()
            .get("/api/v1/status", |ctx, req| tenancy::status(CODE, ctx, req))
            .doc(tenancy::status_operation())
            .get("/api/v1/folders", handlers::folders)
            .doc(
                Operation::new("The caller's four folders with their total and unread counts")
                    .answers::<Vec<api::Folder>>(200, "Inbox, sent, outbox and trash")
                    .error(404, "The caller has no mailbox (not provisioned)"),
            )
            .get("/api/v1/folders/{folder}/messages", handlers::list)
            .doc(
                Operation::new("A folder's messages, newest first, without bodies")
                    .description(
                        "With `unread`, a page stays full by reading on past the messages the \
                         filter leaves out, up to a bounded number per request: then it comes \
                         back short (perhaps empty) with `has_more`, and `meta.next_cursor` \
                         goes on from there.",
                    )
                    .path_parameter("folder", "`inbox`, `sent`, `outbox` or `trash`")
                    .query::<api::ListQuery>()
                    .page::<api::MessageSummary>()
                    .error(404, "No such folder, or the caller has no mailbox")
                    .invalid("Invalid `unread`, `cursor` or `limit`"),
            )
            .post("/api/v1/messages", compose::send)
            .doc(
                Operation::new("Send a message from the caller's address")
                    .description(
                        "Users of the tenant among the recipients get a copy in their inbox, \
                         unread, at once. Other addresses are external: the sender's copy waits \
                         in `outbox` with their status `queued`. When the host's mail transport \
                         is available as the message is sent (the host setting \
                         `mail-transport.available`: the operator configured an SMTP relay and \
                         lets the engine send), a job hands them to the relay, retried after 1, \
                         5 and 30 minutes; once accepted they are `sent` and the copy moves to \
                         `sent`, after the last failed attempt they are `failed` and it stays in \
                         `outbox` with `last_error`. When it is not available, no attempt is \
                         scheduled and they stay `queued`. With only internal recipients the \
                         copy goes straight to `sent`.\n\n\
                         Emits `mail.sent` `{message_id, sender_id, internal_recipient_ids, \
                         external_count}` and `mail.received` `{message_id, recipient_id, \
                         copy_id}` per internal recipient.",
                    )
                    .body::<api::MessageSend>()
                    .answers::<api::Message>(201, "The sender's copy")
                    .error(
                        400,
                        "An unknown query parameter, or a body that is not a JSON object",
                    )
                    .error(403, "Viewers and guests cannot send")
                    .error(404, "The caller has no mailbox (not provisioned)")
                    .invalid(
                        "`to` (`required`, `array`, `min:1`, `max:100`), `to.N` / `cc.N` \
                         (`email`, `string`), `cc` (`array`, `max:N`), `subject` (`string`, \
                         `single_line`, `max:998`), `body` (`string`, `max:1000000`)",
                    ),
            )
            .get("/api/v1/messages/{id}", handlers::show)
            .doc(
                Operation::new("Show the caller's copy of a message, with its body")
                    .path_parameter("id", "The copy's id")
                    .answers::<api::Message>(200, "The message")
                    .error(404, "No such copy in the caller's mailbox"),
            )
            .patch("/api/v1/messages/{id}", handlers::update)
            .doc(
                Operation::new(
                    "Mark the caller's copy read or unread, or move it to the trash or back",
                )
                .path_parameter("id", "The copy's id")
                .body::<api::MessageUpdate>()
                .answers::<api::Message>(200, "The message")
                .error(
                    400,
                    "An unknown query parameter, or a body that is not a JSON object",
                )
                .error(403, "Viewers and guests cannot change mail")
                .error(404, "No such copy in the caller's mailbox")
                .error(
                    409,
                    "The copy kept changing under concurrent changes; try again",
                )
                .invalid("`read` (`boolean`), `folder` (`string`, `in`)"),
            )
            .delete("/api/v1/messages/{id}", handlers::destroy)
            .doc(
                Operation::new(
                    "Move the caller's copy to the trash, or delete it for good when it is \
                     there already",
                )
                .path_parameter("id", "The copy's id")
                .no_content()
                .error(403, "Viewers and guests cannot change mail")
                .error(404, "No such copy in the caller's mailbox")
                .error(
                    409,
                    "The copy kept changing under concurrent changes; try again",
                ),
            )
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

/// Publishes an event in the call's unit of work: it exists if and only if the change it
/// announces commits, and a failure fails the call (nothing of it commits).
fn publish(event_type: &str, payload: &Value) -> Result<(), tessera_sdk::HostError> {
    events::publish(event_type, payload)
}

tessera_sdk::export_engine!(Mail);
