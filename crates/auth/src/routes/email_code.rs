//! `/auth/api/v1/auth/mfa/otp*`: e-mail one-time codes as a second factor, turned on (a first
//! code mailed, then confirmed) and off, and a login's code mailed at its second step (the
//! code itself is checked at `…/mfa/verify`). How codes are made, mailed and spent is
//! `email_code.rs`.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::audit::{self, AuditEntry, AuditEvent, RequestOrigin};
use crate::caller::Caller;
use crate::email_code::{self, CodePurpose, DIGITS};
use crate::lockout;
use crate::routes::answers::{MailAccepted, invalid_code, mail_accepted};
use crate::sessions::hash_token;
use crate::state::AuthState;
use crate::store;
use tessera_http::envelope::Data;
use tessera_http::extract::ApiJson;
use tessera_http::{ApiError, ApiResult, ValidationErrors};
use tessera_storage::time;

/// The 202 of a mailed code.
const CODE_ON_ITS_WAY: &str = "A code is on its way to the account's address.";

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

/// A mailed code as `email_code::normalize_code` reads it: six digits, spaces allowed between them and
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
    if email_code::enabled(&state.database, &caller.user_id).await? {
        return Err(ApiError::Conflict(
            "E-mail codes are already enabled.".into(),
        ));
    }
    let login = store::email_of(&state.database, &caller.user_id)
        .await?
        .ok_or(ApiError::Unauthenticated)?;
    email_code::mail_code(
        &state.database,
        state.sign_in_mailer()?,
        &state.service_secret,
        &origin,
        &caller.user_id,
        &login,
        CodePurpose::Enrol,
    )
    .await?;
    Ok(mail_accepted(CODE_ON_ITS_WAY))
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
    if !email_code::spend(
        &state.database,
        &state.service_secret,
        &caller.user_id,
        CodePurpose::Enrol,
        &code,
    )
    .await?
    {
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
    if !email_code::enabled(&state.database, &user_id).await? {
        return Err(ApiError::Conflict(
            "This account has no e-mail codes.".into(),
        ));
    }
    email_code::mail_code(
        &state.database,
        state.sign_in_mailer()?,
        &state.service_secret,
        &origin,
        &user_id,
        &login,
        CodePurpose::Login,
    )
    .await?;
    Ok(mail_accepted(CODE_ON_ITS_WAY))
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
