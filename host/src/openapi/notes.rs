//! Documentation-only entries of the notes engine's routes (`/notes/api/v1/…`), merged into the
//! host's document by `openapi::document`. See `chat.rs` for the pattern: nothing here is called;
//! the types mirror the JSON the engine (`engines/notes`) reads and writes.

// Doc-only: the types are never constructed and the functions never called.
#![allow(dead_code)]

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, OpenApi, ToSchema};

use crate::http::envelope::{Data, DataWithMeta};
use crate::http::error::{ErrorBody, ValidationErrorBody};
use crate::http::paging::CursorMeta;

/// The notes engine's part of the OpenAPI document.
#[derive(OpenApi)]
#[openapi(
    paths(
        notes_list, notes_create, notes_show, notes_update, notes_delete, notes_share,
        notes_unshare,
    ),
    tags((name = "notes", description = "The notes engine: personal and shared notes")),
)]
pub struct Doc;

// ---------------------------------------------------------------------------------------------
// Schemas
// ---------------------------------------------------------------------------------------------

/// What a user may do with a note: `owner` (everything), `edit` (change title, body, tags and
/// pinned), `read`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum NotesPermission {
    Owner,
    Edit,
    Read,
}

/// The permission a share grants.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum NotesSharePermission {
    Read,
    Edit,
}

/// One user a note is shared with.
#[derive(Debug, Serialize, ToSchema)]
pub struct NotesShare {
    pub user_id: String,
    pub permission: NotesSharePermission,
}

/// A note.
#[derive(Debug, Serialize, ToSchema)]
pub struct NotesNote {
    /// UUID v7 (ids sort by creation).
    pub id: String,
    pub title: String,
    /// Markdown, stored and returned as sent.
    pub body: String,
    /// Distinct tags, in the order sent.
    pub tags: Vec<String>,
    pub pinned: bool,
    /// The user who created the note.
    pub owner_id: String,
    /// The users it is shared with, by user id.
    pub shares: Vec<NotesShare>,
    /// The caller's permission on this note.
    pub permission: NotesPermission,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339.
    pub updated_at: String,
}

/// A note as lists show it: without its body and shares (read those with
/// `GET /notes/api/v1/notes/{id}`).
#[derive(Debug, Serialize, ToSchema)]
pub struct NotesNoteSummary {
    pub id: String,
    pub title: String,
    pub tags: Vec<String>,
    pub pinned: bool,
    pub owner_id: String,
    /// The caller's permission on this note.
    pub permission: NotesPermission,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339.
    pub updated_at: String,
}

/// `POST /notes/api/v1/notes`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct NotesNoteCreate {
    /// Trimmed; 1 to 200 characters.
    #[schema(min_length = 1, max_length = 200)]
    pub title: String,
    /// Markdown; at most the tenant's `max_note_length` characters (100,000 by default).
    #[schema(nullable = false, default = "")]
    pub body: Option<String>,
    /// At most 20 distinct tags, each 1 to 50 characters of `a-z`, `0-9`, `-` and `_`.
    #[schema(nullable = false, max_items = 20)]
    pub tags: Option<Vec<String>>,
    #[schema(nullable = false, default = false)]
    pub pinned: Option<bool>,
}

/// `PATCH /notes/api/v1/notes/{id}`: any subset of the fields, with the rules of creation.
#[derive(Debug, Deserialize, ToSchema)]
pub struct NotesNoteUpdate {
    #[schema(nullable = false, min_length = 1, max_length = 200)]
    pub title: Option<String>,
    #[schema(nullable = false)]
    pub body: Option<String>,
    #[schema(nullable = false, max_items = 20)]
    pub tags: Option<Vec<String>>,
    #[schema(nullable = false)]
    pub pinned: Option<bool>,
}

/// `PUT /notes/api/v1/notes/{id}/shares/{user_id}`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct NotesShareWrite {
    pub permission: NotesSharePermission,
}

/// A share as `PUT …/shares/{user_id}` answers it.
#[derive(Debug, Serialize, ToSchema)]
pub struct NotesNoteShare {
    pub note_id: String,
    pub user_id: String,
    pub permission: NotesSharePermission,
}

/// Which notes a list shows.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum NotesScope {
    /// Owned and shared with the caller (the default).
    All,
    /// Owned by the caller.
    Mine,
    /// Shared with the caller.
    Shared,
}

/// The query of `GET /notes/api/v1/notes`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct NotesListQuery {
    /// Only notes with this tag.
    pub tag: Option<String>,
    /// Only pinned (`true`) or unpinned (`false`) notes.
    pub pinned: Option<bool>,
    #[param(inline)]
    pub scope: Option<NotesScope>,
    /// Opaque cursor from a previous page's `meta.next_cursor`.
    pub cursor: Option<String>,
    /// Page size; default 50, at most 100.
    #[param(minimum = 1, maximum = 100, default = 50)]
    pub limit: Option<u32>,
}

// ---------------------------------------------------------------------------------------------
// Notes
// ---------------------------------------------------------------------------------------------

