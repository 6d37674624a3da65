//! The core's topics and how an event of the log maps to them, with the same rules as the
//! REST reads: `core.timeline` is the tenant's timeline (its `entity.*` events, as
//! `GET /core/api/v1/timeline` lists them, each frame's `data` a timeline item),
//! `core.entity.<id>` the same events of one entity (`GET …/timeline?entity_id=`), and
//! `core.inbox` the caller's inbox: the items the projector puts in it (an assignment, a
//! `send_notification`), each frame's `data` an inbox item, and its read marks
//! (`inbox.item_read`, `data: {item_id}`). Any other `<engine_code>.<name>` is an engine's
//! topic (`engine_topics.rs`): its events come from what the engine's calls published.

use std::sync::Arc;

use serde_json::{Value, json};

use super::engine_topics::{EngineEvent, EngineEventKind, EngineTopicAccess, EngineTopics};
use crate::entities;
use crate::events::StoredEvent;
use crate::feeds::{InboxItem, TimelineItem};
use crate::projections::projector::inbox_address;
use crate::projections::worker::LogPosition;
use tessera_auth::audit::AUDIT_TOPIC;
use tessera_auth::caller::Caller;
use tessera_storage::Database;

/// A core topic.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Topic {
    Timeline,
    Inbox,
    Entity(String),
    /// A topic of the engines' stream, by its full name: an engine's, or `core.audit` (which
    /// the auth service publishes to).
    Engine(String),
}

impl Topic {
    /// The topic a subscription names; `None` for an unknown one (404).
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "core.timeline" => Some(Self::Timeline),
            "core.inbox" => Some(Self::Inbox),
            _ => {
                let id = name.strip_prefix("core.entity.")?;
                let valid = !id.is_empty()
                    && id.len() <= 64
                    && id
                        .bytes()
                        .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_');
                valid.then(|| Self::Entity(id.to_owned()))
            }
        }
    }
}

/// Why a caller may not subscribe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// 403: a guest's core topic other than its inbox.
    Forbidden,
    /// 403: the engine that owns the topic refused.
    ForbiddenByEngine,
    /// 403: `core.audit` for someone other than an owner (as `GET /auth/api/v1/audit`).
    OwnersOnly,
    /// 404: an unknown topic, or an entity the tenant does not have (another tenant's too:
    /// existence is not revealed).
    NotFound,
}

/// Whether `caller` may subscribe to `name`: guests reach only their inbox among the core's
/// topics (as in REST, where `Caller` keeps them to it), and an entity's topic needs the
/// entity in the caller's tenant (as `GET /core/api/v1/entities/{id}`); an engine's topic is
/// the engine's to decide (deny by default), when `engines` are wired in. The same rules
/// decide again when a connected caller's role or type changes.
pub async fn authorize(
    database: &Database,
    engines: Option<&dyn EngineTopics>,
    caller: &Caller,
    name: &str,
) -> Result<Topic, AuthorizeError> {
    let tenant_id = caller.tenant_id.as_str();
    if name == AUDIT_TOPIC {
        // Published by the auth service into the engines' stream, read like an engine's topic.
        return match caller.require_owner() {
            Ok(()) => Ok(Topic::Engine(name.to_owned())),
            Err(_) => Err(Refusal::OwnersOnly.into()),
        };
    }
    if super::engine_topics::is_engine_topic(name) {
        let engines = engines.ok_or(Refusal::NotFound)?;
        return match engines.authorize(caller, name).await? {
            EngineTopicAccess::Allowed => Ok(Topic::Engine(name.to_owned())),
            EngineTopicAccess::Forbidden => Err(Refusal::ForbiddenByEngine.into()),
            EngineTopicAccess::Unknown => Err(Refusal::NotFound.into()),
        };
    }
    let topic = Topic::parse(name).ok_or(Refusal::NotFound)?;
    permits(caller, &topic)?;
    if let Topic::Entity(id) = &topic
        && entities::find(database, tenant_id, id).await?.is_none()
    {
        return Err(Refusal::NotFound.into());
    }
    Ok(topic)
}

/// Whether the caller's role and type allow a topic: the part of [`authorize`] a role change
/// can change. Guests reach only their inbox.
pub fn permits(caller: &Caller, topic: &Topic) -> Result<(), Refusal> {
    if caller.is_guest() && *topic != Topic::Inbox {
        Err(Refusal::Forbidden)
    } else {
        Ok(())
    }
}

/// The status and message of a refusal's `error` frame.
pub fn refusal_answer(refusal: Refusal, name: &str) -> (u16, String) {
    match refusal {
        Refusal::Forbidden => (403, "Guests may subscribe only to core.inbox".to_owned()),
        Refusal::ForbiddenByEngine => (403, format!("Not allowed to subscribe to {name}")),
        Refusal::OwnersOnly => (
            403,
            format!("Only the tenant's owners may subscribe to {name}"),
        ),
        Refusal::NotFound => (404, format!("Unknown topic: {name}")),
    }
}

