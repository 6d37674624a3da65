//! Storage of workflows and their runs, over plain rows: a workflow's definition is stored as
//! its name, trigger and the JSON text of its conditions and actions, which `service.rs` turns
//! into a `Definition` and back. Every function takes the tenant it acts for, and every query is
//! bounded by it: no caller can read or change another tenant's workflow by id.

use std::collections::HashMap;

use anyhow::Context as _;
use serde::Serialize;
use utoipa::ToSchema;

use tessera_http::paging::OffsetPage;
use tessera_storage::{Database, Tx, time};
use tessera_storage::{on_pool, on_tx};

/// A workflow as stored: its definition as the columns hold it (the trigger's name, the
/// conditions and actions as JSON text).
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct WorkflowRow {
    pub id: String,
    pub tenant_id: String,
    pub name: String,
    pub description: Option<String>,
    pub trigger_event: String,
    pub family_code: Option<String>,
    /// JSON text of `[{field, operator, value}]`.
    pub conditions: String,
    /// JSON text of `[{type, config}]`.
    pub actions: String,
    pub is_active: bool,
    pub created_at: String,
    pub updated_at: String,
}

const WORKFLOW_COLUMNS: &str = "id, tenant_id, name, description, trigger_event, family_code,
     conditions, actions, is_active, created_at, updated_at";

/// Stores a new workflow row, created by `created_by`.
pub async fn insert(
    database: &Database,
    row: &WorkflowRow,
    created_by: &str,
) -> anyhow::Result<()> {
    let mut tx = database.begin().await?;
    on_tx!(&mut tx, conn => sqlx::query(
        "INSERT INTO workflows (id, tenant_id, name, description, trigger_event, family_code,
         conditions, actions, is_active, created_by, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
    )
    .bind(&row.id)
    .bind(&row.tenant_id)
    .bind(&row.name)
    .bind(&row.description)
    .bind(&row.trigger_event)
    .bind(&row.family_code)
    .bind(&row.conditions)
    .bind(&row.actions)
    .bind(row.is_active)
    .bind(created_by)
    .bind(&row.created_at)
    .bind(&row.updated_at)
    .execute(&mut **conn)
    .await
    .map(drop))
    .context("storing a workflow")?;
    tx.commit().await?;
    Ok(())
}

/// How many workflows the tenant has.
pub async fn count(database: &Database, tenant_id: &str) -> anyhow::Result<u64> {
    let total: i64 = on_pool!(database, pool => sqlx::query_scalar(
        "SELECT COUNT(*) FROM workflows WHERE tenant_id = $1",
    )
    .bind(tenant_id)
    .fetch_one(pool)
    .await)
    .context("counting workflows")?;
    Ok(u64::try_from(total).unwrap_or(0))
}

/// One page of the tenant's workflows, newest first.
pub async fn list(
    database: &Database,
    tenant_id: &str,
    page: &OffsetPage,
) -> anyhow::Result<Vec<WorkflowRow>> {
    let sql = format!(
        "SELECT {WORKFLOW_COLUMNS} FROM workflows WHERE tenant_id = $1
         ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3"
    );
    on_pool!(database, pool => sqlx::query_as(sqlx::AssertSqlSafe(sql.clone()))
        .bind(tenant_id)
        .bind(page.limit())
        .bind(page.offset())
        .fetch_all(pool)
        .await)
    .context("listing workflows")
}

/// A workflow of the tenant.
pub async fn find(
    database: &Database,
    tenant_id: &str,
    id: &str,
) -> anyhow::Result<Option<WorkflowRow>> {
    let sql = format!("SELECT {WORKFLOW_COLUMNS} FROM workflows WHERE tenant_id = $1 AND id = $2");
    on_pool!(database, pool => sqlx::query_as(sqlx::AssertSqlSafe(sql.clone()))
        .bind(tenant_id)
        .bind(id)
        .fetch_optional(pool)
        .await)
    .context("reading a workflow")
}

