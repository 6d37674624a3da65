//! The orchestrator: provisions and deprovisions tenants and users across every loaded engine,
//! sequentially and best-effort (a failed engine neither stops the others nor rolls anything
//! back), and persists each outcome so that status and retry work from any host. Used by the
//! signed `/core/api/internal/orchestration/*` endpoints and by the admin CLI alike.

pub mod routes;
mod store;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;
use utoipa::ToSchema;

use tessera_runtime::lifecycle::{self, Lifecycle, TenantProfile, UserProfile};
use tessera_runtime::{EngineRegistry, LoadedEngine};
use tessera_storage::{Database, Tx, time};

/// The overall status of a provisioning (the spec's Provisioning status).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProvisioningStatus {
    /// Recorded, not started (a tenant created by the CLI, before its engines ran).
    Pending,
    InProgress,
    Completed,
    PartialFailure,
    Failed,
}

impl ProvisioningStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::InProgress => "in_progress",
            Self::Completed => "completed",
            Self::PartialFailure => "partial_failure",
            Self::Failed => "failed",
        }
    }

    fn parse(text: &str) -> anyhow::Result<Self> {
        Ok(match text {
            "pending" => Self::Pending,
            "in_progress" => Self::InProgress,
            "completed" => Self::Completed,
            "partial_failure" => Self::PartialFailure,
            "failed" => Self::Failed,
            other => anyhow::bail!("unknown provisioning status {other:?}"),
        })
    }

    /// The status of a finished run from its engines' outcomes: every engine succeeded (or none
    /// took part) → completed; every one failed → failed; otherwise partial failure.
    pub fn of<'a>(outcomes: impl IntoIterator<Item = &'a EngineOutcome>) -> Self {
        let (mut succeeded, mut failed) = (0, 0);
        for outcome in outcomes {
            match outcome {
                EngineOutcome::Provisioned { .. } => succeeded += 1,
                EngineOutcome::Failed { .. } => failed += 1,
            }
        }
        match (succeeded, failed) {
            (_, 0) => Self::Completed,
            (0, _) => Self::Failed,
            _ => Self::PartialFailure,
        }
    }
}

/// What one engine did with one provisioning (or deprovisioning) request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineOutcome {
    Provisioned { at: String },
    Failed { error: String, at: String },
}

impl EngineOutcome {
    fn from_result(result: Result<(), String>) -> Self {
        match result {
            Ok(()) => Self::Provisioned { at: time::now() },
            Err(error) => Self::Failed {
                error,
                at: time::now(),
            },
        }
    }

    pub fn is_failed(&self) -> bool {
        matches!(self, Self::Failed { .. })
    }
}

/// A tenant's provisioning: overall status and each engine's outcome, by engine code.
#[derive(Debug, Clone)]
pub struct TenantProvisioning {
    pub tenant_id: String,
    pub status: ProvisioningStatus,
    pub engines: BTreeMap<String, EngineOutcome>,
}

/// The result of a retry: the tenant's status after it, the engines retried and their outcomes.
#[derive(Debug, Clone)]
pub struct RetryReport {
    pub tenant_id: String,
    pub status: ProvisioningStatus,
    pub retried: BTreeMap<String, EngineOutcome>,
}

/// A user's provisioning across the engines that require it.
#[derive(Debug, Clone)]
pub struct UserProvisioning {
    pub user_id: String,
    pub status: ProvisioningStatus,
    pub engines: BTreeMap<String, EngineOutcome>,
}

/// A loaded engine as provisioning sees it (`tessera admin list-engines`).
#[derive(Debug, Clone, Serialize)]
pub struct LoadedEngineSummary {
    pub code: String,
    pub name: String,
    pub version: String,
    /// The engine world version it was built against.
    pub world: String,
    pub requires_tenant_provision: bool,
    pub requires_user_provision: bool,
}

/// Runs lifecycle operations across the registry's engines; cheap to clone.
#[derive(Clone)]
pub struct Orchestrator {
    database: Database,
    engines: Arc<EngineRegistry>,
}

impl Orchestrator {
    pub fn new(database: Database, engines: Arc<EngineRegistry>) -> Self {
        Self { database, engines }
    }

