//! Lifecycle calls into engines (provision and deprovision tenants and users), used by the
//! orchestrator and by the engines' internal endpoints
//! `/<code>/api/internal/<code>/{provision,deprovision}/{tenant,user}` (signed over method, path
//! and body, CONTRACT §5; bodies refuse unknown fields).

use serde::Deserialize;
use utoipa::ToSchema;

use super::bindings::v0_3::tessera::engine::types as wit;
use super::engine::EngineRuntime;
use super::registry::LoadedEngine;
use tessera_http::{ApiError, ValidationErrors};

/// A tenant as engines see it at provisioning (`tessera-wire`'s, as the SDK's).
pub type TenantProfile = tessera_wire::engine::TenantInfo;

/// A user as engines see it at provisioning (`tessera-wire`'s, as the SDK's).
pub type UserProfile = tessera_wire::engine::UserInfo;

/// The body of a tenant provisioning request (orchestration and engine-internal endpoints).
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TenantProvisionRequest {
    /// UUID of the tenant.
    pub tenant_id: Option<String>,
    /// The tenant's slug.
    pub tenant_short_id: Option<String>,
    pub name: Option<String>,
}

/// The body of a user provisioning request.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UserProvisionRequest {
    pub tenant_id: Option<String>,
    pub tenant_short_id: Option<String>,
    pub user_id: Option<String>,
    pub email: Option<String>,
    pub first_name: Option<String>,
    pub last_name: Option<String>,
    /// `user`, `guest` or `agent`.
    #[serde(rename = "type")]
    pub user_type: Option<String>,
}

/// The body of a tenant deprovisioning request.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TenantDeprovisionRequest {
    pub tenant_id: Option<String>,
}

/// The body of a user deprovisioning request.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UserDeprovisionRequest {
    pub tenant_id: Option<String>,
    pub user_id: Option<String>,
}

/// One lifecycle operation on one engine.
#[derive(Debug, Clone)]
pub enum Lifecycle {
    ProvisionTenant(TenantProfile),
    DeprovisionTenant { tenant_id: String },
    ProvisionUser(UserProfile),
    DeprovisionUser { tenant_id: String, user_id: String },
}

impl Lifecycle {
    /// The `status` an engine's internal endpoint reports on success.
    pub fn outcome(&self) -> &'static str {
        match self {
            Lifecycle::ProvisionTenant(_) | Lifecycle::ProvisionUser(_) => "provisioned",
            Lifecycle::DeprovisionTenant { .. } | Lifecycle::DeprovisionUser { .. } => {
                "deprovisioned"
            }
        }
    }

    pub fn tenant_id(&self) -> &str {
        match self {
            Lifecycle::ProvisionTenant(tenant) => &tenant.tenant_id,
            Lifecycle::DeprovisionTenant { tenant_id }
            | Lifecycle::DeprovisionUser { tenant_id, .. } => tenant_id,
            Lifecycle::ProvisionUser(user) => &user.tenant_id,
        }
    }
}

impl From<&TenantProfile> for wit::TenantInfo {
    fn from(tenant: &TenantProfile) -> Self {
        Self {
            tenant_id: tenant.tenant_id.clone(),
            tenant_short_id: tenant.tenant_short_id.clone(),
            name: tenant.name.clone(),
        }
    }
}

impl From<&UserProfile> for wit::UserInfo {
    fn from(user: &UserProfile) -> Self {
        Self {
            tenant_id: user.tenant_id.clone(),
            user_id: user.user_id.clone(),
            email: user.email.clone(),
            first_name: user.first_name.clone(),
            last_name: user.last_name.clone(),
            user_type: user.user_type.clone(),
        }
    }
}

