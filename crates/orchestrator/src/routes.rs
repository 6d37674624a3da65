//! `/core/api/internal/orchestration/*`: the orchestrator over HTTP, signed as CONTRACT §5 (over
//! method, path and body; bodies refuse unknown fields).
//! Every request runs to the end before it is answered (202 with the outcome).

use std::collections::BTreeMap;

use axum::extract::{Path, State};
use axum::response::Response;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{EngineOutcome, ProvisioningStatus};
use crate::Orchestrator;
use axum::extract::FromRef;
use tessera_http::envelope::{self, Data};
use tessera_http::extract::NoQuery;
use tessera_http::signature::{EmptyBody, SignedJson};
use tessera_http::{ApiError, ApiResult};
use tessera_runtime::lifecycle::{
    TenantDeprovisionRequest, TenantProvisionRequest, UserDeprovisionRequest, UserProvisionRequest,
};

/// One engine's outcome as the orchestration endpoints report it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct EngineOutcomeBody {
    /// `provisioned` or `failed`.
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioned_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed_at: Option<String>,
}

/// Whether an outcome carries its timestamp (the status and retry endpoints) or not (the
/// provisioning answers and the CLI).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timestamps {
    Shown,
    Hidden,
}

impl EngineOutcomeBody {
    pub fn from_outcome(outcome: &EngineOutcome, timestamps: Timestamps) -> Self {
        let shown = |at: &String| (timestamps == Timestamps::Shown).then(|| at.clone());
        match outcome {
            EngineOutcome::Provisioned { at } => Self {
                status: "provisioned",
                error: None,
                provisioned_at: shown(at),
                failed_at: None,
            },
            EngineOutcome::Failed { error, at } => Self {
                status: "failed",
                error: Some(error.clone()),
                provisioned_at: None,
                failed_at: shown(at),
            },
        }
    }
}

/// Every outcome, by engine code.
pub fn outcome_bodies(
    outcomes: &BTreeMap<String, EngineOutcome>,
    timestamps: Timestamps,
) -> BTreeMap<String, EngineOutcomeBody> {
    outcomes
        .iter()
        .map(|(code, outcome)| {
            (
                code.clone(),
                EngineOutcomeBody::from_outcome(outcome, timestamps),
            )
        })
        .collect()
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TenantProvisioningBody {
    pub tenant_id: String,
    pub status: ProvisioningStatus,
    pub engines: BTreeMap<String, EngineOutcomeBody>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TenantRetryBody {
    pub tenant_id: String,
    pub status: ProvisioningStatus,
    pub retried_engines: Vec<String>,
    /// The retried engines only.
    pub engines: BTreeMap<String, EngineOutcomeBody>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct UserProvisioningBody {
    pub user_id: String,
    pub status: ProvisioningStatus,
    pub engines: BTreeMap<String, EngineOutcomeBody>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TenantDeprovisioningBody {
    pub tenant_id: String,
    pub status: ProvisioningStatus,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct UserDeprovisioningBody {
    pub user_id: String,
    pub status: ProvisioningStatus,
}

pub fn router<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Orchestrator: FromRef<S>,
    tessera_http::signature::InternalCalls: FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(provision_tenant))
        .routes(routes!(provision_user))
        .routes(routes!(deprovision_user))
        .routes(routes!(deprovision_tenant))
        .routes(routes!(tenant_status))
        .routes(routes!(retry_tenant))
}

/// Provisions a tenant on every engine with `requires_tenant_provision`, sequentially and
/// best-effort.
#[utoipa::path(
    post,
    path = "/core/api/internal/orchestration/provision/tenant",
    tag = "orchestration",
    params(("X-Service-Signature" = String, Header, description = "t=<unix seconds>,v1=<hex HMAC-SHA256> over `<t>.<METHOD>.<path>.<raw body>`")),
    request_body = TenantProvisionRequest,
    responses(
        (status = 202, description = "Every engine ran; the outcome", body = Data<TenantProvisioningBody>),
        (status = 401, description = "Missing, malformed, wrong or stale signature"),
        (status = 422, description = "Missing, malformed or unknown fields"),
    )
)]
async fn provision_tenant(
    State(orchestrator): State<Orchestrator>,
    SignedJson(body): SignedJson<TenantProvisionRequest>,
) -> ApiResult<Response> {
    let tenant = body.validate()?;
    let provisioning = orchestrator.provision_tenant(&tenant).await?;
    Ok(envelope::accepted(TenantProvisioningBody {
        tenant_id: provisioning.tenant_id,
        status: provisioning.status,
        engines: outcome_bodies(&provisioning.engines, Timestamps::Hidden),
    }))
}

/// Provisions a user on every engine with `requires_user_provision`.
#[utoipa::path(
    post,
    path = "/core/api/internal/orchestration/provision/user",
    tag = "orchestration",
    params(("X-Service-Signature" = String, Header, description = "t=<unix seconds>,v1=<hex HMAC-SHA256> over `<t>.<METHOD>.<path>.<raw body>`")),
    request_body = UserProvisionRequest,
    responses(
        (status = 202, description = "Every engine ran; the outcome", body = Data<UserProvisioningBody>),
        (status = 401, description = "Missing, malformed, wrong or stale signature"),
        (status = 422, description = "Missing, malformed or unknown fields"),
    )
)]
async fn provision_user(
    State(orchestrator): State<Orchestrator>,
    SignedJson(body): SignedJson<UserProvisionRequest>,
) -> ApiResult<Response> {
    let user = body.validate()?;
    let provisioning = orchestrator.provision_user(&user).await?;
    Ok(envelope::accepted(UserProvisioningBody {
        user_id: provisioning.user_id,
        status: provisioning.status,
        engines: outcome_bodies(&provisioning.engines, Timestamps::Hidden),
    }))
}

