//! `/auth/api/v1/auth/mfa/*`: TOTP's setup, confirm and disabling, and the verify step that
//! finishes a login with a second factor (a TOTP, recovery or mailed code, or a passkey). What
//! a second factor is and how an answer is checked is `mfa.rs`.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::audit::{self, AuditEntry, AuditEvent, RequestOrigin};
use crate::caller::Caller;
use crate::lockout;
use crate::mfa::{self, Answer};
use crate::routes::answers::{TokenSetWithServices, invalid_code, signed_in};
use crate::routes::email_code::email_code_schema;
use crate::routes::passkeys::credential_schema;
use crate::sessions::hash_token;
use crate::state::AuthState;
use crate::store;
use crate::totp::{self, TotpSecret};
use tessera_http::envelope::Data;
use tessera_http::extract::ApiJson;
use tessera_http::{ApiError, ApiResult, ValidationErrors};
use tessera_storage::time;

pub fn router<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    AuthState: axum::extract::FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(setup))
        .routes(routes!(confirm))
        .routes(routes!(verify))
        .routes(routes!(disable))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TotpSetup {
    /// Base32, for typing into an authenticator app.
    pub secret: String,
    pub otpauth_url: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TotpEnabled {
    pub enabled: bool,
    /// Shown once; each works once.
    pub recovery_codes: Vec<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct CodeRequest {
    /// The current TOTP code.
    #[schema(schema_with = totp_code_schema, required = true)]
    pub code: Option<String>,
}

/// The second step of a login with MFA: which of the two forms is documented by hand
/// (`PartialSchema` below), as the code's shape depends on `method`.
#[derive(Debug, Deserialize)]
pub struct VerifyRequest {
    pub mfa_token: Option<String>,
    pub method: Option<String>,
    pub code: Option<String>,
    /// The passkey's answer to `…/mfa/webauthn/challenge` (`method: "webauthn"`).
    pub credential: Option<serde_json::Value>,
}

/// A TOTP code as `totp::verify` reads it: six ASCII digits, spaces allowed between them and
/// white space around them, at most 24 bytes in all (`max_length`). Anything else is a wrong
/// code.
fn totp_code_schema() -> utoipa::openapi::Object {
    use tessera_http::schema::{string, trimmed};
    string(trimmed("[0-9](?: *[0-9]){5}"))
        .max_length(Some(4 * totp::DIGITS))
        .description(Some(
            "The current TOTP code: 6 digits, spaces allowed between them (`123 456`) and \
             white space around them; at most 24 bytes",
        ))
        .build()
}

/// A recovery code as `totp::hash_recovery_code` reads it: twelve symbols of Crockford's
/// base32 (either case; `o`, `i` and `l` read as `0`, `1`, `1`; no `u`), hyphens and white
/// space anywhere. Anything else is a wrong code.
fn recovery_code_schema() -> utoipa::openapi::Object {
    use tessera_http::schema::{WHITE_SPACE_CHARACTERS as SPACE, string};
    string(format!(
        "^[-{SPACE}]*(?:[0-9A-TV-Za-tv-z][-{SPACE}]*){{12}}$"
    ))
    .description(Some(
        "One of the recovery codes handed out when MFA was enabled (`xxxxxx-xxxxxx`): case, \
             hyphens and white space do not matter",
    ))
    .build()
}

impl utoipa::PartialSchema for VerifyRequest {
    /// One object per `method`: `totp` with a TOTP code, `recovery_code` with a recovery code,
    /// `otp` with a mailed code (all three fields required), `webauthn` with a `credential`
    /// instead of a code; `mfa_token` not blank.
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use tessera_http::schema::{NOT_BLANK, string, string_enum};
        use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Type};
        let form = |method: &str, field: &str, value: utoipa::openapi::Object| {
            ObjectBuilder::new()
                .schema_type(Type::Object)
                .property(
                    "mfa_token",
                    string(NOT_BLANK)
                        .description(Some("The `mfa_token` of the login's 202 answer")),
                )
                .required("mfa_token")
                .property("method", string_enum(&[method]))
                .required("method")
                .property(field, value)
                .required(field)
        };
        OneOfBuilder::new()
            .item(form("totp", "code", totp_code_schema()))
            .item(form("recovery_code", "code", recovery_code_schema()))
            .item(form("otp", "code", email_code_schema()))
            .item(form("webauthn", "credential", credential_schema()))
            .description(Some(
                "`mfa_token`, `method` (`totp`, `recovery_code`, `otp`: a mailed code, or \
                 `webauthn`: a passkey) and the `code` of that method, or for `webauthn` the \
                 `credential` answering `…/mfa/webauthn/challenge`",
            ))
            .into()
    }
}

