//! The host's event bus: an event published in a tenant (by an engine through the `events`
//! import, or by the host) becomes one durable delivery per subscribed engine, run by the work
//! worker (`on-event`) with retries. Subscriptions come from each loaded engine's `describe`.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use chrono::Utc;
use tessera_http::trace_context::is_sampled;

use super::bindings::v0_3::tessera::engine::types as wit;
pub use crate::work_queue::delivered_events;
use crate::work_queue::{
    MAX_DELIVERY_BATCH, MAX_PAYLOAD_BYTES, NewWork, WorkKind, WorkQueue, delivery_id,
};

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

    /// Stores the deliveries of `events` (in log order, the core's log relayed by the bus
    /// relay) inside `tx`, packed: the events due to one engine in one tenant, consecutive in
    /// `events`, make one delivery of up to [`MAX_DELIVERY_BATCH`] events and
    /// [`MAX_PAYLOAD_BYTES`] (a five-field entity's six events are one row of the queue, not
    /// six). Returns how many events were delivered to how many engines. Call
    /// [`wake`](Self::wake) once it committed.
    ///
    /// A pack runs as one delivery of its events in order; one that fails, or whose run could
    /// not commit, is split into one delivery per event ([`WorkQueue::split`]), which then
    /// fail and retry on their own, as if never packed. A pack holds the events of one trace
    /// only (their [`Relayed::traceparent`]), whose run continues it.
    pub async fn publish_packed_in(
        &self,
        tx: &mut tessera_storage::Tx,
        events: &[Relayed],
    ) -> anyhow::Result<usize> {
        let (deliveries, delivered) = packed_deliveries(&self.subscriptions, events)?;
        WorkQueue::insert_in(tx, &deliveries).await?;
        Ok(delivered)
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

/// The packed deliveries of `events` ([`EventBus::publish_packed_in`]), and how many events
/// they deliver in all.
fn packed_deliveries(
    subscriptions: &Subscriptions,
    events: &[Relayed],
) -> anyhow::Result<(Vec<NewWork>, usize)> {
    let mut packs: Vec<Pack> = Vec::new();
    // The open pack of each (engine, tenant): an index into `packs`.
    let mut open: std::collections::HashMap<(String, String), usize> =
        std::collections::HashMap::new();
    // How many of `events` each group has: a pack that cannot take all of a group's events
    // is closed before its first, so an engine sees an intention's events in one run (where
    // activity folds a creation's fields into one item). A group larger than a pack is split.
    let mut group_sizes: std::collections::HashMap<(&str, i64), usize> =
        std::collections::HashMap::new();
    for relayed in events {
        *group_sizes
            .entry((relayed.event.tenant_id.as_str(), relayed.group))
            .or_default() += 1;
    }
    let mut delivered = 0;
    let mut previous_group: Option<(&str, i64)> = None;
    for Relayed {
        event,
        traceparent,
        group,
    } in events
    {
        let encoded = serde_json::to_vec(event)?;
        anyhow::ensure!(
            encoded.len() <= MAX_PAYLOAD_BYTES,
            "events are at most {MAX_PAYLOAD_BYTES} bytes"
        );
        let group_key = (event.tenant_id.as_str(), *group);
        // The first of its group's events here: the room its whole group needs.
        let room_needed = if previous_group == Some(group_key) {
            1
        } else {
            group_sizes.get(&group_key).copied().unwrap_or(1)
        };
        previous_group = Some(group_key);
        for engine_code in subscriptions.subscribers(&event.event_type) {
            delivered += 1;
            let key = (engine_code, event.tenant_id.clone());
            match open.get(&key) {
                Some(&index)
                    if packs[index].fits(&encoded, room_needed)
                        && packs[index].takes_trace(traceparent.as_deref()) =>
                {
                    packs[index].push(&event.id, &encoded, traceparent.as_deref());
                }
                _ => {
                    open.insert(key.clone(), packs.len());
                    let mut pack = Pack::new(key.0, key.1);
                    pack.push(&event.id, &encoded, traceparent.as_deref());
                    packs.push(pack);
                }
            }
        }
    }
    let now = Utc::now();
    let deliveries = packs.into_iter().map(|pack| pack.into_work(now)).collect();
    Ok((deliveries, delivered))
}

/// An event of the core's log on its way to the engines, with the trace its intention was
/// submitted in (W3C `traceparent`, when traced), which its deliveries continue.
#[derive(Debug, Clone)]
pub struct Relayed {
    pub event: BusEvent,
    pub traceparent: Option<String>,
    /// The event's group in the log (its intention's events): the group's first sequence.
    pub group: i64,
}

/// A delivery of several events to one engine in one tenant: its payload is the JSON array
/// of the events, in order.
///
/// Its run continues one trace: the one sampled trace among its events' if there is one, else
/// the first event's (left out, passed on as such). Events of traces left out join any pack;
/// only two sampled traces keep their events apart, each delivery recorded in its own. (Split
/// on every trace, a host with tracing on delivered each intention's events alone, whatever
/// its sampling rate: 10–15 % of the core's write throughput, BENCHMARKS.md.)
struct Pack {
    engine_code: String,
    tenant_id: String,
    traceparent: Option<String>,
    first_event_id: String,
    events: usize,
    payload: Vec<u8>,
}

impl Pack {
    fn new(engine_code: String, tenant_id: String) -> Self {
        Self {
            engine_code,
            tenant_id,
            traceparent: None,
            first_event_id: String::new(),
            events: 0,
            payload: vec![b'['],
        }
    }

    /// Whether the pack takes `encoded`, the first of `events` that should go together (an
    /// empty pack takes any).
    fn fits(&self, encoded: &[u8], events: usize) -> bool {
        (self.events == 0 || self.events + events <= MAX_DELIVERY_BATCH)
            && self.events < MAX_DELIVERY_BATCH
            && self.payload.len() + encoded.len() + 1 < MAX_PAYLOAD_BYTES
    }

    /// Whether an event of `traceparent`'s trace may join: unless both it and the pack's are
    /// sampled and differ.
    fn takes_trace(&self, traceparent: Option<&str>) -> bool {
        match (self.traceparent.as_deref(), traceparent) {
            (Some(own), Some(other)) => own == other || !(is_sampled(own) && is_sampled(other)),
            _ => true,
        }
    }

    fn push(&mut self, event_id: &str, encoded: &[u8], traceparent: Option<&str>) {
        let sampled = traceparent.is_some_and(is_sampled);
        if self.traceparent.is_none()
            || (sampled && !self.traceparent.as_deref().is_some_and(is_sampled))
        {
            self.traceparent = traceparent.map(str::to_owned);
        }
        if self.events == 0 {
            self.first_event_id = event_id.to_owned();
        } else {
            self.payload.push(b',');
        }
        self.payload.extend_from_slice(encoded);
        self.events += 1;
    }

    /// One event alone is stored as a delivery of its own, as [`EventBus::deliveries`] makes.
    fn into_work(mut self, due_at: chrono::DateTime<Utc>) -> NewWork {
        let payload = if self.events == 1 {
            self.payload.split_off(1)
        } else {
            self.payload.push(b']');
            self.payload
        };
        NewWork {
            // A pack's id is not its first event's (engine codes hold no `#`), which that event
            // takes once the pack is split.
            id: if self.events == 1 {
                delivery_id(&self.tenant_id, &self.engine_code, &self.first_event_id)
            } else {
                let pack = format!("{}#pack", self.engine_code);
                delivery_id(&self.tenant_id, &pack, &self.first_event_id)
            },
            engine_code: self.engine_code,
            tenant_id: self.tenant_id,
            kind: WorkKind::Event,
            payload,
            due_at,
            traceparent: self.traceparent,
        }
    }
}

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

    fn event(id: &str, tenant_id: &str, event_type: &str) -> Relayed {
        Relayed {
            event: BusEvent {
                id: id.to_owned(),
                event_type: event_type.to_owned(),
                tenant_id: tenant_id.to_owned(),
                occurred_at: "2026-11-27T00:00:00Z".to_owned(),
                actor_id: None,
                correlation_id: id.to_owned(),
                payload: serde_json::json!({"n": id}),
            },
            traceparent: None,
            // Each event a group of its own, unless a test says otherwise.
            group: NEXT_GROUP.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        }
    }

    static NEXT_GROUP: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(1);

    /// `count` events of one group (one intention) in `tenant_id`, ids `{name}0`, `{name}1`…
    fn group(name: &str, tenant_id: &str, count: usize) -> Vec<Relayed> {
        let group = NEXT_GROUP.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        (0..count)
            .map(|n| Relayed {
                group,
                ..event(&format!("{name}{n}"), tenant_id, "entity.field_set")
            })
            .collect()
    }

    /// The ids of each delivery's events, in order.
    fn packed_ids(deliveries: &[NewWork]) -> Vec<Vec<String>> {
        deliveries
            .iter()
            .map(|work| {
                delivered_events(&work.payload)
                    .unwrap()
                    .into_iter()
                    .map(|event| event.id)
                    .collect()
            })
            .collect()
    }

    #[test]
    fn an_intentions_events_are_never_split_across_packs_unless_larger_than_one() {
        let subscriptions = Subscriptions::default();
        subscriptions.set("activity", vec!["entity.*".into()]);
        // Five groups of six fill 30 of a pack's 32: the sixth group starts the next pack.
        let mut events: Vec<Relayed> = ["a", "b", "c", "d", "e", "f"]
            .into_iter()
            .flat_map(|name| group(name, "t1", 6))
            .collect();
        // A group larger than a pack fills packs in order.
        events.extend(group("g", "t1", MAX_DELIVERY_BATCH + 8));
        let (deliveries, delivered) = packed_deliveries(&subscriptions, &events).unwrap();
        assert_eq!(delivered, 36 + MAX_DELIVERY_BATCH + 8);
        let ids = |names: &[&str], count: usize| -> Vec<String> {
            names
                .iter()
                .flat_map(|name| (0..count).map(move |n| format!("{name}{n}")))
                .collect()
        };
        let large = |range: std::ops::Range<usize>| -> Vec<String> {
            range.map(|n| format!("g{n}")).collect()
        };
        assert_eq!(
            packed_ids(&deliveries),
            [
                ids(&["a", "b", "c", "d", "e"], 6),
                ids(&["f"], 6),
                large(0..MAX_DELIVERY_BATCH),
                large(MAX_DELIVERY_BATCH..MAX_DELIVERY_BATCH + 8),
            ]
        );
    }

    #[test]
    fn relayed_events_are_packed_per_engine_and_tenant_in_order() {
        let subscriptions = Subscriptions::default();
        subscriptions.set("activity", vec!["entity.*".into()]);
        subscriptions.set("notes", vec!["entity.deleted".into()]);
        let mut events = vec![
            event("a1", "t1", "entity.created"),
            event("b1", "t2", "entity.created"),
            event("a2", "t1", "entity.deleted"),
            event("x", "t1", "message.created"),
        ];
        events.extend(
            (0..MAX_DELIVERY_BATCH).map(|n| event(&format!("c{n}"), "t3", "entity.field_set")),
        );
        // Traces: two sampled ones in one tenant keep their events apart, each pack carrying
        // its own; events of traces left out join either. A pack begun by a trace left out
        // takes the sampled trace of an event that joins it.
        let sampled_1 = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        let sampled_2 = "00-1af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        let left_out_1 = "00-2af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";
        let left_out_2 = "00-3af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";
        let traced = |id: &str, tenant: &str, trace: &str| Relayed {
            traceparent: Some(trace.to_owned()),
            ..event(id, tenant, "entity.created")
        };
        events.extend([
            traced("d1", "t4", sampled_1),
            traced("d2", "t4", left_out_1),
            traced("d3", "t4", sampled_1),
            traced("d4", "t4", sampled_2),
            traced("d5", "t4", left_out_2),
            traced("e1", "t5", left_out_1),
            traced("e2", "t5", left_out_2),
            traced("e3", "t5", sampled_2),
        ]);
        let (deliveries, delivered) = packed_deliveries(&subscriptions, &events).unwrap();
        assert_eq!(delivered, 12 + MAX_DELIVERY_BATCH);
        let packed: Vec<(&str, &str, Vec<String>)> = deliveries
            .iter()
            .map(|work| {
                let ids = delivered_events(&work.payload)
                    .unwrap()
                    .into_iter()
                    .map(|event| event.id)
                    .collect();
                (work.engine_code.as_str(), work.tenant_id.as_str(), ids)
            })
            .collect();
        let c = |range: std::ops::Range<usize>| range.map(|n| format!("c{n}")).collect::<Vec<_>>();
        let names = |list: &[&str]| list.iter().map(|id| id.to_string()).collect::<Vec<_>>();
        assert_eq!(
            packed,
            [
                ("activity", "t1", vec!["a1".to_owned(), "a2".to_owned()]),
                ("activity", "t2", vec!["b1".to_owned()]),
                ("notes", "t1", vec!["a2".to_owned()]),
                ("activity", "t3", c(0..MAX_DELIVERY_BATCH)),
                ("activity", "t4", names(&["d1", "d2", "d3"])),
                ("activity", "t4", names(&["d4", "d5"])),
                ("activity", "t5", names(&["e1", "e2", "e3"])),
            ]
        );
        let traces: Vec<Option<&str>> = deliveries
            .iter()
            .map(|work| work.traceparent.as_deref())
            .collect();
        assert_eq!(
            traces,
            [
                None,
                None,
                None,
                None,
                Some(sampled_1),
                Some(sampled_2),
                Some(sampled_2)
            ]
        );
        // One event alone is stored as the delivery `deliveries` makes of it; a pack has an id
        // of its own, not its first event's.
        assert_eq!(deliveries[1].id, delivery_id("t2", "activity", "b1"));
        assert_eq!(
            serde_json::from_slice::<BusEvent>(&deliveries[1].payload).unwrap(),
            events[1].event
        );
        assert_ne!(deliveries[0].id, delivery_id("t1", "activity", "a1"));
        assert_eq!(delivered_events(b"  [ ]").unwrap(), Vec::<BusEvent>::new());
        assert!(delivered_events(b"{}").is_err());
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
