//! E-mail one-time codes (CONTRACT §4a, `otp`): a second factor mailed through the relay.
//! `POST …/mfa/otp/enable` (bearer) mails a first code and `POST …/mfa/otp/confirm` `{code}`
//! turns the method on; at a login's 202, `POST …/mfa/otp/send` `{mfa_token}` mails a code and
//! `POST …/mfa/verify` `{mfa_token, method: "otp", code}` finishes the login;
//! `DELETE …/mfa/otp` turns it off.
//!
//! Codes are 6 digits, work once for 10 minutes, and are stored as an HMAC-SHA-256 under a key
//! derived from the service secret (six digits are too few for a plain hash). A new code
//! replaces the one before. Sending counts against the sign-in mail limits (one mail a minute
//! per login); a wrong code counts toward the login's lockout, reserved before it is checked.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use hkdf::Hkdf;
use hmac::{Hmac, Mac as _};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::audit::{self, AuditEntry, AuditEvent, RequestOrigin};
use super::caller::Caller;
use super::lockout;
use super::mfa::invalid_code;
use super::password_reset::MailAccepted;
use super::sessions::hash_token;
use super::sign_in_mail::{MailKind, MailValues};
use super::store;
use crate::state::AuthState;
use tessera_http::envelope::Data;
use tessera_http::extract::ApiJson;
use tessera_http::{ApiError, ApiResult, ValidationErrors};
use tessera_storage::{Database, time};

/// How long a mailed code works.
pub const CODE_LIFETIME: chrono::Duration = chrono::Duration::minutes(10);

/// The purpose of the code that confirms an enrolment.
const ENROL: &str = "enrol";
/// The purpose of a login's code.
const LOGIN: &str = "login";

/// The code's digits.
pub const DIGITS: usize = 6;

#[derive(Debug, Deserialize, ToSchema)]
pub struct EmailCodeRequest {
    /// The code of the latest mail.
    #[schema(schema_with = email_code_schema, required = true)]
    pub code: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct SendCodeRequest {
    /// The `mfa_token` of the login's 202 answer. Not blank.
    #[schema(value_type = String, required = true, pattern = r"\S")]
    pub mfa_token: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct EmailCodesEnabled {
    pub enabled: bool,
}

/// A mailed code as [`normalize_code`] reads it: six digits, spaces allowed between them and
/// white space around them, at most 24 bytes. Anything else is a wrong code.
pub(crate) fn email_code_schema() -> utoipa::openapi::Object {
    use tessera_http::schema::{string, trimmed};
    string(trimmed("[0-9](?: *[0-9]){5}"))
        .max_length(Some(4 * DIGITS))
        .description(Some(
            "The 6-digit code of the latest mail: spaces allowed between the digits and white \
             space around them; at most 24 bytes",
        ))
        .build()
}

/// The six digits of `code`, or `None` when it is not a code.
fn normalize_code(code: &str) -> Option<String> {
    if code.len() > 4 * DIGITS {
        return None;
    }
    let digits: String = code.chars().filter(|c| !c.is_whitespace()).collect();
    (digits.len() == DIGITS && digits.bytes().all(|b| b.is_ascii_digit())).then_some(digits)
}

/// The stored form of `code` for `user_id` and `purpose`: HMAC-SHA-256 (hex) under a key
/// derived from the service secret.
fn hash_code(service_secret: &str, user_id: &str, purpose: &str, code: &str) -> String {
    let mut key = [0; 32];
    Hkdf::<Sha256>::new(None, service_secret.as_bytes())
        .expand(b"tessera/auth/email-code/v1", &mut key)
        .expect("32 bytes is a valid HKDF-SHA-256 output length");
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).expect("HMAC takes any key length");
    for part in [user_id, purpose, code] {
        mac.update(part.as_bytes());
        mac.update(&[0]);
    }
    hex::encode(mac.finalize().into_bytes())
}

pub fn router<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    AuthState: axum::extract::FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(enable_email_codes))
        .routes(routes!(confirm_email_codes))
        .routes(routes!(send_email_code))
        .routes(routes!(disable_email_codes))
}

/// Whether the user has e-mail codes on.
pub async fn enabled(database: &Database, user_id: &str) -> anyhow::Result<bool> {
    Ok(matches!(
        store::email_code::enrolment(database, user_id).await?,
        Some(Some(_))
    ))
}

