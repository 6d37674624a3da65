//! The Chat engine: a tenant's conversations, messages and members, and the chat webhooks of
//! the API spec (signed deliveries with retries, a dead letter queue and automatic disabling),
//! built only on the engine world's imports: storage, the durable scheduler, outbound HTTP,
//! the vault, the event bus and realtime.
//!
//! Every chat event (`message.*`, `conversation.*`, `member.*`, `notification.created`) is
//! published on the host's bus and becomes one delivery per active webhook subscribed to it,
//! written in the same storage transaction as the change that caused it, together with the job
//! of its first attempt (`changes.rs`). What reads all of a webhook's deliveries (resuming the
//! parked ones when it is enabled again, purging them when it is deleted) runs a chunk per job
//! on the durable scheduler, within the host's scan budget per call (`webhooks/jobs.rs`).
//! Clients follow conversations live on chat's realtime topics, `chat.conversation.<id>` and
//! `chat.me` (`topics.rs`), whose events carry message text where webhooks carry identifiers,
//! and owners follow a webhook's deliveries on `chat.webhook.<id>`.
//!
//! Storage layout (tenant-scoped by the host):
//!
//! | key | value |
//! |---|---|
//! | `tenant`, `users/<user_id>` | provisioning records (`tenancy`) |
//! | `conversations/<id>`, `conversation-slugs/<slug>` | conversations, default-conversation index |
//! | `messages/<conversation_id>/<message_id>` | messages (ids are UUID v7: keys sort by time) |
//! | `webhooks/<id>` | webhooks, secrets sealed by the host's vault |
//! | `webhook-failures/<id>` | consecutive failed attempts (compare-and-swap counter) |
//! | `deliveries/<webhook_id>/<delivery_id>` | deliveries with their request body and state |
//! | `dlq/<delivery_id>` | the dead letter queue (the webhook id) |

mod api;
mod batch;
mod changes;
mod conversations;
mod events;
#[cfg(test)]
mod realtime_tests;
mod subscriptions;
mod topics;
mod webhooks;

use conversations::{MAX_BODY_CHARS, MAX_INITIAL_MEMBERS, MAX_MENTIONS, MAX_TITLE_CHARS};
use tessera_sdk::serde_json::{Map, Value, json};
use tessera_sdk::{
    ApiError, Context, Descriptor, Engine, HostError, Job, Operation, Request, Router, TenantInfo,
    storage, tenancy, time,
};
use webhooks::{MAX_SECRET_CHARS, MAX_URL_CHARS, MAX_WEBHOOKS, MIN_SECRET_CHARS};

/// The engine code, also its path prefix.
const CODE: &str = "chat";

/// The `id` of the conversation routes.
const CONVERSATION_ID: &str = "The conversation id";
/// The `id` of the webhook routes.
const WEBHOOK_ID: &str = "The webhook id";
/// The 403 of the routes that write to a conversation.
const MAY_NOT_WRITE: &str = "The caller may not write to this conversation (viewers and guest \
     tokens may not write; a conversation other than the default one is open to its members \
     and to owners)";
/// The 403 of the webhook routes.
const NOT_OWNER: &str = "The caller is not an owner of the tenant (or uses a guest token)";
/// The 404 of a webhook route.
const NO_WEBHOOK: &str = "No such webhook in the caller's tenant";
/// The 409 of the webhook routes that change one (PATCH, secret rotation).
const WEBHOOK_KEPT_CHANGING: &str = "The webhook kept changing under concurrent requests and \
     deliveries while this one was applied; nothing was changed, try again";
/// The 400 of the routes that read a JSON body.
const BODY_400: &str = "Malformed request: a query parameter (none is accepted), or a body that \
     is not a JSON object";

/// The description of `POST /api/v1/webhooks`: how deliveries are made.
const WEBHOOK_CREATE_DESCRIPTION: &str = "\
**Delivery format.** Each subscribed event is POSTed to `url` with \
`Content-Type: application/json` and the headers:

- `X-Service-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, \"<t>.<body>\")>`; during \
  a secret rotation (24 hours after a PATCH changing `secret`) it carries two `v1` entries, \
  one per secret;
