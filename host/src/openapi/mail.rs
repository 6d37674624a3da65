//! Documentation-only entries of the mail engine's routes (`/mail/api/v1/…`), merged into the
//! host's document by `openapi::document`. See `chat.rs` for the pattern: nothing here is called;
//! the types mirror the JSON the engine (`engines/mail`) reads and writes.

// Doc-only: the types are never constructed and the functions never called.
#![allow(dead_code)]

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, OpenApi, ToSchema};

use crate::http::envelope::{Data, DataWithMeta};
use crate::http::error::{ErrorBody, ValidationErrorBody};
use crate::http::paging::CursorMeta;

/// The mail engine's part of the OpenAPI document.
#[derive(OpenApi)]
#[openapi(
    paths(
        mail_folders, mail_folder_messages, mail_send, mail_show, mail_update, mail_delete,
    ),
    tags((name = "mail", description = "The mail engine: mailboxes, internal delivery and the outbox")),
)]
pub struct Doc;

// ---------------------------------------------------------------------------------------------
// Schemas
// ---------------------------------------------------------------------------------------------

/// A folder of the caller's mailbox.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum MailFolderId {
    Inbox,
    Sent,
    Outbox,
    Trash,
}

/// A folder with its counts.
#[derive(Debug, Serialize, ToSchema)]
pub struct MailFolder {
    pub id: MailFolderId,
    /// `Inbox`, `Sent`, `Outbox`, `Trash`.
    pub name: String,
    pub total: u64,
    pub unread: u64,
}

/// Where a recipient, or the external recipients as a whole, stand.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum MailStatus {
    /// A user of the tenant: the copy is in their inbox.
    Delivered,
    /// External, waiting for the SMTP relay (or for one to be configured).
    Queued,
    /// External, accepted by the relay.
    Sent,
    /// External, refused on every attempt.
    Failed,
}

/// One recipient of a sent message.
#[derive(Debug, Serialize, ToSchema)]
pub struct MailRecipient {
    pub address: String,
    /// A user of the tenant (internal delivery) rather than an outside address.
    pub internal: bool,
    pub status: MailStatus,
}

/// The delivery state of a sent message (on the sender's copy only).
#[derive(Debug, Serialize, ToSchema)]
pub struct MailDelivery {
    /// `delivered` when every recipient is a user of the tenant, else the external
    /// recipients' status.
    pub status: MailStatus,
    pub recipients: Vec<MailRecipient>,
    /// Attempts made to hand the external recipients to the relay (1 + 3 retries at most).
    pub attempts: u32,
    /// RFC 3339.
    pub last_attempt_at: Option<String>,
    /// RFC 3339; null when no attempt is scheduled (done, failed, or no relay configured).
    pub next_attempt_at: Option<String>,
    /// Why the last attempt failed.
    pub last_error: Option<String>,
    /// RFC 3339: when the relay accepted the message.
    pub sent_at: Option<String>,
}

/// The caller's copy of a message, as lists show it (without its body).
#[derive(Debug, Serialize, ToSchema)]
pub struct MailMessageSummary {
    /// The copy's id (UUID v7): each mailbox has its own copy.
    pub id: String,
    /// The message's id, shared by all its copies; the SMTP `Message-ID` is
    /// `<message_id@sender's domain>`.
    pub message_id: String,
    pub folder: MailFolderId,
    /// The sender's own copy is read; received copies start unread.
    pub read: bool,
    /// The sender's address.
    pub from: String,
    pub sender_id: String,
    pub to: Vec<String>,
    pub cc: Vec<String>,
    pub subject: String,
    /// The sender's copy only; null on received copies.
    pub delivery: Option<MailDelivery>,
    /// RFC 3339: when it was sent.
    pub created_at: String,
    /// RFC 3339.
    pub updated_at: String,
}

/// The caller's copy of a message with its body.
#[derive(Debug, Serialize, ToSchema)]
pub struct MailMessage {
    #[serde(flatten)]
    pub message: MailMessageSummary,
    /// Plain text.
    pub body: String,
}

/// `POST /mail/api/v1/messages`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct MailSend {
    /// 1 to 100 addresses (`local@domain`, ASCII). Users of the tenant get a copy in their
    /// inbox; the others are external.
    #[schema(min_items = 1, max_items = 100)]
    pub to: Vec<String>,
    /// Further addresses; `to` and `cc` together at most 100 distinct addresses.
    #[schema(nullable = false, max_items = 100)]
    pub cc: Option<Vec<String>>,
    /// One line, at most 998 characters (trimmed).
    #[schema(nullable = false, max_length = 998, default = "")]
    pub subject: Option<String>,
    /// Plain text, at most 1,000,000 bytes of UTF-8.
    #[schema(nullable = false, default = "")]
    pub body: Option<String>,
}

/// `PATCH /mail/api/v1/messages/{id}`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct MailUpdate {
    #[schema(nullable = false)]
    pub read: Option<bool>,
    /// `trash`, or the copy's own folder: `inbox` for a received copy; `sent` (or `outbox`
    /// while its external delivery is queued or failed) for a sent one.
    #[schema(nullable = false)]
    pub folder: Option<MailFolderId>,
}

