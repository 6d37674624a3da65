//! `GET /core/api/metrics` (public): with a bearer token the metrics of that token's tenant,
//! without one those of the whole platform.

use axum::Json;
use axum::extract::State;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::auth::caller::OptionalCaller;
use crate::core::projections::stats::{self, Metrics};
use crate::http::ApiResult;
use crate::http::envelope::Data;
use crate::http::extract::NoQuery;
use crate::state::AppState;

pub(super) fn router() -> OpenApiRouter<AppState> {
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
    State(state): State<AppState>,
    OptionalCaller(caller): OptionalCaller,
    _: NoQuery,
) -> ApiResult<Json<Data<Metrics>>> {
    let tenant_id = caller.as_ref().map(|caller| caller.tenant_id.as_str());
    let data = stats::metrics(&state.database, tenant_id).await?;
    Ok(Json(Data { data }))
}
