//! The notes endpoints. Access: a note is seen by its owner and the users it is shared with
//! (anyone else gets 404, as for a note that does not exist); writing needs a writer token
//! (owner or editor role, not a guest: 403 otherwise) and, on the note, `edit` to change it or
//! ownership to delete or share it (403 otherwise).

use serde::Serialize;
use tessera_sdk::serde_json::json;
use tessera_sdk::storage::{self, Update};
use tessera_sdk::{
    ApiError, Context, CursorPage, HandlerResult, Request, Response, ValidationErrors, tenancy,
    time,
};

use crate::input::{self, ListFilter, NoteFields};
use crate::store::{
    self, Batch, IndexEntry, Note, Permission, SCAN_BATCH, Share, load_note, load_share,
};
use crate::{max_note_length, new_ordered_id, object_body, publish};

/// Most users one note is shared with.
pub const MAX_SHARES: usize = 500;

/// A note as the API shows it: the record, its shares and the caller's permission.
#[derive(Serialize)]
struct NoteView<'a> {
    #[serde(flatten)]
    note: &'a Note,
    shares: Vec<Share>,
    permission: Permission,
}

impl<'a> NoteView<'a> {
    fn of(note: &'a Note, permission: Permission) -> Result<Self, ApiError> {
        Ok(Self {
            note,
            shares: store::shares_of(&note.id)?,
            permission,
        })
    }
}

/// A list item: the note without its body and shares.
#[derive(Serialize)]
struct NoteSummary {
    id: String,
    title: String,
    tags: Vec<String>,
    pinned: bool,
    owner_id: String,
    permission: Permission,
    created_at: String,
    updated_at: String,
}

impl NoteSummary {
    fn new(note: Note, permission: Permission) -> Self {
        Self {
            id: note.id,
            title: note.title,
            tags: note.tags,
            pinned: note.pinned,
            owner_id: note.owner_id,
            permission,
            created_at: note.created_at,
            updated_at: note.updated_at,
        }
    }
}

/// A share as the API shows it.
#[derive(Serialize)]
struct ShareView<'a> {
    note_id: &'a str,
    #[serde(flatten)]
    share: &'a Share,
}

fn note_not_found() -> ApiError {
    ApiError::not_found("Note")
}

/// The note `note_id` and the caller's permission on it; 404 when it does not exist or the
/// caller may not see it.
fn visible_note(ctx: &Context, note_id: &str) -> Result<(Note, Permission), ApiError> {
    if !input::plausible_note_id(note_id) {
        return Err(note_not_found());
    }
    let note = load_note(note_id)?.ok_or_else(note_not_found)?;
    let permission = store::permission_of(&note, &ctx.user_id)?.ok_or_else(note_not_found)?;
    Ok((note, permission))
}

/// The note of the path and the caller's permission, for a writer holding at least `needed` on
/// it (`Edit`: owner or edit share; `Owner`: the owner only; `Read`: any access).
fn writable_note(
    ctx: &Context,
    req: &Request,
    needed: Permission,
) -> Result<(Note, Permission), ApiError> {
    req.query(&[])?;
    ctx.require_writer()?;
    let (note, permission) = visible_note(ctx, req.param("id"))?;
    let allowed = match needed {
        Permission::Owner => permission == Permission::Owner,
        Permission::Edit => permission != Permission::Read,
        Permission::Read => true,
    };
    if allowed {
        Ok((note, permission))
    } else {
        Err(ApiError::Forbidden)
    }
}

/// `GET /api/v1/notes`: the caller's notes and those shared with them, newest first, filtered
/// by `tag`, `pinned` and `scope`; pages stay full by reading on past filtered-out entries, up
/// to a bounded number of entries per request ([`storage::LIST_SCAN_BOUND`], or the call's scan
/// budget): then the page comes back short (perhaps empty) with `has_more` and a cursor after
/// the last entry read.
pub fn list(ctx: &Context, req: &Request) -> HandlerResult {
    let query = req.query(&["tag", "pinned", "scope", "cursor", "limit"])?;
    let page = CursorPage::<String>::from_query(query)?;
    let filter = ListFilter::from_query(query)?;
    let prefix = store::index_prefix(&ctx.user_id);
    let after = page
        .after
        .as_ref()
        .map(|note_id| format!("{prefix}{note_id}"));
    let found = storage::find_json::<IndexEntry, _, ApiError>(
        &prefix,
        after.as_deref(),
        true,
        page.fetch_limit() as usize,
        storage::LIST_SCAN_BOUND,
        SCAN_BATCH,
        |key, entry| {
            if !filter.scope.admits(entry.permission) {
                return Ok(None);
            }
            // An entry whose note is gone (a share racing a deletion) is skipped.
            let Some(note) = load_note(&key[prefix.len()..])? else {
                return Ok(None);
            };
            Ok(filter
                .matches(&note)
                .then(|| NoteSummary::new(note, entry.permission)))
        },
    )?;
    let stopped_after = found
        .stopped_after
        .map(|key| key[prefix.len()..].to_owned());
    let (notes, meta) = page.finish_found(found.items, |note| note.id.clone(), stopped_after);
    Ok(Response::ok_with_meta(&notes, &meta))
}

