//! The timeline and the inbox: cursor-paged reads and marking inbox items read. The timeline
//! is the tenant's `entity.*` events read from the log itself (no copy); the inbox is written
//! by the projector (`projections/projector.rs`). Every query (`store/feeds.rs`) is bounded by
//! the tenant, and inbox queries by the recipient too.

use anyhow::Context as _;
use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::events::{self, EventContext, NewEvent};
use crate::projections::signal::EventSignal;
use crate::store::feeds::{self as store, InboxRow};
use tessera_http::paging::CursorPage;
use tessera_storage::{Database, time};

/// A timeline item: one domain event of the tenant.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct TimelineItem {
    /// The event's id.
    pub id: String,
    /// The event type, e.g. `entity.created`.
    #[serde(rename = "type")]
    pub kind: String,
    pub occurred_at: String,
    pub entity_id: Option<String>,
    /// Who caused it.
    pub actor_id: Option<String>,
    /// The event's other fields (`family`, `field`, `value`, `old_value`, …).
    #[schema(value_type = Object)]
    pub data: Map<String, Value>,
}

/// An inbox item.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct InboxItem {
    pub id: String,
    /// `entity.assigned` or `notification`.
    #[serde(rename = "type")]
    pub kind: String,
    pub title: String,
    pub entity_id: Option<String>,
    pub created_at: String,
    /// Null until marked read.
    pub read_at: Option<String>,
}

/// The item of a stored row, and its position.
fn inbox_item_of(row: InboxRow) -> (i64, InboxItem) {
    let InboxRow {
        position,
        id,
        item_type,
        title,
        entity_id,
        created_at,
        read_at,
    } = row;
    let item = InboxItem {
        id,
        kind: item_type,
        title,
        entity_id,
        created_at,
        read_at,
    };
    (position, item)
}

/// A page of the tenant's timeline (optionally of one entity) with each item's sequence.
pub async fn timeline(
    database: &Database,
    tenant_id: &str,
    entity_id: Option<&str>,
    page: &CursorPage<i64>,
    descending: bool,
) -> anyhow::Result<Vec<(i64, TimelineItem)>> {
    let rows = store::timeline(database, tenant_id, entity_id, page, descending).await?;
    rows.into_iter()
        .map(
            |(position, id, kind, occurred_at, entity_id, actor_id, data)| {
                Ok((
                    position,
                    TimelineItem {
                        data: serde_json::from_str(&data)
                            .with_context(|| format!("decoding timeline item {id}"))?,
                        id,
                        kind,
                        occurred_at,
                        entity_id,
                        actor_id,
                    },
                ))
            },
        )
        .collect()
}

/// A page of the recipient's inbox in the tenant, with each item's position.
pub async fn inbox(
    database: &Database,
    tenant_id: &str,
    recipient_id: &str,
    page: &CursorPage<i64>,
    descending: bool,
) -> anyhow::Result<Vec<(i64, InboxItem)>> {
    let rows = store::inbox(database, tenant_id, recipient_id, page, descending).await?;
    Ok(rows.into_iter().map(inbox_item_of).collect())
}

/// Marks one of the recipient's items read (keeping the first read time) and records it in
/// the log as `inbox.item_read`, so a rebuild keeps the mark. `None` when the recipient has no
/// such item in the tenant.
pub async fn mark_read(
    database: &Database,
    signal: &EventSignal,
    tenant_id: &str,
    recipient_id: &str,
    item_id: &str,
) -> anyhow::Result<Option<InboxItem>> {
    let mut tx = database.begin().await?;
    let row = store::lock_inbox_item(&mut tx, tenant_id, recipient_id, item_id).await?;
    let Some((_, mut item)) = row.map(inbox_item_of) else {
        tx.rollback().await?;
        return Ok(None);
    };
    if item.read_at.is_some() {
        tx.rollback().await?;
        return Ok(Some(item));
    }
    let read_at = time::now();
    store::set_read_at(&mut tx, item_id, &read_at).await?;
    let mut data = Map::new();
    data.insert("item_id".into(), Value::String(item_id.to_owned()));
    let context = EventContext {
        tenant_id: tenant_id.to_owned(),
        actor_id: Some(recipient_id.to_owned()),
        ..EventContext::default()
    };
    let event = NewEvent {
        event_type: "inbox.item_read".into(),
        entity_id: item.entity_id.clone(),
        data,
    };
    events::append(&mut tx, &context, &[event], &read_at).await?;
    tx.commit().await?;
    signal.appended();
    item.read_at = Some(read_at);
    Ok(Some(item))
}
