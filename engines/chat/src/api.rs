//! The chat API's documentation types: the JSON shapes the handlers read and write, as Rust
//! types deriving `JsonSchema` for the engine's OpenAPI fragment (`Chat::router().openapi()`,
//! which the host merges under `/chat/…` with schema names `chat.<Name>`).
//!
//! The handlers read bodies field by field (`object_body`) and build their answers from the
//! stored records, so nothing here is constructed: the types exist for their schemas, and
//! mirror what `conversations.rs` and `webhooks/` accept and answer (required fields, limits,
//! nullability). A field the handlers accept as absent but refuse as null is declared with
//! `#[serde(default, skip_serializing_if = "Option::is_none")]` and the schema of its inner type
//! (`#[schemars(with = …)]`): optional, not nullable. A field always answered, null or a string,
//! is `#[schemars(required, extend("type" = ["string", "null"]))]`: `required` alone would also
//! drop the `null`.

// Documentation only: the types are never constructed, their fields never read.
#![allow(dead_code)]

use schemars::JsonSchema;

use crate::conversations::{MAX_BODY_CHARS, MAX_INITIAL_MEMBERS, MAX_TITLE_CHARS};
use crate::webhooks::{MAX_SECRET_CHARS, MAX_URL_CHARS, MIN_SECRET_CHARS};

// ---------------------------------------------------------------------------------------------
// Conversations, messages, members
// ---------------------------------------------------------------------------------------------

/// A conversation.
#[derive(JsonSchema)]
pub struct Conversation {
    pub id: String,
    pub title: String,
    /// A stable slug for built-in conversations (e.g. the tenant's default one); null otherwise.
    #[schemars(required, extend("type" = ["string", "null"]))]
    pub slug: Option<String>,
    /// The tenant's default conversation, readable by every member of the tenant.
    pub is_default: bool,
    /// User ids of the members.
    pub member_ids: Vec<String>,
    /// The creating user; null for conversations the engine created itself.
    #[schemars(required, extend("type" = ["string", "null"]))]
    pub created_by: Option<String>,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339.
    pub updated_at: String,
}

/// `POST /chat/api/v1/conversations`.
#[derive(JsonSchema)]
pub struct ConversationCreate {
    /// Trimmed; 1 to 200 characters after trimming.
    #[schemars(length(min = 1, max = MAX_TITLE_CHARS))]
    pub title: String,
    /// Initial members besides the creator (who is always a member): users of the caller's
    /// tenant (rule `exists` on `member_ids.N` otherwise), each kept once. Absent or null: the
    /// creator only.
    #[schemars(length(max = MAX_INITIAL_MEMBERS))]
    pub member_ids: Option<Vec<String>>,
}

/// `PATCH /chat/api/v1/conversations/{id}`.
#[derive(JsonSchema)]
pub struct ConversationUpdate {
    /// Trimmed; 1 to 200 characters after trimming.
    #[schemars(length(min = 1, max = MAX_TITLE_CHARS))]
    pub title: String,
}

/// A message of a conversation.
#[derive(JsonSchema)]
pub struct Message {
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
#[derive(JsonSchema)]
pub struct MessageBody {
    /// The text, trimmed (1 to 10000 characters after trimming); `@<user_id>` mentions notify
    /// those users.
    #[schemars(length(min = 1, max = MAX_BODY_CHARS))]
    pub body: String,
}

/// `POST /chat/api/v1/conversations/{id}/members`.
#[derive(JsonSchema)]
pub struct MemberAdd {
    /// A user of the caller's tenant.
    pub user_id: String,
}

/// A membership just added.
#[derive(JsonSchema)]
pub struct Membership {
    pub conversation_id: String,
    pub user_id: String,
    /// Every member after the addition.
    pub member_ids: Vec<String>,
}

// ---------------------------------------------------------------------------------------------
// Webhooks
// ---------------------------------------------------------------------------------------------

/// An event a webhook can subscribe to.
#[derive(JsonSchema)]
pub enum WebhookEvent {
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
#[derive(JsonSchema)]
pub struct Webhook {
    pub id: String,
    /// HTTPS URL the deliveries are POSTed to.
    pub url: String,
    /// Subscribed events.
    pub events: Vec<WebhookEvent>,
    /// False once disabled (10 consecutive failed attempts); PATCH `is_active: true` re-enables.
    pub is_active: bool,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339.
    pub updated_at: String,
}

/// A webhook just created: the only answer that carries its secret.
#[derive(JsonSchema)]
pub struct CreatedWebhook {
    pub id: String,
    pub url: String,
    pub events: Vec<WebhookEvent>,
    /// The signing secret, as given.
    pub secret: String,
    pub is_active: bool,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339.
    pub updated_at: String,
}

/// What a webhook `url` looks like, surrounding whitespace (trimmed) included: `https://` (any
/// case), a host without `@`, then a path, query or fragment, no whitespace. Whether its host
/// is private is decided when it is created (`not_private`), not by the pattern.
const WEBHOOK_URL_PATTERN: &str = r"^\s*[Hh][Tt][Tt][Pp][Ss]://[^/?#@\s]+(?:[/?#]\S*)?\s*$";

/// `POST /chat/api/v1/webhooks`.
#[derive(JsonSchema)]
pub struct WebhookCreate {
    /// HTTPS only, at most 2048 characters, and not to a private, loopback or link-local
    /// address unless the host allows private targets (422 rules `required`, `string`,
    /// `max:2048`, `https`, `url`, `not_private`).
    #[schemars(length(max = MAX_URL_CHARS), regex(pattern = WEBHOOK_URL_PATTERN))]
    pub url: String,
    /// At least one event (422 rule `required` when empty, `in` on `events.N` for an unknown
    /// one); repeated events are kept once.
    #[schemars(length(min = 1))]
    pub events: Vec<WebhookEvent>,
    /// The HMAC-SHA256 signing secret, 32 to 256 characters (422 rules `min:32`, `max:256`).
    #[schemars(length(min = MIN_SECRET_CHARS, max = MAX_SECRET_CHARS))]
    pub secret: String,
}

/// `POST /chat/api/v1/webhooks/{id}/secret`.
#[derive(JsonSchema)]
pub struct WebhookSecret {
    /// The new HMAC-SHA256 signing secret, 32 to 256 characters (422 rules `required`,
    /// `min:32`, `max:256`).
    #[schemars(length(min = MIN_SECRET_CHARS, max = MAX_SECRET_CHARS))]
    pub secret: String,
}

/// `PATCH /chat/api/v1/webhooks/{id}`: every field optional, none nullable (a null is 422).
#[derive(JsonSchema)]
pub struct WebhookUpdate {
    /// Same rules as on creation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        with = "String",
        length(max = MAX_URL_CHARS),
        regex(pattern = WEBHOOK_URL_PATTERN)
    )]
    pub url: Option<String>,
    /// Same rules as on creation; replaces the subscribed events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Vec<WebhookEvent>", length(min = 1))]
    pub events: Option<Vec<WebhookEvent>>,
    /// A new secret: the old one keeps signing beside it (a second `v1` entry) for 24 hours.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        with = "String",
        length(min = MIN_SECRET_CHARS, max = MAX_SECRET_CHARS)
    )]
    pub secret: Option<String>,
    /// `true` re-enables a disabled webhook (and resets its failure count); `false` disables
    /// it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "bool")]
    pub is_active: Option<bool>,
}

