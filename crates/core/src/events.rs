//! The event log: domain events as the API shows them, and the append-only log that stores
//! them with their tenant, per-tenant sequence number, actor, correlation id and intention.
//! Appends happen inside the caller's transaction (the outbox): an event exists exactly when
//! the write that caused it committed. The SQL is in `store/events.rs`.

use anyhow::Context as _;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

/// An event as stored in the log, in the order projections read it (the log's readers return
/// it).
pub use crate::store::events::StoredEvent;
use crate::store::events::{self as store, EventInsert, GroupInsert};
use tessera_storage::Tx;

/// A domain event: an item of an intention's `events`, with exactly the spec's fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type")]
pub enum DomainEvent {
    #[serde(rename = "entity.created")]
    Created {
        entity_id: String,
        family: String,
        timestamp: String,
    },
    #[serde(rename = "entity.field_set")]
    FieldSet {
        entity_id: String,
        field: String,
        value: Value,
        timestamp: String,
    },
    #[serde(rename = "entity.field_updated")]
    FieldUpdated {
        entity_id: String,
        field: String,
        old_value: Value,
        new_value: Value,
        timestamp: String,
    },
    #[serde(rename = "entity.status_changed")]
    StatusChanged {
        entity_id: String,
        old_status: String,
        new_status: String,
        timestamp: String,
    },
    #[serde(rename = "entity.deleted")]
    Deleted {
        entity_id: String,
        family: String,
        timestamp: String,
    },
}

impl DomainEvent {
    /// The entity the event is about.
    pub fn entity_id(&self) -> &str {
        match self {
            Self::Created { entity_id, .. }
            | Self::FieldSet { entity_id, .. }
            | Self::FieldUpdated { entity_id, .. }
            | Self::StatusChanged { entity_id, .. }
            | Self::Deleted { entity_id, .. } => entity_id,
        }
    }

    /// The log entry of this event: its type, entity and remaining fields (the timestamp is
    /// the log's `occurred_at`).
    pub fn to_new_event(&self) -> NewEvent {
        let mut object = match serde_json::to_value(self) {
            Ok(Value::Object(object)) => object,
            _ => unreachable!("domain events serialize to objects"),
        };
        let event_type = match object.remove("type") {
            Some(Value::String(event_type)) => event_type,
            _ => unreachable!("domain events are tagged with their type"),
        };
        object.remove("entity_id");
        object.remove("timestamp");
        NewEvent {
            event_type,
            entity_id: Some(self.entity_id().to_owned()),
            data: object,
        }
    }
}

/// An event to append: its type (`entity.created`, `inbox.item_read`, …), the entity it is
/// about, and its other fields.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    pub event_type: String,
    pub entity_id: Option<String>,
    pub data: Map<String, Value>,
}

/// Who and what caused the events of one append.
#[derive(Debug, Clone, Default)]
pub struct EventContext {
    pub tenant_id: String,
    pub actor_id: Option<String>,
    pub correlation_id: Option<String>,
    pub intention_id: Option<String>,
    /// Workflow hops that led here; 0 for a person's intention.
    pub depth: i64,
    /// The W3C `traceparent` of the span the events were submitted in (tracing on), which the
    /// engines' deliveries of them continue.
    pub traceparent: Option<String>,
}

/// What an append assigned to an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppendedEvent {
    pub id: String,
    pub sequence: i64,
}

/// Rows per multi-row `INSERT` (at most 12 parameters each, far below both databases' limits).
const INSERT_CHUNK: usize = 200;

/// Events to append with one context and time, e.g. those of one intention.
#[derive(Debug, Clone, Copy)]
pub struct AppendGroup<'a> {
    pub context: &'a EventContext,
    pub events: &'a [NewEvent],
    pub occurred_at: &'a str,
    /// The entity as the group left it ([`EntityState`] JSON), stored once with the group and
    /// read with its first event.
    pub entity_state: Option<&'a str>,
}

