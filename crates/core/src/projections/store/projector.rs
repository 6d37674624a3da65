//! The SQL of the projector (`projections/projector.rs`): multi-row inserts of timeline
//! items, inbox items and read marks, the family of an entity from its `entity.created`
//! item, and emptying both tables for a rebuild. Everything runs in the batch's transaction.

use anyhow::Context as _;

use crate::events::StoredEvent;
use tessera_storage::Tx;
use tessera_storage::on_tx;

/// An inbox item to insert.
pub(crate) struct InboxInsert {
    pub id: String,
    pub tenant_id: String,
    pub recipient_id: String,
    pub item_type: &'static str,
    pub title: String,
    pub entity_id: Option<String>,
    pub created_at: String,
}

/// Inserts one timeline item per event, in one multi-row statement.
pub(crate) async fn insert_timeline(
    tx: &mut Tx,
    events: &[&StoredEvent],
    projected_at: &str,
) -> anyhow::Result<()> {
    on_tx!(tx, conn => {
        let mut insert = sqlx::QueryBuilder::new(
            "INSERT INTO timeline_items (id, tenant_id, entity_id, item_type, actor_id, data,
             occurred_at, projected_at) ",
        );
        insert.push_values(events, |mut row, event| {
            row.push_bind(&event.id)
                .push_bind(&event.tenant_id)
                .push_bind(&event.entity_id)
                .push_bind(&event.event_type)
                .push_bind(&event.actor_id)
                .push_bind(&event.data)
                .push_bind(&event.occurred_at)
                .push_bind(projected_at);
        });
        insert.build().execute(&mut **conn).await.map(drop)
    })
    .context("writing timeline items")
}

/// Inserts an inbox item.
pub(crate) async fn insert_inbox_item(tx: &mut Tx, item: &InboxInsert) -> anyhow::Result<()> {
    on_tx!(tx, conn => sqlx::query(
        "INSERT INTO inbox_items (id, tenant_id, recipient_id, item_type, title,
         entity_id, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(&item.id)
    .bind(&item.tenant_id)
    .bind(&item.recipient_id)
    .bind(item.item_type)
    .bind(&item.title)
    .bind(&item.entity_id)
    .bind(&item.created_at)
    .execute(&mut **conn)
    .await
    .map(drop))
    .context("writing an inbox item")
}

/// Marks the tenant's inbox item read at `read_at`, unless it was already.
pub(crate) async fn mark_inbox_item_read(
    tx: &mut Tx,
    item_id: &str,
    tenant_id: &str,
    read_at: &str,
) -> anyhow::Result<()> {
    on_tx!(tx, conn => sqlx::query(
        "UPDATE inbox_items SET read_at = COALESCE(read_at, $3)
         WHERE id = $1 AND tenant_id = $2",
    )
    .bind(item_id)
    .bind(tenant_id)
    .bind(read_at)
    .execute(&mut **conn)
    .await
    .map(drop))
    .context("marking an inbox item read")
}

/// The data (JSON object text) of the entity's `entity.created` timeline item, if written.
pub(crate) async fn created_item_data(
    tx: &mut Tx,
    tenant_id: &str,
    entity_id: &str,
) -> anyhow::Result<Option<String>> {
    on_tx!(tx, conn => sqlx::query_scalar(
        "SELECT data FROM timeline_items
         WHERE tenant_id = $1 AND entity_id = $2 AND item_type = 'entity.created' LIMIT 1",
    )
    .bind(tenant_id)
    .bind(entity_id)
    .fetch_optional(&mut **conn)
    .await)
    .context("reading an entity's family from the timeline")
}

/// Empties the timeline and the inbox of every tenant.
pub(crate) async fn clear(tx: &mut Tx) -> anyhow::Result<()> {
    for table in ["timeline_items", "inbox_items"] {
        let sql = format!("DELETE FROM {table}");
        on_tx!(tx, conn => sqlx::query(sqlx::AssertSqlSafe(sql.clone()))
            .execute(&mut **conn)
            .await
            .map(drop))
        .with_context(|| format!("emptying {table}"))?;
    }
    Ok(())
}