- `X-Webhook-Event`: the event type;
- `X-Webhook-Delivery`: the delivery id, the same on every attempt (receivers use it to \
  ignore repeats).

The body is `{id, event_type, tenant_id, occurred_at, data: {conversation_id, message_id?, \
user_id?}}`: identifiers only, never message text; fetch the resources through the API.

**Retries.** A 2xx answer within 10 seconds is a success. The first attempt is made at once, \
then retries follow `TESSERA_WEBHOOK_RETRY_SCHEDULE` (default `30s, 2m, 10m, 30m`); a \
delivery failing all of them moves to the dead letter queue (`/chat/api/v1/webhooks/dlq`). \
10 consecutive failed attempts disable the webhook (`is_active: false`) until a PATCH \
re-enables it; the retries that come due meanwhile wait, and resume on the re-enabling.

A tenant has at most 100 webhooks (409 beyond).";

/// The description of `PATCH /api/v1/webhooks/{id}`.
const WEBHOOK_UPDATE_DESCRIPTION: &str = "\
Every field is optional; `updated_at` changes. A new `secret` does not cut the old one \
off: both sign deliveries (two `v1` entries) for 24 hours. `is_active: true` re-enables a \
webhook disabled after consecutive failures, resets its failure count, and resumes the \
retries that waited meanwhile, all committed together. The change applies to the webhook as \
it is when it commits: one disabled by a delivery, changed or deleted by another request in \
between is read again, and the change decided again (the webhook gone: 404). When it keeps \
changing for 16 rounds the request gives up with 409.";

struct Chat;

impl Engine for Chat {
    fn describe() -> Descriptor {
        Descriptor::new(CODE, "Chat", env!("CARGO_PKG_VERSION"))
            .tenant_provision(true)
            .user_provision(true)
            // Webhook deliveries to the URLs customers register.
            .outbound_hosts(&["https://*:*"])
    }

    fn topics() -> Vec<String> {
        topics::TOPICS.map(String::from).to_vec()
    }

    fn authorize_subscription(caller: &Context, topic: &str) -> bool {
        subscriptions::authorize(caller, topic)
    }

