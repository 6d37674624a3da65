//! The host's event bus: an event published in a tenant (by an engine through the `events`
//! import, or by the host) becomes one durable delivery per subscribed engine, run by the work
//! worker (`on-event`) with retries. Subscriptions come from each loaded engine's `describe`.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use chrono::Utc;

use super::bindings::v0_2::tessera::engine::types as wit;
use super::work::{MAX_PAYLOAD_BYTES, NewWork, WorkKind, WorkQueue};

/// An event as the bus stores and delivers it: `tessera-wire`'s, the type engines receive.
pub type BusEvent = tessera_wire::engine::Event;

/// The WIT record of `event`, for `on-event`.
pub fn event_to_wit(event: &BusEvent) -> wit::Event {
    wit::Event {
        id: event.id.clone(),
        event_type: event.event_type.clone(),
        tenant_id: event.tenant_id.clone(),
        occurred_at: event.occurred_at.clone(),
        actor_id: event.actor_id.clone(),
        correlation_id: event.correlation_id.clone(),
        payload: event.payload.to_string(),
    }
}

/// Event types are 1 to 100 characters of lower-case letters, digits, `.`, `_` and `-`,
/// starting with a letter (`message.created`).
pub fn check_event_type(event_type: &str) -> Result<(), String> {
    let well_formed = (1..=100).contains(&event_type.len())
        && event_type.as_bytes()[0].is_ascii_lowercase()
        && event_type
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b));
    if well_formed {
        Ok(())
    } else {
        Err(format!(
            "{event_type:?} is not an event type (1-100 lower-case letters, digits, '.', '_' or '-', starting with a letter)"
        ))
    }
}

/// Whether a subscription pattern takes an event type: the exact type, `prefix.*` for every
/// type under `prefix.`, or `*` for all.
pub fn pattern_matches(pattern: &str, event_type: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some("") => true,
        Some(prefix) if prefix.ends_with('.') => event_type.starts_with(prefix),
        _ => pattern == event_type,
    }
}

/// Which engine subscribes to what, kept in step with the registry.
#[derive(Clone, Default)]
pub struct Subscriptions {
    by_engine: Arc<RwLock<BTreeMap<String, Vec<String>>>>,
}

impl Subscriptions {
    pub fn set(&self, engine_code: &str, patterns: Vec<String>) {
        self.by_engine
            .write()
            .expect("subscriptions lock")
            .insert(engine_code.to_owned(), patterns);
    }

    pub fn remove(&self, engine_code: &str) {
        self.by_engine
            .write()
            .expect("subscriptions lock")
            .remove(engine_code);
    }

    /// The engines subscribed to `event_type`, by code.
    pub fn subscribers(&self, event_type: &str) -> Vec<String> {
        self.by_engine
            .read()
            .expect("subscriptions lock")
            .iter()
            .filter(|(_, patterns)| {
                patterns
                    .iter()
                    .any(|pattern| pattern_matches(pattern, event_type))
            })
            .map(|(code, _)| code.clone())
            .collect()
    }
}

/// Publishes events; cheap to clone.
#[derive(Clone)]
pub struct EventBus {
    queue: WorkQueue,
    subscriptions: Subscriptions,
}

impl EventBus {
    pub fn new(queue: WorkQueue) -> Self {
        Self {
            queue,
            subscriptions: Subscriptions::default(),
        }
    }

    pub fn subscriptions(&self) -> &Subscriptions {
        &self.subscriptions
    }

    /// Stores one delivery per subscribed engine, except `publisher` (an engine does not
    /// receive its own events); returns how many.
    pub async fn publish(
        &self,
        event: &BusEvent,
        publisher: Option<&str>,
    ) -> anyhow::Result<usize> {
        let deliveries = self.deliveries(event, publisher)?;
        self.queue.enqueue(&deliveries).await?;
        Ok(deliveries.len())
    }

    /// [`publish`](Self::publish) of many events inside `tx` (their deliveries inserted
    /// together, a hundred rows a statement); returns how many. Call [`wake`](Self::wake) once
    /// it committed.
    pub async fn publish_all_in(
        &self,
        tx: &mut tessera_storage::Tx,
        events: &[BusEvent],
        publisher: Option<&str>,
    ) -> anyhow::Result<usize> {
        let mut deliveries = Vec::new();
        for event in events {
            deliveries.extend(self.deliveries(event, publisher)?);
        }
        WorkQueue::insert_in(tx, &deliveries).await?;
        Ok(deliveries.len())
    }

