//! Lifecycle calls into engines (provision and deprovision tenants and users), used by the
//! orchestrator and by the engines' internal endpoints
//! `/<code>/api/internal/<code>/{provision,deprovision}/{tenant,user}` (signed, CONTRACT §5).

use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::post;
use serde::Deserialize;
use serde_json::json;

use super::bindings::v0_1::tessera::engine::types as wit;
use super::engine::CallError;
use super::registry::LoadedEngine;
use super::store::CallScope;
use crate::http::signature::SignedJson;
use crate::http::{ApiError, ApiResult, ValidationErrors, envelope};
use crate::state::AppState;

/// A tenant as engines see it at provisioning.
#[derive(Debug, Clone, Deserialize)]
pub struct TenantProvision {
    pub tenant_id: Option<String>,
    pub tenant_short_id: Option<String>,
    pub name: Option<String>,
}

/// A user as engines see it at provisioning.
#[derive(Debug, Clone, Deserialize)]
pub struct UserProvision {
    pub tenant_id: Option<String>,
    pub user_id: Option<String>,
    pub email: Option<String>,
    pub first_name: Option<String>,
    pub last_name: Option<String>,
    #[serde(rename = "type")]
    pub user_type: Option<String>,
}

/// One lifecycle operation on one engine.
#[derive(Debug, Clone)]
pub enum Lifecycle {
    ProvisionTenant(wit::TenantInfo),
    DeprovisionTenant { tenant_id: String },
    ProvisionUser(wit::UserInfo),
    DeprovisionUser { tenant_id: String, user_id: String },
}

impl Lifecycle {
    /// The `status` an engine's internal endpoint reports on success.
    fn outcome(&self) -> &'static str {
        match self {
            Lifecycle::ProvisionTenant(_) | Lifecycle::ProvisionUser(_) => "provisioned",
            Lifecycle::DeprovisionTenant { .. } | Lifecycle::DeprovisionUser { .. } => {
                "deprovisioned"
            }
        }
    }

    fn tenant_id(&self) -> &str {
        match self {
            Lifecycle::ProvisionTenant(tenant) => &tenant.tenant_id,
            Lifecycle::DeprovisionTenant { tenant_id }
            | Lifecycle::DeprovisionUser { tenant_id, .. } => tenant_id,
            Lifecycle::ProvisionUser(user) => &user.tenant_id,
        }
    }
}

/// Runs a lifecycle export in the tenant's scope. `Err` carries the reason: the engine's own
/// error, a trap or a timeout.
pub async fn run(
    state: &AppState,
    engine: &LoadedEngine,
    operation: &Lifecycle,
) -> Result<(), String> {
    let scope = CallScope {
        engine_code: engine.descriptor.code.clone(),
        tenant_id: Some(operation.tenant_id().to_owned()),
        correlation_id: None,
    };
    let runtime = state.engines.runtime();
    let outcome = runtime
        .call(
            &engine.pre,
            scope,
            runtime.config().lifecycle_timeout,
            async |guest, store| match operation {
                Lifecycle::ProvisionTenant(tenant) => {
                    guest.call_provision_tenant(store, tenant).await
                }
                Lifecycle::DeprovisionTenant { tenant_id } => {
                    guest.call_deprovision_tenant(store, tenant_id).await
                }
                Lifecycle::ProvisionUser(user) => guest.call_provision_user(store, user).await,
                Lifecycle::DeprovisionUser { tenant_id, user_id } => {
                    guest.call_deprovision_user(store, tenant_id, user_id).await
                }
            },
        )
        .await;
    match outcome {
        Ok(Ok(())) => Ok(()),
        Ok(Err(reason)) => Err(reason),
        Err(CallError::Timeout(deadline)) => {
            Err(format!("the engine did not answer within {deadline:?}"))
        }
        Err(error @ CallError::Trap(_)) => {
            tracing::error!(engine = %engine.descriptor.code, error = %error, "lifecycle call trapped");
            Err("the engine failed (trap)".into())
        }
    }
}

fn require(errors: &mut ValidationErrors, field: &str, value: Option<String>) -> String {
    match value
        .map(|value| value.trim().to_owned())
        .filter(|value| !value.is_empty())
    {
        Some(value) => value,
        None => {
            errors.add(field, "required");
            String::new()
        }
    }
}

impl TenantProvision {
    pub fn validate(self) -> Result<wit::TenantInfo, ApiError> {
        let mut errors = ValidationErrors::new();
        let tenant_id = require(&mut errors, "tenant_id", self.tenant_id);
        let tenant_short_id = require(&mut errors, "tenant_short_id", self.tenant_short_id);
        let name = require(&mut errors, "name", self.name);
        errors.into_result()?;
        Ok(wit::TenantInfo {
            tenant_id,
            tenant_short_id,
            name,
        })
    }
}

