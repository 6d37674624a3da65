//! The operator endpoints of the cluster (CONTRACT §8): `GET /core/api/operator/hosts`, for a
//! bearer of the operator token (`tessera admin operator-token`).

use axum::extract::{FromRef, State};
use axum::response::Response;
use tessera_http::ApiResult;
use tessera_http::envelope::{self, Data};
use tessera_http::extract::NoQuery;
use tessera_http::operator::{Operator, OperatorCredential};
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::{ClusterHosts, HostRecord};

pub fn router<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    ClusterHosts: FromRef<S>,
    OperatorCredential: FromRef<S>,
{
    OpenApiRouter::new().routes(routes!(list_hosts))
}

/// Every host of the cluster: live (heartbeating), stopped (shut down cleanly) or gone (no
/// heartbeat within `TESSERA_CLUSTER_HOST_TIMEOUT`), with the engines each runs; departed
/// hosts stay listed for a day.
#[utoipa::path(
    get,
    path = "/core/api/operator/hosts",
    tag = "operator",
    security(("operator_token" = [])),
    responses(
        (status = 200, description = "The hosts, oldest first", body = Data<Vec<HostRecord>>),
        (status = 401, description = "No bearer token, or not the operator token"),
    )
)]
async fn list_hosts(
    _: Operator,
    State(hosts): State<ClusterHosts>,
    _: NoQuery,
) -> ApiResult<Response> {
    let hosts = hosts.list().await?;
    Ok(envelope::ok(hosts))
}
