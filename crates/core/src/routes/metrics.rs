//! `GET /core/api/metrics` (public): with a bearer token the metrics of that token's tenant,
//! without one those of the whole platform.

use axum::Json;
use axum::extract::State;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::projections::stats::{self, Metrics};
use crate::state::CoreState;
use tessera_auth::caller::OptionalCaller;
use tessera_http::ApiResult;
use tessera_http::envelope::Data;
use tessera_http::extract::NoQuery;

pub(super) fn router<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    CoreState: axum::extract::FromRef<S>,
    tessera_auth::AuthState: axum::extract::FromRef<S>,
{
    OpenApiRouter::new().routes(routes!(metrics))
}

/// Projection and workflow metrics.
#[utoipa::path(
    get,
    path = "/core/api/metrics",
    tag = "health",
    responses(
        (status = 200, description = "The metrics of the token's tenant, or of the platform without a token", body = Data<Metrics>),
        (status = 401, description = "A bearer token was sent but is not valid"),
    )
)]
async fn metrics(
    State(state): State<CoreState>,
    OptionalCaller(caller): OptionalCaller,
    _: NoQuery,
) -> ApiResult<Json<Data<Metrics>>> {
    let tenant_id = caller.as_ref().map(|caller| caller.tenant_id.as_str());
    let data = stats::metrics(&state.database, tenant_id, state.backpressure.report()).await?;
    Ok(Json(Data { data }))
}