/// Mails a new code of `purpose` to `login`, counted against the sign-in mail limits in the
/// transaction that stores it (and starts the enrolment, when `starts_enrolment`), and waits
/// for the relay: 502 when it refuses.
async fn mail_code(
    state: &AuthState,
    origin: &RequestOrigin,
    user_id: &str,
    login: &str,
    purpose: &str,
    starts_enrolment: bool,
) -> ApiResult<()> {
    let mailer = state.sign_in_mailer()?;
    let code = format!("{:06}", rand::random_range(0..1_000_000u32));
    let now = Utc::now();
    let mut tx = state.database.begin().await?;
    mailer.count(&mut tx, login, origin).await?;
    if starts_enrolment {
        store::email_code::start_enrolment(&mut tx, user_id, &time::format(now)).await?;
    }
    store::email_code::store_code(
        &mut tx,
        user_id,
        purpose,
        &hash_code(state.service_secret.expose(), user_id, purpose, &code),
        &time::format(now + CODE_LIFETIME),
    )
    .await?;
    tx.commit().await?;
    let values = MailValues {
        login: login.to_owned(),
        code: Some(code),
        minutes: CODE_LIFETIME.num_minutes(),
        ..MailValues::default()
    };
    mailer
        .send(login, MailKind::EmailCode, &values)
        .await
        .map_err(|error| {
            tracing::warn!(error = format!("{error:#}"), "an e-mail code was not sent");
            ApiError::BadGateway("The mail relay did not take the mail; try again later.".into())
        })
}

/// Spends the user's current code of `purpose` if `code` is it (a malformed code never is).
async fn spend(
    state: &AuthState,
    user_id: &str,
    purpose: &str,
    code: &str,
) -> anyhow::Result<bool> {
    let Some(code) = normalize_code(code) else {
        return Ok(false);
    };
    let code_hash = hash_code(state.service_secret.expose(), user_id, purpose, &code);
    store::email_code::spend_code(&state.database, user_id, purpose, &code_hash, &time::now()).await
}

/// The second step of a login with an e-mail code: whether `code` is the user's current login
/// code (spent if so). The caller reserved the guess.
pub(crate) async fn accept_login_code(
    state: &AuthState,
    user_id: &str,
    code: &str,
) -> anyhow::Result<bool> {
    Ok(enabled(&state.database, user_id).await? && spend(state, user_id, LOGIN, code).await?)
}

fn mail_on_its_way() -> Response {
    (
        StatusCode::ACCEPTED,
        Json(MailAccepted {
            message: "A code is on its way to the account's address.",
        }),
    )
        .into_response()
}

/// Starts the enrolment: a first code goes to the caller's address.
#[utoipa::path(
    post,
    path = "/auth/api/v1/auth/mfa/otp/enable",
    tag = "auth",
    security(("bearer" = [])),
    responses(
        (status = 202, description = "A code went to the caller's address; confirm it", body = MailAccepted),
        (status = 401, description = "Unauthenticated"),
        (status = 409, description = "E-mail codes are already on"),
        (status = 429, description = "A sign-in mail went to this address too recently (`Retry-After`)"),
        (status = 502, description = "The mail relay did not take the mail"),
        (status = 503, description = "No mail relay is configured"),
    )
)]
async fn enable_email_codes(
    State(state): State<AuthState>,
    origin: RequestOrigin,
    caller: Caller,
) -> ApiResult<Response> {
    state.sign_in_mailer()?;
    if enabled(&state.database, &caller.user_id).await? {
        return Err(ApiError::Conflict(
            "E-mail codes are already enabled.".into(),
        ));
    }
    let login = store::email_of(&state.database, &caller.user_id)
        .await?
        .ok_or(ApiError::Unauthenticated)?;
    mail_code(&state, &origin, &caller.user_id, &login, ENROL, true).await?;
    Ok(mail_on_its_way())
}

/// Confirms the enrolment with the mailed code: e-mail codes are on.
#[utoipa::path(
    post,
    path = "/auth/api/v1/auth/mfa/otp/confirm",
    tag = "auth",
    security(("bearer" = [])),
    request_body = EmailCodeRequest,
    responses(
        (status = 200, description = "Enabled", body = Data<EmailCodesEnabled>),
        (status = 401, description = "Unauthenticated"),
        (status = 422, description = "Missing or wrong code (counts toward the lockout), or no enrolment pending"),
        (status = 429, description = "Locked after too many failures (`Retry-After`)"),
    )
)]
async fn confirm_email_codes(
    State(state): State<AuthState>,
    origin: RequestOrigin,
    caller: Caller,
    ApiJson(body): ApiJson<EmailCodeRequest>,
) -> ApiResult<Json<Data<EmailCodesEnabled>>> {
    let mut errors = ValidationErrors::new();
    let code = errors.required("code", body.code);
    errors.into_result()?;
    if !matches!(
        store::email_code::enrolment(&state.database, &caller.user_id).await?,
        Some(None)
    ) {
        return Err(invalid_code());
    }
    let login = store::email_of(&state.database, &caller.user_id)
        .await?
        .ok_or(ApiError::Unauthenticated)?;
    let auth = &state.config;
    let attempt = AuditEntry::new(AuditEvent::MfaFailed)
        .caller(&caller)
        .origin(&origin)
        .detail("method", "otp");
    lockout::reserve_or_refuse(&state.database, auth, &login, attempt).await?;
    if !spend(&state, &caller.user_id, ENROL, &code).await? {
        // The guess stays counted: its reservation is the failure.
        return Err(invalid_code());
    }
    lockout::release(&state.database, &login, auth.lockout_max_attempts).await?;
    let mut tx = state.database.begin().await?;
    store::email_code::enable(&mut tx, &caller.user_id, &time::now()).await?;
    audit::record_in(
        &mut tx,
        &AuditEntry::new(AuditEvent::MfaEnabled)
            .caller(&caller)
            .origin(&origin)
            .detail("method", "otp"),
    )
    .await?;
    tx.commit().await?;
    Ok(Json(Data {
        data: EmailCodesEnabled { enabled: true },
    }))
}

