//! Documentation-only entries of the chat engine's routes (`/chat/api/v1/…`).
//!
//! The chat engine is a WebAssembly component reached through the engine catch-all route, so
//! nothing here is called: the functions exist for their `#[utoipa::path]` attributes and the
//! types for their `ToSchema`/`IntoParams` derives, which give the document real schemas. They
//! mirror the JSON the engine (`engines/chat`) reads and writes.

// Doc-only: the types are never constructed and the functions never called.
#![allow(dead_code)]

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::http::envelope::{Data, DataWithMeta};
use crate::http::error::{ErrorBody, ValidationErrorBody};
use crate::http::paging::CursorMeta;

// ---------------------------------------------------------------------------------------------
// Schemas
// ---------------------------------------------------------------------------------------------

/// A conversation.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChatConversation {
    pub id: String,
    pub title: String,
    /// A stable slug for built-in conversations (e.g. the tenant's default one); null otherwise.
    #[schema(required = true)]
    pub slug: Option<String>,
    /// The tenant's default conversation, readable by every member of the tenant.
    pub is_default: bool,
    /// User ids of the members.
    pub member_ids: Vec<String>,
    /// The creating user; null for conversations the engine created itself.
    #[schema(required = true)]
    pub created_by: Option<String>,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339.
    pub updated_at: String,
}

/// `POST /chat/api/v1/conversations`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ChatConversationCreate {
    #[schema(min_length = 1, max_length = 200)]
    pub title: String,
    /// Initial members besides the creator (who is always a member).
    #[schema(nullable = false)]
    pub member_ids: Option<Vec<String>>,
}

/// `PATCH /chat/api/v1/conversations/{id}`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ChatConversationUpdate {
    #[schema(min_length = 1, max_length = 200)]
    pub title: String,
}

/// A message of a conversation.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChatMessage {
    pub id: String,
    pub conversation_id: String,
    pub author_id: String,
    pub body: String,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339.
    pub updated_at: String,
}

/// The body of a message to post or an edit.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ChatMessageBody {
    /// The text; `@<user_id>` mentions notify those users.
    #[schema(min_length = 1, max_length = 10000)]
    pub body: String,
}

/// `POST /chat/api/v1/conversations/{id}/members`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ChatMemberAdd {
    /// A user of the caller's tenant.
    pub user_id: String,
}

/// A membership just added.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChatMembership {
    pub conversation_id: String,
    pub user_id: String,
    /// Every member after the addition.
    pub member_ids: Vec<String>,
}

/// An event a webhook can subscribe to.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub enum ChatWebhookEvent {
    #[serde(rename = "message.created")]
    MessageCreated,
    #[serde(rename = "message.updated")]
    MessageUpdated,
    #[serde(rename = "message.deleted")]
    MessageDeleted,
    #[serde(rename = "notification.created")]
    NotificationCreated,
    #[serde(rename = "conversation.created")]
    ConversationCreated,
    #[serde(rename = "conversation.updated")]
    ConversationUpdated,
    #[serde(rename = "member.added")]
    MemberAdded,
    #[serde(rename = "member.removed")]
    MemberRemoved,
}

/// A webhook (its secret is never shown after creation).
#[derive(Debug, Serialize, ToSchema)]
pub struct ChatWebhook {
    pub id: String,
    /// HTTPS URL the deliveries are POSTed to.
    pub url: String,
    /// Subscribed events.
    pub events: Vec<ChatWebhookEvent>,
    /// False once disabled (10 consecutive failed attempts); PATCH `is_active: true` re-enables.
    pub is_active: bool,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339.
    pub updated_at: String,
}

/// A webhook just created: the only answer that carries its secret.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChatCreatedWebhook {
    pub id: String,
    pub url: String,
    pub events: Vec<ChatWebhookEvent>,
    /// The signing secret, as given.
    pub secret: String,
    pub is_active: bool,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339.
    pub updated_at: String,
}