/// An entity as an intention left it (before it, for a deletion), recorded on the
/// intention's first event for the workflows, which evaluate conditions and templates against
/// exactly this state however late they run, and whichever batch the intention's other events
/// fall in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EntityState {
    pub family: String,
    pub status: String,
    pub fields: Map<String, Value>,
    pub created_by: String,
    /// The fields the intention set or changed.
    pub changed: Vec<String>,
}

/// What a group stores of its entity's state: the whole [`EntityState`], or for a creation
/// only its status, which is all its events do not say (the family is the `entity.created`
/// event's, the creator its actor, the fields and what changed its `entity.field_set`
/// events): `{"status":…}` instead of the entity's fields once more (the footprint
/// per entity). Groups appended before keep their whole state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RecordedState {
    Whole(EntityState),
    Created { status: String },
}

impl EntityState {
    /// The state a creation left, from its `entity.created` event (`created`), its recorded
    /// `status`, and the type and data of the group's other events, in order.
    pub fn of_creation(
        created: &StoredEvent,
        status: String,
        followers: &[(String, String)],
    ) -> anyhow::Result<Self> {
        let family = match created.data()?.remove("family") {
            Some(Value::String(family)) => family,
            _ => anyhow::bail!("event {} names no family", created.id),
        };
        let created_by = created
            .actor_id
            .clone()
            .with_context(|| format!("event {} names no actor", created.id))?;
        let mut fields = Map::new();
        let mut changed = Vec::new();
        for (event_type, data) in followers {
            if event_type != "entity.field_set" {
                continue;
            }
            let mut data: Map<String, Value> = serde_json::from_str(data)
                .with_context(|| format!("decoding a field of the creation {}", created.id))?;
            if let (Some(Value::String(field)), Some(value)) =
                (data.remove("field"), data.remove("value"))
            {
                changed.push(field.clone());
                fields.insert(field, value);
            }
        }
        Ok(Self {
            family,
            status,
            fields,
            created_by,
            changed,
        })
    }
}

/// Appends `events` to the log inside `tx`, all with `occurred_at`, numbered on from the
/// tenant's last sequence. Call it late in the transaction: on PostgreSQL the tenant's
/// sequence row stays locked until the transaction ends (the intention writer writes only the
/// entities after it, which name the tenant by the number the append gives a new one).
pub async fn append(
    tx: &mut Tx,
    context: &EventContext,
    events: &[NewEvent],
    occurred_at: &str,
) -> anyhow::Result<Vec<AppendedEvent>> {
    let group = AppendGroup {
        context,
        events,
        occurred_at,
        entity_state: None,
    };
    Ok(append_groups(tx, &[group]).await?.pop().unwrap_or_default())
}