/// Mails a code for a login's second step.
#[utoipa::path(
    post,
    path = "/auth/api/v1/auth/mfa/otp/send",
    tag = "auth",
    request_body = SendCodeRequest,
    responses(
        (status = 202, description = "A code went to the account's address", body = MailAccepted),
        (status = 401, description = "Unknown, expired or used mfa_token"),
        (status = 409, description = "The account has no e-mail codes"),
        (status = 422, description = "Missing mfa_token"),
        (status = 429, description = "A code went out less than a minute ago (`Retry-After`)"),
        (status = 502, description = "The mail relay did not take the mail"),
        (status = 503, description = "No mail relay is configured"),
    )
)]
async fn send_email_code(
    State(state): State<AuthState>,
    origin: RequestOrigin,
    ApiJson(body): ApiJson<SendCodeRequest>,
) -> ApiResult<Response> {
    state.sign_in_mailer()?;
    let mut errors = ValidationErrors::new();
    let mfa_token = errors.required("mfa_token", body.mfa_token);
    errors.into_result()?;
    let store::mfa::Challenge { user_id, login } =
        store::mfa::challenge(&state.database, &hash_token(&mfa_token), &time::now())
            .await?
            .ok_or(ApiError::Unauthenticated)?;
    if !enabled(&state.database, &user_id).await? {
        return Err(ApiError::Conflict(
            "This account has no e-mail codes.".into(),
        ));
    }
    mail_code(&state, &origin, &user_id, &login, LOGIN, false).await?;
    Ok(mail_on_its_way())
}

/// Turns e-mail codes off.
#[utoipa::path(
    delete,
    path = "/auth/api/v1/auth/mfa/otp",
    tag = "auth",
    security(("bearer" = [])),
    responses(
        (status = 204, description = "E-mail codes are off"),
        (status = 401, description = "Unauthenticated"),
        (status = 404, description = "E-mail codes were not on or pending"),
    )
)]
async fn disable_email_codes(
    State(state): State<AuthState>,
    origin: RequestOrigin,
    caller: Caller,
) -> ApiResult<StatusCode> {
    let mut tx = state.database.begin().await?;
    if !store::email_code::remove(&mut tx, &caller.user_id).await? {
        return Err(ApiError::not_found("E-mail code enrolment"));
    }
    audit::record_in(
        &mut tx,
        &AuditEntry::new(AuditEvent::MfaDisabled)
            .caller(&caller)
            .origin(&origin)
            .detail("method", "otp"),
    )
    .await?;
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_six_digits_with_spaces_allowed() {
        assert_eq!(normalize_code("012345").as_deref(), Some("012345"));
        assert_eq!(normalize_code(" 012 345 ").as_deref(), Some("012345"));
        assert_eq!(normalize_code("01234"), None);
        assert_eq!(normalize_code("0123456"), None);
        assert_eq!(normalize_code("01234a"), None);
        assert_eq!(normalize_code("０１２３４５"), None);
        assert_eq!(normalize_code(&format!("012345{}", " ".repeat(30))), None);
    }

    #[test]
    fn a_codes_hash_is_keyed_and_bound_to_its_user_and_purpose() {
        let hash = hash_code("secret", "user-1", LOGIN, "012345");
        assert_eq!(hash, hash_code("secret", "user-1", LOGIN, "012345"));
        assert_ne!(hash, hash_code("other secret", "user-1", LOGIN, "012345"));
        assert_ne!(hash, hash_code("secret", "user-2", LOGIN, "012345"));
        assert_ne!(hash, hash_code("secret", "user-1", ENROL, "012345"));
        assert_ne!(hash, hash_code("secret", "user-1", LOGIN, "012346"));
        assert_eq!(hash.len(), 64);
    }
}
