//! The projector: the timeline (one item per domain event) and the inbox (items addressed
//! to one person) of each tenant.
//!
//! Inbox items come from two kinds of events: an entity's assignment field (`assignee_id`)
//! set to someone other than the actor, and `notification.created` (the workflows'
//! `send_notification` action). Marking an item read appends `inbox.item_read`, so a rebuild
//! restores read marks too. Item ids are the ids of the events that produced them.

use anyhow::Context as _;
use serde_json::Value;

use crate::events::StoredEvent;
use crate::projections::Projection;
use tessera_storage::on_tx;
use tessera_storage::{Tx, time};

/// The entity field whose value names the person an entity is assigned to.
pub const ASSIGNEE_FIELD: &str = "assignee_id";

/// Rows per multi-row `INSERT`.
const INSERT_CHUNK: usize = 100;

/// Timeline and inbox.
#[derive(Debug, Clone, Default)]
pub struct Projector;

struct InboxRow {
    id: String,
    tenant_id: String,
    recipient_id: String,
    item_type: &'static str,
    title: String,
    entity_id: Option<String>,
    created_at: String,
}

impl Projection for Projector {
    fn name(&self) -> &'static str {
        "projector"
    }

    async fn apply(&self, tx: &mut Tx, events: &[StoredEvent]) -> anyhow::Result<()> {
        let projected_at = time::now();
        let timeline: Vec<&StoredEvent> = events
            .iter()
            .filter(|event| event.event_type.starts_with("entity."))
            .collect();
        for chunk in timeline.chunks(INSERT_CHUNK) {
            on_tx!(tx, conn => {
                let mut insert = sqlx::QueryBuilder::new(
                    "INSERT INTO timeline_items (id, tenant_id, entity_id, item_type, actor_id, data,
                     occurred_at, projected_at) ",
                );
                insert.push_values(chunk, |mut row, event| {
                    row.push_bind(&event.id)
                        .push_bind(&event.tenant_id)
                        .push_bind(&event.entity_id)
                        .push_bind(&event.event_type)
                        .push_bind(&event.actor_id)
                        .push_bind(&event.data)
                        .push_bind(&event.occurred_at)
                        .push_bind(&projected_at);
                });
                insert.build().execute(&mut **conn).await.map(drop)
            })
            .context("writing timeline items")?;
        }
        // Inbox rows and read marks in log order, so a read mark never precedes its item.
        for event in events {
            if let Some(row) = inbox_row(tx, event).await? {
                on_tx!(tx, conn => sqlx::query(
                    "INSERT INTO inbox_items (id, tenant_id, recipient_id, item_type, title,
                     entity_id, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
                )
                .bind(&row.id)
                .bind(&row.tenant_id)
                .bind(&row.recipient_id)
                .bind(row.item_type)
                .bind(&row.title)
                .bind(&row.entity_id)
                .bind(&row.created_at)
                .execute(&mut **conn)
                .await
                .map(drop))
                .context("writing an inbox item")?;
            } else if event.event_type == "inbox.item_read" {
                let data = event.data()?;
                let item_id = data.get("item_id").and_then(Value::as_str).unwrap_or("");
                on_tx!(tx, conn => sqlx::query(
                    "UPDATE inbox_items SET read_at = COALESCE(read_at, $3)
                     WHERE id = $1 AND tenant_id = $2",
                )
                .bind(item_id)
                .bind(&event.tenant_id)
                .bind(&event.occurred_at)
                .execute(&mut **conn)
                .await
                .map(drop))
                .context("marking an inbox item read")?;
            }
        }
        Ok(())
    }

    async fn reset(&self, tx: &mut Tx) -> anyhow::Result<bool> {
        for table in ["timeline_items", "inbox_items"] {
            let sql = format!("DELETE FROM {table}");
            on_tx!(tx, conn => sqlx::query(sqlx::AssertSqlSafe(sql.clone()))
                .execute(&mut **conn)
                .await
                .map(drop))
            .with_context(|| format!("emptying {table}"))?;
        }
        Ok(true)
    }
}

/// The inbox item `event` produces, if any.
async fn inbox_row(tx: &mut Tx, event: &StoredEvent) -> anyhow::Result<Option<InboxRow>> {
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
            let family = entity_family(tx, event).await?;
            Ok(Some(InboxRow {
                id: event.id.clone(),
                tenant_id: event.tenant_id.clone(),
                recipient_id: recipient_id.to_owned(),
                item_type: "entity.assigned",
                title: match family {
                    Some(family) => format!("A {family} was assigned to you"),
                    None => "Something was assigned to you".to_owned(),
                },
                entity_id: event.entity_id.clone(),
                created_at: event.occurred_at.clone(),
            }))
        }
        "notification.created" => {
            let data = event.data()?;
            let Some(recipient_id) = data.get("recipient_id").and_then(Value::as_str) else {
                return Ok(None);
            };
            Ok(Some(InboxRow {
                id: event.id.clone(),
                tenant_id: event.tenant_id.clone(),
                recipient_id: recipient_id.to_owned(),
                item_type: "notification",
                title: data
                    .get("title")
                    .and_then(Value::as_str)
                    .unwrap_or("Notification")
                    .to_owned(),
                entity_id: data
                    .get("entity_id")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .or_else(|| event.entity_id.clone()),
                created_at: event.occurred_at.clone(),
            }))
        }
        _ => Ok(None),
    }
}

/// The family of the event's entity, from its `entity.created` timeline item (already
/// written: items of a batch are inserted before the inbox is computed). Read from the
/// projection itself so a rebuild gives the same titles.
async fn entity_family(tx: &mut Tx, event: &StoredEvent) -> anyhow::Result<Option<String>> {
    let Some(entity_id) = &event.entity_id else {
        return Ok(None);
    };
    let data: Option<String> = on_tx!(tx, conn => sqlx::query_scalar(
        "SELECT data FROM timeline_items
         WHERE tenant_id = $1 AND entity_id = $2 AND item_type = 'entity.created' LIMIT 1",
    )
    .bind(&event.tenant_id)
    .bind(entity_id)
    .fetch_optional(&mut **conn)
    .await)
    .context("reading an entity's family from the timeline")?;
    Ok(data
        .and_then(|data| serde_json::from_str::<Value>(&data).ok())
        .and_then(|data| {
            data.get("family")
                .and_then(Value::as_str)
                .map(str::to_owned)
        }))
}