    /// Tells the work worker that deliveries were committed.
    pub fn wake(&self) {
        self.queue.wake();
    }

    /// One delivery per subscribed engine but `publisher`, to store with the write that
    /// published `event` (a call's unit of work, or the core's own transaction).
    ///
    /// A delivery's id is derived from the tenant, the engine and the event's id, so the same
    /// event published again while its delivery still waits or runs is not delivered twice
    /// (the queue keeps the first, `store/work.rs`); once that delivery completed, a copy is
    /// delivered again (an engine that must see each event once keeps a marker of it, as
    /// activity does).
    pub fn deliveries(
        &self,
        event: &BusEvent,
        publisher: Option<&str>,
    ) -> anyhow::Result<Vec<NewWork>> {
        let payload = serde_json::to_vec(event)?;
        anyhow::ensure!(
            payload.len() <= MAX_PAYLOAD_BYTES,
            "events are at most {MAX_PAYLOAD_BYTES} bytes"
        );
        // Published during an engine call: the deliveries continue the call's trace (the bus
        // relay's deliveries of core events run in no span, and start traces of their own).
        let traceparent = tessera_http::trace_context::current_traceparent();
        Ok(self
            .subscriptions
            .subscribers(&event.event_type)
            .into_iter()
            .filter(|code| Some(code.as_str()) != publisher)
            .map(|engine_code| NewWork {
                id: delivery_id(&event.tenant_id, &engine_code, &event.id),
                engine_code,
                tenant_id: event.tenant_id.clone(),
                kind: WorkKind::Event,
                payload: payload.clone(),
                due_at: Utc::now(),
                traceparent: traceparent.clone(),
            })
            .collect())
    }
}

/// The id of the delivery of the event `event_id` to `engine_code` in `tenant_id`: a UUID v5
/// of the three (lengths first, so no two triples run together).
fn delivery_id(tenant_id: &str, engine_code: &str, event_id: &str) -> String {
    let name = format!(
        "{}:{}:{}:{tenant_id}{engine_code}{event_id}",
        tenant_id.len(),
        engine_code.len(),
        event_id.len()
    );
    uuid::Uuid::new_v5(&DELIVERY_NAMESPACE, name.as_bytes()).to_string()
}

/// The namespace of delivery ids (a fixed random UUID).
const DELIVERY_NAMESPACE: uuid::Uuid = uuid::uuid!("5b0c7f8e-3d2a-4e61-9a4f-1c7d2e9b8a60");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delivery_id_names_one_tenant_engine_and_event() {
        let id = delivery_id("t1", "activity", "e1");
        assert_eq!(id, delivery_id("t1", "activity", "e1"));
        assert_ne!(id, delivery_id("t2", "activity", "e1"));
        assert_ne!(id, delivery_id("t1", "chat", "e1"));
        assert_ne!(id, delivery_id("t1", "activity", "e2"));
        assert_ne!(delivery_id("t1a", "b", "c"), delivery_id("t1", "ab", "c"));
    }

    #[test]
    fn patterns_and_event_types() {
        assert!(pattern_matches("message.created", "message.created"));
        assert!(!pattern_matches("message.created", "message.updated"));
        assert!(pattern_matches("message.*", "message.updated"));
        assert!(!pattern_matches("message.*", "messages.updated"));
        assert!(pattern_matches("*", "anything.at_all"));
        assert!(!pattern_matches("mess*", "message.created"));
        assert!(check_event_type("entity.status_changed").is_ok());
        assert!(check_event_type("Entity.Created").is_err());
        assert!(check_event_type("").is_err());
        assert!(check_event_type("1.created").is_err());
        assert!(check_event_type("a b").is_err());

        let subscriptions = Subscriptions::default();
        subscriptions.set("chat", vec!["message.*".into()]);
        subscriptions.set("activity", vec!["*".into()]);
        subscriptions.set("notes", vec!["note.created".into()]);
        assert_eq!(
            subscriptions.subscribers("message.created"),
            vec!["activity".to_owned(), "chat".to_owned()]
        );
        subscriptions.remove("activity");
        assert_eq!(
            subscriptions.subscribers("note.created"),
            vec!["notes".to_owned()]
        );
    }
}