/// `POST /chat/api/v1/webhooks`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ChatWebhookCreate {
    /// HTTPS only, and not to a private, loopback or link-local address (422 rules
    /// `required`, `https`, `url`, `not_private`).
    #[schema(format = "uri")]
    pub url: String,
    /// At least one event (422 rule `in` on `events.N` for an unknown one).
    #[schema(min_items = 1)]
    pub events: Vec<ChatWebhookEvent>,
    /// The HMAC-SHA256 signing secret (422 rule `min:32`).
    #[schema(min_length = 32)]
    pub secret: String,
}

/// `PATCH /chat/api/v1/webhooks/{id}`: every field optional.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ChatWebhookUpdate {
    /// Same rules as on creation.
    #[schema(nullable = false, format = "uri")]
    pub url: Option<String>,
    #[schema(nullable = false, min_items = 1)]
    pub events: Option<Vec<ChatWebhookEvent>>,
    /// A new secret: the old one keeps signing beside it (a second `v1` entry) for 24 hours.
    #[schema(nullable = false, min_length = 32)]
    pub secret: Option<String>,
    /// `true` re-enables a disabled webhook (and resets its failure count).
    #[schema(nullable = false)]
    pub is_active: Option<bool>,
}

/// The state of a delivery.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ChatDeliveryStatus {
    Delivered,
    Failed,
    Pending,
}

/// One delivery of an event to a webhook (an item of its history).
#[derive(Debug, Serialize, ToSchema)]
pub struct ChatDelivery {
    pub id: String,
    /// The event type, e.g. `message.created`, or `test.ping`.
    pub event: String,
    pub status: ChatDeliveryStatus,
    /// The receiver's HTTP status of the last attempt; 0 when no HTTP response came (refused,
    /// timed out, not attempted yet).
    pub response_code: u16,
    pub response_time_ms: u64,
    /// Attempts made so far, automatic and manual.
    pub attempt: u32,
    /// RFC 3339 time of the next automatic attempt; null when none is scheduled.
    #[schema(required = true)]
    pub next_retry_at: Option<String>,
    /// RFC 3339.
    pub created_at: String,
}

/// The outcome of one immediate delivery attempt (test ping or manual retry).
#[derive(Debug, Serialize, ToSchema)]
pub struct ChatDeliveryAttempt {
    pub delivery_id: String,
    pub status: ChatDeliveryStatus,
    /// 0 when no HTTP response came.
    pub response_code: u16,
    pub response_time_ms: u64,
}

/// What a dead letter's payload was about.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChatPayloadSummary {
    pub event_type: String,
    #[schema(required = true)]
    pub conversation_id: Option<String>,
}

/// A delivery that exhausted its automatic attempts (the dead letter queue).
#[derive(Debug, Serialize, ToSchema)]
pub struct ChatDeadLetter {
    /// The delivery id.
    pub id: String,
    pub webhook_id: String,
    pub event: String,
    pub attempts: u32,
    /// 0 when no HTTP response came.
    pub last_response_code: u16,
    pub last_error: String,
    pub payload_summary: ChatPayloadSummary,
    /// RFC 3339.
    #[schema(required = true)]
    pub failed_at: Option<String>,
    /// RFC 3339.
    pub created_at: String,
}

/// The outcome of retrying a dead letter.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChatDeadLetterRetry {
    /// The delivery id.
    pub id: String,
    pub status: ChatDeliveryStatus,
    /// 0 when no HTTP response came.
    pub response_code: u16,
    pub response_time_ms: u64,
}

/// The query of a cursor-paged chat list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ChatPageQuery {
    /// Opaque cursor from a previous page's `meta.next_cursor`.
    pub cursor: Option<String>,
    /// Page size; default 50, at most 100.
    #[param(minimum = 1, maximum = 100, default = 50)]
    pub limit: Option<u32>,
}

/// The query of a webhook's delivery history.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ChatDeliveriesQuery {
    /// Only deliveries in this state (422 rule `in` otherwise).
    #[param(inline)]
    pub status: Option<ChatDeliveryStatus>,
    /// Opaque cursor from a previous page's `meta.next_cursor`.
    pub cursor: Option<String>,
    /// Page size; default 50, at most 100.
    #[param(minimum = 1, maximum = 100, default = 50)]
    pub limit: Option<u32>,
}