/// Appends several groups in order (each group's events numbered consecutively within its
/// tenant, groups of a tenant in the order given): one sequence reservation per tenant, in
/// tenant order so concurrent appenders on PostgreSQL never lock two tenants' rows in
/// opposite orders, and multi-row inserts. Returns what each group's events were assigned.
pub async fn append_groups(
    tx: &mut Tx,
    groups: &[AppendGroup<'_>],
) -> anyhow::Result<Vec<Vec<AppendedEvent>>> {
    let mut per_tenant: std::collections::BTreeMap<&str, i64> = Default::default();
    for group in groups {
        *per_tenant
            .entry(group.context.tenant_id.as_str())
            .or_default() += i64::try_from(group.events.len()).context("too many events")?;
    }
    // Each tenant's number and next free sequence number.
    let mut next: std::collections::BTreeMap<&str, (i64, i64)> = Default::default();
    for (tenant_id, count) in per_tenant {
        if count == 0 {
            continue;
        }
        let reservation = store::reserve_sequences(tx, tenant_id, count).await?;
        next.insert(
            tenant_id,
            (
                reservation.tenant_number,
                reservation.last_sequence - count + 1,
            ),
        );
    }
    let mut assigned = Vec::with_capacity(groups.len());
    let mut group_rows: Vec<GroupInsert<'_>> = Vec::with_capacity(groups.len());
    let mut rows: Vec<EventInsert<'_>> = Vec::new();
    for group in groups {
        let context = group.context;
        let mut appended = Vec::with_capacity(group.events.len());
        let Some((tenant_number, first_sequence)) = next
            .get(context.tenant_id.as_str())
            .copied()
            .filter(|_| !group.events.is_empty())
        else {
            assigned.push(Vec::new());
            continue;
        };
        let shape = GroupShape::of(group.events, context.intention_id.as_deref());
        let event_count = i64::try_from(group.events.len()).context("too many events")?;
        group_rows.push(GroupInsert {
            tenant_number,
            first_sequence,
            intention_id: context.intention_id.as_deref(),
            actor_id: context.actor_id.as_deref(),
            correlation_id: context.correlation_id.as_deref(),
            depth: context.depth,
            occurred_at: group.occurred_at,
            entity_state: group.entity_state,
            traceparent: context.traceparent.as_deref(),
            entity_id: shape.entity_id,
            event_id_prefix: (!shape.prefix_from_intention).then(|| shape.event_id_prefix.clone()),
            event_count,
        });
        for (group_offset, event) in (0_i64..).zip(group.events) {
            let sequence = first_sequence + group_offset;
            let (id, stored_id) = shape.event_id(group_offset);
            rows.push(EventInsert {
                id: stored_id,
                tenant_number,
                sequence,
                group_offset,
                event_type: &event.event_type,
                type_number: host_type_number(&event.event_type),
                entity_id: if shape.entity_id.is_some() {
                    None
                } else {
                    event.entity_id.as_deref()
                },
                data: stored_data(&event.event_type, &event.data),
            });
            appended.push(AppendedEvent { id, sequence });
        }
        if let Some(entry) = next.get_mut(context.tenant_id.as_str()) {
            entry.1 += event_count;
        }
        assigned.push(appended);
    }
    for chunk in group_rows.chunks(INSERT_CHUNK) {
        store::insert_groups(tx, chunk).await?;
    }
    // The host's own types are numbered by the migration: only another needs numbering.
    let mut types: Vec<&str> = rows
        .iter()
        .map(|row| row.event_type)
        .filter(|event_type| !HOST_EVENT_TYPES.contains(event_type))
        .collect();
    types.sort_unstable();
    types.dedup();
    if !types.is_empty() {
        store::number_types(tx, &types).await?;
    }
    for chunk in rows.chunks(INSERT_CHUNK) {
        store::insert(tx, chunk).await?;
    }
    Ok(assigned)
}

/// The event types the host appends, numbered 1 to 7 in this order in `event_types` by the
/// migration that made the table (`migrations/*/…_event_types.sql`; the storage tests check
/// it): an append binds their numbers, and numbers any other type inside its own transaction
/// (one statement more, and a concurrent append of the same new type waits for it).
pub const HOST_EVENT_TYPES: [&str; 7] = [
    "entity.created",
    "entity.field_set",
    "entity.field_updated",
    "entity.status_changed",
    "entity.deleted",
    "notification.created",
    "inbox.item_read",
];

/// The number of a host type in `event_types`: the migration numbers [`HOST_EVENT_TYPES`] first,
/// in order, from 1.
fn host_type_number(event_type: &str) -> Option<i32> {
    let index = HOST_EVENT_TYPES
        .iter()
        .position(|name| *name == event_type)?;
    i32::try_from(index + 1).ok()
}

/// What an event row stores of its data (JSON text). A field event's data is an array of its
/// values (`entity.field_set`: `[field, value]`; `entity.field_updated`: `[field, old_value,
/// new_value]`): a creation of five fields is five such rows, and their keys were a third of
/// each. `event_log` gives the object back (`migrations/*/…_event_types.sql`). Any other data,
/// and field events of another shape, are stored as their object.
fn stored_data(event_type: &str, data: &Map<String, Value>) -> String {
    let field = data.get("field").filter(|field| field.is_string());
    let values = match event_type {
        "entity.field_set" if data.len() == 2 => field
            .zip(data.get("value"))
            .map(|(field, value)| vec![field, value]),
        "entity.field_updated" if data.len() == 3 => field
            .zip(data.get("old_value"))
            .zip(data.get("new_value"))
            .map(|((field, old_value), new_value)| vec![field, old_value, new_value]),
        _ => None,
    };
    // Written from references: no value is copied on the append's path.
    match values {
        Some(values) => serde_json::to_string(&values),
        None => serde_json::to_string(data),
    }
    .expect("JSON values always serialize")
}

/// What a group's event rows leave to the group (`migrations/*/…_event_ids_from_groups.sql`).
struct GroupShape<'a> {
    /// The one entity every event of the group is about; `None` when they name several, or
    /// any names none: then each event row names its own.
    entity_id: Option<&'a str>,
    /// The 32 characters the group's event ids share; an event's id ends with its offset in
    /// four hex digits.
    event_id_prefix: String,
    /// Whether those are the first 32 characters of the group's intention id (then the
    /// group stores none: `event_log` reads them from the intention id).
    prefix_from_intention: bool,
}

