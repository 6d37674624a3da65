//! `POST /core/api/v1/intentions`: the write path of the core service.

use axum::extract::State;
use axum::response::Response;
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::intentions::{self, Intention, ProcessedIntention, Submitter};
use crate::state::CoreState;
use tessera_auth::caller::Caller;
use tessera_http::conventions::CorrelationId;
use tessera_http::envelope::{self, Data};
use tessera_http::extract::{ApiJson, NoQuery};
use tessera_http::{ApiError, ApiResult};

pub(super) fn router<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    CoreState: axum::extract::FromRef<S>,
    tessera_auth::AuthState: axum::extract::FromRef<S>,
{
    OpenApiRouter::new().routes(routes!(submit_intention))
}

/// The body of an intention.
#[derive(Debug, Deserialize, ToSchema)]
pub struct IntentionRequest {
    /// `entity.create`, `entity.update`, `entity.delete` or `entity.status_change`.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// `entity.create`: `family`, `fields`, optional `status`; `entity.update`: `entity_id`,
    /// `fields`; `entity.delete`: `entity_id`; `entity.status_change`: `entity_id`, `status`.
    #[schema(value_type = Object)]
    pub payload: Option<Value>,
}

/// Submits an intention; it is processed synchronously and answered with its domain events.
#[utoipa::path(
    post,
    path = "/core/api/v1/intentions",
    tag = "core",
    security(("bearer" = [])),
    request_body = IntentionRequest,
    responses(
        (status = 200, description = "Processed, with the resulting domain events", body = Data<ProcessedIntention>),
        (status = 400, description = "Malformed JSON"),
        (status = 401, description = "Unauthenticated"),
        (status = 403, description = "A viewer or guest cannot write; only owners change entities others created"),
        (status = 404, description = "The entity is not in the tenant"),
        (status = 422, description = "Invalid payload, unknown family, or a status outside the pipeline; nothing changed"),
    )
)]
async fn submit_intention(
    State(state): State<CoreState>,
    caller: Caller,
    correlation_id: CorrelationId,
    _: NoQuery,
    ApiJson(request): ApiJson<IntentionRequest>,
) -> ApiResult<Response> {
    caller.require_writer()?;
    let intention = Intention::parse(request.kind.as_deref(), request.payload.as_ref())
        .map_err(ApiError::Validation)?;
    let submitter = Submitter {
        may_modify_others: caller.require_owner().is_ok(),
        tenant_id: caller.tenant_id,
        user_id: caller.user_id,
        correlation_id: Some(correlation_id.0),
        depth: 0,
    };
    // A refused intention is answered as its `ApiError` (`From<IntentionError>`).
    let processed = intentions::process(
        &state.database,
        &state.intention_writer,
        submitter,
        intention,
    )
    .await?;
    Ok(envelope::ok(processed))
}