// ---------------------------------------------------------------------------------------------
// Conversations
// ---------------------------------------------------------------------------------------------

/// List the conversations the caller can read.
///
/// The tenant's default conversation, those the caller is a member of, and (for owners)
/// every conversation of the tenant.
#[utoipa::path(
    get,
    path = "/chat/api/v1/conversations",
    operation_id = "chat_conversations_list",
    tag = "chat",
    params(ChatPageQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "A page of conversations", body = DataWithMeta<Vec<ChatConversation>, CursorMeta>),
        (status = 400, description = "Unknown query parameter", body = ErrorBody),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 422, description = "Invalid `cursor` or `limit`", body = ValidationErrorBody),
    )
)]
pub fn chat_conversations_list() {}

/// Create a conversation.
///
/// The caller becomes its first member. Emits `conversation.created`.
#[utoipa::path(
    post,
    path = "/chat/api/v1/conversations",
    operation_id = "chat_conversations_create",
    tag = "chat",
    request_body = ChatConversationCreate,
    security(("bearer" = [])),
    responses(
        (status = 201, description = "The conversation", body = Data<ChatConversation>),
        (status = 400, description = "The body is not JSON", body = ErrorBody),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 403, description = "Viewers and guests cannot create conversations", body = ErrorBody),
        (status = 422, description = "Invalid `title` or `member_ids`", body = ValidationErrorBody),
    )
)]
pub fn chat_conversations_create() {}

/// Show a conversation.
#[utoipa::path(
    get,
    path = "/chat/api/v1/conversations/{id}",
    operation_id = "chat_conversations_show",
    tag = "chat",
    params(("id" = String, Path, description = "The conversation id")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The conversation", body = Data<ChatConversation>),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 403, description = "The caller may not read this conversation", body = ErrorBody),
        (status = 404, description = "No such conversation", body = ErrorBody),
    )
)]
pub fn chat_conversations_show() {}

/// Rename a conversation.
///
/// Emits `conversation.updated`.
#[utoipa::path(
    patch,
    path = "/chat/api/v1/conversations/{id}",
    operation_id = "chat_conversations_update",
    tag = "chat",
    params(("id" = String, Path, description = "The conversation id")),
    request_body = ChatConversationUpdate,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The updated conversation", body = Data<ChatConversation>),
        (status = 400, description = "The body is not JSON", body = ErrorBody),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 403, description = "The caller may not write to this conversation", body = ErrorBody),
        (status = 404, description = "No such conversation", body = ErrorBody),
        (status = 422, description = "Invalid `title`", body = ValidationErrorBody),
    )
)]
pub fn chat_conversations_update() {}

// ---------------------------------------------------------------------------------------------
// Messages
// ---------------------------------------------------------------------------------------------

/// List the messages of a conversation, newest first.
#[utoipa::path(
    get,
    path = "/chat/api/v1/conversations/{id}/messages",
    operation_id = "chat_messages_list",
    tag = "chat",
    params(("id" = String, Path, description = "The conversation id"), ChatPageQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "A page of messages", body = DataWithMeta<Vec<ChatMessage>, CursorMeta>),
        (status = 400, description = "Unknown query parameter", body = ErrorBody),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 403, description = "The caller may not read this conversation", body = ErrorBody),
        (status = 404, description = "No such conversation", body = ErrorBody),
        (status = 422, description = "Invalid `cursor` or `limit`", body = ValidationErrorBody),
    )
)]
pub fn chat_messages_list() {}

/// Post a message.
///
/// Emits `message.created`, and `notification.created` for each user mentioned as
/// `@<user_id>`.
#[utoipa::path(
    post,
    path = "/chat/api/v1/conversations/{id}/messages",
    operation_id = "chat_messages_create",
    tag = "chat",
    params(("id" = String, Path, description = "The conversation id")),
    request_body = ChatMessageBody,
    security(("bearer" = [])),
    responses(
        (status = 201, description = "The message", body = Data<ChatMessage>),
        (status = 400, description = "The body is not JSON", body = ErrorBody),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 403, description = "The caller may not write to this conversation", body = ErrorBody),
        (status = 404, description = "No such conversation", body = ErrorBody),
        (status = 422, description = "Invalid `body`", body = ValidationErrorBody),
    )
)]
pub fn chat_messages_create() {}