/// A refusal, or a failure to decide.
#[derive(Debug, thiserror::Error)]
pub enum AuthorizeError {
    #[error("refused: {0:?}")]
    Refused(Refusal),
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl From<Refusal> for AuthorizeError {
    fn from(refusal: Refusal) -> Self {
        Self::Refused(refusal)
    }
}

/// An event of the log made ready for the topics it belongs to, once for every connection.
#[derive(Debug)]
pub struct PreparedEvent {
    pub position: LogPosition,
    pub tenant_id: String,
    pub entity_id: Option<String>,
    pub kind: String,
    pub occurred_at: String,
    /// The timeline item, for `entity.*` events (`core.timeline`, `core.entity.<id>`).
    pub timeline: Option<Value>,
    /// The recipient and the frame's type and data, for events of someone's inbox.
    pub inbox: Option<(String, String, Value)>,
    /// What an engine published (the engines' stream: its position is of that stream).
    pub engine: Option<EngineEvent>,
}

impl PreparedEvent {
    /// The frame's type and data of this event in `topic` for `user_id`, if it belongs there.
    pub fn in_topic(&self, topic: &Topic, user_id: &str) -> Option<(&str, &Value)> {
        match topic {
            Topic::Timeline => self
                .timeline
                .as_ref()
                .map(|data| (self.kind.as_str(), data)),
            Topic::Entity(id) => self
                .timeline
                .as_ref()
                .filter(|_| self.entity_id.as_deref() == Some(id))
                .map(|data| (self.kind.as_str(), data)),
            Topic::Inbox => self
                .inbox
                .as_ref()
                .filter(|(recipient, _, _)| recipient == user_id)
                .map(|(_, kind, data)| (kind.as_str(), data)),
            Topic::Engine(name) => {
                let event = self.engine.as_ref()?;
                let heard = &event.topic == name
                    && event.user_id.as_deref().is_none_or(|only| only == user_id);
                match &event.kind {
                    EngineEventKind::Event { event_type, data } if heard => {
                        Some((event_type.as_str(), data))
                    }
                    _ => None,
                }
            }
        }
    }

    /// Whether this is an engine's event (of the engines' stream) rather than the log's.
    pub fn from_engine(&self) -> bool {
        self.engine.is_some()
    }

    /// The engine topic whose subscriptions of `user_id` this event ends, if it is such an end.
    pub fn ends_subscription_of(&self, user_id: &str) -> Option<&str> {
        let event = self.engine.as_ref()?;
        (event.kind == EngineEventKind::End && event.user_id.as_deref() == Some(user_id))
            .then_some(event.topic.as_str())
    }
}

/// An engine's event made ready for the hub.
pub fn prepare_engine_event(event: EngineEvent) -> Arc<PreparedEvent> {
    let kind = match &event.kind {
        EngineEventKind::Event { event_type, .. } => event_type.clone(),
        EngineEventKind::End => "subscription.ended".to_owned(),
    };
    Arc::new(PreparedEvent {
        position: event.position,
        tenant_id: event.tenant_id.clone(),
        entity_id: None,
        kind,
        occurred_at: event.occurred_at.clone(),
        timeline: None,
        inbox: None,
        engine: Some(event),
    })
}

/// Prepares an event: its timeline item and its inbox item (an assignment's title names the
/// entity's family, read from the entity).
pub async fn prepare(
    database: &Database,
    event: &StoredEvent,
) -> anyhow::Result<Arc<PreparedEvent>> {
    let timeline = if event.event_type.starts_with("entity.") {
        let item = TimelineItem {
            id: event.id.clone(),
            kind: event.event_type.clone(),
            occurred_at: event.occurred_at.clone(),
            entity_id: event.entity_id.clone(),
            actor_id: event.actor_id.clone(),
            data: event.data()?,
        };
        Some(serde_json::to_value(item)?)
    } else {
        None
    };
    let inbox = match inbox_address(event)? {
        Some(address) => {
            let family = match (&address.title, &address.entity_id) {
                (None, Some(entity_id)) => entities::find(database, &event.tenant_id, entity_id)
                    .await?
                    .map(|entity| entity.family_code),
                _ => None,
            };
            let item = InboxItem {
                id: event.id.clone(),
                kind: address.item_type.to_owned(),
                title: address.title(family.as_deref()),
                entity_id: address.entity_id.clone(),
                created_at: event.occurred_at.clone(),
                read_at: None,
            };
            Some((
                address.recipient_id,
                address.item_type.to_owned(),
                serde_json::to_value(item)?,
            ))
        }
        None if event.event_type == "inbox.item_read" => {
            let item_id = event.data()?.get("item_id").cloned().unwrap_or_default();
            event.actor_id.clone().map(|recipient| {
                (
                    recipient,
                    event.event_type.clone(),
                    json!({ "item_id": item_id }),
                )
            })
        }
        None => None,
    };
    Ok(Arc::new(PreparedEvent {
        position: LogPosition::of(event),
        tenant_id: event.tenant_id.clone(),
        entity_id: event.entity_id.clone(),
        kind: event.event_type.clone(),
        occurred_at: event.occurred_at.clone(),
        timeline,
        inbox,
        engine: None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topics_parse_as_the_contract_names_them() {
        assert_eq!(Topic::parse("core.timeline"), Some(Topic::Timeline));
        assert_eq!(Topic::parse("core.inbox"), Some(Topic::Inbox));
        assert_eq!(
            Topic::parse("core.entity.ent_1"),
            Some(Topic::Entity("ent_1".into()))
        );
        assert_eq!(Topic::parse("core.entity."), None);
        assert_eq!(Topic::parse("core.entity.a b"), None);
        assert_eq!(Topic::parse("chat.me"), None);
    }
}
