//! Documentation-only entries of the voip engine's routes (`/voip/api/v1/…`), merged into the
//! host's document by `openapi::document`. See `chat.rs` for the pattern: nothing here is called.
//! They mirror the JSON the engine (`engines/voip`) reads and writes.

// Doc-only: the types are never constructed and the functions never called.
#![allow(dead_code)]

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, OpenApi, ToSchema};

use crate::http::envelope::{Data, DataWithMeta};
use crate::http::error::{ErrorBody, ValidationErrorBody};
use crate::http::paging::CursorMeta;

/// The voip engine's part of the OpenAPI document.
#[derive(OpenApi)]
#[openapi(
    paths(
        voip_calls_list, voip_calls_create, voip_calls_show, voip_calls_join, voip_calls_leave,
        voip_calls_end,
    ),
    tags((name = "voip", description = "The voip engine: call records")),
)]
pub struct Doc;

// ---------------------------------------------------------------------------------------------
// Schemas
// ---------------------------------------------------------------------------------------------

/// Audio or video.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum VoipCallKind {
    Audio,
    Video,
}

/// Where a call is: `ringing` until the first invited participant joins, `active` until it
/// ends; `ended` once answered and over, `missed` when it ended unanswered.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum VoipCallStatus {
    Ringing,
    Active,
    Ended,
    Missed,
}

/// Where a participant is in a call.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum VoipParticipantState {
    Joined,
    Invited,
    Left,
}

/// A participant of a call.
#[derive(Debug, Serialize, ToSchema)]
pub struct VoipParticipant {
    pub user_id: String,
    pub state: VoipParticipantState,
    /// RFC 3339 time of the participant's last join; null until they join.
    #[schema(required = true)]
    pub joined_at: Option<String>,
    /// RFC 3339 time of the participant's last leave; null while joined or never joined.
    #[schema(required = true)]
    pub left_at: Option<String>,
}

/// A call record.
#[derive(Debug, Serialize, ToSchema)]
pub struct VoipCall {
    pub id: String,
    pub kind: VoipCallKind,
    pub status: VoipCallStatus,
    pub initiator_id: String,
    /// Seconds the call rings before it becomes `missed`.
    pub ring_timeout_seconds: u32,
    /// The initiator first, then the invited users in the order given.
    pub participants: Vec<VoipParticipant>,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339 time the first invited participant joined; null until then.
    #[schema(required = true)]
    pub answered_at: Option<String>,
    /// RFC 3339; null until the call is `ended` or `missed`.
    #[schema(required = true)]
    pub ended_at: Option<String>,
    /// `ended_at − answered_at` in whole seconds for an ended call, 0 for a missed one, null
    /// before the call is over.
    #[schema(required = true)]
    pub duration_seconds: Option<u64>,
}

/// `POST /voip/api/v1/calls`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct VoipCallCreate {
    /// 1 to 50 distinct users of the tenant to call, not the caller (422 rules on
    /// `participant_ids`: `required`, `array`, `min:1`, `max:50`; on `participant_ids.N`:
    /// `string`, `exists`, `distinct`, `not_self`).
    #[schema(min_items = 1, max_items = 50)]
    pub participant_ids: Vec<String>,
    /// Default `audio` (422 rule `in` otherwise).
    #[schema(nullable = false)]
    pub kind: Option<VoipCallKind>,
    /// Seconds before an unanswered call becomes `missed`; default the tenant's setting (60).
    #[schema(nullable = false, minimum = 1, maximum = 300)]
    pub ring_timeout_seconds: Option<u32>,
}

/// The query of the call history.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct VoipCallsQuery {
    /// Only calls in this status (422 rule `in` otherwise).
    #[param(inline)]
    pub status: Option<VoipCallStatus>,
    /// Opaque cursor from a previous page's `meta.next_cursor`.
    pub cursor: Option<String>,
    /// Page size; default 50, at most 100.
    #[param(minimum = 1, maximum = 100, default = 50)]
    pub limit: Option<u32>,
}

// ---------------------------------------------------------------------------------------------
// Calls
// ---------------------------------------------------------------------------------------------