impl ToSchema for VerifyRequest {}

/// Starts a TOTP enrolment: a new secret, pending until confirmed.
#[utoipa::path(
    post,
    path = "/auth/api/v1/auth/mfa/totp/setup",
    tag = "auth",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The secret and its otpauth URL", body = Data<TotpSetup>),
        (status = 401, description = "Unauthenticated"),
        (status = 409, description = "TOTP is already enabled"),
    )
)]
async fn setup(State(state): State<AuthState>, caller: Caller) -> ApiResult<Json<Data<TotpSetup>>> {
    if mfa::totp_enabled(&state.database, &caller.user_id).await? {
        return Err(ApiError::Conflict("TOTP is already enabled.".into()));
    }
    let email = store::email_of(&state.database, &caller.user_id)
        .await?
        .ok_or(ApiError::Unauthenticated)?;
    let secret = TotpSecret::generate();
    store::mfa::store_pending_secret(
        &state.database,
        &caller.user_id,
        &totp::seal(&secret, &mfa::sealing_key(&state.service_secret)),
        &time::now(),
    )
    .await?;
    Ok(Json(Data {
        data: TotpSetup {
            otpauth_url: totp::otpauth_url(&secret, totp::ISSUER, &email),
            secret: secret.to_base32(),
        },
    }))
}

/// Confirms the enrolment with a first code: MFA is on, and ten recovery codes are returned.
#[utoipa::path(
    post,
    path = "/auth/api/v1/auth/mfa/totp/confirm",
    tag = "auth",
    security(("bearer" = [])),
    request_body = CodeRequest,
    responses(
        (status = 200, description = "Enabled, with recovery codes", body = Data<TotpEnabled>),
        (status = 401, description = "Unauthenticated"),
        (status = 422, description = "Missing or wrong code, or no setup pending"),
    )
)]
async fn confirm(
    State(state): State<AuthState>,
    origin: RequestOrigin,
    caller: Caller,
    ApiJson(body): ApiJson<CodeRequest>,
) -> ApiResult<Json<Data<TotpEnabled>>> {
    let mut errors = ValidationErrors::new();
    let code = errors.required("code", body.code);
    errors.into_result()?;
    let (secret, last_step) = mfa::secret_of(
        &state.database,
        &state.service_secret,
        &caller.user_id,
        true,
    )
    .await?
    .ok_or_else(invalid_code)?;
    if !mfa::accept_code(&state.database, &caller.user_id, &secret, last_step, &code).await? {
        return Err(invalid_code());
    }
    let recovery_codes = totp::generate_recovery_codes();
    let mut tx = state.database.begin().await?;
    store::mfa::enable(&mut tx, &caller.user_id, &time::now()).await?;
    store::mfa::delete_recovery_codes(&mut tx, &caller.user_id).await?;
    for code in &recovery_codes {
        store::mfa::insert_recovery_code(&mut tx, &caller.user_id, &totp::hash_recovery_code(code))
            .await?;
    }
    audit::record_in(
        &mut tx,
        &AuditEntry::new(AuditEvent::MfaEnabled)
            .caller(&caller)
            .origin(&origin)
            .detail("method", "totp"),
    )
    .await?;
    tx.commit().await?;
    Ok(Json(Data {
        data: TotpEnabled {
            enabled: true,
            recovery_codes,
        },
    }))
}