/// Removes a user's data from every engine with `requires_user_provision`.
#[utoipa::path(
    post,
    path = "/core/api/internal/orchestration/deprovision/user",
    tag = "orchestration",
    params(("X-Service-Signature" = String, Header, description = "t=<unix seconds>,v1=<hex HMAC-SHA256> over `<t>.<METHOD>.<path>.<raw body>`")),
    request_body = UserDeprovisionRequest,
    responses(
        (status = 202, description = "Every engine ran", body = Data<UserDeprovisioningBody>),
        (status = 401, description = "Missing, malformed, wrong or stale signature"),
        (status = 422, description = "Missing, malformed or unknown fields"),
    )
)]
async fn deprovision_user(
    State(orchestrator): State<Orchestrator>,
    SignedJson(body): SignedJson<UserDeprovisionRequest>,
) -> ApiResult<Response> {
    let (tenant_id, user_id) = body.validate()?;
    let status = orchestrator.deprovision_user(&tenant_id, &user_id).await?;
    Ok(envelope::accepted(UserDeprovisioningBody {
        user_id,
        status,
    }))
}

/// Destructive: removes all of a tenant's data from every engine and from host storage.
#[utoipa::path(
    post,
    path = "/core/api/internal/orchestration/deprovision/tenant",
    tag = "orchestration",
    params(("X-Service-Signature" = String, Header, description = "t=<unix seconds>,v1=<hex HMAC-SHA256> over `<t>.<METHOD>.<path>.<raw body>`")),
    request_body = TenantDeprovisionRequest,
    responses(
        (status = 202, description = "Every engine ran; host storage of the tenant removed", body = Data<TenantDeprovisioningBody>),
        (status = 401, description = "Missing, malformed, wrong or stale signature"),
        (status = 422, description = "Missing, malformed or unknown fields"),
    )
)]
async fn deprovision_tenant(
    State(orchestrator): State<Orchestrator>,
    SignedJson(body): SignedJson<TenantDeprovisionRequest>,
) -> ApiResult<Response> {
    let tenant_id = body.validate()?;
    let status = orchestrator.deprovision_tenant(&tenant_id).await?;
    Ok(envelope::accepted(TenantDeprovisioningBody {
        tenant_id,
        status,
    }))
}

/// The persisted provisioning status of a tenant.
#[utoipa::path(
    get,
    path = "/core/api/internal/orchestration/provision/tenant/{tenantId}/status",
    tag = "orchestration",
    params(
        ("tenantId" = String, Path, description = "The tenant's UUID"),
        ("X-Service-Signature" = String, Header, description = "t=<unix seconds>,v1=<hex HMAC-SHA256> over `<t>.<METHOD>.<path>.` (empty body)"),
    ),
    responses(
        (status = 200, description = "Status and each engine's outcome", body = Data<TenantProvisioningBody>),
        (status = 401, description = "Missing, malformed, wrong or stale signature"),
        (status = 404, description = "The tenant was never provisioned"),
    )
)]
async fn tenant_status(
    State(orchestrator): State<Orchestrator>,
    Path(tenant_id): Path<String>,
    _: NoQuery,
    _signed: SignedJson<EmptyBody>,
) -> ApiResult<Response> {
    let provisioning = orchestrator
        .tenant_status(&tenant_id)
        .await?
        .ok_or_else(|| ApiError::not_found("Tenant provisioning"))?;
    Ok(envelope::ok(TenantProvisioningBody {
        tenant_id: provisioning.tenant_id,
        status: provisioning.status,
        engines: outcome_bodies(&provisioning.engines, Timestamps::Shown),
    }))
}

/// Runs again the engines that have not provisioned the tenant (failed, or never ran).
#[utoipa::path(
    post,
    path = "/core/api/internal/orchestration/provision/tenant/{tenantId}/retry",
    tag = "orchestration",
    params(
        ("tenantId" = String, Path, description = "The tenant's UUID"),
        ("X-Service-Signature" = String, Header, description = "t=<unix seconds>,v1=<hex HMAC-SHA256> over `<t>.<METHOD>.<path>.` (empty body)"),
    ),
    responses(
        (status = 202, description = "The retried engines ran", body = Data<TenantRetryBody>),
        (status = 401, description = "Missing, malformed, wrong or stale signature"),
        (status = 422, description = "A body other than `{}` or none"),
        (status = 404, description = "The tenant was never provisioned"),
    )
)]
async fn retry_tenant(
    State(orchestrator): State<Orchestrator>,
    Path(tenant_id): Path<String>,
    _signed: SignedJson<EmptyBody>,
) -> ApiResult<Response> {
    let report = orchestrator
        .retry_tenant(&tenant_id)
        .await?
        .ok_or_else(|| ApiError::not_found("Tenant provisioning"))?;
    Ok(envelope::accepted(TenantRetryBody {
        tenant_id: report.tenant_id,
        status: report.status,
        retried_engines: report.retried.keys().cloned().collect(),
        engines: outcome_bodies(&report.retried, Timestamps::Shown),
    }))
}