    fn router() -> Router {
        Router::new()
            .get("/api/v1/status", |ctx, req| tenancy::status(CODE, ctx, req))
            .doc(tenancy::status_operation())
            .get("/api/v1/conversations", conversations::list)
            .doc(
                Operation::new("List the conversations the caller can read")
                    .description(
                        "The tenant's default conversation, those the caller is a member of, \
                         and (for owners) every conversation of the tenant.",
                    )
                    .query::<api::PageQuery>()
                    .page::<api::Conversation>()
                    .invalid("Invalid `cursor` or `limit`"),
            )
            .post("/api/v1/conversations", conversations::create)
            .doc(
                Operation::new("Create a conversation")
                    .description(
                        "The caller becomes its first member. Emits `conversation.created`, \
                         and publishes it to each member's realtime topic `chat.me`.",
                    )
                    .body::<api::ConversationCreate>()
                    .created::<api::Conversation>()
                    .error(400, BODY_400)
                    .error(403, "Viewers and guest tokens cannot create conversations")
                    .invalid(&format!(
                        "Invalid fields: `title` (`required`, `string`, `max:{MAX_TITLE_CHARS}`), \
                         `member_ids` (`array`, `max:{MAX_INITIAL_MEMBERS}`), `member_ids.N` \
                         (`string`, `exists`)"
                    )),
            )
            .get("/api/v1/conversations/{id}", conversations::show)
            .doc(
                Operation::new("Show a conversation")
                    .path_parameter("id", CONVERSATION_ID)
                    .ok::<api::Conversation>()
                    .error(403, "The caller may not read this conversation")
                    .error(404, "No such conversation"),
            )
            .patch("/api/v1/conversations/{id}", conversations::update)
            .doc(
                Operation::new("Rename a conversation")
                    .description("Emits `conversation.updated`.")
                    .path_parameter("id", CONVERSATION_ID)
                    .body::<api::ConversationUpdate>()
                    .ok::<api::Conversation>()
                    .error(400, BODY_400)
                    .error(403, MAY_NOT_WRITE)
                    .error(404, "No such conversation")
                    .invalid(&format!(
                        "Invalid `title` (`required`, `string`, `max:{MAX_TITLE_CHARS}`)"
                    )),
            )
            .get(
                "/api/v1/conversations/{id}/messages",
                conversations::messages,
            )
            .doc(
                Operation::new("List the messages of a conversation, oldest first")
                    .path_parameter("id", CONVERSATION_ID)
                    .query::<api::PageQuery>()
                    .page::<api::Message>()
                    .error(403, "The caller may not read this conversation")
                    .error(404, "No such conversation")
                    .invalid("Invalid `cursor` or `limit`"),
            )
            .post(
                "/api/v1/conversations/{id}/messages",
                conversations::post_message,
            )
            .doc(
                Operation::new("Post a message")
                    .description(&format!(
                        "Emits `message.created`, and `notification.created` for each user \
                         mentioned as `@<user_id>` (at most {MAX_MENTIONS} per message). The \
                         message is published to the realtime topic `chat.conversation.<id>`."
                    ))
                    .path_parameter("id", CONVERSATION_ID)
                    .body::<api::MessageBody>()
                    .created::<api::Message>()
                    .error(400, BODY_400)
                    .error(403, MAY_NOT_WRITE)
                    .error(404, "No such conversation")
                    .invalid(&format!(
                        "Invalid `body` (`required`, `string`, `max:{MAX_BODY_CHARS}`)"
                    )),
            )
            .patch(
                "/api/v1/conversations/{id}/messages/{message_id}",
                conversations::edit_message,
            )
            .doc(
                Operation::new("Edit a message (its author only)")
                    .description(
                        "Emits `message.updated`, and publishes the message to the realtime \
                         topic `chat.conversation.<id>`.",
                    )
                    .path_parameter("id", CONVERSATION_ID)
                    .path_parameter("message_id", "The message id")
                    .body::<api::MessageBody>()
                    .ok::<api::Message>()
                    .error(400, BODY_400)
                    .error(
                        403,
                        "The caller may not write to this conversation, or is not the message's \
                         author",
                    )
                    .error(404, "No such conversation or message")
                    .invalid(&format!(
                        "Invalid `body` (`required`, `string`, `max:{MAX_BODY_CHARS}`)"
                    )),
            )
            .delete(
                "/api/v1/conversations/{id}/messages/{message_id}",
                conversations::delete_message,
            )
            .doc(
                Operation::new("Delete a message (its author or an owner)")
                    .description(
                        "Emits `message.deleted`, and publishes the message as it was to the \
                         realtime topic `chat.conversation.<id>`.",
                    )
                    .path_parameter("id", CONVERSATION_ID)
                    .path_parameter("message_id", "The message id")
                    .no_content()
                    .error(
                        403,
                        "The caller may not write to this conversation, or is neither the \
                         message's author nor an owner",
                    )
                    .error(404, "No such conversation or message"),
            )
            .post(
                "/api/v1/conversations/{id}/members",
                conversations::add_member,
            )
            .doc(
                Operation::new("Add a member to a conversation")
                    .description(
                        "Emits `member.added`, publishes it to the realtime topic \
                         `chat.conversation.<id>` and `conversation.created` to the new member's \
                         `chat.me`.",
                    )
                    .path_parameter("id", CONVERSATION_ID)
                    .body::<api::MemberAdd>()
                    .created::<api::Membership>()
                    .error(400, BODY_400)
                    .error(403, MAY_NOT_WRITE)
                    .error(404, "No such conversation")
                    .error(409, "The user is already a member")
                    .invalid(
                        "Missing `user_id` (rule `required`), not a string (`string`), or no \
                         such user in the tenant (`exists`)",
                    ),
            )
            .delete(
                "/api/v1/conversations/{id}/members/{user_id}",
                conversations::remove_member,
            )
            .doc(
                Operation::new("Remove a member from a conversation")
                    .description(
                        "Emits `member.removed`, publishes it to the realtime topic \
                         `chat.conversation.<id>`, and ends the removed member's subscriptions \
                         to that topic.",
                    )
                    .path_parameter("id", CONVERSATION_ID)
                    .path_parameter("user_id", "The member's user id")
                    .no_content()
                    .error(403, MAY_NOT_WRITE)
                    .error(404, "No such conversation, or the user is not a member"),
            )
            .get("/api/v1/webhooks", webhooks::list)
            .doc(
                Operation::new("List the tenant's webhooks (owners only)")
                    .answers::<Vec<api::Webhook>>(
                        200,
                        "Every webhook of the tenant, without secrets",
                    )
                    .error(403, NOT_OWNER),
            )
            .post("/api/v1/webhooks", webhooks::create)
            .doc(
                Operation::new("Create a webhook (owners only)")
                    .audited("webhook.created")
                    .description(WEBHOOK_CREATE_DESCRIPTION)
                    .body::<api::WebhookCreate>()
                    .answers::<api::CreatedWebhook>(
                        201,
                        "The webhook, with its secret (the only time it is shown)",
                    )
                    .error(400, BODY_400)
                    .error(403, NOT_OWNER)
                    .error(
                        409,
                        &format!(
                            "The tenant already has {MAX_WEBHOOKS} webhooks, the most it may have"
                        ),
                    )
                    .invalid(&format!(
                        "Invalid fields: `url` (`required`, `string`, `max:{MAX_URL_CHARS}`, \
                         `https`, `url`, `not_private`), `events` (`required`, `array`), \
                         `events.N` (`in`), `secret` (`required`, `string`, \
                         `min:{MIN_SECRET_CHARS}`, `max:{MAX_SECRET_CHARS}`)"
                    )),
            )
            .get("/api/v1/webhooks/dlq", webhooks::delivery::dead_letters)
            .doc(
                Operation::new(
                    "List the dead letter queue: deliveries that exhausted their automatic \
                     attempts (owners only)",
                )
                .description(
                    "Newest first. Items of a deleted webhook are left out (its deletion \
                     purges them).",
                )
                .query::<api::PageQuery>()
                .page::<api::DeadLetter>()
                .error(403, NOT_OWNER)
                .invalid("Invalid `cursor` or `limit`"),
            )
            .post(
                "/api/v1/webhooks/dlq/{id}/retry",
                webhooks::delivery::retry_dead_letter,
            )
            .doc(
                Operation::new("Retry a dead letter now (owners only)")
                    .audited("dead_letter.replayed")
                    .description(
                        "One immediate attempt; a success removes the item from the dead \
                         letter queue.",
                    )
                    .path_parameter("id", "The dead letter's (delivery) id")
                    .answers::<api::DeadLetterRetry>(200, "The attempt's outcome")
                    .error(403, NOT_OWNER)
                    .error(404, "No such dead letter"),
            )
            .get("/api/v1/webhooks/{id}", webhooks::show)
            .doc(
                Operation::new("Show a webhook (owners only)")
                    .path_parameter("id", WEBHOOK_ID)
                    .answers::<api::Webhook>(200, "The webhook, without its secret")
                    .error(403, NOT_OWNER)
                    .error(404, NO_WEBHOOK),
            )
            .patch("/api/v1/webhooks/{id}", webhooks::update)
            .doc(
                Operation::new("Update a webhook (owners only)")
                    .audited("webhook.updated")
                    .description(WEBHOOK_UPDATE_DESCRIPTION)
                    .path_parameter("id", WEBHOOK_ID)
                    .body::<api::WebhookUpdate>()
                    .answers::<api::Webhook>(200, "The webhook, without its secret")
                    .error(400, BODY_400)
                    .error(403, NOT_OWNER)
                    .error(404, NO_WEBHOOK)
                    .error(409, WEBHOOK_KEPT_CHANGING)
                    .invalid(
                        "Invalid fields, with the rules of creation (a field given as null is \
                         `required`); `is_active` (`boolean`)",
                    ),
            )
            .delete("/api/v1/webhooks/{id}", webhooks::destroy)
            .doc(
                Operation::new("Delete a webhook (owners only)")
                    .audited("webhook.deleted")
                    .description(
                        "Its pending deliveries and its delivery history are discarded. Of \
                         deletions racing, one answers 204 and the others 404; a concurrent \
                         update never brings the webhook back.",
                    )
                    .path_parameter("id", WEBHOOK_ID)
                    .no_content()
                    .error(403, NOT_OWNER)
                    .error(404, NO_WEBHOOK)
                    .error(
                        409,
                        "The webhook kept changing under concurrent requests and deliveries \
                         while it was being deleted; nothing was deleted, try again",
                    ),
            )
            .post("/api/v1/webhooks/{id}/secret", webhooks::rotate_secret)
            .doc(
                Operation::new("Rotate a webhook's signing secret (owners only)")
                    .audited("webhook.secret_rotated")
                    .description(
                        "The new secret signs every delivery from now on; the replaced one keeps \
                         signing beside it for 24 hours (a second entry in `webhook-signature` \
                         and a second `v1=` in `X-Service-Signature`), so receivers can switch \
                         without losing a delivery. The answer is the only one that shows the \
                         new secret.",
                    )
                    .path_parameter("id", WEBHOOK_ID)
                    .body::<api::WebhookSecret>()
                    .answers::<api::CreatedWebhook>(200, "The webhook, with its new secret")
                    .error(400, BODY_400)
                    .error(403, NOT_OWNER)
                    .error(404, NO_WEBHOOK)
                    .error(409, WEBHOOK_KEPT_CHANGING)
                    .invalid("`secret`: `required`, `min:32`, `max:256`"),
            )
            .post("/api/v1/webhooks/{id}/test", webhooks::delivery::test_ping)
            .doc(
                Operation::new("Send a `test.ping` delivery to a webhook now (owners only)")
                    .audited("webhook.tested")
                    .description("One synchronous attempt, never retried automatically.")
                    .path_parameter("id", WEBHOOK_ID)
                    .answers::<api::DeliveryAttempt>(200, "The attempt's outcome")
                    .error(403, NOT_OWNER)
                    .error(404, NO_WEBHOOK),
            )
            .get(
                "/api/v1/webhooks/{id}/deliveries",
                webhooks::delivery::deliveries,
            )
            .doc(
                Operation::new("List a webhook's deliveries, newest first (owners only)")
                    .description(
                        "Each delivery as it is now. To follow them live, subscribe to the \
                         realtime topic `chat.webhook.{id}`: every write of a delivery (created, \
                         an attempt's outcome, parked, resumed) sends `delivery.updated` with \
                         the delivery in this shape.",
                    )
                    .path_parameter("id", WEBHOOK_ID)
                    .query::<api::DeliveriesQuery>()
                    .page::<api::Delivery>()
                    .error(403, NOT_OWNER)
                    .error(404, NO_WEBHOOK)
                    .invalid("Unknown `status` (rule `in`), or invalid `cursor` or `limit`"),
            )
            .post(
                "/api/v1/webhooks/{id}/deliveries/{delivery_id}/retry",
                webhooks::delivery::retry_delivery,
            )
            .doc(
                Operation::new("Retry a delivery now (owners only)")
                    .audited("delivery.retried")
                    .description("One immediate attempt, outside the automatic schedule.")
                    .path_parameter("id", WEBHOOK_ID)
                    .path_parameter("delivery_id", "The delivery id")
                    .answers::<api::DeliveryAttempt>(200, "The attempt's outcome")
                    .error(403, NOT_OWNER)
                    .error(404, "No such webhook or delivery"),
            )
    }

