//! The event log: domain events as the API shows them, and the append-only log that stores
//! them with their tenant, per-tenant sequence number, actor, correlation id and intention.
//! Appends happen inside the caller's transaction (the outbox): an event exists exactly when
//! the write that caused it committed. The SQL is in `store/events.rs`.

use anyhow::Context as _;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

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

/// Rows per multi-row `INSERT` (at most 9 parameters each, far below both databases' limits).
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

/// Appends `events` to the log inside `tx`, all with `occurred_at`, numbered on from the
/// tenant's last sequence. Call it as the last write before commit: on PostgreSQL the
/// tenant's sequence row stays locked until the transaction ends.
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
        if let Some((tenant_number, first_sequence)) = next
            .get(context.tenant_id.as_str())
            .copied()
            .filter(|_| !group.events.is_empty())
        {
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
            });
        }
        for (group_offset, event) in (0_i64..).zip(group.events) {
            let (tenant_number, sequence) = next
                .get_mut(context.tenant_id.as_str())
                .expect("every tenant with events has a reservation");
            let entry = AppendedEvent {
                id: uuid::Uuid::now_v7().to_string(),
                sequence: *sequence,
            };
            *sequence += 1;
            rows.push(EventInsert {
                id: entry.id.clone(),
                tenant_number: *tenant_number,
                sequence: entry.sequence,
                group_offset,
                event_type: &event.event_type,
                entity_id: event.entity_id.as_deref(),
                data: Value::Object(event.data.clone()).to_string(),
            });
            appended.push(entry);
        }
        assigned.push(appended);
    }
    for chunk in group_rows.chunks(INSERT_CHUNK) {
        store::insert_groups(tx, chunk).await?;
    }
    for chunk in rows.chunks(INSERT_CHUNK) {
        store::insert(tx, chunk).await?;
    }
    Ok(assigned)
}

/// An event as stored in the log, in the order projections read it.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct StoredEvent {
    /// Global insertion position (not commit order on PostgreSQL; see `transaction_id`).
    pub position: i64,
    /// The appending transaction's id on PostgreSQL; 0 on SQLite.
    pub transaction_id: i64,
    pub id: String,
    pub tenant_id: String,
    pub sequence: i64,
    pub event_type: String,
    pub entity_id: Option<String>,
    pub intention_id: Option<String>,
    pub actor_id: Option<String>,
    pub correlation_id: Option<String>,
    pub depth: i64,
    /// JSON object text: the fields beyond type, entity id and timestamp.
    pub data: String,
    pub occurred_at: String,
    /// [`EntityState`] JSON on the first event of an intention.
    pub entity_state: Option<String>,
    /// The trace its intention was submitted in ([`EventContext::traceparent`]); read as
    /// `None` where a query leaves it out (logs from before migration 21).
    #[sqlx(default)]
    pub traceparent: Option<String>,
}

impl StoredEvent {
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
        };
        assert_eq!(stored.domain_event().unwrap(), Some(event));
    }
}