/// Edit a message (its author only).
///
/// Emits `message.updated`.
#[utoipa::path(
    patch,
    path = "/chat/api/v1/conversations/{id}/messages/{message_id}",
    operation_id = "chat_messages_update",
    tag = "chat",
    params(
        ("id" = String, Path, description = "The conversation id"),
        ("message_id" = String, Path, description = "The message id"),
    ),
    request_body = ChatMessageBody,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The edited message", body = Data<ChatMessage>),
        (status = 400, description = "The body is not JSON", body = ErrorBody),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 403, description = "The caller is not the message's author", body = ErrorBody),
        (status = 404, description = "No such conversation or message", body = ErrorBody),
        (status = 422, description = "Invalid `body`", body = ValidationErrorBody),
    )
)]
pub fn chat_messages_update() {}

/// Delete a message (its author or an owner).
///
/// Emits `message.deleted`.
#[utoipa::path(
    delete,
    path = "/chat/api/v1/conversations/{id}/messages/{message_id}",
    operation_id = "chat_messages_delete",
    tag = "chat",
    params(
        ("id" = String, Path, description = "The conversation id"),
        ("message_id" = String, Path, description = "The message id"),
    ),
    security(("bearer" = [])),
    responses(
        (status = 204, description = "Deleted"),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 403, description = "The caller is neither the author nor an owner", body = ErrorBody),
        (status = 404, description = "No such conversation or message", body = ErrorBody),
    )
)]
pub fn chat_messages_delete() {}

// ---------------------------------------------------------------------------------------------
// Members
// ---------------------------------------------------------------------------------------------

/// Add a member to a conversation.
///
/// Emits `member.added`.
#[utoipa::path(
    post,
    path = "/chat/api/v1/conversations/{id}/members",
    operation_id = "chat_members_add",
    tag = "chat",
    params(("id" = String, Path, description = "The conversation id")),
    request_body = ChatMemberAdd,
    security(("bearer" = [])),
    responses(
        (status = 201, description = "The membership", body = Data<ChatMembership>),
        (status = 400, description = "The body is not JSON", body = ErrorBody),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 403, description = "The caller may not write to this conversation", body = ErrorBody),
        (status = 404, description = "No such conversation", body = ErrorBody),
        (status = 409, description = "The user is already a member", body = ErrorBody),
        (status = 422, description = "Missing `user_id`, or no such user in the tenant (rule `exists`)", body = ValidationErrorBody),
    )
)]
pub fn chat_members_add() {}

/// Remove a member from a conversation.
///
/// Emits `member.removed`.
#[utoipa::path(
    delete,
    path = "/chat/api/v1/conversations/{id}/members/{user_id}",
    operation_id = "chat_members_remove",
    tag = "chat",
    params(
        ("id" = String, Path, description = "The conversation id"),
        ("user_id" = String, Path, description = "The member's user id"),
    ),
    security(("bearer" = [])),
    responses(
        (status = 204, description = "Removed"),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 403, description = "The caller may not write to this conversation", body = ErrorBody),
        (status = 404, description = "No such conversation, or the user is not a member", body = ErrorBody),
    )
)]
pub fn chat_members_remove() {}

// ---------------------------------------------------------------------------------------------
// Webhooks
// ---------------------------------------------------------------------------------------------

/// List the tenant's webhooks (owners only).
#[utoipa::path(
    get,
    path = "/chat/api/v1/webhooks",
    operation_id = "chat_webhooks_list",
    tag = "chat",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Every webhook of the tenant, without secrets", body = Data<Vec<ChatWebhook>>),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 403, description = "The caller is not an owner of the tenant", body = ErrorBody),
    )
)]
pub fn chat_webhooks_list() {}

