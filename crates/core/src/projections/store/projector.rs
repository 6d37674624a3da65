//! The SQL of the projector (`projections/projector.rs`): inbox items and read marks, the
//! family of an entity from its `entity.created` event, and emptying the inbox for a rebuild.
//! Everything runs in the batch's transaction.

use anyhow::Context as _;

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

/// The data (JSON object text) of the entity's `entity.created` event, if it has one.
pub(crate) async fn created_event_data(
    tx: &mut Tx,
    tenant_id: &str,
    entity_id: &str,
) -> anyhow::Result<Option<String>> {
    let tenant_number = crate::store::events::TENANT_NUMBER;
    let sql = format!(
        "SELECT data FROM events
         WHERE tenant_number = {tenant_number} AND sequence IN ({})
           AND type_number = (SELECT type_number FROM event_types WHERE name = 'entity.created')
         ORDER BY sequence LIMIT 1",
        crate::store::events::entity_sequences(tenant_number, "$2")
    );
    on_tx!(tx, conn => sqlx::query_scalar(sqlx::AssertSqlSafe(sql.clone()))
    .bind(tenant_id)
    .bind(tessera_storage::compact::StoredId(entity_id))
    .fetch_optional(&mut **conn)
    .await)
    .context("reading an entity's family from the log")
}

/// Empties the inbox of every tenant.
pub(crate) async fn clear(tx: &mut Tx) -> anyhow::Result<()> {
    on_tx!(tx, conn => sqlx::query("DELETE FROM inbox_items")
        .execute(&mut **conn)
        .await
        .map(drop))
    .context("emptying inbox_items")
}
