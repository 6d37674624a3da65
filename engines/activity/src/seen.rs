//! "Since last seen": each user's mark in the feed (`users/<user_id>/seen`), how many items
//! came after it, and moving it.
//!
//! - The mark is a position among item ids (UUID v7, in arrival order): "now" is a fresh v7 id,
//!   so every item recorded later counts. It only moves forward.
//! - `count` is the number of items after the mark not caused by the caller (their own actions
//!   are never news to them), at most [`MAX_COUNT`]; `capped` says the real number may be
//!   higher (more than [`MAX_COUNT`], or more than [`COUNT_BUDGET`] items to read).
//! - A user without a mark (never provisioned, or deprovisioned) counts from the start of the
//!   feed; provisioning a user sets the mark to "now".
//! - Marking is the caller's own read state, not tenant data: viewers may do it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tessera_sdk::serde_json::Value;
use tessera_sdk::storage::{self, Update};
use tessera_sdk::{ApiError, Context, HandlerResult, HostError, Request, Response, tenancy, time};

use crate::items::{ITEMS_PREFIX, is_identifier, item_key};
use crate::require_reader;

/// The highest `count` reported.
pub const MAX_COUNT: usize = 1000;
/// Most items one count reads.
const COUNT_BUDGET: usize = 5000;
/// Items read per storage call while counting.
const COUNT_BATCH: u32 = 500;

/// The caller's "since last seen" state.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(transform = tessera_sdk::openapi::all_required)]
pub struct Unseen {
    /// Items recorded after the caller's mark and not caused by the caller, at most 1000.
    #[schemars(range(max = MAX_COUNT))]
    pub count: usize,
    /// True when the real number may be higher than `count`.
    pub capped: bool,
    /// RFC 3339, when the caller last marked the feed seen (or was provisioned); null when the
    /// caller has no mark (everything counts).
    pub last_seen_at: Option<String>,
}

/// A user's mark.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct SeenMark {
    /// Items with a greater id came after it.
    position: String,
    /// When the user last moved it (RFC 3339).
    last_seen_at: String,
}

/// Only what counting needs of an item.
#[derive(Deserialize)]
struct ItemActor {
    actor_id: Option<String>,
}

fn mark_key(user_id: &str) -> String {
    format!("{}/seen", tenancy::user_key(user_id))
}

/// Sets a new user's mark to now (idempotent: an existing mark stays).
pub fn start_mark(user_id: &str) -> Result<(), HostError> {
    storage::put_json_if_absent(&mark_key(user_id), || SeenMark {
        position: uuid::Uuid::now_v7().to_string(),
        last_seen_at: time::now_rfc3339(),
    })
    .map(drop)
}

/// `GET /api/v1/feed/unseen` → `{count, capped, last_seen_at}`.
pub fn unseen(ctx: &Context, req: &Request) -> HandlerResult {
    require_reader(ctx)?;
    req.query(&[])?;
    Ok(Response::ok(&summary(&ctx.user_id)?))
}

/// `POST /api/v1/feed/seen` with no body (or `{}`): everything up to now is seen; with
/// `{"item_id": …}`: everything up to and including that item. Answers like `unseen`.
pub fn mark_seen(ctx: &Context, req: &Request) -> HandlerResult {
    require_reader(ctx)?;
    req.query(&[])?;
    let position = match requested_item(req)? {
        Some(item_id) => item_id,
        None => uuid::Uuid::now_v7().to_string(),
    };
    let now = time::now_rfc3339();
    storage::update_json::<SeenMark, _>(&mark_key(&ctx.user_id), |current| match current {
        Some(current) if current.position >= position => Update::Keep,
        _ => Update::Set(SeenMark {
            position: position.clone(),
            last_seen_at: now.clone(),
        }),
    })?;
    Ok(Response::ok(&summary(&ctx.user_id)?))
}

/// The `item_id` of the body, checked to be an item of the feed; `None` for an empty body.
fn requested_item(req: &Request) -> Result<Option<String>, ApiError> {
    if req.body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let body = match req.json::<Value>()? {
        Value::Object(body) => body,
        _ => {
            return Err(ApiError::BadRequest(
                "The request body must be a JSON object.".into(),
            ));
        }
    };
    match body.get("item_id") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(item_id))
            if is_identifier(item_id) && storage::exists(&item_key(item_id))? =>
        {
            Ok(Some(item_id.clone()))
        }
        Some(Value::String(_)) => Err(ApiError::invalid("item_id", "exists")),
        Some(_) => Err(ApiError::invalid("item_id", "string")),
    }
}

fn summary(user_id: &str) -> Result<Unseen, HostError> {
    let mark = storage::get_json::<SeenMark>(&mark_key(user_id))?;
    let (count, capped) = count_after(mark.as_ref().map(|mark| mark.position.as_str()), user_id)?;
    Ok(Unseen {
        count,
        capped,
        last_seen_at: mark.map(|mark| mark.last_seen_at),
    })
}

/// Items after `position` (all when `None`) not caused by `user_id`: `(count, capped)`.
fn count_after(position: Option<&str>, user_id: &str) -> Result<(usize, bool), HostError> {
    let mut after = position.map(item_key);
    let mut count = 0;
    let mut scanned = 0;
    loop {
        let scan =
            storage::scan_json::<ItemActor>(ITEMS_PREFIX, after.as_deref(), COUNT_BATCH, false)?;
        let exhausted = scan.exhausted;
        for (key, item) in scan.entries {
            scanned += 1;
            if item.actor_id.as_deref() != Some(user_id) {
                if count == MAX_COUNT {
                    return Ok((count, true));
                }
                count += 1;
            }
            after = Some(key);
        }
        if exhausted {
            return Ok((count, false));
        }
        if scanned >= COUNT_BUDGET || storage::scan_budget_left() == 0 {
            return Ok((count, true));
        }
    }
}