    fn provision_tenant(tenant: &TenantInfo) -> Result<(), String> {
        ensure_conversation("general", "General")?;
        tenancy::record_tenant(tenant)?;
        Ok(())
    }

    fn run_job(job: &Job) -> Result<(), String> {
        webhooks::jobs::run(job)
    }
}

/// Creates the default conversation `slug` once. The slug index is written before the
/// conversation, so a provisioning retried after a failure finds the id and reuses it.
fn ensure_conversation(slug: &str, title: &str) -> Result<String, HostError> {
    let index_key = format!("conversation-slugs/{slug}");
    let id = match storage::get_json::<String>(&index_key)? {
        Some(id) => id,
        None => {
            let id = time::new_id();
            storage::put_json(&index_key, &id)?;
            id
        }
    };
    storage::put_json_if_absent(&format!("conversations/{id}"), || {
        let now = time::now_rfc3339();
        json!({
            "id": id,
            "slug": slug,
            "title": title,
            "is_default": true,
            "member_ids": Value::Array(Vec::new()),
            "created_by": Value::Null,
            "created_at": now,
            "updated_at": now,
        })
    })?;
    Ok(id)
}

/// The request body as a JSON object: 400 when it is not JSON or not an object.
fn object_body(req: &Request) -> Result<Map<String, Value>, ApiError> {
    match req.json::<Value>()? {
        Value::Object(map) => Ok(map),
        _ => Err(ApiError::BadRequest(
            "The request body must be a JSON object.".into(),
        )),
    }
}

