//! The authentication service (`/auth`): health today; login, tokens, sessions and MFA build
//! on the password module here.

pub mod audit;
pub mod caller;
pub mod keys;
mod lockout;
mod mfa;
pub mod password;
mod routes;
pub mod sessions;
mod store;
pub mod tokens;
pub mod totp;

use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::http::extract::NoQuery;
use crate::state::AppState;

/// `{status, version}` of a service's plain health endpoint.
#[derive(Debug, Serialize, ToSchema)]
pub struct ServiceHealth {
    pub status: String,
    pub version: String,
}

impl ServiceHealth {
    pub fn ok() -> Self {
        Self {
            status: "ok".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(health))
        .merge(audit::router())
        .merge(routes::router())
        .merge(mfa::router())
}

/// Liveness of the authentication service.
#[utoipa::path(
    get,
    path = "/auth/api/health",
    operation_id = "auth_health",
    tag = "health",
    responses((status = 200, description = "The service is up", body = ServiceHealth))
)]
async fn health(_: NoQuery) -> Json<ServiceHealth> {
    Json(ServiceHealth::ok())
}