/// Runs a lifecycle export in the tenant's scope. `Err` carries the reason: the engine's own
/// error, a trap or a timeout.
pub async fn run(
    runtime: &EngineRuntime,
    engine: &LoadedEngine,
    operation: &Lifecycle,
) -> Result<(), String> {
    let scope = engine.scope(operation.tenant_id(), None);
    let outcome = runtime
        .call(
            &engine.pre,
            scope,
            runtime
                .config()
                .limits_of(&engine.descriptor.code)
                .lifecycle_timeout,
            Result::is_ok,
            async |guest, store| match operation {
                Lifecycle::ProvisionTenant(tenant) => {
                    guest.call_provision_tenant(store, &tenant.into()).await
                }
                Lifecycle::DeprovisionTenant { tenant_id } => {
                    guest.call_deprovision_tenant(store, tenant_id).await
                }
                Lifecycle::ProvisionUser(user) => {
                    guest.call_provision_user(store, &user.into()).await
                }
                Lifecycle::DeprovisionUser { tenant_id, user_id } => {
                    guest.call_deprovision_user(store, tenant_id, user_id).await
                }
            },
        )
        .await;
    // What the engine's instances read of the tenant before may have changed.
    runtime.retire_warm_tenant(operation.tenant_id());
    match outcome {
        Ok(result) => result,
        Err(error) => Err(error.into_reason(&engine.descriptor.code)),
    }
}

/// A required, trimmed value.
fn require(errors: &mut ValidationErrors, field: &str, value: Option<String>) -> String {
    errors.required(field, value).trim().to_owned()
}

/// A required UUID, in its canonical lower-case hyphenated form.
fn require_uuid(errors: &mut ValidationErrors, field: &str, value: Option<String>) -> String {
    let value = require(errors, field, value);
    if value.is_empty() {
        return value;
    }
    errors.uuid(field, Some(value.clone())).unwrap_or(value)
}

impl TenantProvisionRequest {
    pub fn validate(self) -> Result<TenantProfile, ApiError> {
        let mut errors = ValidationErrors::new();
        let tenant_id = require_uuid(&mut errors, "tenant_id", self.tenant_id);
        let tenant_short_id = require(&mut errors, "tenant_short_id", self.tenant_short_id);
        let name = require(&mut errors, "name", self.name);
        errors.into_result()?;
        Ok(TenantProfile {
            tenant_id,
            tenant_short_id,
            name,
        })
    }
}

impl UserProvisionRequest {
    pub fn validate(self) -> Result<UserProfile, ApiError> {
        let mut errors = ValidationErrors::new();
        let tenant_id = require_uuid(&mut errors, "tenant_id", self.tenant_id);
        let user_id = require_uuid(&mut errors, "user_id", self.user_id);
        let email = require(&mut errors, "email", self.email);
        if !email.is_empty() && !tessera_auth::identity::is_valid_email(&email) {
            errors.add("email", "email");
        }
        let first_name = require(&mut errors, "first_name", self.first_name);
        let last_name = require(&mut errors, "last_name", self.last_name);
        let user_type = require(&mut errors, "type", self.user_type);
        if !user_type.is_empty() && !["user", "guest", "agent"].contains(&user_type.as_str()) {
            errors.add("type", "in");
        }
        errors.into_result()?;
        Ok(UserProfile {
            tenant_id,
            user_id,
            email,
            first_name,
            last_name,
            user_type,
        })
    }
}

impl TenantDeprovisionRequest {
    pub fn validate(self) -> Result<String, ApiError> {
        let mut errors = ValidationErrors::new();
        let tenant_id = require_uuid(&mut errors, "tenant_id", self.tenant_id);
        errors.into_result()?;
        Ok(tenant_id)
    }
}

impl UserDeprovisionRequest {
    pub fn validate(self) -> Result<(String, String), ApiError> {
        let mut errors = ValidationErrors::new();
        let tenant_id = require_uuid(&mut errors, "tenant_id", self.tenant_id);
        let user_id = require_uuid(&mut errors, "user_id", self.user_id);
        errors.into_result()?;
        Ok((tenant_id, user_id))
    }
}
