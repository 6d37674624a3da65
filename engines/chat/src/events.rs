//! Chat events: what happened, as identifiers only, the event types a webhook may subscribe to,
//! and [`publish`], which puts events on the host's bus for other engines. Staging their webhook
//! deliveries with the change that caused them is `changes.rs`'s.

use tessera_sdk::serde_json::{Map, Value};
use tessera_sdk::{HostError, events, time};

/// The event types a webhook may subscribe to.
pub const SUBSCRIBABLE: [&str; 8] = [
    "message.created",
    "message.updated",
    "message.deleted",
    "notification.created",
    "conversation.created",
    "conversation.updated",
    "member.added",
    "member.removed",
];

/// The event type of the test endpoint's delivery.
pub const TEST_PING: &str = "test.ping";

/// One chat event.
#[derive(Debug, Clone)]
pub struct ChatEvent {
    pub event_type: &'static str,
    pub conversation_id: Option<String>,
    pub message_id: Option<String>,
    pub user_id: Option<String>,
    /// RFC 3339 UTC.
    pub occurred_at: String,
}

impl ChatEvent {
    pub fn new(event_type: &'static str, conversation_id: &str) -> Self {
        Self {
            event_type,
            conversation_id: Some(conversation_id.to_owned()),
            message_id: None,
            user_id: None,
            occurred_at: time::now_rfc3339(),
        }
    }

    pub fn message(mut self, message_id: &str) -> Self {
        self.message_id = Some(message_id.to_owned());
        self
    }

    pub fn user(mut self, user_id: &str) -> Self {
        self.user_id = Some(user_id.to_owned());
        self
    }

    /// The `data` of a delivery and of the bus event: `conversation_id` always (null for a
    /// test ping), `message_id` and `user_id` when the event has them. Never any text.
    pub fn data(&self) -> Value {
        let mut data = Map::new();
        data.insert(
            "conversation_id".into(),
            self.conversation_id
                .clone()
                .map_or(Value::Null, Value::String),
        );
        if let Some(message_id) = &self.message_id {
            data.insert("message_id".into(), Value::String(message_id.clone()));
        }
        if let Some(user_id) = &self.user_id {
            data.insert("user_id".into(), Value::String(user_id.clone()));
        }
        Value::Object(data)
    }
}

/// Publishes `chat_events` on the host's bus, in the call's unit of work (with their change).
pub fn publish(chat_events: &[ChatEvent]) -> Result<(), HostError> {
    for event in chat_events {
        events::publish(event.event_type, &event.data())?;
    }
    Ok(())
}
