//! Chat's realtime topics (CONTRACT §9), which clients subscribe to as `chat.<topic>`:
//!
//! | topic | who may subscribe | events, `data` |
//! |---|---|---|
//! | `conversation.<id>` | whoever may read the conversation through the REST API: everyone in the tenant for the default conversation, its members and owners for another | `message.created`, `message.updated`, `message.deleted`: the message as the REST API answers it, `body` included; `member.added`, `member.removed`: `{conversation_id, user_id}` |
//! | `me` | every user of the tenant, guests included: each hears only their own events | `conversation.created`, when the user joins a conversation (creates it, is among its first members or is added): the conversation as the REST API answers it, without `member_ids` |
//! | `webhook.<id>` | whoever may read the webhook through the REST API: owners (not guest tokens) | `delivery.updated`, when one of its deliveries is written: created (test pings included), an attempt's outcome recorded, parked while the webhook is disabled or resumed: the delivery as `GET /webhooks/{id}/deliveries` answers it |
//!
//! Who may subscribe is decided in `subscriptions.rs`. A member removed from a conversation has
//! their subscriptions to it ended (an `error` frame with status 403); subscribing again asks
//! again (an owner, who reads every conversation, may). Everything here is published in the call's unit of work, after the
//! change and its webhook deliveries: subscribers hear of a change only if it commits. A
//! delivery written by a conditional storage transaction (parked, resumed) is announced after
//! that transaction committed, never for a round that lost. Unlike webhooks and the event bus,
//! which carry identifiers only, realtime events carry text, and only to subscribers who may
//! read it.
//!
//! `data` stays well under the host's 64 KiB: a message body is at most 10,000 characters, no
//! event lists a conversation's members (a conversation may have any number), and a delivery
//! is announced without its request body.

use serde::Serialize;
use tessera_sdk::{HostError, realtime};

/// The topic patterns chat owns (`describe-topics`).
pub const TOPICS: [&str; 3] = ["conversation.*", ME, "webhook.*"];

/// Each user's own topic.
pub const ME: &str = "me";

/// The topic of conversation `id`.
pub fn conversation_topic(id: &str) -> String {
    format!("conversation.{id}")
}

/// The topic of webhook `id`'s deliveries.
pub fn webhook_topic(id: &str) -> String {
    format!("webhook.{id}")
}

/// Publishes `delivery.updated` with `delivery`, as the REST API answers it, to its webhook's
/// topic.
pub fn delivery_updated<T: Serialize>(webhook_id: &str, delivery: &T) -> Result<(), HostError> {
    realtime::publish(&webhook_topic(webhook_id), "delivery.updated", delivery)
}

/// Publishes `message.created`, `message.updated` or `message.deleted` with the message (as
/// the REST API answers it: as it is now; as it was, for a deletion) to the topic of its
/// conversation.
pub fn message<T: Serialize>(
    event_type: &str,
    conversation_id: &str,
    message: &T,
) -> Result<(), HostError> {
    realtime::publish(&conversation_topic(conversation_id), event_type, message)
}

/// `data` of `member.added` and `member.removed`.
#[derive(Serialize)]
struct Member<'a> {
    conversation_id: &'a str,
    user_id: &'a str,
}

/// Tells each of `user_ids` on their `me` topic that they joined a conversation: `data` is the
/// conversation without its members (a conversation may have any number).
pub fn joined<T: Serialize>(data: &T, user_ids: &[String]) -> Result<(), HostError> {
    for user_id in user_ids {
        realtime::publish_to_user(user_id, ME, "conversation.created", data)?;
    }
    Ok(())
}

/// Publishes `member.added` to the conversation's topic, and tells the new member on `me`
/// (`joined_data` as for [`joined`]).
pub fn member_added<T: Serialize>(
    conversation_id: &str,
    joined_data: &T,
    user_id: &str,
) -> Result<(), HostError> {
    realtime::publish(
        &conversation_topic(conversation_id),
        "member.added",
        &Member {
            conversation_id,
            user_id,
        },
    )?;
    joined(joined_data, &[user_id.to_owned()])
}

/// Publishes `member.removed` to the conversation's topic (the removed member, still
/// subscribed, hears it too), then ends the removed member's subscriptions to it.
pub fn member_removed(conversation_id: &str, user_id: &str) -> Result<(), HostError> {
    let topic = conversation_topic(conversation_id);
    realtime::publish(
        &topic,
        "member.removed",
        &Member {
            conversation_id,
            user_id,
        },
    )?;
    realtime::end_subscriptions(&topic, user_id)
}