impl<'a> GroupShape<'a> {
    /// Events past this offset store their ids: four hex digits hold the offset below it.
    const DERIVED_IDS: i64 = 0x1_0000;

    /// `intention_id`: the id of the intention the events come from, if any; when it is a
    /// UUID v7 in its canonical form (the host's intention ids are), the events' ids share its
    /// first 32 characters.
    fn of(events: &'a [NewEvent], intention_id: Option<&str>) -> Self {
        let first = events.first().and_then(|event| event.entity_id.as_deref());
        let entity_id = first.filter(|first| {
            events
                .iter()
                .all(|event| event.entity_id.as_deref() == Some(first))
        });
        // A UUID v7 whose last 16 bits are the offset: its text's last four characters.
        let from_intention = intention_id.filter(|id| {
            uuid::Uuid::try_parse(id).is_ok_and(|uuid| {
                uuid.get_version_num() == 7 && uuid.hyphenated().to_string() == *id
            })
        });
        let mut event_id_prefix = match from_intention {
            Some(intention_id) => intention_id.to_owned(),
            None => uuid::Uuid::from_u128(uuid::Uuid::now_v7().as_u128() & !0xffff).to_string(),
        };
        event_id_prefix.truncate(32);
        Self {
            entity_id,
            event_id_prefix,
            prefix_from_intention: from_intention.is_some(),
        }
    }

    /// The event's id, and what its row stores of it (`None`: derived from the group).
    fn event_id(&self, group_offset: i64) -> (String, Option<String>) {
        if group_offset < Self::DERIVED_IDS {
            (format!("{}{group_offset:04x}", self.event_id_prefix), None)
        } else {
            let id = uuid::Uuid::now_v7().to_string();
            (id.clone(), Some(id))
        }
    }
}

impl StoredEvent {
    /// The event's group in its tenant's log (its intention's events): the group's first
    /// sequence.
    pub fn group_first_sequence(&self) -> i64 {
        self.sequence - self.group_offset
    }

    /// The event's other fields.
    pub fn data(&self) -> anyhow::Result<Map<String, Value>> {
        serde_json::from_str(&self.data)
            .with_context(|| format!("decoding the data of event {}", self.id))
    }