/// `POST /api/v1/notes`: 201 with the new note, owned by the caller. Emits `note.created`.
pub fn create(ctx: &Context, req: &Request) -> HandlerResult {
    req.query(&[])?;
    ctx.require_writer()?;
    let fields = NoteFields::parse(&object_body(req)?, max_note_length()?, true)?;
    let now = time::now_rfc3339();
    let mut note = Note {
        id: new_ordered_id(),
        title: String::new(),
        body: String::new(),
        tags: Vec::new(),
        pinned: false,
        owner_id: ctx.user_id.clone(),
        created_at: now.clone(),
        updated_at: now,
    };
    fields.apply(&mut note);
    let mut batch = Batch::new();
    store::stage_new_note(&mut batch, &note)?;
    batch.commit()?;
    publish(
        "note.created",
        &json!({ "note_id": note.id, "owner_id": note.owner_id }),
    )?;
    Ok(Response::created(&NoteView {
        note: &note,
        shares: Vec::new(),
        permission: Permission::Owner,
    }))
}

/// `GET /api/v1/notes/{id}`.
pub fn show(ctx: &Context, req: &Request) -> HandlerResult {
    req.query(&[])?;
    let (note, permission) = visible_note(ctx, req.param("id"))?;
    Ok(Response::ok(&NoteView::of(&note, permission)?))
}

/// `PATCH /api/v1/notes/{id}`: any of title, body, tags and pinned, by the owner or an `edit`
/// share, applied to the current record with compare-and-swap (concurrent edits of other
/// fields are kept). Moves `updated_at` and emits `note.updated` unless nothing was sent.
pub fn update(ctx: &Context, req: &Request) -> HandlerResult {
    let (note, permission) = writable_note(ctx, req, Permission::Edit)?;
    let fields = NoteFields::parse(&object_body(req)?, max_note_length()?, false)?;
    if fields.is_empty() {
        return Ok(Response::ok(&NoteView::of(&note, permission)?));
    }
    let outcome = storage::update_json::<Note, _>(&store::note_key(&note.id), |current| {
        let Some(mut current) = current else {
            return Update::Keep;
        };
        fields.apply(&mut current);
        current.updated_at = time::now_rfc3339();
        Update::Set(current)
    })?;
    let Update::Set(updated) = outcome else {
        return Err(note_not_found());
    };
    publish(
        "note.updated",
        &json!({ "note_id": updated.id, "owner_id": updated.owner_id, "user_id": ctx.user_id }),
    )?;
    Ok(Response::ok(&NoteView::of(&updated, permission)?))
}

/// `DELETE /api/v1/notes/{id}` (the owner only): the note, its shares and every index entry
/// go in one batch. Emits `note.deleted`.
pub fn destroy(ctx: &Context, req: &Request) -> HandlerResult {
    let (note, _) = writable_note(ctx, req, Permission::Owner)?;
    let mut batch = Batch::new();
    store::stage_note_removal(&mut batch, &note.id, &note.owner_id)?;
    batch.commit()?;
    publish(
        "note.deleted",
        &json!({ "note_id": note.id, "owner_id": note.owner_id }),
    )?;
    Ok(Response::no_content())
}