/// List the caller's call history, newest first.
///
/// Calls the caller initiated or was invited to.
#[utoipa::path(
    get,
    path = "/voip/api/v1/calls",
    operation_id = "voip_calls_list",
    tag = "voip",
    params(VoipCallsQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "A page of calls", body = DataWithMeta<Vec<VoipCall>, CursorMeta>),
        (status = 400, description = "Unknown query parameter", body = ErrorBody),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 422, description = "Invalid `status`, `cursor` or `limit`", body = ValidationErrorBody),
    )
)]
pub fn voip_calls_list() {}

/// Start a call.
///
/// The call rings: the caller is joined, the participants invited. Unanswered after
/// `ring_timeout_seconds`, it becomes `missed`. Emits `call.started`.
#[utoipa::path(
    post,
    path = "/voip/api/v1/calls",
    operation_id = "voip_calls_create",
    tag = "voip",
    request_body = VoipCallCreate,
    security(("bearer" = [])),
    responses(
        (status = 201, description = "The ringing call", body = Data<VoipCall>),
        (status = 400, description = "The body is not JSON", body = ErrorBody),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 403, description = "Viewers and guests cannot start calls", body = ErrorBody),
        (status = 422, description = "Invalid `participant_ids`, `kind` or `ring_timeout_seconds`", body = ValidationErrorBody),
    )
)]
pub fn voip_calls_create() {}

/// Show a call (its participants only).
#[utoipa::path(
    get,
    path = "/voip/api/v1/calls/{id}",
    operation_id = "voip_calls_show",
    tag = "voip",
    params(("id" = String, Path, description = "The call id")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The call", body = Data<VoipCall>),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 404, description = "No such call, or the caller is not in it", body = ErrorBody),
    )
)]
pub fn voip_calls_show() {}

/// Join a call.
///
/// An invited participant (or one who left a call still going) joins; the first to join
/// answers a ringing call: it becomes `active` and `call.answered` is emitted.
#[utoipa::path(
    post,
    path = "/voip/api/v1/calls/{id}/join",
    operation_id = "voip_calls_join",
    tag = "voip",
    params(("id" = String, Path, description = "The call id")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The call after the join", body = Data<VoipCall>),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 403, description = "Viewers and guests cannot join calls", body = ErrorBody),
        (status = 404, description = "No such call, or the caller is not in it", body = ErrorBody),
        (status = 409, description = "The call is over, or the caller already joined", body = ErrorBody),
    )
)]
pub fn voip_calls_join() {}

/// Leave a call.
///
/// A joined participant leaves; when fewer than two remain joined the call ends: `ended`
/// (`call.ended`, with its duration) if it was answered, `missed` (`call.missed`) if it was
/// still ringing.
#[utoipa::path(
    post,
    path = "/voip/api/v1/calls/{id}/leave",
    operation_id = "voip_calls_leave",
    tag = "voip",
    params(("id" = String, Path, description = "The call id")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The call after the leave", body = Data<VoipCall>),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 403, description = "Viewers and guests cannot leave calls", body = ErrorBody),
        (status = 404, description = "No such call, or the caller is not in it", body = ErrorBody),
        (status = 409, description = "The call is over, or the caller has not joined it", body = ErrorBody),
    )
)]
pub fn voip_calls_leave() {}

/// End a call for everyone.
///
/// Any joined participant ends it: `ended` (`call.ended`) if it was answered, `missed`
/// (`call.missed`) if it was still ringing.
#[utoipa::path(
    post,
    path = "/voip/api/v1/calls/{id}/end",
    operation_id = "voip_calls_end",
    tag = "voip",
    params(("id" = String, Path, description = "The call id")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The ended or missed call", body = Data<VoipCall>),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 403, description = "Viewers and guests cannot end calls", body = ErrorBody),
        (status = 404, description = "No such call, or the caller is not in it", body = ErrorBody),
        (status = 409, description = "The call is over, or the caller has not joined it", body = ErrorBody),
    )
)]
pub fn voip_calls_end() {}
