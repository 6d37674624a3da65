//! The answers several auth routes give alike: a sign-in's token set with the service map (and
//! the session it opens), a sign-in's MFA challenge (202), the 202 of a mail request, and the
//! 422 of a wrong code.

use std::collections::BTreeMap;

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use crate::audit::{AuditEntry, RequestOrigin};
use crate::mfa::{self, MfaChallenge};
use crate::sessions::TokenSet;
use crate::state::AuthState;
use tessera_http::{ApiError, ApiResult, ValidationErrors};

/// The services the spec's `meta.services` always names (CONTRACT §2), each at
/// `<public-url>/<name>`, whether or not an engine of that code is loaded: clients rely on
/// the keys. Every loaded engine is added beside them. The one place the host names the
/// seven engines' codes.
pub const SPEC_SERVICES: [&str; 9] = [
    "auth",
    "core",
    "chat",
    "voip",
    "drive",
    "activity",
    "usermanager",
    "notes",
    "mail",
];

/// `meta` of login and switch-context.
#[derive(Debug, Serialize, ToSchema)]
pub struct ServicesMeta {
    /// Service name to the base URL of its path prefix: the spec's nine services and every
    /// loaded engine.
    pub services: BTreeMap<String, String>,
}

/// `{data: token set, meta: {services}}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct TokenSetWithServices {
    pub data: TokenSet,
    pub meta: ServicesMeta,
}

/// `token_set` answered with the service map.
pub(crate) fn with_services(state: &AuthState, token_set: TokenSet) -> Response {
    let services = service_map(&state.public_url, state.engines.engine_codes());
    Json(TokenSetWithServices {
        data: token_set,
        meta: ServicesMeta { services },
    })
    .into_response()
}

/// The spec's services and the loaded engines' codes, each at `<public_url>/<name>`.
fn service_map(public_url: &str, engine_codes: Vec<String>) -> BTreeMap<String, String> {
    SPEC_SERVICES
        .iter()
        .map(|name| (*name).to_owned())
        .chain(engine_codes)
        .map(|name| {
            let url = format!("{public_url}/{name}");
            (name, url)
        })
        .collect()
}

/// The end of a successful sign-in (password, a second factor, a magic link, a passkey): a
/// session in the user's first tenant and its default workspace, answered with the token set
/// and services, and `entry` (the event and its details) recorded with the session. 401 when
/// the user belongs to no tenant.
pub(crate) async fn signed_in(
    state: &AuthState,
    user_id: &str,
    login: &str,
    origin: &RequestOrigin,
    entry: AuditEntry,
) -> ApiResult<Response> {
    let token_set = state
        .sessions
        .open_in_first_tenant(user_id, login, origin, entry)
        .await?
        .ok_or(ApiError::Unauthenticated)?;
    Ok(with_services(state, token_set))
}

// The 202 of a sign-in whose first factor was right.
#[derive(Debug, Serialize, ToSchema)]
pub struct MfaChallengeBody {
    pub data: MfaChallenge,
    pub message: &'static str,
}

/// The 202 of a sign-in whose password (or magic link) was right, for an account with a second
/// factor: its MFA challenge, an `mfa_token` for the verify step.
pub(crate) async fn mfa_challenged(
    state: &AuthState,
    user_id: &str,
    login: &str,
    origin: &RequestOrigin,
) -> ApiResult<Response> {
    let challenge = mfa::start_challenge(&state.database, user_id, login, origin).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(MfaChallengeBody {
            data: challenge,
            message: "A second factor is required.",
        }),
    )
        .into_response())
}

/// The 202 of `forgot`, the same for every login.
#[derive(Debug, Serialize, ToSchema)]
pub struct MailAccepted {
    pub message: &'static str,
}

/// A 202 with `message`.
pub(crate) fn mail_accepted(message: &'static str) -> Response {
    (StatusCode::ACCEPTED, Json(MailAccepted { message })).into_response()
}

/// The 422 of a wrong or missing code at an enrolment (`{code: [invalid]}`).
pub(crate) fn invalid_code() -> ApiError {
    ApiError::Validation(ValidationErrors::single("code", "invalid"))
}