/// Create a webhook (owners only).
///
/// **Delivery format.** Each subscribed event is POSTed to `url` with
/// `Content-Type: application/json` and the headers:
///
/// - `X-Service-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`; during
///   a secret rotation (24 hours after a PATCH changing `secret`) it carries two `v1` entries,
///   one per secret;
/// - `X-Webhook-Event`: the event type;
/// - `X-Webhook-Delivery`: the delivery id, the same on every attempt (receivers use it to
///   ignore repeats).
///
/// The body is `{id, event_type, tenant_id, occurred_at, data: {conversation_id, message_id?,
/// user_id?}}`: identifiers only, never message text; fetch the resources through the API.
///
/// **Retries.** A 2xx answer within 10 seconds is a success. The first attempt is made at once,
/// then retries follow `TESSERA_WEBHOOK_RETRY_SCHEDULE` (default `30s, 2m, 10m, 30m`); a
/// delivery failing all of them moves to the dead letter queue (`/chat/api/v1/webhooks/dlq`).
/// 10 consecutive failed attempts disable the webhook (`is_active: false`) until a PATCH
/// re-enables it.
#[utoipa::path(
    post,
    path = "/chat/api/v1/webhooks",
    operation_id = "chat_webhooks_create",
    tag = "chat",
    request_body = ChatWebhookCreate,
    security(("bearer" = [])),
    responses(
        (status = 201, description = "The webhook, with its secret (the only time it is shown)", body = Data<ChatCreatedWebhook>),
        (status = 400, description = "The body is not JSON", body = ErrorBody),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 403, description = "The caller is not an owner of the tenant", body = ErrorBody),
        (status = 422, description = "Invalid fields: `url` (`required`, `https`, `url`, `not_private`), `events` / `events.N` (`in`), `secret` (`min:32`)", body = ValidationErrorBody),
    )
)]
pub fn chat_webhooks_create() {}

/// Show a webhook (owners only).
#[utoipa::path(
    get,
    path = "/chat/api/v1/webhooks/{id}",
    operation_id = "chat_webhooks_show",
    tag = "chat",
    params(("id" = String, Path, description = "The webhook id")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The webhook, without its secret", body = Data<ChatWebhook>),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 403, description = "The caller is not an owner of the tenant", body = ErrorBody),
        (status = 404, description = "No such webhook in the caller's tenant", body = ErrorBody),
    )
)]
pub fn chat_webhooks_show() {}

/// Update a webhook (owners only).
///
/// Every field is optional; `updated_at` changes. A new `secret` does not cut the old one
/// off: both sign deliveries (two `v1` entries) for 24 hours. `is_active: true` re-enables a
/// webhook disabled after consecutive failures, resets its failure count, and resumes the
/// retries that waited meanwhile, all committed together. The change applies to the webhook as
/// it is when it commits: one disabled by a delivery, changed or deleted by another request in
/// between is read again, and the change decided again (the webhook gone: 404). When it keeps
/// changing for 16 rounds the request gives up with 409.
#[utoipa::path(
    patch,
    path = "/chat/api/v1/webhooks/{id}",
    operation_id = "chat_webhooks_update",
    tag = "chat",
    params(("id" = String, Path, description = "The webhook id")),
    request_body = ChatWebhookUpdate,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The webhook, without its secret", body = Data<ChatWebhook>),
        (status = 400, description = "The body is not JSON", body = ErrorBody),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 403, description = "The caller is not an owner of the tenant", body = ErrorBody),
        (status = 404, description = "No such webhook in the caller's tenant", body = ErrorBody),
        (status = 409, description = "The webhook kept changing under concurrent requests and deliveries while this one was applied; nothing was changed, try again", body = ErrorBody),
        (status = 422, description = "Invalid fields, with the rules of creation", body = ValidationErrorBody),
    )
)]
pub fn chat_webhooks_update() {}