/// A workflow of the tenant, in a transaction that will change it (on PostgreSQL its row is
/// locked to the end of the transaction).
pub async fn find_for_update(
    tx: &mut Tx,
    tenant_id: &str,
    id: &str,
) -> anyhow::Result<Option<WorkflowRow>> {
    let lock = match tx.kind() {
        tessera_storage::DatabaseKind::Postgres => " FOR UPDATE",
        tessera_storage::DatabaseKind::Sqlite => "",
    };
    let sql =
        format!("SELECT {WORKFLOW_COLUMNS} FROM workflows WHERE tenant_id = $1 AND id = $2{lock}");
    on_tx!(tx, conn => sqlx::query_as(sqlx::AssertSqlSafe(sql.clone()))
        .bind(tenant_id)
        .bind(id)
        .fetch_optional(&mut **conn)
        .await)
    .context("reading a workflow")
}

/// Writes a workflow row's definition and `updated_at`, keeping its state.
pub async fn update_definition(tx: &mut Tx, row: &WorkflowRow) -> anyhow::Result<()> {
    on_tx!(tx, conn => sqlx::query(
        "UPDATE workflows SET name = $3, description = $4, trigger_event = $5, family_code = $6,
         conditions = $7, actions = $8, updated_at = $9
         WHERE tenant_id = $1 AND id = $2",
    )
    .bind(&row.tenant_id)
    .bind(&row.id)
    .bind(&row.name)
    .bind(&row.description)
    .bind(&row.trigger_event)
    .bind(&row.family_code)
    .bind(&row.conditions)
    .bind(&row.actions)
    .bind(&row.updated_at)
    .execute(&mut **conn)
    .await
    .map(drop))
    .context("updating a workflow")
}

