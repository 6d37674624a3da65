//! Documentation-only entries of the activity engine's routes (`/activity/api/v1/…`), merged
//! into the host's document by `openapi::document`. See `chat.rs` for the pattern: nothing here
//! is called; the types mirror the JSON the engine (`engines/activity`) reads and writes.

// Doc-only: the types are never constructed and the functions never called.
#![allow(dead_code)]

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, OpenApi, ToSchema};

use crate::http::envelope::{Data, DataWithMeta};
use crate::http::error::{ErrorBody, ValidationErrorBody};
use crate::http::paging::CursorMeta;

/// The activity engine's part of the OpenAPI document.
#[derive(OpenApi)]
#[openapi(
    paths(activity_status, activity_feed, activity_feed_unseen, activity_feed_seen),
    tags((name = "activity", description = "The activity engine: the tenant's activity feed")),
)]
pub struct Doc;

// ---------------------------------------------------------------------------------------------
// Schemas
// ---------------------------------------------------------------------------------------------

/// One item of the feed: one event of the bus (core's `entity.*`, chat's `message.*`,
/// `conversation.*`, `member.*`, and `note.*`, `file.*`, `folder.*`, `call.*`, `user.*`).
#[derive(Debug, Serialize, ToSchema)]
pub struct ActivityFeedItem {
    /// UUID v7 taken when the item was recorded: the feed's order (newest first).
    pub id: String,
    /// The bus event's id; an event delivered several times is one item.
    pub event_id: String,
    /// The event type, e.g. `message.created`, `entity.status_changed`.
    #[serde(rename = "type")]
    pub event_type: String,
    /// Who acted: the event's actor, else the payload's `actor_id`, else (chat's `message.*`
    /// and `conversation.*`) its `user_id`; null when none.
    #[schema(required = true)]
    pub actor_id: Option<String>,
    /// What the event is about: the payload's `entity_id`, else the id named after the event's
    /// noun (`message_id` for `message.*`, …), else the first of `conversation_id`, `folder_id`,
    /// `call_id`, `user_id`; null when none.
    #[schema(required = true)]
    pub entity_id: Option<String>,
    /// RFC 3339, when the event happened.
    pub occurred_at: String,
    /// The payload's identifiers only (`*_id` strings, `*_ids` string arrays, and core's
    /// `family`, `field`, `old_status`, `new_status`); never values or text.
    #[schema(value_type = Object)]
    pub data: BTreeMap<String, serde_json::Value>,
}

/// The caller's "since last seen" state.
#[derive(Debug, Serialize, ToSchema)]
pub struct ActivityUnseen {
    /// Items recorded after the caller's mark and not caused by the caller, at most 1000.
    pub count: u32,
    /// True when the real number may be higher than `count`.
    pub capped: bool,
    /// RFC 3339, when the caller last marked the feed seen (or was provisioned); null when the
    /// caller has no mark (everything counts).
    #[schema(required = true)]
    pub last_seen_at: Option<String>,
}

/// `POST /activity/api/v1/feed/seen`: the body is optional.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ActivitySeen {
    /// Everything up to and including this item is seen; absent or null: everything up to now.
    /// 422 `exists` when it is not an item of the feed, `string` when not a string.
    pub item_id: Option<String>,
}

/// The engine's provisioning state for the caller.
#[derive(Debug, Serialize, ToSchema)]
pub struct ActivityStatus {
    /// `activity`.
    pub engine: String,
    pub tenant_provisioned: bool,
    pub user_provisioned: bool,
}

/// The query of the feed.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ActivityFeedQuery {
    /// Only items caused by this user (422 `min:1`, `max:200`, `format`).
    pub actor_id: Option<String>,
    /// Only items about this entity (422 `min:1`, `max:200`, `format`).
    pub entity_id: Option<String>,
    /// Only items of this type: exact (`message.created`) or a prefix (`message.*`); `*` is
    /// every type (422 `format` otherwise).
    #[serde(rename = "type")]
    pub event_type: Option<String>,
    /// Opaque cursor from a previous page's `meta.next_cursor`.
    pub cursor: Option<String>,
    /// Page size; default 50, at most 100.
    #[param(minimum = 1, maximum = 100, default = 50)]
    pub limit: Option<u32>,
}

// ---------------------------------------------------------------------------------------------
// Routes
// ---------------------------------------------------------------------------------------------

/// The engine's provisioning state for the caller's tenant and user.
#[utoipa::path(
    get,
    path = "/activity/api/v1/status",
    operation_id = "activity_status",
    tag = "activity",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The state", body = Data<ActivityStatus>),
        (status = 400, description = "Unknown query parameter", body = ErrorBody),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
    )
)]
pub fn activity_status() {}

/// The tenant's activity feed, newest first.
///
/// Filters combine; a filtered page reads an index (by entity, actor or type), not the whole
/// feed. With several filters one request reads at most 2000 index entries, so a page may come
/// back short with `has_more` true: continue with `next_cursor`. Every member reads; guest
/// tokens get 403.
#[utoipa::path(
    get,
    path = "/activity/api/v1/feed",
    operation_id = "activity_feed",
    tag = "activity",
    params(ActivityFeedQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "A page of items", body = DataWithMeta<Vec<ActivityFeedItem>, CursorMeta>),
        (status = 400, description = "Unknown query parameter", body = ErrorBody),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 403, description = "Guest tokens do not see the tenant's feed", body = ErrorBody),
        (status = 422, description = "Invalid `actor_id`, `entity_id`, `type`, `cursor` or `limit`", body = ValidationErrorBody),
    )
)]
pub fn activity_feed() {}

/// How many items came since the caller last marked the feed seen.
///
/// The caller's own actions are not counted.
#[utoipa::path(
    get,
    path = "/activity/api/v1/feed/unseen",
    operation_id = "activity_feed_unseen",
    tag = "activity",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The count", body = Data<ActivityUnseen>),
        (status = 400, description = "Unknown query parameter", body = ErrorBody),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 403, description = "Guest tokens do not see the tenant's feed", body = ErrorBody),
    )
)]
pub fn activity_feed_unseen() {}

/// Mark the feed seen, up to now or up to an item.
///
/// The caller's own read state, so viewers may. The mark only moves forward: an item before
/// it changes nothing.
#[utoipa::path(
    post,
    path = "/activity/api/v1/feed/seen",
    operation_id = "activity_feed_seen",
    tag = "activity",
    request_body(content = Option<ActivitySeen>, description = "Optional"),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The count after the new mark", body = Data<ActivityUnseen>),
        (status = 400, description = "The body is not a JSON object", body = ErrorBody),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 403, description = "Guest tokens do not see the tenant's feed", body = ErrorBody),
        (status = 422, description = "Invalid `item_id`", body = ValidationErrorBody),
    )
)]
pub fn activity_feed_seen() {}