/// The second step of a login with MFA: the `mfa_token` and a TOTP, recovery or mailed code.
#[utoipa::path(
    post,
    path = "/auth/api/v1/auth/mfa/verify",
    tag = "auth",
    request_body = VerifyRequest,
    responses(
        (status = 200, description = "Token set and service map, as a login", body = TokenSetWithServices),
        (status = 401, description = "Unknown, expired or used mfa_token, or a wrong code or passkey answer (counts toward the lockout)"),
        (status = 422, description = "Missing fields or unknown method"),
        (status = 429, description = "Locked after too many failures"),
    )
)]
async fn verify(
    State(state): State<AuthState>,
    origin: RequestOrigin,
    ApiJson(body): ApiJson<VerifyRequest>,
) -> ApiResult<Response> {
    let mut errors = ValidationErrors::new();
    let mfa_token = errors.required("mfa_token", body.mfa_token);
    let method = errors.required("method", body.method);
    let answer = match method.as_str() {
        "webauthn" => match body.credential.filter(serde_json::Value::is_object) {
            Some(credential) => Answer::Passkey(credential),
            None => {
                errors.add("credential", "required");
                Answer::Passkey(serde_json::Value::Null)
            }
        },
        "totp" => Answer::Totp(errors.required("code", body.code)),
        "otp" => Answer::EmailCode(errors.required("code", body.code)),
        _ => Answer::RecoveryCode(errors.required("code", body.code)),
    };
    if !method.is_empty()
        && !["totp", "recovery_code", "otp", "webauthn"].contains(&method.as_str())
    {
        errors.add("method", "in");
    }
    errors.into_result()?;

    let store::mfa::Challenge { user_id, login } =
        store::mfa::challenge(&state.database, &hash_token(&mfa_token), &time::now())
            .await?
            .ok_or(ApiError::Unauthenticated)?;
    let auth = &state.config;
    let attempt = audit::entry_for_user(&state.database, AuditEvent::MfaFailed, &user_id)
        .await?
        .login(&login)
        .origin(&origin)
        .detail("method", method.clone());
    // The guess is counted before it is evaluated, so parallel guesses cannot pass the limit.
    lockout::reserve_or_refuse(&state.database, auth, &login, attempt.clone()).await?;
    let accepted = mfa::accept_answer(
        &state.database,
        &state.service_secret,
        state.relying_party.as_deref(),
        &user_id,
        &hash_token(&mfa_token),
        &answer,
    )
    .await?;
    if !accepted {
        // The guess stays counted: its reservation is the failure.
        audit::record(&state.database, &attempt).await?;
        return Err(ApiError::Unauthenticated);
    }
    // A right code gives its slot back; earlier wrong codes stay counted until the next
    // right password clears them.
    lockout::release(&state.database, &login, auth.lockout_max_attempts).await?;
    // One successful verify per challenge.
    let spent =
        store::mfa::spend_challenge(&state.database, &hash_token(&mfa_token), &time::now()).await?;
    if !spent {
        return Err(ApiError::Unauthenticated);
    }
    let entry = if method == "recovery_code" {
        AuditEntry::new(AuditEvent::RecoveryCodeUsed)
    } else {
        AuditEntry::new(AuditEvent::MfaSucceeded).detail("method", method)
    };
    signed_in(&state, &user_id, &login, &origin, entry).await
}

/// Turns TOTP off, given a current code.
#[utoipa::path(
    delete,
    path = "/auth/api/v1/auth/mfa/totp",
    tag = "auth",
    security(("bearer" = [])),
    request_body = CodeRequest,
    responses(
        (status = 204, description = "MFA is off"),
        (status = 401, description = "Unauthenticated"),
        (status = 422, description = "Missing or wrong code, or MFA is not enabled"),
    )
)]
async fn disable(
    State(state): State<AuthState>,
    origin: RequestOrigin,
    caller: Caller,
    ApiJson(body): ApiJson<CodeRequest>,
) -> ApiResult<StatusCode> {
    let mut errors = ValidationErrors::new();
    let code = errors.required("code", body.code);
    errors.into_result()?;
    let (secret, last_step) = mfa::secret_of(
        &state.database,
        &state.service_secret,
        &caller.user_id,
        false,
    )
    .await?
    .ok_or_else(invalid_code)?;
    if !mfa::accept_code(&state.database, &caller.user_id, &secret, last_step, &code).await? {
        return Err(invalid_code());
    }
    let mut tx = state.database.begin().await?;
    store::mfa::delete_mfa(&mut tx, &caller.user_id).await?;
    audit::record_in(
        &mut tx,
        &AuditEntry::new(AuditEvent::MfaDisabled)
            .caller(&caller)
            .origin(&origin)
            .detail("method", "totp"),
    )
    .await?;
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}