/// `PUT /api/v1/notes/{id}/shares/{user_id}` (the owner only) `{permission: read|edit}`: 201
/// for a new share, 200 for an existing one. Emits `note.shared` when something changed.
pub fn share(ctx: &Context, req: &Request) -> HandlerResult {
    let (note, _) = writable_note(ctx, req, Permission::Owner)?;
    let fields = object_body(req)?;
    let user_id = req.param("user_id");
    let mut errors = ValidationErrors::new();
    let permission = input::share_permission(&fields, &mut errors);
    if user_id == note.owner_id {
        errors.add("user_id", "not_owner");
    } else if !input::plausible_user_id(user_id) || tenancy::user_record(user_id)?.is_none() {
        errors.add("user_id", "exists");
    }
    let existing = load_share(&note.id, user_id)?;
    if errors.is_empty() && existing.is_none() && store::shares_of(&note.id)?.len() >= MAX_SHARES {
        errors.add("shares", format!("max:{MAX_SHARES}"));
    }
    errors.into_result()?;
    let share = Share {
        user_id: user_id.to_owned(),
        // Validated above: without a permission `errors` was not empty.
        permission: permission.ok_or_else(|| ApiError::invalid("permission", "required"))?,
    };
    let view = ShareView {
        note_id: &note.id,
        share: &share,
    };
    if existing.as_ref() == Some(&share) {
        return Ok(Response::ok(&view));
    }
    let mut batch = Batch::new();
    store::stage_share(&mut batch, &note.id, &share)?;
    batch.commit()?;
    publish(
        "note.shared",
        &json!({
            "note_id": note.id,
            "owner_id": note.owner_id,
            "user_id": share.user_id,
            "permission": share.permission,
        }),
    )?;
    Ok(if existing.is_some() {
        Response::ok(&view)
    } else {
        Response::created(&view)
    })
}

/// `DELETE /api/v1/notes/{id}/shares/{user_id}`: the owner removes a share, or a user leaves a
/// note shared with them. Emits `note.unshared`.
pub fn unshare(ctx: &Context, req: &Request) -> HandlerResult {
    let (note, _) = writable_note(ctx, req, Permission::Read)?;
    let user_id = req.param("user_id");
    if note.owner_id != ctx.user_id && user_id != ctx.user_id {
        return Err(ApiError::Forbidden);
    }
    if !input::plausible_user_id(user_id) || load_share(&note.id, user_id)?.is_none() {
        return Err(ApiError::not_found("Share"));
    }
    let mut batch = Batch::new();
    store::stage_unshare(&mut batch, &note.id, user_id);
    batch.commit()?;
    publish(
        "note.unshared",
        &json!({ "note_id": note.id, "owner_id": note.owner_id, "user_id": user_id }),
    )?;
    Ok(Response::no_content())
}

#[cfg(test)]
mod tests {
    use tessera_sdk::Engine;
    use tessera_sdk::serde_json::{Value, to_value};

    use super::*;
    use crate::Notes;

    /// The property names of the documented schema `name`.
    fn documented(name: &str) -> Vec<String> {
        let document = Notes::router().openapi();
        let mut names: Vec<String> = document["components"]["schemas"][name]["properties"]
            .as_object()
            .unwrap_or_else(|| panic!("no schema {name}"))
            .keys()
            .cloned()
            .collect();
        names.sort();
        names
    }

    /// The keys of the JSON object `value` serialises to.
    fn keys(value: impl Serialize) -> Vec<String> {
        let Value::Object(object) = to_value(value).unwrap() else {
            panic!("not an object");
        };
        let mut names: Vec<String> = object.keys().cloned().collect();
        names.sort();
        names
    }

    #[test]
    fn answers_have_the_documented_shapes() {
        let note = Note {
            id: "0190e1f2-0000-7000-8000-000000000000".into(),
            title: "Title".into(),
            body: "Body".into(),
            tags: vec!["tag".into()],
            pinned: false,
            owner_id: "u1".into(),
            created_at: "2025-01-01T00:00:00Z".into(),
            updated_at: "2025-01-01T00:00:00Z".into(),
        };
        let share = Share {
            user_id: "u2".into(),
            permission: Permission::Edit,
        };
        let view = NoteView {
            note: &note,
            shares: vec![share.clone()],
            permission: Permission::Owner,
        };
        assert_eq!(keys(&view), documented("Note"));
        assert_eq!(keys(&share), documented("Share"));
        assert_eq!(
            keys(NoteSummary::new(note.clone(), Permission::Read)),
            documented("NoteSummary")
        );
        let share_view = ShareView {
            note_id: &note.id,
            share: &share,
        };
        assert_eq!(keys(&share_view), documented("NoteShare"));
    }
}