/// The state of a delivery.
#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DeliveryStatus {
    Delivered,
    Failed,
    Pending,
}

/// One delivery of an event to a webhook (an item of its history).
#[derive(JsonSchema)]
pub struct Delivery {
    pub id: String,
    /// The event type, e.g. `message.created`, or `test.ping`.
    pub event: String,
    pub status: DeliveryStatus,
    /// The receiver's HTTP status of the last attempt; 0 when no HTTP response came (refused,
    /// timed out, not attempted yet).
    pub response_code: u16,
    pub response_time_ms: u64,
    /// Attempts made so far, automatic and manual.
    pub attempt: u32,
    /// RFC 3339 time of the next automatic attempt; null when none is scheduled.
    #[schemars(required, extend("type" = ["string", "null"]))]
    pub next_retry_at: Option<String>,
    /// RFC 3339.
    pub created_at: String,
}

/// The outcome of one immediate delivery attempt (test ping or manual retry).
#[derive(JsonSchema)]
pub struct DeliveryAttempt {
    pub delivery_id: String,
    pub status: DeliveryStatus,
    /// 0 when no HTTP response came.
    pub response_code: u16,
    pub response_time_ms: u64,
}

/// What a dead letter's payload was about.
#[derive(JsonSchema)]
pub struct PayloadSummary {
    pub event_type: String,
    #[schemars(required, extend("type" = ["string", "null"]))]
    pub conversation_id: Option<String>,
}

/// A delivery that exhausted its automatic attempts (the dead letter queue).
#[derive(JsonSchema)]
pub struct DeadLetter {
    /// The delivery id.
    pub id: String,
    pub webhook_id: String,
    pub event: String,
    pub attempts: u32,
    /// 0 when no HTTP response came.
    pub last_response_code: u16,
    /// The last attempt's error; empty when none was recorded.
    pub last_error: String,
    pub payload_summary: PayloadSummary,
    /// RFC 3339.
    #[schemars(required, extend("type" = ["string", "null"]))]
    pub failed_at: Option<String>,
    /// RFC 3339.
    pub created_at: String,
}

/// The outcome of retrying a dead letter.
#[derive(JsonSchema)]
pub struct DeadLetterRetry {
    /// The delivery id.
    pub id: String,
    pub status: DeliveryStatus,
    /// 0 when no HTTP response came.
    pub response_code: u16,
    pub response_time_ms: u64,
}

// ---------------------------------------------------------------------------------------------
// Queries
// ---------------------------------------------------------------------------------------------

/// The query of a cursor-paged chat list.
#[derive(JsonSchema)]
pub struct PageQuery {
    /// Opaque cursor from a previous page's `meta.next_cursor` (422 rule `invalid` otherwise).
    pub cursor: Option<String>,
    /// Page size; default 50, larger values are clamped to 100 (422 rules `integer`, `min:1`).
    #[schemars(range(min = 1, max = 4_294_967_295u64), extend("default" = 50))]
    pub limit: Option<u32>,
}

/// The query of a webhook's delivery history.
#[derive(JsonSchema)]
pub struct DeliveriesQuery {
    /// Only deliveries in this state (422 rule `in` otherwise).
    pub status: Option<DeliveryStatus>,
    /// Opaque cursor from a previous page's `meta.next_cursor` (422 rule `invalid` otherwise).
    pub cursor: Option<String>,
    /// Page size; default 50, larger values are clamped to 100 (422 rules `integer`, `min:1`).
    #[schemars(range(min = 1, max = 4_294_967_295u64), extend("default" = 50))]
    pub limit: Option<u32>,
}
