//! The folder endpoints. A folder of the caller's drives is found by id (`root`, `home` for
//! the caller's home, or a folder's UUID); any other is 404. The root and home folders cannot
//! be renamed, moved or deleted (403), folders move only within their drive, and deleting a
//! folder deletes everything in it.

use serde::Deserialize;
use tessera_sdk::serde_json::json;
use tessera_sdk::{
    ApiError, Context, CursorPage, HandlerResult, Request, Response, ValidationErrors, storage,
    time,
};

use crate::store::{self, Folder, Item, Kind, Node, ROOT_ID};
use crate::{
    input, name_taken, new_ordered_id, publish, require_may_change, target_folder, visible,
};

/// Longest position a cursor may carry (the index key after the folder's prefix).
const MAX_CURSOR_BYTES: usize = 960;

/// The body of a create (`parent_id` defaults to `root`) or a patch.
#[derive(Deserialize)]
struct FolderFields {
    name: Option<String>,
    parent_id: Option<String>,
}

fn visible_folder(ctx: &Context, req: &Request) -> Result<Folder, ApiError> {
    visible(ctx, req.param("id"), "Folder")
}

/// The folder of the path, for a writer allowed to change it: not the root or a home folder.
fn changeable_folder(ctx: &Context, req: &Request) -> Result<Folder, ApiError> {
    req.query(&[])?;
    let folder = visible_folder(ctx, req)?;
    ctx.require_writer()?;
    if folder.parent_id.is_none() {
        return Err(ApiError::Forbidden);
    }
    require_may_change(ctx, &folder)?;
    Ok(folder)
}

/// `POST /api/v1/folders` `{name, parent_id?}`: 201 with the folder. Emits `folder.created`
/// `{folder_id, parent_id, actor_id}`.
pub fn create(ctx: &Context, req: &Request) -> HandlerResult {
    req.query(&[])?;
    ctx.require_writer()?;
    let body: FolderFields = req.json_object()?;
    let mut errors = ValidationErrors::new();
    let name = input::name(body.name.as_deref(), "name", &mut errors);
    let parent_id = body.parent_id.as_deref().unwrap_or(ROOT_ID);
    let parent = target_folder(ctx, parent_id, "parent_id", &mut errors)?;
    let (Some(name), Some(parent)) = (name, parent) else {
        return Err(errors.into());
    };
    let now = time::now_rfc3339();
    let folder = Folder {
        id: new_ordered_id(),
        name,
        parent_id: Some(parent.id.clone()),
        owner_id: parent.owner_id.clone(),
        created_by: Some(ctx.user_id.clone()),
        created_at: now.clone(),
        updated_at: now,
    };
    let claim = store::claim_name(&parent.id, Kind::Folder, &folder.name, &folder.id)?
        .ok_or_else(name_taken)?;
    let record = storage::json_entry(folder.key(), &folder)?;
    storage::write_batch(&[record, claim.entry()], &[], &[])?;
    publish(
        folder.owner_id.is_none(),
        "folder.created",
        ctx,
        json!({ "folder_id": folder.id, "parent_id": parent.id }),
    )?;
    Ok(Response::created(&Item::Folder(folder)))
}

/// `GET /api/v1/folders/{id}`.
pub fn show(ctx: &Context, req: &Request) -> HandlerResult {
    req.query(&[])?;
    Ok(Response::ok(&Item::Folder(visible_folder(ctx, req)?)))
}

/// `GET /api/v1/folders/{id}/children?cursor=&limit=`: folders first, then files, each by name
/// without regard to case.
pub fn children(ctx: &Context, req: &Request) -> HandlerResult {
    let page = CursorPage::<String>::from_query(req.query(&["cursor", "limit"])?)?;
    if page
        .after
        .as_ref()
        .is_some_and(|after| after.len() > MAX_CURSOR_BYTES)
    {
        return Err(ApiError::invalid("cursor", "invalid"));
    }
    let folder = visible_folder(ctx, req)?;
    let (items, meta) = store::children(&folder.id, &page)?;
    Ok(Response::ok_with_meta(&items, &meta))
}

/// `PATCH /api/v1/folders/{id}` `{name?, parent_id?}`: renames and/or moves the folder within
/// its drive (not into itself or a folder inside it). Emits `folder.updated` `{folder_id,
/// parent_id, actor_id}` unless nothing changed.
pub fn update(ctx: &Context, req: &Request) -> HandlerResult {
    let folder = changeable_folder(ctx, req)?;
    let body: FolderFields = req.json_object()?;
    let mut errors = ValidationErrors::new();
    let mut updated = folder.clone();
    if let Some(name) = body.name.as_deref()
        && let Some(name) = input::name(Some(name), "name", &mut errors)
    {
        updated.name = name;
    }
    if let Some(parent_id) = body.parent_id.as_deref()
        && let Some(parent) = target_folder(ctx, parent_id, "parent_id", &mut errors)?
    {
        if parent.owner_id != folder.owner_id {
            errors.add("parent_id", "same_drive");
        } else if store::is_within(&parent.id, &folder.id)? {
            errors.add("parent_id", "not_descendant");
        } else {
            updated.parent_id = Some(parent.id);
        }
    }
    errors.into_result()?;
    if updated == folder {
        return Ok(Response::ok(&Item::Folder(folder)));
    }
    updated.updated_at = time::now_rfc3339();
    if !store::relocate(&folder, &updated)? {
        return Err(name_taken());
    }
    publish(
        updated.owner_id.is_none(),
        "folder.updated",
        ctx,
        json!({ "folder_id": updated.id, "parent_id": updated.parent_id }),
    )?;
    Ok(Response::ok(&Item::Folder(updated)))
}

/// `DELETE /api/v1/folders/{id}`: the folder with every folder and file in it (their bytes
/// too). In the shared drive, a folder that is not empty needs the owner role. Emits
/// `folder.deleted` `{folder_id, parent_id, size_bytes, actor_id}` (the bytes freed).
pub fn destroy(ctx: &Context, req: &Request) -> HandlerResult {
    let folder = changeable_folder(ctx, req)?;
    if folder.owner_id.is_none() && !ctx.is_owner() && store::has_children(&folder.id)? {
        return Err(ApiError::Forbidden);
    }
    let freed = store::remove_tree(&folder)?;
    publish(
        folder.owner_id.is_none(),
        "folder.deleted",
        ctx,
        json!({
            "folder_id": folder.id,
            "parent_id": folder.parent_id,
            "size_bytes": freed,
        }),
    )?;
    Ok(Response::no_content())
}