/// A new identifier that sorts by creation time (UUID v7), so storage keys built from it list
/// in the order things happened.
fn new_ordered_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

tessera_sdk::export_engine!(Chat);

#[cfg(test)]
mod tests {
    use tessera_sdk::serde_json::Value;

    use super::*;

    /// Every route of the chat API, as `METHOD path` relative to the engine's prefix.
    const ROUTES: [&str; 22] = [
        "GET /api/v1/status",
        "GET /api/v1/conversations",
        "POST /api/v1/conversations",
        "GET /api/v1/conversations/{id}",
        "PATCH /api/v1/conversations/{id}",
        "GET /api/v1/conversations/{id}/messages",
        "POST /api/v1/conversations/{id}/messages",
        "PATCH /api/v1/conversations/{id}/messages/{message_id}",
        "DELETE /api/v1/conversations/{id}/messages/{message_id}",
        "POST /api/v1/conversations/{id}/members",
        "DELETE /api/v1/conversations/{id}/members/{user_id}",
        "GET /api/v1/webhooks",
        "POST /api/v1/webhooks",
        "GET /api/v1/webhooks/dlq",
        "POST /api/v1/webhooks/dlq/{id}/retry",
        "GET /api/v1/webhooks/{id}",
        "PATCH /api/v1/webhooks/{id}",
        "DELETE /api/v1/webhooks/{id}",
        "POST /api/v1/webhooks/{id}/secret",
        "POST /api/v1/webhooks/{id}/test",
        "GET /api/v1/webhooks/{id}/deliveries",
        "POST /api/v1/webhooks/{id}/deliveries/{delivery_id}/retry",
    ];