/// The query of `GET /mail/api/v1/folders/{folder}/messages`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct MailListQuery {
    /// Only unread (`true`) or read (`false`) messages.
    pub unread: Option<bool>,
    /// Opaque cursor from a previous page's `meta.next_cursor`.
    pub cursor: Option<String>,
    /// Page size; default 50, at most 100.
    #[param(minimum = 1, maximum = 100, default = 50)]
    pub limit: Option<u32>,
}

// ---------------------------------------------------------------------------------------------
// Routes
// ---------------------------------------------------------------------------------------------

/// The caller's four folders with their total and unread counts.
#[utoipa::path(
    get,
    path = "/mail/api/v1/folders",
    operation_id = "mail_folders",
    tag = "mail",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Inbox, sent, outbox and trash", body = Data<Vec<MailFolder>>),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 404, description = "The caller has no mailbox (not provisioned)", body = ErrorBody),
    )
)]
pub fn mail_folders() {}

/// A folder's messages, newest first, without bodies.
#[utoipa::path(
    get,
    path = "/mail/api/v1/folders/{folder}/messages",
    operation_id = "mail_folder_messages",
    tag = "mail",
    params(
        ("folder" = MailFolderId, Path, description = "`inbox`, `sent`, `outbox` or `trash`"),
        MailListQuery,
    ),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "A page of messages", body = DataWithMeta<Vec<MailMessageSummary>, CursorMeta>),
        (status = 400, description = "Unknown query parameter", body = ErrorBody),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 404, description = "No such folder, or the caller has no mailbox", body = ErrorBody),
        (status = 422, description = "Invalid `unread`, `cursor` or `limit`", body = ValidationErrorBody),
    )
)]
pub fn mail_folder_messages() {}

/// Send a message from the caller's address.
///
/// Users of the tenant among the recipients get a copy in their inbox, unread, at once. Other
/// addresses are external: the sender's copy waits in `outbox` with their status `queued`
/// and is handed to the operator's SMTP relay (`TESSERA_SMTP_URL`) by a job, retried after
/// 1, 5 and 30 minutes; once accepted they are `sent` and the copy moves to `sent`, after the
/// last failed attempt they are `failed` and it stays in `outbox` with `last_error`. Without a
/// relay they stay `queued`. With only internal recipients the copy goes straight to `sent`.
/// Emits `mail.sent` `{message_id, sender_id, internal_recipient_ids, external_count}` and
/// `mail.received` `{message_id, recipient_id, copy_id}` per internal recipient.
#[utoipa::path(
    post,
    path = "/mail/api/v1/messages",
    operation_id = "mail_send",
    tag = "mail",
    request_body = MailSend,
    security(("bearer" = [])),
    responses(
        (status = 201, description = "The sender's copy", body = Data<MailMessage>),
        (status = 400, description = "The body is not a JSON object", body = ErrorBody),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 403, description = "Viewers and guests cannot send", body = ErrorBody),
        (status = 404, description = "The caller has no mailbox (not provisioned)", body = ErrorBody),
        (status = 422, description = "`to` (`required`, `array`, `min:1`, `max:100`), `to.N` / `cc.N` (`email`, `string`), `cc` (`array`, `max:N`), `subject` (`string`, `single_line`, `max:998`), `body` (`string`, `max:1000000`)", body = ValidationErrorBody),
    )
)]
pub fn mail_send() {}

/// Show the caller's copy of a message, with its body.
#[utoipa::path(
    get,
    path = "/mail/api/v1/messages/{id}",
    operation_id = "mail_show",
    tag = "mail",
    params(("id" = String, Path, description = "The copy's id")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The message", body = Data<MailMessage>),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 404, description = "No such copy in the caller's mailbox", body = ErrorBody),
    )
)]
pub fn mail_show() {}

/// Mark the caller's copy read or unread, or move it to the trash or back.
#[utoipa::path(
    patch,
    path = "/mail/api/v1/messages/{id}",
    operation_id = "mail_update",
    tag = "mail",
    params(("id" = String, Path, description = "The copy's id")),
    request_body = MailUpdate,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The message", body = Data<MailMessage>),
        (status = 400, description = "The body is not a JSON object", body = ErrorBody),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 403, description = "Viewers and guests cannot change mail", body = ErrorBody),
        (status = 404, description = "No such copy in the caller's mailbox", body = ErrorBody),
        (status = 409, description = "The copy kept changing under concurrent changes; try again", body = ErrorBody),
        (status = 422, description = "`read` (`boolean`), `folder` (`string`, `in`)", body = ValidationErrorBody),
    )
)]
pub fn mail_update() {}

/// Move the caller's copy to the trash, or delete it for good when it is there already.
#[utoipa::path(
    delete,
    path = "/mail/api/v1/messages/{id}",
    operation_id = "mail_delete",
    tag = "mail",
    params(("id" = String, Path, description = "The copy's id")),
    security(("bearer" = [])),
    responses(
        (status = 204, description = "Moved to the trash, or deleted"),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 403, description = "Viewers and guests cannot change mail", body = ErrorBody),
        (status = 404, description = "No such copy in the caller's mailbox", body = ErrorBody),
        (status = 409, description = "The copy kept changing under concurrent changes; try again", body = ErrorBody),
    )
)]
pub fn mail_delete() {}