/// Deletes the tenant's workflow; its runs stay. Whether there was one.
pub async fn delete(database: &Database, tenant_id: &str, id: &str) -> anyhow::Result<bool> {
    let mut tx = database.begin().await?;
    let deleted = on_tx!(&mut tx, conn => sqlx::query(
        "DELETE FROM workflows WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant_id)
    .bind(id)
    .execute(&mut **conn)
    .await
    .map(|done| done.rows_affected()))
    .context("deleting a workflow")?;
    tx.commit().await?;
    Ok(deleted > 0)
}

/// Writes a workflow's state and `updated_at`.
pub async fn update_active(
    tx: &mut Tx,
    tenant_id: &str,
    id: &str,
    active: bool,
    updated_at: &str,
) -> anyhow::Result<()> {
    on_tx!(tx, conn => sqlx::query(
        "UPDATE workflows SET is_active = $3, updated_at = $4 WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant_id)
    .bind(id)
    .bind(active)
    .bind(updated_at)
    .execute(&mut **conn)
    .await
    .map(drop))
    .context("changing a workflow's state")
}

/// On PostgreSQL, makes the tenant's activations take turns (its row, locked to the end of
/// the transaction without blocking inserts that reference it); SQLite serializes writers
/// anyway.
pub async fn lock_tenant_activations(tx: &mut Tx, tenant_id: &str) -> anyhow::Result<()> {
    if tx.kind() == tessera_storage::DatabaseKind::Postgres {
        on_tx!(tx, conn => sqlx::query("SELECT id FROM tenants WHERE id = $1 FOR NO KEY UPDATE")
            .bind(tenant_id)
            .fetch_optional(&mut **conn)
            .await
            .map(drop))
        .context("locking the tenant's workflow activations")?;
    }
    Ok(())
}

/// How many workflows of the tenant are active.
pub async fn count_active(tx: &mut Tx, tenant_id: &str) -> anyhow::Result<i64> {
    on_tx!(tx, conn => sqlx::query_scalar(
        "SELECT COUNT(*) FROM workflows WHERE tenant_id = $1 AND is_active",
    )
    .bind(tenant_id)
    .fetch_one(&mut **conn)
    .await)
    .context("counting the active workflows")
}

/// The tenant's active workflows with this trigger (its name), oldest first (their order of
/// execution).
pub async fn active_for(
    tx: &mut Tx,
    tenant_id: &str,
    trigger_event: &str,
) -> anyhow::Result<Vec<WorkflowRow>> {
    let sql = format!(
        "SELECT {WORKFLOW_COLUMNS} FROM workflows
         WHERE tenant_id = $1 AND trigger_event = $2 AND is_active
         ORDER BY created_at, id"
    );
    on_tx!(tx, conn => sqlx::query_as(sqlx::AssertSqlSafe(sql.clone()))
        .bind(tenant_id)
        .bind(trigger_event)
        .fetch_all(&mut **conn)
        .await)
    .context("reading the active workflows")
}

/// A run as stored and shown.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema, sqlx::FromRow)]
pub struct WorkflowRun {
    pub id: String,
    pub workflow_id: String,
    pub trigger_event_id: String,
    /// `completed` or `failed`.
    pub status: String,
    /// Why the run failed (`null` when it completed).
    pub error: Option<String>,
    pub started_at: String,
    pub completed_at: String,
    /// Actions that took effect (on failure, those before the failing one).
    pub actions_executed: i64,
}

/// A run to record, with the tenant and the depth of its trigger.
#[derive(Debug, Clone)]
pub struct RunRecord {
    pub tenant_id: String,
    pub depth: i64,
    pub run: WorkflowRun,
}

/// Rows per multi-row `INSERT` of runs (10 parameters each).
const RUN_INSERT_CHUNK: usize = 200;

/// Records runs with multi-row inserts; a run whose trigger already ran its workflow is
/// skipped. How many were written.
pub async fn record_runs(tx: &mut Tx, records: &[RunRecord]) -> anyhow::Result<u64> {
    let mut inserted = 0;
    for chunk in records.chunks(RUN_INSERT_CHUNK) {
        inserted += on_tx!(tx, conn => {
            let mut insert = sqlx::QueryBuilder::new(
                "INSERT INTO workflow_runs (id, tenant_id, workflow_id, trigger_event_id, status,
                 error, actions_executed, depth, started_at, completed_at) ",
            );
            insert.push_values(chunk, |mut row, record| {
                let run = &record.run;
                row.push_bind(&run.id)
                    .push_bind(&record.tenant_id)
                    .push_bind(&run.workflow_id)
                    .push_bind(&run.trigger_event_id)
                    .push_bind(&run.status)
                    .push_bind(&run.error)
                    .push_bind(run.actions_executed)
                    .push_bind(record.depth)
                    .push_bind(&run.started_at)
                    .push_bind(&run.completed_at);
            });
            insert.push(" ON CONFLICT (workflow_id, trigger_event_id) DO NOTHING");
            insert.build().execute(&mut **conn).await.map(|done| done.rows_affected())
        })
        .context("recording workflow runs")?;
    }
    Ok(inserted)
}

/// How many runs of the workflow the tenant has (a deleted workflow's stay).
pub async fn count_runs(
    database: &Database,
    tenant_id: &str,
    workflow_id: &str,
) -> anyhow::Result<u64> {
    let total: i64 = on_pool!(database, pool => sqlx::query_scalar(
        "SELECT COUNT(*) FROM workflow_runs WHERE tenant_id = $1 AND workflow_id = $2",
    )
    .bind(tenant_id)
    .bind(workflow_id)
    .fetch_one(pool)
    .await)
    .context("counting workflow runs")?;
    Ok(u64::try_from(total).unwrap_or(0))
}

/// One page of a workflow's runs, newest first.
pub async fn list_runs(
    database: &Database,
    tenant_id: &str,
    workflow_id: &str,
    page: &OffsetPage,
) -> anyhow::Result<Vec<WorkflowRun>> {
    on_pool!(database, pool => sqlx::query_as(
        "SELECT id, workflow_id, trigger_event_id, status, error, started_at, completed_at,
         actions_executed
         FROM workflow_runs WHERE tenant_id = $1 AND workflow_id = $2
         ORDER BY started_at DESC, id DESC LIMIT $3 OFFSET $4",
    )
    .bind(tenant_id)
    .bind(workflow_id)
    .bind(page.limit())
    .bind(page.offset())
    .fetch_all(pool)
    .await)
    .context("listing workflow runs")
}

/// Completed and failed runs, of one tenant or (`None`) of the platform.
pub async fn run_counts(
    database: &Database,
    tenant_id: Option<&str>,
) -> anyhow::Result<(u64, u64)> {
    let (completed, failed): (i64, i64) = on_pool!(database, pool => sqlx::query_as(
        "SELECT
           CAST(COALESCE(SUM(CASE WHEN status = 'completed' THEN 1 ELSE 0 END), 0) AS BIGINT),
           CAST(COALESCE(SUM(CASE WHEN status = 'failed' THEN 1 ELSE 0 END), 0) AS BIGINT)
         FROM workflow_runs WHERE (CAST($1 AS TEXT) IS NULL OR tenant_id = $1)",
    )
    .bind(tenant_id)
    .fetch_one(pool)
    .await)
    .context("counting workflow runs")?;
    Ok((
        u64::try_from(completed).unwrap_or(0),
        u64::try_from(failed).unwrap_or(0),
    ))
}

/// Ids per `IN` list of the chain queries.
const CHAIN_LOOKUP_CHUNK: usize = 500;

/// The chain (root intention) of each of these intentions of the tenant that a workflow
/// executed; an intention not found was a person's, and is its own root.
pub async fn chain_roots(
    tx: &mut Tx,
    tenant_id: &str,
    intention_ids: &[&str],
) -> anyhow::Result<HashMap<String, String>> {
    let mut roots = HashMap::with_capacity(intention_ids.len());
    for chunk in intention_ids.chunks(CHAIN_LOOKUP_CHUNK) {
        let rows: Vec<(String, String)> = on_tx!(tx, conn => {
            let mut query = sqlx::QueryBuilder::new(
                "SELECT intention_id, root_intention_id FROM workflow_chain_writes
                 WHERE tenant_id = ",
            );
            query.push_bind(tenant_id).push(" AND intention_id IN (");
            let mut ids = query.separated(", ");
            for id in chunk {
                ids.push_bind(*id);
            }
            ids.push_unseparated(")");
            query.build_query_as().fetch_all(&mut **conn).await
        })
        .context("reading the chains of workflow writes")?;
        roots.extend(rows);
    }
    Ok(roots)
}

/// How many intentions workflows executed so far in each of these chains of the tenant
/// (chains without any are left out).
pub async fn chain_writes(
    tx: &mut Tx,
    tenant_id: &str,
    roots: &[&str],
) -> anyhow::Result<HashMap<String, i64>> {
    let mut counts = HashMap::with_capacity(roots.len());
    for chunk in roots.chunks(CHAIN_LOOKUP_CHUNK) {
        let rows: Vec<(String, i64)> = on_tx!(tx, conn => {
            let mut query = sqlx::QueryBuilder::new(
                "SELECT root_intention_id, COUNT(*) FROM workflow_chain_writes
                 WHERE tenant_id = ",
            );
            query.push_bind(tenant_id).push(" AND root_intention_id IN (");
            let mut ids = query.separated(", ");
            for root in chunk {
                ids.push_bind(*root);
            }
            ids.push_unseparated(") GROUP BY root_intention_id");
            query.build_query_as().fetch_all(&mut **conn).await
        })
        .context("counting the writes of workflow chains")?;
        counts.extend(rows);
    }
    Ok(counts)
}

/// An intention a workflow executed, in the chain started by `root_intention_id`.
#[derive(Debug, Clone)]
pub struct ChainWrite {
    pub tenant_id: String,
    pub intention_id: String,
    pub root_intention_id: String,
}

/// Rows per multi-row `INSERT` of chain writes (4 parameters each).
const CHAIN_INSERT_CHUNK: usize = 500;

/// Records the intentions workflows executed, in the runner's transaction.
pub async fn record_chain_writes(tx: &mut Tx, writes: &[ChainWrite]) -> anyhow::Result<()> {
    let created_at = time::now();
    for chunk in writes.chunks(CHAIN_INSERT_CHUNK) {
        on_tx!(tx, conn => {
            let mut insert = sqlx::QueryBuilder::new(
                "INSERT INTO workflow_chain_writes
                 (intention_id, tenant_id, root_intention_id, created_at) ",
            );
            insert.push_values(chunk, |mut row, write| {
                row.push_bind(&write.intention_id)
                    .push_bind(&write.tenant_id)
                    .push_bind(&write.root_intention_id)
                    .push_bind(&created_at);
            });
            insert.build().execute(&mut **conn).await.map(drop)
        })
        .context("recording the writes of workflow chains")?;
    }
    Ok(())
}
