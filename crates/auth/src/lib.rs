//! The authentication service (`/auth`): login, tokens and sessions, MFA, the audit log, the
//! lockout, and the one authorization extractor every service uses ([`caller::Caller`]). Its
//! router is generic over the app's state, which gives it [`AuthState`] by `FromRef`.

pub mod audit;
pub mod caller;
pub mod config;
mod email_code;
pub mod identity;
pub mod keys;
mod lockout;
mod mailed_token;
mod mfa;
pub mod own_sessions;
pub mod passkeys;
pub mod password;
mod request_origin;
mod routes;
pub mod sessions;
pub mod sign_in_mail;
pub mod state;
mod store;
pub mod tokens;
pub mod totp;

use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

pub use crate::mfa::{enrolled_methods, remove_every_second_factor_in};
pub use crate::state::{AuthServices, AuthState};
use tessera_http::extract::NoQuery;

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

pub fn router<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    AuthState: axum::extract::FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(health))
        .merge(routes::router())
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
