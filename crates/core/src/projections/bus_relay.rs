//! The bus relay: every event of the core's log, published on the engines' event bus (so the
//! activity engine, or any engine subscribing to `entity.*`, hears about entities). The
//! deliveries are inserted in the same transaction that moves the relay's checkpoint: each
//! event reaches each subscribed engine once, across crashes and several hosts.
//!
//! A bus event carries the log event's id, type, tenant, time, actor and correlation id; its
//! payload is the event's data plus `entity_id`. The relay is not a read model: a rebuild of
//! the projections leaves it where it is (replaying would deliver old events again).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::events::StoredEvent;
use crate::projections::projection::Projection;
use tessera_storage::Tx;

/// Where the relay hands the log's events: the engines' event bus, which the app wires in
/// (the core never links the engine runtime).
pub trait EventSink: Send + Sync + 'static {
    /// True when some engine subscribes to `event_type` (the relay skips the others).
    fn subscribed(&self, event_type: &str) -> bool;

    /// Stores the deliveries of `events` (in log order) in `tx`, with few statements for the
    /// whole batch: each carries the event's id, type, tenant, time, actor and correlation id
    /// (its own id when it has none), its data plus `entity_id` as the payload.
    fn publish_in<'a>(
        &'a self,
        tx: &'a mut Tx,
        events: Vec<&'a StoredEvent>,
    ) -> Pin<Box<dyn Future<Output = anyhow::Result<()>> + Send + 'a>>;

    /// After the deliveries' transaction committed: wake whoever runs them.
    fn committed(&self);
}

#[derive(Clone)]
pub struct BusRelay {
    pub sink: Arc<dyn EventSink>,
}

impl Projection for BusRelay {
    fn name(&self) -> &'static str {
        "bus"
    }

    async fn apply(&self, tx: &mut Tx, events: &[StoredEvent]) -> anyhow::Result<()> {
        // Most events interest no engine: skip building them.
        let subscribed: Vec<&StoredEvent> = events
            .iter()
            .filter(|event| self.sink.subscribed(&event.event_type))
            .collect();
        if subscribed.is_empty() {
            return Ok(());
        }
        self.sink.publish_in(tx, subscribed).await
    }

    fn committed(&self) {
        self.sink.committed();
    }

    async fn reset(&self, _tx: &mut Tx) -> anyhow::Result<bool> {
        Ok(false)
    }
}
