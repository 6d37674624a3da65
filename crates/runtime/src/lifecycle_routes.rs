//! The engines' signed lifecycle endpoints,
//! `/<code>/api/internal/<code>/{provision,deprovision}/{tenant,user}` (signed over method, path
//! and body, CONTRACT §5): each validates its body and runs the call through [`lifecycle`].

use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::post;
use serde_json::json;
use tessera_http::signature::SignedJson;
use tessera_http::{ApiError, ApiResult, envelope};

use crate::lifecycle::{
    self, Lifecycle, TenantDeprovisionRequest, TenantProvisionRequest, UserDeprovisionRequest,
    UserProvisionRequest,
};
use crate::state::RuntimeState;

/// `/<code>/api/internal/<code>/…` (the code twice, as CONTRACT §5 writes it).
pub fn internal_router<S>() -> axum::Router<S>
where
    S: Clone + Send + Sync + 'static,
    RuntimeState: axum::extract::FromRef<S>,
    tessera_http::signature::InternalCalls: axum::extract::FromRef<S>,
{
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
    state: &RuntimeState,
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
    match lifecycle::run(state.engines.runtime(), &engine, &operation).await {
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
    State(state): State<RuntimeState>,
    Path(codes): Path<(String, String)>,
    SignedJson(body): SignedJson<TenantProvisionRequest>,
) -> ApiResult<Response> {
    endpoint(&state, codes, body, |body| {
        Ok(Lifecycle::ProvisionTenant(body.validate()?))
    })
    .await
}

async fn deprovision_tenant(
    State(state): State<RuntimeState>,
    Path(codes): Path<(String, String)>,
    SignedJson(body): SignedJson<TenantDeprovisionRequest>,
) -> ApiResult<Response> {
    endpoint(&state, codes, body, |body| {
        Ok(Lifecycle::DeprovisionTenant {
            tenant_id: body.validate()?,
        })
    })
    .await
}

async fn provision_user(
    State(state): State<RuntimeState>,
    Path(codes): Path<(String, String)>,
    SignedJson(body): SignedJson<UserProvisionRequest>,
) -> ApiResult<Response> {
    endpoint(&state, codes, body, |body| {
        Ok(Lifecycle::ProvisionUser(body.validate()?))
    })
    .await
}

async fn deprovision_user(
    State(state): State<RuntimeState>,
    Path(codes): Path<(String, String)>,
    SignedJson(body): SignedJson<UserDeprovisionRequest>,
) -> ApiResult<Response> {
    endpoint(&state, codes, body, |body| {
        let (tenant_id, user_id) = body.validate()?;
        Ok(Lifecycle::DeprovisionUser { tenant_id, user_id })
    })
    .await
}
