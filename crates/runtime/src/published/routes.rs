//! The operator endpoints of published engines (CONTRACT §8), for a bearer of the operator
//! token: publish a component (`POST /core/api/operator/engines`, the `.wasm` file as the
//! body), list the codes and their versions, activate, deactivate and roll back. The admin
//! CLI's `engine …` commands do the same against the database.

use axum::body::Bytes;
use axum::extract::{FromRef, Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use serde::Deserialize;
use tessera_distribution::signature::ComponentSignature;
use tessera_http::envelope::{self, Data};
use tessera_http::extract::{ApiJson, ApiQuery, NoQuery};
use tessera_http::operator::{Operator, OperatorCredential};
use tessera_http::{ApiError, ApiResult, ValidationErrors};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{EngineRelease, PublishError, PublishedVersion};
use crate::state::RuntimeState;

/// Published engines' routes; the app gives them a body limit of
/// `TESSERA_ENGINE_MAX_COMPONENT_BYTES`.
pub fn router<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    RuntimeState: FromRef<S>,
    OperatorCredential: FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(publish_engine, list_releases))
        .routes(routes!(list_versions))
        .routes(routes!(activate_version))
        .routes(routes!(deactivate_engine))
        .routes(routes!(roll_back_engine))
}

impl From<PublishError> for ApiError {
    fn from(error: PublishError) -> Self {
        match error {
            PublishError::InvalidComponent(reason) => {
                ApiError::Validation(ValidationErrors::single("component", reason))
            }
            PublishError::TooLarge { .. } => ApiError::PayloadTooLarge,
            PublishError::Signature(refusal) => {
                ApiError::Validation(ValidationErrors::single("signature", refusal.to_string()))
            }
            PublishError::InvalidManifest(reason) => {
                ApiError::Validation(ValidationErrors::single("manifest", reason))
            }
            PublishError::UnknownCode(_) | PublishError::UnknownVersion { .. } => {
                ApiError::NotFound(format!("{error}."))
            }
            PublishError::NothingToRollBack(_) => ApiError::Conflict(format!("{error}.")),
            PublishError::Internal(error) => ApiError::Internal(error),
        }
    }
}

/// A component's bytes, as the publish endpoint's body.
#[derive(ToSchema)]
#[schema(value_type = String, format = Binary)]
pub struct ComponentBytes(pub Vec<u8>);

/// The header that carries a publisher's signature.
pub const SIGNATURE_HEADER: &str = "tessera-component-signature";

/// `?activate=false` publishes without activating.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct PublishQuery {
    /// Make it the code's active version (default `true`).
    activate: Option<bool>,
}

/// Publishes a component (the `.wasm` file as the body) as the next version of the engine code
/// it describes, checked as a host would load it; the same bytes again answer their existing
/// version. Active at once unless `activate=false`: every host loads it within seconds.
#[utoipa::path(
    post,
    path = "/core/api/operator/engines",
    tag = "operator",
    security(("operator_token" = [])),
    params(
        PublishQuery,
        ("Tessera-Component-Signature" = Option<String>, Header, description = "The base64 Ed25519 signature of the body by a key of `TESSERA_ENGINE_TRUSTED_KEYS` (required when that lists keys)"),
    ),
    request_body(content = ComponentBytes, content_type = "application/octet-stream", description = "The component's bytes (any content type is read as bytes; `application/wasm` too)"),
    responses(
        (status = 201, description = "The published version", body = Data<PublishedVersion>),
        (status = 401, description = "No bearer token, or not the operator token"),
        (status = 413, description = "Larger than `TESSERA_ENGINE_MAX_COMPONENT_BYTES`"),
        (status = 422, description = "Not a component a host can load (`errors.component` says why), or not signed by a trusted key when signatures are required (`errors.signature`)"),
    )
)]
async fn publish_engine(
    _: Operator,
    State(runtime): State<RuntimeState>,
    ApiQuery(query): ApiQuery<PublishQuery>,
    headers: HeaderMap,
    component: Bytes,
) -> ApiResult<Response> {
    let signature = headers
        .get(SIGNATURE_HEADER)
        .map(|value| ComponentSignature::from_bytes_or_base64(value.as_bytes()))
        .transpose()
        .map_err(|error| ValidationErrors::single("signature", error.to_string()))?;
    let published = super::publish(
        &runtime.engines,
        component.to_vec(),
        super::PublishOptions {
            signature: signature.as_ref(),
            manifest: None,
            activate: query.activate.unwrap_or(true),
        },
    )
    .await?;
    runtime.engines.releases_changed();
    Ok(envelope::created(published))
}