    /// The JSON pointer of a request body's or an answer's JSON schema, below it.
    const JSON_SCHEMA: &str = "content/application~1json/schema";

    fn document() -> Value {
        Chat::router().openapi()
    }

    fn schema<'a>(document: &'a Value, name: &str) -> &'a Value {
        let schema = &document["components"]["schemas"][name];
        assert!(schema.is_object(), "no schema {name}");
        schema
    }

    fn required(schema: &Value) -> Vec<&str> {
        schema["required"]
            .as_array()
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }

    #[test]
    fn every_route_is_documented_with_a_summary_and_a_success() {
        let document = document();
        let paths = document["paths"].as_object().expect("paths");
        let documented: usize = paths
            .values()
            .map(|item| item.as_object().map_or(0, |item| item.len()))
            .sum();
        assert_eq!(documented, ROUTES.len(), "{:?}", paths.keys());
        for route in ROUTES {
            let (method, path) = route.split_once(' ').unwrap();
            let operation = &document["paths"][path][method.to_ascii_lowercase()];
            assert!(operation.is_object(), "{route} is not documented");
            let summary = operation["summary"].as_str().unwrap_or("");
            assert!(
                !summary.is_empty() && summary != route,
                "{route} has no summary of its own"
            );
            let responses = operation["responses"].as_object().expect("responses");
            assert!(
                responses.keys().any(|status| status.starts_with('2')),
                "{route} documents no success"
            );
            for name in path.split('/').filter_map(|segment| {
                segment
                    .strip_prefix('{')
                    .and_then(|rest| rest.strip_suffix('}'))
            }) {
                let parameter = operation["parameters"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|parameter| parameter["name"] == name && parameter["in"] == "path")
                    .unwrap_or_else(|| panic!("{route}: no path parameter {name}"));
                assert!(
                    parameter["description"].is_string(),
                    "{route}: {name} is not described"
                );
            }
        }
    }

    #[test]
    fn answers_and_errors_follow_the_handlers() {
        let document = document();
        let operation = |method: &str, path: &str| document["paths"][path][method].clone();
        let create = operation("post", "/api/v1/conversations");
        assert_eq!(
            create["requestBody"]["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/ConversationCreate"
        );
        assert_eq!(
            create.pointer(&format!(
                "/responses/201/{JSON_SCHEMA}/properties/data/$ref"
            )),
            Some(&"#/components/schemas/Conversation".into())
        );
        assert!(
            operation("post", "/api/v1/conversations/{id}/members")["responses"]["409"].is_object()
        );
        for (method, path) in [
            ("post", "/api/v1/webhooks"),
            ("patch", "/api/v1/webhooks/{id}"),
        ] {
            assert!(
                operation(method, path)["responses"]["409"].is_object(),
                "{path}"
            );
        }
        let messages = operation("get", "/api/v1/conversations/{id}/messages");
        assert_eq!(
            messages.pointer(&format!(
                "/responses/200/{JSON_SCHEMA}/properties/data/items/$ref"
            )),
            Some(&"#/components/schemas/Message".into())
        );
        assert!(operation("delete", "/api/v1/webhooks/{id}")["responses"]["204"].is_object());
        let deliveries = operation("get", "/api/v1/webhooks/{id}/deliveries");
        let query: Vec<&str> = deliveries["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|parameter| parameter["in"] == "query")
            .filter_map(|parameter| parameter["name"].as_str())
            .collect();
        assert_eq!(query, ["cursor", "limit", "status"]);
        let limit = deliveries["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|parameter| parameter["name"] == "limit")
            .unwrap();
        assert_eq!(limit["required"], false);
        assert_eq!(limit["schema"]["type"], "integer");
        assert_eq!(limit["schema"]["minimum"], 1);
        assert_eq!(limit["schema"]["default"], 50);
    }

    #[test]
    fn schemas_carry_the_handlers_rules() {
        let document = document();
        let create = schema(&document, "ConversationCreate");
        assert_eq!(required(create), ["title"]);
        assert_eq!(create["properties"]["title"]["minLength"], 1);
        assert_eq!(create["properties"]["title"]["maxLength"], 200);
        assert_eq!(create["properties"]["member_ids"]["maxItems"], 500);
        assert_eq!(
            schema(&document, "MessageBody")["properties"]["body"]["maxLength"],
            10_000
        );

        let conversation = schema(&document, "Conversation");
        for field in ["slug", "created_by"] {
            assert!(required(conversation).contains(&field), "{field}");
            assert_eq!(
                conversation["properties"][field]["type"],
                tessera_sdk::serde_json::json!(["string", "null"]),
                "{field}"
            );
        }

        let events: Vec<&str> = schema(&document, "WebhookEvent")["enum"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(events, events::SUBSCRIBABLE);
        let statuses = &schema(&document, "DeliveryStatus")["enum"];
        assert_eq!(statuses.as_array().unwrap().len(), 3);
        assert!(statuses.as_array().unwrap().contains(&"pending".into()));

        let create = schema(&document, "WebhookCreate");
        assert_eq!(required(create), ["url", "events", "secret"]);
        let url_pattern = create["properties"]["url"]["pattern"].as_str().unwrap();
        assert!(
            url_pattern.contains("[Hh][Tt][Tt][Pp][Ss]://"),
            "{url_pattern}"
        );
        assert_eq!(create["properties"]["url"]["maxLength"], 2048);
        assert_eq!(create["properties"]["events"]["minItems"], 1);
        assert_eq!(create["properties"]["secret"]["minLength"], 32);
        assert_eq!(create["properties"]["secret"]["maxLength"], 256);

        // Every field of an update is optional, and none accepts null.
        let update = schema(&document, "WebhookUpdate");
        assert!(required(update).is_empty());
        let properties = update["properties"].as_object().unwrap();
        assert_eq!(properties.len(), 4);
        for (name, property) in properties {
            assert!(
                property["type"].is_string(),
                "{name} is nullable: {property}"
            );
        }
        assert_eq!(properties["secret"]["minLength"], 32);
        assert_eq!(properties["events"]["minItems"], 1);
    }
}