    /// The domain event, for `entity.*` types; `None` for the log's other events.
    pub fn domain_event(&self) -> anyhow::Result<Option<DomainEvent>> {
        if !self.event_type.starts_with("entity.") {
            return Ok(None);
        }
        let mut object = self.data()?;
        object.insert("type".into(), Value::String(self.event_type.clone()));
        if let Some(entity_id) = &self.entity_id {
            object.insert("entity_id".into(), Value::String(entity_id.clone()));
        }
        object.insert("timestamp".into(), Value::String(self.occurred_at.clone()));
        serde_json::from_value(Value::Object(object))
            .map(Some)
            .with_context(|| format!("decoding domain event {}", self.id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn about(entity_id: Option<&str>) -> NewEvent {
        NewEvent {
            event_type: "entity.field_set".into(),
            entity_id: entity_id.map(str::to_owned),
            data: Map::new(),
        }
    }

    #[test]
    fn a_group_names_its_entity_only_when_every_event_is_about_it() {
        let one = [about(Some("x")), about(Some("x"))];
        assert_eq!(GroupShape::of(&one, None).entity_id, Some("x"));
        for mixed in [
            [about(Some("x")), about(Some("y"))],
            [about(Some("x")), about(None)],
            [about(None), about(None)],
        ] {
            assert_eq!(GroupShape::of(&mixed, None).entity_id, None);
        }
    }

    #[test]
    fn field_events_store_their_values_only_and_other_data_stays_whole() {
        let object = |value: Value| value.as_object().unwrap().clone();
        let set = object(json!({"value": {"a": [1, 2.5]}, "field": "name"}));
        assert_eq!(
            stored_data("entity.field_set", &set),
            r#"["name",{"a":[1,2.5]}]"#
        );
        let updated = object(json!({"old_value": "Ada", "new_value": null, "field": "name"}));
        assert_eq!(
            stored_data("entity.field_updated", &updated),
            r#"["name","Ada",null]"#
        );
        // Other types, and field events of another shape, keep their object.
        for (event_type, data) in [
            ("entity.created", object(json!({"family": "contact"}))),
            (
                "notification.created",
                object(json!({"field": "x", "value": 1})),
            ),
            (
                "entity.field_set",
                object(json!({"field": "x", "value": 1, "extra": true})),
            ),
            ("entity.field_set", object(json!({"field": 7, "value": 1}))),
            (
                "entity.field_updated",
                object(json!({"field": "x", "new_value": 1})),
            ),
        ] {
            assert_eq!(
                stored_data(event_type, &data),
                Value::Object(data.clone()).to_string(),
                "{event_type} {data:?}"
            );
        }
    }

    #[test]
    fn a_groups_event_ids_take_their_prefix_from_a_host_made_intention_id_only() {
        let events = [about(Some("x"))];
        let intention_id = uuid::Uuid::now_v7().to_string();
        let shape = GroupShape::of(&events, Some(&intention_id));
        assert!(shape.prefix_from_intention);
        assert_eq!(shape.event_id_prefix, intention_id[..32]);
        let (first, stored) = shape.event_id(0);
        assert_eq!(stored, None);
        assert_eq!(first, format!("{}0000", &intention_id[..32]));
        assert_eq!(uuid::Uuid::parse_str(&first).unwrap().get_version_num(), 7);
        // Anything else (another version, upper case, not a UUID) gets a prefix of its own,
        // stored with the group.
        let upper = intention_id.to_uppercase();
        let v4 = uuid::Uuid::new_v4().to_string();
        for other in [Some(upper.as_str()), Some(v4.as_str()), Some("in-1"), None] {
            let shape = GroupShape::of(&events, other);
            assert!(!shape.prefix_from_intention, "{other:?}");
            assert_ne!(shape.event_id_prefix, intention_id[..32]);
            assert_eq!(shape.event_id_prefix.len(), 32);
        }
    }

    #[test]
    fn a_groups_event_ids_are_uuids_ending_in_their_offset_and_stored_past_four_digits() {
        let events = [about(Some("x"))];
        let shape = GroupShape::of(&events, None);
        let other = GroupShape::of(&events, None);
        assert_ne!(shape.event_id_prefix, other.event_id_prefix);
        let (first, stored) = shape.event_id(0);
        assert_eq!(stored, None);
        assert!(first.ends_with("0000") && first.starts_with(&shape.event_id_prefix));
        let (last_derived, stored) = shape.event_id(0xffff);
        assert_eq!((last_derived.ends_with("ffff"), stored), (true, None));
        for id in [&first, &last_derived] {
            let parsed = uuid::Uuid::parse_str(id).unwrap();
            assert_eq!(parsed.get_version_num(), 7);
        }
        // Ids sort in the order the events were appended, within and across groups.
        assert!(first < last_derived);
        assert!(last_derived < other.event_id(0).0);
        let (beyond, stored) = shape.event_id(0x1_0000);
        assert_eq!(stored.as_deref(), Some(beyond.as_str()));
        assert!(!beyond.starts_with(&shape.event_id_prefix));
    }

    #[test]
    fn a_creation_records_its_status_and_its_events_say_the_rest() {
        let recorded = RecordedState::Created {
            status: "todo".into(),
        };
        let text = serde_json::to_string(&recorded).unwrap();
        assert_eq!(text, r#"{"status":"todo"}"#);
        // A whole state (every group before, and every intention but a creation) decodes as
        // such, a creation's as its status alone.
        let whole = r#"{"family":"task","status":"done","fields":{"n":1},"created_by":"u","changed":["n"]}"#;
        assert!(matches!(
            serde_json::from_str::<RecordedState>(whole).unwrap(),
            RecordedState::Whole(EntityState { ref status, .. }) if status == "done"
        ));
        assert_eq!(
            serde_json::from_str::<RecordedState>(&text).unwrap(),
            recorded
        );

        let created = StoredEvent {
            position: 1,
            transaction_id: 0,
            id: "e0".into(),
            tenant_id: "t".into(),
            sequence: 1,
            event_type: "entity.created".into(),
            entity_id: Some("x".into()),
            intention_id: Some("i".into()),
            actor_id: Some("u".into()),
            correlation_id: None,
            depth: 0,
            data: json!({"family": "task"}).to_string(),
            occurred_at: "2026-11-27T10:00:00.000000Z".into(),
            entity_state: Some(text),
            traceparent: None,
            group_offset: 0,
        };
        let followers = [
            (
                "entity.field_set".to_owned(),
                json!({"field": "a", "value": 1}).to_string(),
            ),
            (
                "entity.field_set".to_owned(),
                json!({"field": "b", "value": {"deep": [true]}}).to_string(),
            ),
        ];
        let state = EntityState::of_creation(&created, "todo".into(), &followers).unwrap();
        assert_eq!(
            state,
            EntityState {
                family: "task".into(),
                status: "todo".into(),
                fields: json!({"a": 1, "b": {"deep": [true]}})
                    .as_object()
                    .unwrap()
                    .clone(),
                created_by: "u".into(),
                changed: vec!["a".into(), "b".into()],
            }
        );
        let anonymous = StoredEvent {
            actor_id: None,
            ..created
        };
        assert!(EntityState::of_creation(&anonymous, "todo".into(), &followers).is_err());
    }

    #[test]
    fn domain_events_serialize_with_exactly_the_spec_fields() {
        let event = DomainEvent::FieldUpdated {
            entity_id: "e".into(),
            field: "name".into(),
            old_value: json!("Ada"),
            new_value: json!("Grace"),
            timestamp: "2026-11-21T10:00:00.000000Z".into(),
        };
        assert_eq!(
            serde_json::to_value(&event).unwrap(),
            json!({
                "type": "entity.field_updated", "entity_id": "e", "field": "name",
                "old_value": "Ada", "new_value": "Grace",
                "timestamp": "2026-11-21T10:00:00.000000Z"
            })
        );
        let entry = event.to_new_event();
        assert_eq!(entry.event_type, "entity.field_updated");
        assert_eq!(
            Value::Object(entry.data.clone()),
            json!({"field": "name", "old_value": "Ada", "new_value": "Grace"})
        );
        let stored = StoredEvent {
            position: 1,
            transaction_id: 0,
            id: "id".into(),
            tenant_id: "t".into(),
            sequence: 1,
            event_type: entry.event_type,
            entity_id: entry.entity_id,
            intention_id: None,
            actor_id: None,
            correlation_id: None,
            depth: 0,
            data: Value::Object(entry.data).to_string(),
            occurred_at: "2026-11-21T10:00:00.000000Z".into(),
            entity_state: None,
            traceparent: None,
            group_offset: 0,
        };
        assert_eq!(stored.domain_event().unwrap(), Some(event));
    }
}
