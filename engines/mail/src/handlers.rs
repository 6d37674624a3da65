//! Reading and filing the caller's mail: the folders with their counts, a folder's messages
//! (newest first, cursor-paged, optionally only unread or read ones), one message, marking
//! read, moving between a copy's folder and the trash, and deleting. Only the caller's own
//! copies exist for them: anyone else's is a 404.

use tessera_sdk::serde_json::{Value, json};
use tessera_sdk::{
    ApiError, Context, CursorPage, HandlerResult, Request, Response, ValidationErrors, storage,
    time,
};

use crate::store::{self, Batch, Folder, IndexEntry, Message, SCAN_BATCH};
use crate::{object_body, view};

pub fn folders(ctx: &Context, req: &Request) -> HandlerResult {
    req.query(&[])?;
    store::mailbox_owner(ctx)?;
    let tallies = store::tallies(&ctx.user_id)?;
    let mut folders = Vec::with_capacity(Folder::ALL.len());
    for (folder, (total, unread)) in Folder::ALL.into_iter().zip(tallies) {
        folders.push(json!({
            "id": folder.as_str(),
            "name": folder.name(),
            "total": total,
            "unread": unread,
        }));
    }
    Ok(Response::ok(&folders))
}

pub fn list(ctx: &Context, req: &Request) -> HandlerResult {
    let query = req.query(&["unread", "cursor", "limit"])?;
    let unread = query.get_bool("unread")?;
    let page = CursorPage::from_query(query)?;
    store::mailbox_owner(ctx)?;
    let folder = Folder::parse(req.param("folder")).ok_or_else(|| ApiError::not_found("Folder"))?;
    // Newest first; with a filter, read on until the page is full, up to a bounded number of
    // index entries per request (then a short page with a cursor). An index entry whose copy
    // is gone or elsewhere (a move that raced another) is skipped.
    let prefix = store::folder_prefix(&ctx.user_id, folder);
    let found = storage::find_json::<IndexEntry, _, ApiError>(
        &prefix,
        page.after.as_deref(),
        true,
        page.fetch_limit() as usize,
        storage::LIST_SCAN_BOUND,
        SCAN_BATCH,
        |key, entry| {
            if unread.is_some_and(|unread| unread == entry.read) {
                return Ok(None);
            }
            let copy_id = &key[prefix.len()..];
            Ok(store::load_message(&ctx.user_id, copy_id)?
                .filter(|message| message.folder == folder)
                .map(|message| (key, message)))
        },
    )?;
    let (rows, meta) = page.finish_found(found.items, |(key, _)| key.clone(), found.stopped_after);
    let messages: Vec<Message> = rows.into_iter().map(|(_, message)| message).collect();
    Ok(Response::ok_with_meta(&messages, &meta))
}

pub fn show(ctx: &Context, req: &Request) -> HandlerResult {
    req.query(&[])?;
    let message = store::find_message(ctx, req.param("id"))?;
    let body = store::load_body(&message.message_id)?;
    Ok(Response::ok(&view(&message, &body)))
}

/// `{read?, folder?}`: `folder` is `trash` or the copy's own folder (`inbox` for a received
/// copy; `sent`, or `outbox` while its external delivery is pending or failed, for a sent one).
pub fn update(ctx: &Context, req: &Request) -> HandlerResult {
    req.query(&[])?;
    ctx.require_writer()?;
    let mut stored = store::find_stored(ctx, req.param("id"))?;
    let body = object_body(req)?;
    for _ in 0..store::CHANGE_ROUNDS {
        let mut message = stored.message.clone();
        let (read, folder) = update_fields(&body, &message)?;
        let changed = read.is_some_and(|read| read != message.read)
            || folder.is_some_and(|folder| folder != message.folder);
        if changed {
            message.read = read.unwrap_or(message.read);
            message.folder = folder.unwrap_or(message.folder);
            message.updated_at = time::now_rfc3339();
            let mut batch = Batch::new();
            batch.change_copy(&ctx.user_id, &stored, &message)?;
            if !batch.commit()? {
                // Changed by another call since it was read: decide again on what it is now.
                stored = store::find_stored(ctx, req.param("id"))?;
                continue;
            }
        }
        let body = store::load_body(&message.message_id)?;
        return Ok(Response::ok(&view(&message, &body)));
    }
    Err(store::kept_changing())
}

/// The `read` and `folder` an update body asks for, checked against the copy.
fn update_fields(
    body: &tessera_sdk::serde_json::Map<String, Value>,
    message: &Message,
) -> Result<(Option<bool>, Option<Folder>), ApiError> {
    let mut errors = ValidationErrors::new();
    let read = match body.get("read") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(read)) => Some(*read),
        Some(_) => {
            errors.add("read", "boolean");
            None
        }
    };
    let folder = match body.get("folder") {
        None | Some(Value::Null) => None,
        Some(Value::String(name)) => match Folder::parse(name) {
            Some(folder) if folder == Folder::Trash || folder == message.home() => Some(folder),
            _ => {
                errors.add("folder", "in");
                None
            }
        },
        Some(_) => {
            errors.add("folder", "string");
            None
        }
    };
    errors.into_result()?;
    Ok((read, folder))
}

/// Moves the copy to the trash, or deletes it for good when it is there already.
pub fn destroy(ctx: &Context, req: &Request) -> HandlerResult {
    req.query(&[])?;
    ctx.require_writer()?;
    for _ in 0..store::CHANGE_ROUNDS {
        let stored = store::find_stored(ctx, req.param("id"))?;
        let mut batch = Batch::new();
        let message_id = stored.message.message_id.clone();
        let removed = stored.message.folder == Folder::Trash;
        if removed {
            batch.remove_copy(&ctx.user_id, &stored);
        } else {
            let mut message = stored.message.clone();
            message.folder = Folder::Trash;
            message.updated_at = time::now_rfc3339();
            batch.change_copy(&ctx.user_id, &stored, &message)?;
        }
        if !batch.commit()? {
            continue;
        }
        if removed {
            store::release_bodies(&[message_id])?;
        }
        return Ok(Response::no_content());
    }
    Err(store::kept_changing())
}
