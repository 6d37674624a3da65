//! The projector: the inbox (items addressed to one person) of each tenant. (The timeline,
//! one item per `entity.*` event, is read from the log itself: `store/feeds.rs`.)
//!
//! Inbox items come from two kinds of events: an entity's assignment field (`assignee_id`)
//! set to someone other than the actor, and `notification.created` (the workflows'
//! `send_notification` action). Marking an item read appends `inbox.item_read`, so a rebuild
//! restores read marks too. Item ids are the ids of the events that produced them. The SQL is
//! in `store/projector.rs`.

use serde_json::Value;

use super::store::projector::{self as store, InboxInsert};
use crate::events::StoredEvent;
use crate::projections::projection::Projection;
use tessera_storage::Tx;

/// The entity field whose value names the person an entity is assigned to.
pub const ASSIGNEE_FIELD: &str = "assignee_id";

/// The inbox.
#[derive(Debug, Clone, Default)]
pub struct Projector;

impl Projection for Projector {
    fn name(&self) -> &'static str {
        "projector"
    }

    async fn apply(&self, tx: &mut Tx, events: &[StoredEvent]) -> anyhow::Result<()> {
        // Inbox rows and read marks in log order, so a read mark never precedes its item.
        for event in events {
            if let Some(item) = inbox_item(tx, event).await? {
                store::insert_inbox_item(tx, &item).await?;
            } else if event.event_type == "inbox.item_read" {
                let data = event.data()?;
                let item_id = data.get("item_id").and_then(Value::as_str).unwrap_or("");
                store::mark_inbox_item_read(tx, item_id, &event.tenant_id, &event.occurred_at)
                    .await?;
            }
        }
        Ok(())
    }

    async fn reset(&self, tx: &mut Tx) -> anyhow::Result<bool> {
        store::clear(tx).await?;
        Ok(true)
    }
}

/// Whom an event puts an item in the inbox of, and what item: the projector writes it, and
/// realtime's `core.inbox` topic announces it (`realtime/topics.rs`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct InboxAddress {
    pub recipient_id: String,
    /// `entity.assigned` or `notification`.
    pub item_type: &'static str,
    /// The title; `None` for an assignment, whose title names the entity's family.
    pub title: Option<String>,
    pub entity_id: Option<String>,
}

impl InboxAddress {
    /// The item's title, given the family of its entity (assignments name it).
    pub(crate) fn title(&self, family: Option<&str>) -> String {
        match (&self.title, family) {
            (Some(title), _) => title.clone(),
            (None, Some(family)) => format!("A {family} was assigned to you"),
            (None, None) => "Something was assigned to you".to_owned(),
        }
    }
}

/// The inbox item `event` addresses, if any: an entity's assignment field set to someone
/// other than the actor, or a `notification.created`.
pub(crate) fn inbox_address(event: &StoredEvent) -> anyhow::Result<Option<InboxAddress>> {
    match event.event_type.as_str() {
        "entity.field_set" | "entity.field_updated" => {
            let data = event.data()?;
            if data.get("field").and_then(Value::as_str) != Some(ASSIGNEE_FIELD) {
                return Ok(None);
            }
            let value = data.get("value").or_else(|| data.get("new_value"));
            let Some(recipient_id) = value.and_then(Value::as_str) else {
                return Ok(None);
            };
            if recipient_id.is_empty() || Some(recipient_id) == event.actor_id.as_deref() {
                return Ok(None);
            }
            Ok(Some(InboxAddress {
                recipient_id: recipient_id.to_owned(),
                item_type: "entity.assigned",
                title: None,
                entity_id: event.entity_id.clone(),
            }))
        }
        "notification.created" => {
            let data = event.data()?;
            let Some(recipient_id) = data.get("recipient_id").and_then(Value::as_str) else {
                return Ok(None);
            };
            Ok(Some(InboxAddress {
                recipient_id: recipient_id.to_owned(),
                item_type: "notification",
                title: Some(
                    data.get("title")
                        .and_then(Value::as_str)
                        .unwrap_or("Notification")
                        .to_owned(),
                ),
                entity_id: data
                    .get("entity_id")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .or_else(|| event.entity_id.clone()),
            }))
        }
        _ => Ok(None),
    }
}

/// The inbox item `event` produces, if any.
async fn inbox_item(tx: &mut Tx, event: &StoredEvent) -> anyhow::Result<Option<InboxInsert>> {
    let Some(address) = inbox_address(event)? else {
        return Ok(None);
    };
    let family = match address.title {
        Some(_) => None,
        None => entity_family(tx, event).await?,
    };
    Ok(Some(InboxInsert {
        id: event.id.clone(),
        tenant_id: event.tenant_id.clone(),
        title: address.title(family.as_deref()),
        recipient_id: address.recipient_id,
        item_type: address.item_type,
        entity_id: address.entity_id,
        created_at: event.occurred_at.clone(),
    }))
}

/// The family of the event's entity, from its `entity.created` event (earlier in the log, so
/// committed), so a rebuild gives the same titles.
async fn entity_family(tx: &mut Tx, event: &StoredEvent) -> anyhow::Result<Option<String>> {
    let Some(entity_id) = &event.entity_id else {
        return Ok(None);
    };
    let data = store::created_event_data(tx, &event.tenant_id, entity_id).await?;
    Ok(data
        .and_then(|data| serde_json::from_str::<Value>(&data).ok())
        .and_then(|data| {
            data.get("family")
                .and_then(Value::as_str)
                .map(str::to_owned)
        }))
}