    /// Runs `operation` on each engine in turn (ordered by code), collecting every outcome.
    async fn run_each(
        &self,
        engines: &[Arc<LoadedEngine>],
        operation: &Lifecycle,
    ) -> BTreeMap<String, EngineOutcome> {
        let mut outcomes = BTreeMap::new();
        for engine in engines {
            let result = lifecycle::run(self.engines.runtime(), engine, operation).await;
            if let Err(error) = &result {
                tracing::warn!(engine = %engine.descriptor.code, tenant_id = operation.tenant_id(), %error, "an engine failed a lifecycle operation");
            }
            outcomes.insert(
                engine.descriptor.code.clone(),
                EngineOutcome::from_result(result),
            );
        }
        outcomes
    }

    /// Every engine loaded from the plugins folder, by code.
    pub fn loaded_engines(&self) -> Vec<LoadedEngineSummary> {
        let mut engines: Vec<LoadedEngineSummary> = self
            .engines
            .loaded()
            .iter()
            .map(|engine| LoadedEngineSummary {
                code: engine.descriptor.code.clone(),
                name: engine.descriptor.name.clone(),
                version: engine.descriptor.version.clone(),
                world: engine.world().as_str().to_owned(),
                requires_tenant_provision: engine.descriptor.requires_tenant_provision,
                requires_user_provision: engine.descriptor.requires_user_provision,
            })
            .collect();
        engines.sort_by(|left, right| left.code.cmp(&right.code));
        engines
    }

    fn tenant_engines(&self) -> Vec<Arc<LoadedEngine>> {
        self.engines
            .loaded()
            .into_iter()
            .filter(|engine| engine.descriptor.requires_tenant_provision)
            .collect()
    }

    fn user_engines(&self) -> Vec<Arc<LoadedEngine>> {
        self.engines
            .loaded()
            .into_iter()
            .filter(|engine| engine.descriptor.requires_user_provision)
            .collect()
    }

    /// Provisions a tenant on every loaded engine with `requires_tenant_provision`, replacing
    /// any earlier record of this tenant's provisioning.
    pub async fn provision_tenant(
        &self,
        tenant: &TenantProfile,
    ) -> anyhow::Result<TenantProvisioning> {
        store::begin_tenant(&self.database, tenant).await?;
        let outcomes = self
            .run_each(
                &self.tenant_engines(),
                &Lifecycle::ProvisionTenant(tenant.clone()),
            )
            .await;
        let status = ProvisioningStatus::of(outcomes.values());
        store::finish_tenant(&self.database, &tenant.tenant_id, status, &outcomes, true).await?;
        Ok(TenantProvisioning {
            tenant_id: tenant.tenant_id.clone(),
            status,
            engines: outcomes,
        })
    }

    /// The persisted provisioning of a tenant, `None` when it was never provisioned.
    pub async fn tenant_status(
        &self,
        tenant_id: &str,
    ) -> anyhow::Result<Option<TenantProvisioning>> {
        let Some(record) = store::find_tenant(&self.database, tenant_id).await? else {
            return Ok(None);
        };
        Ok(Some(TenantProvisioning {
            tenant_id: record.profile.tenant_id,
            status: record.status,
            engines: record.engines,
        }))
    }

    /// Runs again every engine that has not provisioned this tenant: those that failed, and
    /// those with no outcome at all (a host stopped mid-way, or the engine was added since).
    /// Engines already provisioned are left alone. `None` when the tenant was never provisioned.
    pub async fn retry_tenant(&self, tenant_id: &str) -> anyhow::Result<Option<RetryReport>> {
        let Some(record) = store::find_tenant(&self.database, tenant_id).await? else {
            return Ok(None);
        };
        let loaded = self.tenant_engines();
        let mut retried = BTreeMap::new();
        // Failed engines that are no longer loaded stay failed, with the reason.
        for (code, outcome) in &record.engines {
            if outcome.is_failed() && !loaded.iter().any(|engine| &engine.descriptor.code == code) {
                retried.insert(
                    code.clone(),
                    EngineOutcome::Failed {
                        error: format!("the engine {code} is not loaded"),
                        at: time::now(),
                    },
                );
            }
        }
        let to_run: Vec<Arc<LoadedEngine>> = loaded
            .into_iter()
            .filter(|engine| {
                record
                    .engines
                    .get(&engine.descriptor.code)
                    .is_none_or(EngineOutcome::is_failed)
            })
            .collect();
        retried.extend(
            self.run_each(&to_run, &Lifecycle::ProvisionTenant(record.profile.clone()))
                .await,
        );
        let mut all = record.engines;
        all.extend(retried.clone());
        let status = ProvisioningStatus::of(all.values());
        store::finish_tenant(&self.database, tenant_id, status, &retried, false).await?;
        Ok(Some(RetryReport {
            tenant_id: tenant_id.to_owned(),
            status,
            retried,
        }))
    }

