//! The SQL of erasing a tenant's core data (`erasure.rs`): its event log and entities by its
//! number, its inbox and projection statistics by its id, in the caller's transaction.

use anyhow::Context as _;

use tessera_storage::{Tx, on_tx};

/// Deletes the tenant's events, groups, entities and sequence row; returns how many events.
pub(crate) async fn erase_log(tx: &mut Tx, tenant_id: &str) -> anyhow::Result<u64> {
    let tenant_number: Option<i64> = on_tx!(tx, conn => sqlx::query_scalar(
        "SELECT tenant_number FROM event_sequences WHERE tenant_id = $1",
    )
    .bind(tenant_id)
    .fetch_optional(&mut **conn)
    .await)
    .context("finding the tenant's event log")?;
    let Some(tenant_number) = tenant_number else {
        return Ok(0);
    };
    let events = delete_by_number(
        tx,
        "DELETE FROM events WHERE tenant_number = $1",
        tenant_number,
    )
    .await?;
    // Entities name their tenant by this number (no foreign key cascades to them), and a
    // number released below may be handed out again.
    delete_by_number(
        tx,
        "DELETE FROM entities WHERE tenant_number = $1",
        tenant_number,
    )
    .await?;
    delete_by_number(
        tx,
        "DELETE FROM event_groups WHERE tenant_number = $1",
        tenant_number,
    )
    .await?;
    delete_by_number(
        tx,
        "DELETE FROM event_sequences WHERE tenant_number = $1",
        tenant_number,
    )
    .await?;
    Ok(events)
}

/// Deletes the tenant's inbox items and projection statistics; returns how many inbox items.
pub(crate) async fn erase_read_models(tx: &mut Tx, tenant_id: &str) -> anyhow::Result<u64> {
    let inbox_items = delete_by_tenant(
        tx,
        "DELETE FROM inbox_items WHERE tenant_id = $1",
        tenant_id,
    )
    .await?;
    delete_by_tenant(
        tx,
        "DELETE FROM projection_stats WHERE tenant_id = $1",
        tenant_id,
    )
    .await?;
    Ok(inbox_items)
}
/// Runs `statement` with the tenant's log number; the rows it deleted.
async fn delete_by_number(
    tx: &mut Tx,
    statement: &'static str,
    tenant_number: i64,
) -> anyhow::Result<u64> {
    on_tx!(tx, conn => sqlx::query(statement)
        .bind(tenant_number)
        .execute(&mut **conn)
        .await
        .map(|done| done.rows_affected()))
    .with_context(|| format!("erasing a tenant's data: {statement}"))
}

/// Runs `statement` with the tenant's id; the rows it deleted.
async fn delete_by_tenant(
    tx: &mut Tx,
    statement: &'static str,
    tenant_id: &str,
) -> anyhow::Result<u64> {
    on_tx!(tx, conn => sqlx::query(statement)
        .bind(tenant_id)
        .execute(&mut **conn)
        .await
        .map(|done| done.rows_affected()))
    .with_context(|| format!("erasing a tenant's data: {statement}"))
}