/// List the caller's notes and the notes shared with them, newest first.
///
/// Filters combine: `tag`, `pinned` and `scope`. Items have no body and no shares.
#[utoipa::path(
    get,
    path = "/notes/api/v1/notes",
    operation_id = "notes_list",
    tag = "notes",
    params(NotesListQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "A page of notes", body = DataWithMeta<Vec<NotesNoteSummary>, CursorMeta>),
        (status = 400, description = "Unknown query parameter", body = ErrorBody),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 422, description = "Invalid `tag`, `pinned`, `scope`, `cursor` or `limit`", body = ValidationErrorBody),
    )
)]
pub fn notes_list() {}

/// Create a note, owned by the caller.
///
/// Emits `note.created` `{note_id, owner_id}`.
#[utoipa::path(
    post,
    path = "/notes/api/v1/notes",
    operation_id = "notes_create",
    tag = "notes",
    request_body = NotesNoteCreate,
    security(("bearer" = [])),
    responses(
        (status = 201, description = "The note", body = Data<NotesNote>),
        (status = 400, description = "The body is not a JSON object", body = ErrorBody),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 403, description = "Viewers and guests cannot create notes", body = ErrorBody),
        (status = 422, description = "Invalid `title`, `body`, `tags` / `tags.N` or `pinned`", body = ValidationErrorBody),
    )
)]
pub fn notes_create() {}

/// Show a note the caller owns or that is shared with them.
#[utoipa::path(
    get,
    path = "/notes/api/v1/notes/{id}",
    operation_id = "notes_show",
    tag = "notes",
    params(("id" = String, Path, description = "The note id")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The note", body = Data<NotesNote>),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 404, description = "No such note, or not shared with the caller", body = ErrorBody),
    )
)]
pub fn notes_show() {}

/// Change a note (its owner, or a user it is shared with for `edit`).
///
/// Any subset of `title`, `body`, `tags` and `pinned`; `updated_at` moves. Emits
/// `note.updated` `{note_id, owner_id, user_id}` (an empty body changes nothing).
#[utoipa::path(
    patch,
    path = "/notes/api/v1/notes/{id}",
    operation_id = "notes_update",
    tag = "notes",
    params(("id" = String, Path, description = "The note id")),
    request_body = NotesNoteUpdate,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The updated note", body = Data<NotesNote>),
        (status = 400, description = "The body is not a JSON object", body = ErrorBody),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 403, description = "A viewer or guest, or a `read` share", body = ErrorBody),
        (status = 404, description = "No such note, or not shared with the caller", body = ErrorBody),
        (status = 422, description = "Invalid fields, with the rules of creation", body = ValidationErrorBody),
    )
)]
pub fn notes_update() {}

/// Delete a note (its owner only), with all its shares.
///
/// Emits `note.deleted` `{note_id, owner_id}`.
#[utoipa::path(
    delete,
    path = "/notes/api/v1/notes/{id}",
    operation_id = "notes_delete",
    tag = "notes",
    params(("id" = String, Path, description = "The note id")),
    security(("bearer" = [])),
    responses(
        (status = 204, description = "Deleted"),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 403, description = "A viewer or guest, or a user the note is shared with", body = ErrorBody),
        (status = 404, description = "No such note, or not shared with the caller", body = ErrorBody),
    )
)]
pub fn notes_delete() {}

/// Share a note with a user of the tenant, or change the share's permission (the owner only).
///
/// Emits `note.shared` `{note_id, owner_id, user_id, permission}` when something changed.
#[utoipa::path(
    put,
    path = "/notes/api/v1/notes/{id}/shares/{user_id}",
    operation_id = "notes_share",
    tag = "notes",
    params(
        ("id" = String, Path, description = "The note id"),
        ("user_id" = String, Path, description = "A provisioned user of the tenant, not the owner"),
    ),
    request_body = NotesShareWrite,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The share existed (its permission is now the one sent)", body = Data<NotesNoteShare>),
        (status = 201, description = "The share is new", body = Data<NotesNoteShare>),
        (status = 400, description = "The body is not a JSON object", body = ErrorBody),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 403, description = "A viewer or guest, or not the note's owner", body = ErrorBody),
        (status = 404, description = "No such note, or not shared with the caller", body = ErrorBody),
        (status = 422, description = "`permission` (`required`, `in`), `user_id` (`exists`, `not_owner`), `shares` (`max:500`)", body = ValidationErrorBody),
    )
)]
pub fn notes_share() {}

/// Remove a share: the owner removes anyone's, a user removes their own (leaves the note).
///
/// Emits `note.unshared` `{note_id, owner_id, user_id}`.
#[utoipa::path(
    delete,
    path = "/notes/api/v1/notes/{id}/shares/{user_id}",
    operation_id = "notes_unshare",
    tag = "notes",
    params(
        ("id" = String, Path, description = "The note id"),
        ("user_id" = String, Path, description = "The user the note is shared with"),
    ),
    security(("bearer" = [])),
    responses(
        (status = 204, description = "Removed"),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 403, description = "A viewer or guest, or someone else's share", body = ErrorBody),
        (status = 404, description = "No such note or share", body = ErrorBody),
    )
)]
pub fn notes_unshare() {}