impl UserProvision {
    pub fn validate(self) -> Result<wit::UserInfo, ApiError> {
        let mut errors = ValidationErrors::new();
        let tenant_id = require(&mut errors, "tenant_id", self.tenant_id);
        let user_id = require(&mut errors, "user_id", self.user_id);
        let email = require(&mut errors, "email", self.email);
        let user_type = self.user_type.unwrap_or_else(|| "user".into());
        if !["user", "guest", "agent"].contains(&user_type.as_str()) {
            errors.add("type", "in");
        }
        errors.into_result()?;
        Ok(wit::UserInfo {
            tenant_id,
            user_id,
            email,
            first_name: self.first_name.unwrap_or_default(),
            last_name: self.last_name.unwrap_or_default(),
            user_type,
        })
    }
}

#[derive(Debug, Deserialize)]
struct TenantOnly {
    tenant_id: Option<String>,
}

#[derive(Debug, Deserialize)]
struct TenantAndUser {
    tenant_id: Option<String>,
    user_id: Option<String>,
}

/// `/<code>/api/internal/<code>/…` (the code twice, as CONTRACT §5 writes it).
pub fn internal_router() -> axum::Router<AppState> {
    axum::Router::new()
        .route(
            "/{code}/api/internal/{inner}/provision/tenant",
            post(provision_tenant),
        )
        .route(
            "/{code}/api/internal/{inner}/deprovision/tenant",
            post(deprovision_tenant),
        )
        .route(
            "/{code}/api/internal/{inner}/provision/user",
            post(provision_user),
        )
        .route(
            "/{code}/api/internal/{inner}/deprovision/user",
            post(deprovision_user),
        )
}

/// Checks the code, finds the engine, validates the body and runs the operation.
async fn endpoint<B>(
    state: &AppState,
    (code, inner): (String, String),
    body: B,
    operation: impl FnOnce(B) -> ApiResult<Lifecycle>,
) -> ApiResult<Response> {
    if code != inner {
        return Err(ApiError::NotFound(
            "The requested resource was not found.".into(),
        ));
    }
    let engine = state
        .engines
        .get(&code)
        .ok_or_else(|| ApiError::NotFound(format!("No engine is registered under {code:?}.")))?;
    let operation = operation(body)?;
    match run(state, &engine, &operation).await {
        Ok(()) => Ok(envelope::ok(
            json!({ "status": operation.outcome(), "engine": engine.descriptor.code }),
        )),
        Err(reason) => Err(ApiError::BadGateway(format!(
            "The engine {} failed: {reason}",
            engine.descriptor.code
        ))),
    }
}

async fn provision_tenant(
    State(state): State<AppState>,
    Path(codes): Path<(String, String)>,
    SignedJson(body): SignedJson<TenantProvision>,
) -> ApiResult<Response> {
    endpoint(&state, codes, body, |body| {
        Ok(Lifecycle::ProvisionTenant(body.validate()?))
    })
    .await
}

async fn deprovision_tenant(
    State(state): State<AppState>,
    Path(codes): Path<(String, String)>,
    SignedJson(body): SignedJson<TenantOnly>,
) -> ApiResult<Response> {
    endpoint(&state, codes, body, |body| {
        let mut errors = ValidationErrors::new();
        let tenant_id = require(&mut errors, "tenant_id", body.tenant_id);
        errors.into_result()?;
        Ok(Lifecycle::DeprovisionTenant { tenant_id })
    })
    .await
}

async fn provision_user(
    State(state): State<AppState>,
    Path(codes): Path<(String, String)>,
    SignedJson(body): SignedJson<UserProvision>,
) -> ApiResult<Response> {
    endpoint(&state, codes, body, |body| {
        Ok(Lifecycle::ProvisionUser(body.validate()?))
    })
    .await
}

async fn deprovision_user(
    State(state): State<AppState>,
    Path(codes): Path<(String, String)>,
    SignedJson(body): SignedJson<TenantAndUser>,
) -> ApiResult<Response> {
    endpoint(&state, codes, body, |body| {
        let mut errors = ValidationErrors::new();
        let tenant_id = require(&mut errors, "tenant_id", body.tenant_id);
        let user_id = require(&mut errors, "user_id", body.user_id);
        errors.into_result()?;
        Ok(Lifecycle::DeprovisionUser { tenant_id, user_id })
    })
    .await
}