/// Delete a webhook (owners only).
///
/// Its pending deliveries and its delivery history are discarded. Of deletions racing, one
/// answers 204 and the others 404; a concurrent update never brings the webhook back.
#[utoipa::path(
    delete,
    path = "/chat/api/v1/webhooks/{id}",
    operation_id = "chat_webhooks_delete",
    tag = "chat",
    params(("id" = String, Path, description = "The webhook id")),
    security(("bearer" = [])),
    responses(
        (status = 204, description = "Deleted"),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 403, description = "The caller is not an owner of the tenant", body = ErrorBody),
        (status = 404, description = "No such webhook in the caller's tenant", body = ErrorBody),
        (status = 409, description = "The webhook kept changing under concurrent requests and deliveries while it was being deleted; nothing was deleted, try again", body = ErrorBody),
    )
)]
pub fn chat_webhooks_delete() {}

/// Send a `test.ping` delivery to a webhook now (owners only).
///
/// One synchronous attempt, never retried automatically.
#[utoipa::path(
    post,
    path = "/chat/api/v1/webhooks/{id}/test",
    operation_id = "chat_webhooks_test",
    tag = "chat",
    params(("id" = String, Path, description = "The webhook id")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The attempt's outcome", body = Data<ChatDeliveryAttempt>),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 403, description = "The caller is not an owner of the tenant", body = ErrorBody),
        (status = 404, description = "No such webhook in the caller's tenant", body = ErrorBody),
    )
)]
pub fn chat_webhooks_test() {}

/// List a webhook's deliveries, newest first (owners only).
#[utoipa::path(
    get,
    path = "/chat/api/v1/webhooks/{id}/deliveries",
    operation_id = "chat_webhook_deliveries_list",
    tag = "chat",
    params(("id" = String, Path, description = "The webhook id"), ChatDeliveriesQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "A page of deliveries", body = DataWithMeta<Vec<ChatDelivery>, CursorMeta>),
        (status = 400, description = "Unknown query parameter", body = ErrorBody),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 403, description = "The caller is not an owner of the tenant", body = ErrorBody),
        (status = 404, description = "No such webhook in the caller's tenant", body = ErrorBody),
        (status = 422, description = "Unknown `status` (rule `in`), or invalid `cursor` or `limit`", body = ValidationErrorBody),
    )
)]
pub fn chat_webhook_deliveries_list() {}

/// Retry a delivery now (owners only).
///
/// One immediate attempt, outside the automatic schedule.
#[utoipa::path(
    post,
    path = "/chat/api/v1/webhooks/{id}/deliveries/{delivery_id}/retry",
    operation_id = "chat_webhook_deliveries_retry",
    tag = "chat",
    params(
        ("id" = String, Path, description = "The webhook id"),
        ("delivery_id" = String, Path, description = "The delivery id"),
    ),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The attempt's outcome", body = Data<ChatDeliveryAttempt>),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 403, description = "The caller is not an owner of the tenant", body = ErrorBody),
        (status = 404, description = "No such webhook or delivery", body = ErrorBody),
    )
)]
pub fn chat_webhook_deliveries_retry() {}

/// List the dead letter queue: deliveries that exhausted their automatic attempts (owners
/// only).
#[utoipa::path(
    get,
    path = "/chat/api/v1/webhooks/dlq",
    operation_id = "chat_webhook_dlq_list",
    tag = "chat",
    params(ChatPageQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "A page of dead letters", body = DataWithMeta<Vec<ChatDeadLetter>, CursorMeta>),
        (status = 400, description = "Unknown query parameter", body = ErrorBody),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 403, description = "The caller is not an owner of the tenant", body = ErrorBody),
        (status = 422, description = "Invalid `cursor` or `limit`", body = ValidationErrorBody),
    )
)]
pub fn chat_webhook_dlq_list() {}

/// Retry a dead letter now (owners only).
///
/// One immediate attempt; a success removes the item from the dead letter queue.
#[utoipa::path(
    post,
    path = "/chat/api/v1/webhooks/dlq/{id}/retry",
    operation_id = "chat_webhook_dlq_retry",
    tag = "chat",
    params(("id" = String, Path, description = "The dead letter's (delivery) id")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The attempt's outcome", body = Data<ChatDeadLetterRetry>),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 403, description = "The caller is not an owner of the tenant", body = ErrorBody),
        (status = 404, description = "No such dead letter", body = ErrorBody),
    )
)]
pub fn chat_webhook_dlq_retry() {}
