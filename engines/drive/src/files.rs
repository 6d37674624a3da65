//! The file endpoints: upload (the raw request body, its `Content-Type`), metadata, download,
//! rename / move, delete. A file of another tenant or of someone else's home drive is 404.

use serde::Deserialize;
use tessera_sdk::blobs::{self, Put};
use tessera_sdk::serde_json::json;
use tessera_sdk::storage::Committed;
use tessera_sdk::{
    ApiError, Context, HandlerResult, Request, Response, ValidationErrors, storage, time,
};

use crate::store::{self, File, Folder, Item, Kind, Node};
use crate::{
    Limits, input, name_taken, new_ordered_id, publish, require_may_change, target_folder, visible,
};

/// The body of a patch.
#[derive(Deserialize)]
struct FileFields {
    name: Option<String>,
    folder_id: Option<String>,
}

fn visible_file(ctx: &Context, req: &Request) -> Result<File, ApiError> {
    req.query(&[])?;
    visible(ctx, req.param("id"), "File")
}

/// `POST /api/v1/folders/{id}/files?name=<name>`: the body is the file, its `Content-Type` the
/// file's (default `application/octet-stream`). 201 with the file; 413 beyond the upload limit,
/// 422 `{content: [quota]}` beyond the tenant's quota (nothing stored either way), 409 for a
/// name the folder holds. Emits `file.uploaded` `{file_id, folder_id, size_bytes, actor_id}`.
pub fn upload(ctx: &Context, req: &Request) -> HandlerResult {
    let query = req.query(&["name"])?;
    ctx.require_writer()?;
    let folder: Folder = visible(ctx, req.param("id"), "Folder")?;
    let limits = Limits::from_settings();
    let size_bytes = u64::try_from(req.body.len()).unwrap_or(u64::MAX);
    if size_bytes > limits.max_upload_bytes {
        let message = format!(
            "The file is too large: uploads are at most {} bytes.",
            limits.max_upload_bytes
        );
        return Err(ApiError::PayloadTooLarge(message));
    }
    let mut errors = ValidationErrors::new();
    let name = input::name(query.get("name"), "name", &mut errors);
    let content_type = input::content_type(req.header("content-type"), &mut errors);
    let (Some(name), Some(content_type)) = (name, content_type) else {
        return Err(errors.into());
    };
    let now = time::now_rfc3339();
    let file = File {
        id: new_ordered_id(),
        name,
        folder_id: folder.id.clone(),
        owner_id: folder.owner_id.clone(),
        content_type,
        size_bytes,
        created_by: ctx.user_id.clone(),
        created_at: now.clone(),
        updated_at: now,
    };
    // What the upload commits is expected to find its folder as it is now, and its name as
    // free as it is now.
    let folder_key = folder.key();
    let folder_record = storage::get(&folder_key)?.ok_or_else(|| ApiError::not_found("Folder"))?;
    let name =
        store::free_name(&folder.id, Kind::File, &file.name, &file.id)?.ok_or_else(name_taken)?;
    let record = [storage::json_entry(file.key(), &file)?];
    let blob_key = store::blob_key(&file.id);
    if blobs::put(&blob_key, &req.body, Some(limits.quota_bytes), &record)? == Put::OverQuota {
        return Err(ApiError::invalid("content", "quota"));
    }
    publish(
        file.owner_id.is_none(),
        "file.uploaded",
        ctx,
        json!({ "file_id": file.id, "folder_id": file.folder_id, "size_bytes": file.size_bytes }),
    )?;
    // The bytes, the file's record, its name and its event commit together, now, and only
    // if the folder is unchanged (a deletion racing the upload leaves no file in it), no item
    // took the name meanwhile and the blobs still fit the quota (another upload may have taken
    // the room). Otherwise nothing of them is written: the error answer drops them.
    let mut unchanged = storage::Transaction::new();
    unchanged.expect(folder_key.clone(), Some(&folder_record));
    name.claim_in(&mut unchanged);
    if let Committed::Conflict = unchanged.commit()? {
        return Err(match storage::get(&folder_key)? {
            None => ApiError::not_found("Folder"),
            Some(now) if now != folder_record => {
                ApiError::Conflict("The folder changed during the upload; try again.".into())
            }
            Some(_) if !name.unchanged()? => name_taken(),
            Some(_) => ApiError::invalid("content", "quota"),
        });
    }
    Ok(Response::created(&Item::File(file)))
}

/// `GET /api/v1/files/{id}`: the metadata.
pub fn show(ctx: &Context, req: &Request) -> HandlerResult {
    Ok(Response::ok(&Item::File(visible_file(ctx, req)?)))
}

/// `GET /api/v1/files/{id}/content`: the bytes, with the file's content type, as an attachment
/// (never rendered inline by browsers: `nosniff` and a sandboxing CSP).
pub fn download(ctx: &Context, req: &Request) -> HandlerResult {
    let file = visible_file(ctx, req)?;
    let content =
        blobs::get(&store::blob_key(&file.id))?.ok_or_else(|| ApiError::not_found("File"))?;
    Ok(Response::new(200)
        .with_header("content-type", file.content_type.as_str())
        .with_header(
            "content-disposition",
            input::content_disposition(&file.name),
        )
        .with_header("x-content-type-options", "nosniff")
        .with_header("content-security-policy", "default-src 'none'; sandbox")
        .with_body(content))
}

/// `PATCH /api/v1/files/{id}` `{name?, folder_id?}`: renames and/or moves the file, into any
/// folder the caller sees (into a home drive it becomes private, out of it shared). Emits
/// `file.updated` `{file_id, folder_id, actor_id}` unless nothing changed.
pub fn update(ctx: &Context, req: &Request) -> HandlerResult {
    let file = visible_file(ctx, req)?;
    ctx.require_writer()?;
    let body: FileFields = req.json_object()?;
    require_may_change(ctx, &file)?;
    let mut errors = ValidationErrors::new();
    let mut updated = file.clone();
    if let Some(name) = body.name.as_deref()
        && let Some(name) = input::name(Some(name), "name", &mut errors)
    {
        updated.name = name;
    }
    if let Some(folder_id) = body.folder_id.as_deref()
        && let Some(folder) = target_folder(ctx, folder_id, "folder_id", &mut errors)?
    {
        updated.folder_id = folder.id;
        updated.owner_id = folder.owner_id;
    }
    errors.into_result()?;
    if updated == file {
        return Ok(Response::ok(&Item::File(file)));
    }
    updated.updated_at = time::now_rfc3339();
    if !store::relocate(&file, &updated)? {
        return Err(name_taken());
    }
    publish(
        file.owner_id.is_none() || updated.owner_id.is_none(),
        "file.updated",
        ctx,
        json!({ "file_id": updated.id, "folder_id": updated.folder_id }),
    )?;
    Ok(Response::ok(&Item::File(updated)))
}

/// `DELETE /api/v1/files/{id}`: the bytes and the metadata in one transaction; the quota is
/// freed at once. Emits `file.deleted` `{file_id, folder_id, size_bytes, actor_id}`.
pub fn destroy(ctx: &Context, req: &Request) -> HandlerResult {
    let file = visible_file(ctx, req)?;
    require_may_change(ctx, &file)?;
    store::remove_file(&file)?;
    publish(
        file.owner_id.is_none(),
        "file.deleted",
        ctx,
        json!({ "file_id": file.id, "folder_id": file.folder_id, "size_bytes": file.size_bytes }),
    )?;
    Ok(Response::no_content())
}
