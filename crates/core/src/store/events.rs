//! The SQL of the event log (`events.rs`): reserving a tenant's sequence numbers and the
//! multi-row inserts of an append, both inside the caller's transaction.

use anyhow::Context as _;

use tessera_storage::Tx;
use tessera_storage::on_tx;

/// A row of the log to insert; `data` is JSON object text, `entity_state` the
/// [`crate::events::EntityState`] JSON on an intention's first event.
pub(crate) struct EventInsert<'a> {
    pub id: String,
    pub tenant_id: &'a str,
    pub sequence: i64,
    pub event_type: &'a str,
    pub entity_id: Option<&'a str>,
    pub intention_id: Option<&'a str>,
    pub actor_id: Option<&'a str>,
    pub correlation_id: Option<&'a str>,
    pub depth: i64,
    pub data: String,
    pub occurred_at: &'a str,
    pub entity_state: Option<&'a str>,
}

/// Reserves the tenant's next `count` sequence numbers and returns the last of them. On
/// PostgreSQL the tenant's row stays locked until the transaction ends.
pub(crate) async fn reserve_sequences(
    tx: &mut Tx,
    tenant_id: &str,
    count: i64,
) -> anyhow::Result<i64> {
    on_tx!(tx, conn => sqlx::query_scalar(
        "INSERT INTO event_sequences (tenant_id, last_sequence) VALUES ($1, $2)
         ON CONFLICT (tenant_id)
         DO UPDATE SET last_sequence = event_sequences.last_sequence + excluded.last_sequence
         RETURNING last_sequence",
    )
    .bind(tenant_id)
    .bind(count)
    .fetch_one(&mut **conn)
    .await)
    .context("reserving event sequence numbers")
}

/// Inserts `rows` in one multi-row statement (12 parameters a row).
pub(crate) async fn insert(tx: &mut Tx, rows: &[EventInsert<'_>]) -> anyhow::Result<()> {
    on_tx!(tx, conn => {
        let mut insert = sqlx::QueryBuilder::new(
            "INSERT INTO events (id, tenant_id, sequence, event_type, entity_id, intention_id,
             actor_id, correlation_id, depth, data, occurred_at, entity_state) ",
        );
        insert.push_values(rows, |mut row, event| {
            row.push_bind(&event.id)
                .push_bind(event.tenant_id)
                .push_bind(event.sequence)
                .push_bind(event.event_type)
                .push_bind(event.entity_id)
                .push_bind(event.intention_id)
                .push_bind(event.actor_id)
                .push_bind(event.correlation_id)
                .push_bind(event.depth)
                .push_bind(&event.data)
                .push_bind(event.occurred_at)
                .push_bind(event.entity_state);
        });
        insert.build().execute(&mut **conn).await.map(drop)
    })
    .context("appending to the event log")
}
