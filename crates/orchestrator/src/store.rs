//! SQL of the orchestrator: provisioning records of tenants and users, and the removal of a
//! tenant's data from host storage.

use std::collections::BTreeMap;

use anyhow::Context as _;

use super::{EngineOutcome, ProvisioningStatus};
use tessera_runtime::lifecycle::{TenantProfile, UserProfile};
use tessera_storage::{Database, Tx, time};
use tessera_storage::{on_pool, on_tx};

/// A tenant's persisted provisioning.
pub struct TenantRecord {
    pub profile: TenantProfile,
    pub status: ProvisioningStatus,
    pub engines: BTreeMap<String, EngineOutcome>,
}

type OutcomeRow = (
    String,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
);

fn outcome_of(row: OutcomeRow) -> anyhow::Result<(String, EngineOutcome)> {
    let (code, status, error, provisioned_at, failed_at) = row;
    let outcome = match status.as_str() {
        "provisioned" => EngineOutcome::Provisioned {
            at: provisioned_at.unwrap_or_default(),
        },
        "failed" => EngineOutcome::Failed {
            error: error.unwrap_or_default(),
            at: failed_at.unwrap_or_default(),
        },
        other => anyhow::bail!("unknown engine provisioning status {other:?}"),
    };
    Ok((code, outcome))
}

/// `(status, error, provisioned_at, failed_at)` columns of an outcome.
fn columns(outcome: &EngineOutcome) -> (&str, Option<&str>, Option<&str>, Option<&str>) {
    match outcome {
        EngineOutcome::Provisioned { at } => ("provisioned", None, Some(at), None),
        EngineOutcome::Failed { error, at } => ("failed", Some(error), None, Some(at)),
    }
}

pub async fn insert_pending_tenant(tx: &mut Tx, tenant: &TenantProfile) -> anyhow::Result<()> {
    let now = time::now();
    on_tx!(tx, conn => sqlx::query(
        "INSERT INTO tenant_provisioning (tenant_id, tenant_short_id, name, status, created_at, updated_at)
         VALUES ($1, $2, $3, 'pending', $4, $4)",
    )
    .bind(&tenant.tenant_id)
    .bind(&tenant.tenant_short_id)
    .bind(&tenant.name)
    .bind(&now)
    .execute(&mut **conn)
    .await
    .map(drop))
    .context("recording a pending tenant provisioning")
}

/// Starts (or restarts) a tenant's provisioning: `in_progress`, earlier engine outcomes gone.
pub async fn begin_tenant(database: &Database, tenant: &TenantProfile) -> anyhow::Result<()> {
    let now = time::now();
    let mut tx = database.begin().await?;
    on_tx!(&mut tx, conn => sqlx::query(
        "INSERT INTO tenant_provisioning (tenant_id, tenant_short_id, name, status, created_at, updated_at)
         VALUES ($1, $2, $3, 'in_progress', $4, $4)
         ON CONFLICT (tenant_id) DO UPDATE SET tenant_short_id = excluded.tenant_short_id,
             name = excluded.name, status = excluded.status, updated_at = excluded.updated_at",
    )
    .bind(&tenant.tenant_id)
    .bind(&tenant.tenant_short_id)
    .bind(&tenant.name)
    .bind(&now)
    .execute(&mut **conn)
    .await
    .map(drop))
    .context("starting a tenant provisioning")?;
    on_tx!(&mut tx, conn => sqlx::query("DELETE FROM tenant_provisioning_engines WHERE tenant_id = $1")
        .bind(&tenant.tenant_id)
        .execute(&mut **conn)
        .await
        .map(drop))
    .context("clearing earlier engine outcomes")?;
    tx.commit().await
}

/// Stores engine outcomes and the overall status. `replace` is false for a retry, which
/// updates the retried engines and keeps the others.
pub async fn finish_tenant(
    database: &Database,
    tenant_id: &str,
    status: ProvisioningStatus,
    outcomes: &BTreeMap<String, EngineOutcome>,
    replace: bool,
) -> anyhow::Result<()> {
    let mut tx = database.begin().await?;
    if replace {
        on_tx!(&mut tx, conn => sqlx::query("DELETE FROM tenant_provisioning_engines WHERE tenant_id = $1")
            .bind(tenant_id)
            .execute(&mut **conn)
            .await
            .map(drop))
        .context("clearing earlier engine outcomes")?;
    }
    for (code, outcome) in outcomes {
        let (engine_status, error, provisioned_at, failed_at) = columns(outcome);
        on_tx!(&mut tx, conn => sqlx::query(
            "INSERT INTO tenant_provisioning_engines (tenant_id, engine_code, status, error, provisioned_at, failed_at)
             VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (tenant_id, engine_code) DO UPDATE SET status = excluded.status,
                 error = excluded.error, provisioned_at = excluded.provisioned_at,
                 failed_at = excluded.failed_at",
        )
        .bind(tenant_id)
        .bind(code)
        .bind(engine_status)
        .bind(error)
        .bind(provisioned_at)
        .bind(failed_at)
        .execute(&mut **conn)
        .await
        .map(drop))
        .context("recording an engine outcome")?;
    }
    on_tx!(&mut tx, conn => sqlx::query(
        "UPDATE tenant_provisioning SET status = $2, updated_at = $3 WHERE tenant_id = $1",
    )
    .bind(tenant_id)
    .bind(status.as_str())
    .bind(time::now())
    .execute(&mut **conn)
    .await
    .map(drop))
    .context("recording a tenant provisioning status")?;
    tx.commit().await
}

