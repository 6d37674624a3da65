//! The Notes engine: personal and shared notes (title, markdown body, tags, pinned) of a
//! tenant's users. A note belongs to the user who created it and is shared with other users of
//! the tenant for `read` or `edit`; lists show the caller's own notes and those shared with
//! them, newest first, filtered by tag, pin and scope, cursor-paged.
//!
//! Storage (tenant-scoped by the host):
//!
//! | key | value |
//! |---|---|
//! | `tenant`, `settings`, `users/<user_id>` | provisioning records (`settings.max_note_length`) |
//! | `notes/<note_id>` | the note (ids are UUID v7: keys sort by creation) |
//! | `shares/<note_id>/<user_id>` | a share: `{user_id, permission}` |
//! | `by-user/<user_id>/<note_id>` | the user's index entry: `{permission}` (owner, edit, read) |
//!
//! Events (identifiers only): `note.created`, `note.updated`, `note.deleted`, `note.shared`,
//! `note.unshared`.

mod handlers;
mod input;
mod store;

use tessera_sdk::serde_json::{Map, Value, json};
use tessera_sdk::{
    ApiError, Context, Descriptor, Engine, HostError, Request, Response, Router, TenantInfo,
    events, log, storage, tenancy, time,
};

/// The engine code, also its path prefix.
const CODE: &str = "notes";

/// The longest body, in characters, when the tenant's settings say nothing else.
const DEFAULT_MAX_NOTE_LENGTH: usize = 100_000;

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
            .get("/api/v1/notes", handlers::list)
            .post("/api/v1/notes", handlers::create)
            .get("/api/v1/notes/{id}", handlers::show)
            .patch("/api/v1/notes/{id}", handlers::update)
            .delete("/api/v1/notes/{id}", handlers::destroy)
            .put("/api/v1/notes/{id}/shares/{user_id}", handlers::share)
            .delete("/api/v1/notes/{id}/shares/{user_id}", handlers::unshare)
            .handle(ctx, request)
    }

    fn provision_tenant(tenant: &TenantInfo) -> Result<(), String> {
        storage::put_json_if_absent("settings", || {
            json!({
                "default_visibility": "private",
                "max_note_length": DEFAULT_MAX_NOTE_LENGTH,
                "created_at": time::now_rfc3339(),
            })
        })?;
        tenancy::record_tenant(tenant)?;
        Ok(())
    }

    /// Removes the notes the user owns (with their shares) and the user's shares of other
    /// notes, then the user's record.
    fn deprovision_user(_tenant_id: &str, user_id: &str) -> Result<(), String> {
        store::remove_user_notes(user_id)?;
        tenancy::forget_user(user_id)?;
        Ok(())
    }
}

/// The tenant's `settings.max_note_length`, or the default.
fn max_note_length() -> Result<usize, HostError> {
    let settings: Option<Value> = storage::get_json("settings")?;
    Ok(settings
        .and_then(|settings| settings["max_note_length"].as_u64())
        .and_then(|length| usize::try_from(length).ok())
        .unwrap_or(DEFAULT_MAX_NOTE_LENGTH))
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

/// Publishes an event after its change committed. The change stands either way, so a failed
/// publication is logged rather than turned into an error answer.
fn publish(event_type: &str, payload: &Value) {
    if let Err(error) = events::publish(event_type, payload) {
        log::error(format!("publishing {event_type} failed: {error}"));
    }
}

/// A new identifier that sorts by creation time (UUID v7), so storage keys built from it list
/// in the order things happened.
fn new_ordered_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

tessera_sdk::export_engine!(Notes);
