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
//! | `removals/<user_id>` | a pending removal of the user: `{removal_id}` (`tenancy`) |
//!
//! Removing a user takes as many calls as their notes need: a first chunk in
//! `deprovision-user`, the rest in jobs `{remove_user, removal_id}` while the marker
//! `removals/<user_id>` holds that removal (`tenancy::remove_user_in_chunks`). Provisioning the
//! user again cancels it; what it had not reached yet stays theirs.
//!
//! Events (identifiers only): `note.created`, `note.updated`, `note.deleted`, `note.shared`,
//! `note.unshared`.

mod api;
mod handlers;
mod input;
#[cfg(test)]
mod route_tests;
mod store;

use tessera_sdk::serde_json::{Map, Value, json};
use tessera_sdk::tenancy::RemovalJob;
use tessera_sdk::{
    ApiError, Descriptor, Engine, HostError, Job, Operation, Request, Router, TenantInfo, UserInfo,
    events, storage, tenancy, time,
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

    fn router() -> Router {
        Router::new()
            .get("/api/v1/status", |ctx, req| tenancy::status(CODE, ctx, req))
            .doc(tenancy::status_operation())
            .get("/api/v1/notes", handlers::list)
            .doc(
                Operation::new(
                    "List the caller's notes and the notes shared with them, newest first",
                )
                .description(
                    "Filters combine: `tag`, `pinned` and `scope`. Items have no body and no \
                     shares. A page stays full by reading on past the notes the filters leave \
                     out, up to a bounded number per request: then it comes back short \
                     (perhaps empty) with `has_more`, and `meta.next_cursor` goes on from there.",
                )
                .query::<api::ListQuery>()
                .page::<api::NoteSummary>()
                .invalid("Invalid `tag`, `pinned`, `scope`, `cursor` or `limit`"),
            )
            .post("/api/v1/notes", handlers::create)
            .doc(
                Operation::new("Create a note, owned by the caller")
                    .description("Emits `note.created` `{note_id, owner_id}`.")
                    .body::<api::NoteCreate>()
                    .created::<api::Note>()
                    .error(
                        400,
                        "An unknown query parameter, or a body that is not a JSON object",
                    )
                    .error(403, "Viewers and guests cannot create notes")
                    .invalid(
                        "Invalid `title` (`required`, `string`, `max:200`), `body` (`string`, \
                         `max:N`), `tags` (`array`, `max:20`), `tags.N` (`string`, `distinct`, \
                         `min:1`, `max:50`, `regex`) or `pinned` (`boolean`)",
                    ),
            )
            .get("/api/v1/notes/{id}", handlers::show)
            .doc(
                Operation::new("Show a note the caller owns or that is shared with them")
                    .path_parameter("id", "The note id")
                    .ok::<api::Note>()
                    .error(404, "No such note, or not shared with the caller"),
            )
            .patch("/api/v1/notes/{id}", handlers::update)
            .doc(
                Operation::new("Change a note (its owner, or a user it is shared with for `edit`)")
                    .description(
                        "Any subset of `title`, `body`, `tags` and `pinned`; `updated_at` moves. \
                         Emits `note.updated` `{note_id, owner_id, user_id}` (an empty body \
                         changes nothing).",
                    )
                    .path_parameter("id", "The note id")
                    .body::<api::NoteUpdate>()
                    .ok::<api::Note>()
                    .error(
                        400,
                        "An unknown query parameter, or a body that is not a JSON object",
                    )
                    .error(
                        403,
                        "A viewer or guest, or a user the note is shared with for `read`",
                    )
                    .error(404, "No such note, or not shared with the caller")
                    .invalid(
                        "Invalid fields, with the rules of creation (`title` may not be `null`)",
                    ),
            )
            .delete("/api/v1/notes/{id}", handlers::destroy)
            .doc(
                Operation::new("Delete a note (its owner only), with all its shares")
                    .description("Emits `note.deleted` `{note_id, owner_id}`.")
                    .path_parameter("id", "The note id")
                    .no_content()
                    .error(403, "A viewer or guest, or a user the note is shared with")
                    .error(404, "No such note, or not shared with the caller"),
            )
            .put("/api/v1/notes/{id}/shares/{user_id}", handlers::share)
            .doc(
                Operation::new(
                    "Share a note with a user of the tenant, or change the share's permission \
                     (the owner only)",
                )
                .description(
                    "Emits `note.shared` `{note_id, owner_id, user_id, permission}` when \
                     something changed.",
                )
                .path_parameter("id", "The note id")
                .path_parameter("user_id", "A provisioned user of the tenant, not the owner")
                .body::<api::ShareWrite>()
                .answers::<api::NoteShare>(
                    200,
                    "The share existed (its permission is now the one sent)",
                )
                .answers::<api::NoteShare>(201, "The share is new")
                .error(
                    400,
                    "An unknown query parameter, or a body that is not a JSON object",
                )
                .error(403, "A viewer or guest, or not the note's owner")
                .error(404, "No such note, or not shared with the caller")
                .invalid(
                    "`permission` (`required`, `string`, `in`), `user_id` (`not_owner`, \
                     `exists`), `shares` (`max:500`: a note is shared with at most 500 users)",
                ),
            )
            .delete("/api/v1/notes/{id}/shares/{user_id}", handlers::unshare)
            .doc(
                Operation::new(
                    "Remove a share: the owner removes anyone's, a user removes their own \
                     (leaves the note)",
                )
                .description("Emits `note.unshared` `{note_id, owner_id, user_id}`.")
                .path_parameter("id", "The note id")
                .path_parameter("user_id", "The user the note is shared with")
                .no_content()
                .error(
                    403,
                    "A viewer or guest (leaving a note needs a writer token too), or someone \
                     else's share",
                )
                .error(404, "No such note or share"),
            )
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

    /// Cancels a pending removal of the user first (what it had not reached yet stays theirs),
    /// then records the user.
    fn provision_user(user: &UserInfo) -> Result<(), String> {
        tenancy::cancel_removal(&user.user_id)?;
        tenancy::record_user(user)?;
        Ok(())
    }

    /// Removes the notes the user owns (with their shares) and the user's shares of other
    /// notes, and the user's record: a first chunk now, the rest in jobs when there is more
    /// than one call may scan (`tenancy::remove_user_in_chunks`).
    fn deprovision_user(_tenant_id: &str, user_id: &str) -> Result<(), String> {
        tenancy::remove_user_in_chunks(user_id, |chunk, _| store::remove_user_notes(chunk))?;
        Ok(())
    }

    /// The jobs of a user's removal (`{remove_user, removal_id}`), the engine's only jobs.
    fn run_job(job: &Job) -> Result<(), String> {
        let Some(removal) = RemovalJob::of(job) else {
            return Err(format!("job {}: not a job of the notes engine", job.id));
        };
        tenancy::continue_removal(&removal, |chunk, _| store::remove_user_notes(chunk))?;
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

/// Publishes an event in the call's unit of work: it exists if and only if the change it
/// announces commits, and a failure fails the call (nothing of it commits).
fn publish(event_type: &str, payload: &Value) -> Result<(), HostError> {
    events::publish(event_type, payload)
}

/// A new identifier that sorts by creation time (UUID v7), so storage keys built from it list
/// in the order things happened.
fn new_ordered_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

tessera_sdk::export_engine!(Notes);
