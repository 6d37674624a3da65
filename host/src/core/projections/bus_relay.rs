//! The bus relay: every event of the core's log, published on the engines' event bus (so the
//! activity engine, or any engine subscribing to `entity.*`, hears about entities). The
//! deliveries are inserted in the same transaction that moves the relay's checkpoint: each
//! event reaches each subscribed engine once, across crashes and several hosts.
//!
//! A bus event carries the log event's id, type, tenant, time, actor and correlation id; its
//! payload is the event's data plus `entity_id`. The relay is not a read model: a rebuild of
//! the projections leaves it where it is (replaying would deliver old events again).

use anyhow::Context as _;

use crate::core::events::StoredEvent;
use crate::core::projections::Projection;
use crate::runtime::bus::{BusEvent, EventBus};
use crate::storage::Tx;

/// Relays the core's events to the engines' bus.
#[derive(Clone)]
pub struct BusRelay {
    pub bus: EventBus,
}

/// The bus event of a log event.
fn bus_event(event: &StoredEvent) -> anyhow::Result<BusEvent> {
    let mut payload: serde_json::Value = serde_json::from_str(&event.data)
        .with_context(|| format!("reading the data of event {}", event.id))?;
    if let (Some(fields), Some(entity_id)) = (payload.as_object_mut(), &event.entity_id) {
        fields.insert("entity_id".to_owned(), entity_id.clone().into());
    }
    Ok(BusEvent {
        id: event.id.clone(),
        event_type: event.event_type.clone(),
        tenant_id: event.tenant_id.clone(),
        occurred_at: event.occurred_at.clone(),
        actor_id: event.actor_id.clone(),
        correlation_id: event
            .correlation_id
            .clone()
            .unwrap_or_else(|| event.id.clone()),
        payload,
    })
}

impl Projection for BusRelay {
    fn name(&self) -> &'static str {
        "bus"
    }

    async fn apply(&self, tx: &mut Tx, events: &[StoredEvent]) -> anyhow::Result<()> {
        let subscriptions = self.bus.subscriptions();
        for event in events {
            // Most events interest no engine: skip building them.
            if subscriptions.subscribers(&event.event_type).is_empty() {
                continue;
            }
            self.bus.publish_in(tx, &bus_event(event)?, None).await?;
        }
        Ok(())
    }

    fn committed(&self) {
        self.bus.wake();
    }

    async fn reset(&self, _tx: &mut Tx) -> anyhow::Result<bool> {
        Ok(false)
    }
}