    /// Removes a tenant's data from every loaded engine (each engine's deprovision export, for
    /// what it keeps outside host storage) and then from host storage, whatever the engines
    /// answered: engine storage of every engine, loaded or not, and provisioning records.
    pub async fn deprovision_tenant(&self, tenant_id: &str) -> anyhow::Result<ProvisioningStatus> {
        let outcomes = self
            .run_each(
                &self.engines.loaded(),
                &Lifecycle::DeprovisionTenant {
                    tenant_id: tenant_id.to_owned(),
                },
            )
            .await;
        let mut tx = self.database.begin().await?;
        store::delete_tenant_data(&mut tx, tenant_id).await?;
        tx.commit().await?;
        Ok(ProvisioningStatus::of(outcomes.values()))
    }

    /// Provisions a user on every loaded engine with `requires_user_provision`.
    pub async fn provision_user(&self, user: &UserProfile) -> anyhow::Result<UserProvisioning> {
        let outcomes = self
            .run_each(
                &self.user_engines(),
                &Lifecycle::ProvisionUser(user.clone()),
            )
            .await;
        store::record_user(&self.database, user, &outcomes).await?;
        Ok(UserProvisioning {
            user_id: user.user_id.clone(),
            status: ProvisioningStatus::of(outcomes.values()),
            engines: outcomes,
        })
    }

    /// Removes a user's data from every loaded engine with `requires_user_provision`.
    pub async fn deprovision_user(
        &self,
        tenant_id: &str,
        user_id: &str,
    ) -> anyhow::Result<ProvisioningStatus> {
        let outcomes = self
            .run_each(
                &self.user_engines(),
                &Lifecycle::DeprovisionUser {
                    tenant_id: tenant_id.to_owned(),
                    user_id: user_id.to_owned(),
                },
            )
            .await;
        store::forget_user(&self.database, tenant_id, user_id).await?;
        Ok(ProvisioningStatus::of(outcomes.values()))
    }
}

/// Records a tenant as `pending` inside the transaction that creates it, so a crash before its
/// engines run leaves a record that retry completes.
pub async fn record_pending_tenant(tx: &mut Tx, tenant: &TenantProfile) -> anyhow::Result<()> {
    store::insert_pending_tenant(tx, tenant).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provisioned() -> EngineOutcome {
        EngineOutcome::Provisioned { at: time::now() }
    }

    fn failed() -> EngineOutcome {
        EngineOutcome::Failed {
            error: "no".into(),
            at: time::now(),
        }
    }

    #[test]
    fn the_overall_status_follows_the_engines() {
        assert_eq!(ProvisioningStatus::of([]), ProvisioningStatus::Completed);
        assert_eq!(
            ProvisioningStatus::of(&[provisioned(), provisioned()]),
            ProvisioningStatus::Completed
        );
        assert_eq!(
            ProvisioningStatus::of(&[provisioned(), failed()]),
            ProvisioningStatus::PartialFailure
        );
        assert_eq!(
            ProvisioningStatus::of(&[failed(), failed()]),
            ProvisioningStatus::Failed
        );
        for status in [
            ProvisioningStatus::Pending,
            ProvisioningStatus::InProgress,
            ProvisioningStatus::Completed,
            ProvisioningStatus::PartialFailure,
            ProvisioningStatus::Failed,
        ] {
            assert_eq!(ProvisioningStatus::parse(status.as_str()).unwrap(), status);
        }
    }
}