/// Every published engine code with its active version (and digest) and previous version.
#[utoipa::path(
    get,
    path = "/core/api/operator/engines",
    tag = "operator",
    security(("operator_token" = [])),
    responses(
        (status = 200, description = "The published codes", body = Data<Vec<EngineRelease>>),
        (status = 401, description = "No bearer token, or not the operator token"),
    )
)]
async fn list_releases(
    _: Operator,
    State(runtime): State<RuntimeState>,
    _: NoQuery,
) -> ApiResult<Response> {
    Ok(envelope::ok(
        super::releases(runtime.engines.database()).await?,
    ))
}

/// Every published version of an engine code, newest first.
#[utoipa::path(
    get,
    path = "/core/api/operator/engines/{code}/versions",
    tag = "operator",
    security(("operator_token" = [])),
    params(("code" = String, Path, description = "The engine code")),
    responses(
        (status = 200, description = "Its versions", body = Data<Vec<PublishedVersion>>),
        (status = 401, description = "No bearer token, or not the operator token"),
        (status = 404, description = "Nothing published under this code"),
    )
)]
async fn list_versions(
    _: Operator,
    State(runtime): State<RuntimeState>,
    Path(code): Path<String>,
    _: NoQuery,
) -> ApiResult<Response> {
    Ok(envelope::ok(
        super::versions(runtime.engines.database(), &code).await?,
    ))
}

/// The version to activate.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ActivateBody {
    pub version: i64,
}

/// Makes a published version the code's active one; every host swaps it in.
#[utoipa::path(
    post,
    path = "/core/api/operator/engines/{code}/activate",
    tag = "operator",
    security(("operator_token" = [])),
    params(("code" = String, Path, description = "The engine code")),
    request_body = ActivateBody,
    responses(
        (status = 200, description = "The code's release state", body = Data<EngineRelease>),
        (status = 401, description = "No bearer token, or not the operator token"),
        (status = 404, description = "No such code or version"),
        (status = 422, description = "`version` missing or not an integer"),
    )
)]
async fn activate_version(
    _: Operator,
    State(runtime): State<RuntimeState>,
    Path(code): Path<String>,
    _: NoQuery,
    ApiJson(body): ApiJson<ActivateBody>,
) -> ApiResult<Response> {
    let release = super::activate(runtime.engines.database(), &code, body.version).await?;
    runtime.engines.releases_changed();
    Ok(envelope::ok(release))
}

/// Leaves a code without an active version: hosts unload it, or go back to their plugins
/// dir's file of it.
#[utoipa::path(
    post,
    path = "/core/api/operator/engines/{code}/deactivate",
    tag = "operator",
    security(("operator_token" = [])),
    params(("code" = String, Path, description = "The engine code")),
    responses(
        (status = 200, description = "The code's release state", body = Data<EngineRelease>),
        (status = 401, description = "No bearer token, or not the operator token"),
        (status = 404, description = "Nothing published under this code"),
    )
)]
async fn deactivate_engine(
    _: Operator,
    State(runtime): State<RuntimeState>,
    Path(code): Path<String>,
    _: NoQuery,
) -> ApiResult<Response> {
    let release = super::deactivate(runtime.engines.database(), &code).await?;
    runtime.engines.releases_changed();
    Ok(envelope::ok(release))
}

/// Makes the previous version active again (rolling back twice goes forward again).
#[utoipa::path(
    post,
    path = "/core/api/operator/engines/{code}/rollback",
    tag = "operator",
    security(("operator_token" = [])),
    params(("code" = String, Path, description = "The engine code")),
    responses(
        (status = 200, description = "The code's release state", body = Data<EngineRelease>),
        (status = 401, description = "No bearer token, or not the operator token"),
        (status = 404, description = "Nothing published under this code"),
        (status = 409, description = "No previous version"),
    )
)]
async fn roll_back_engine(
    _: Operator,
    State(runtime): State<RuntimeState>,
    Path(code): Path<String>,
    _: NoQuery,
) -> ApiResult<Response> {
    let release = super::rollback(runtime.engines.database(), &code).await?;
    runtime.engines.releases_changed();
    Ok(envelope::ok(release))
}