pub async fn find_tenant(
    database: &Database,
    tenant_id: &str,
) -> anyhow::Result<Option<TenantRecord>> {
    let row: Option<(String, String, String, String)> = on_pool!(database, pool => sqlx::query_as(
        "SELECT tenant_id, tenant_short_id, name, status FROM tenant_provisioning WHERE tenant_id = $1",
    )
    .bind(tenant_id)
    .fetch_optional(pool)
    .await)
    .context("reading a tenant provisioning")?;
    let Some((tenant_id, tenant_short_id, name, status)) = row else {
        return Ok(None);
    };
    let rows: Vec<OutcomeRow> = on_pool!(database, pool => sqlx::query_as(
        "SELECT engine_code, status, error, provisioned_at, failed_at
         FROM tenant_provisioning_engines WHERE tenant_id = $1 ORDER BY engine_code",
    )
    .bind(&tenant_id)
    .fetch_all(pool)
    .await)
    .context("reading engine outcomes")?;
    Ok(Some(TenantRecord {
        profile: TenantProfile {
            tenant_id,
            tenant_short_id,
            name,
        },
        status: ProvisioningStatus::parse(&status)?,
        engines: rows
            .into_iter()
            .map(outcome_of)
            .collect::<anyhow::Result<_>>()?,
    }))
}

/// Removes everything host storage keeps for a tenant on behalf of engines and the
/// orchestrator: every engine's key-value entries, blobs, pending jobs and event deliveries
/// (loaded engines or not), and the tenant's and its users' provisioning records.
pub async fn delete_tenant_data(tx: &mut Tx, tenant_id: &str) -> anyhow::Result<()> {
    for statement in [
        "DELETE FROM engine_entries
         WHERE scope IN (SELECT scope FROM engine_scopes WHERE tenant_id = $1)",
        "DELETE FROM engine_scopes WHERE tenant_id = $1",
        "DELETE FROM engine_blobs WHERE tenant_id = $1",
        "DELETE FROM engine_blob_usage WHERE tenant_id = $1",
        "DELETE FROM engine_work WHERE tenant_id = $1",
        "DELETE FROM user_provisioning_engines WHERE tenant_id = $1",
        "DELETE FROM tenant_provisioning WHERE tenant_id = $1",
    ] {
        on_tx!(&mut *tx, conn => sqlx::query(statement)
            .bind(tenant_id)
            .execute(&mut **conn)
            .await
            .map(drop))
        .with_context(|| format!("removing tenant data: {statement}"))?;
    }
    Ok(())
}

pub async fn record_user(
    database: &Database,
    user: &UserProfile,
    outcomes: &BTreeMap<String, EngineOutcome>,
) -> anyhow::Result<()> {
    let mut tx = database.begin().await?;
    for (code, outcome) in outcomes {
        let (status, error, provisioned_at, failed_at) = columns(outcome);
        on_tx!(&mut tx, conn => sqlx::query(
            "INSERT INTO user_provisioning_engines (tenant_id, user_id, engine_code, status, error, provisioned_at, failed_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7)
             ON CONFLICT (tenant_id, user_id, engine_code) DO UPDATE SET status = excluded.status,
                 error = excluded.error, provisioned_at = excluded.provisioned_at,
                 failed_at = excluded.failed_at",
        )
        .bind(&user.tenant_id)
        .bind(&user.user_id)
        .bind(code)
        .bind(status)
        .bind(error)
        .bind(provisioned_at)
        .bind(failed_at)
        .execute(&mut **conn)
        .await
        .map(drop))
        .context("recording a user provisioning outcome")?;
    }
    tx.commit().await
}

pub async fn forget_user(
    database: &Database,
    tenant_id: &str,
    user_id: &str,
) -> anyhow::Result<()> {
    on_pool!(database, pool => sqlx::query(
        "DELETE FROM user_provisioning_engines WHERE tenant_id = $1 AND user_id = $2",
    )
    .bind(tenant_id)
    .bind(user_id)
    .execute(pool)
    .await
    .map(drop))
    .context("forgetting a user's provisioning")
}
