//! Password recovery (CONTRACT §4a): `POST /auth/api/v1/auth/password/forgot` mails a
//! single-use reset token (30 minutes) to the account's address, and
//! `POST /auth/api/v1/auth/password/reset` spends it to set a new password, ending every
//! session of the user.
//!
//! No account discovery: `forgot` answers 202 for known and unknown logins alike, after the
//! same work ([`mailed_token::request`]). The token is spent by one conditional statement in
//! the same transaction as the new password and the sessions' end.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde::Deserialize;
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::audit::{self, AuditEntry, AuditEvent, RequestOrigin};
use crate::identity::normalize_email;
use crate::lockout;
use crate::mailed_token::{self, PASSWORD_RESET};
use crate::routes::answers::{MailAccepted, mail_accepted};
use crate::sessions::hash_token;
use crate::state::AuthState;
use crate::store;
use tessera_http::extract::ApiJson;
use tessera_http::{ApiError, ApiResult, ValidationErrors};
use tessera_storage::time;

/// The session revocation reason of a reset.
const REVOKED_BY_RESET: &str = "password_reset";

#[derive(Debug, Deserialize, ToSchema)]
pub struct ForgotPasswordRequest {
    /// The account's e-mail address. Not blank.
    #[schema(value_type = String, required = true, pattern = r"\S")]
    pub login: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct ResetPasswordRequest {
    /// The token of the reset mail. Not blank.
    #[schema(value_type = String, required = true, pattern = r"\S")]
    pub token: Option<String>,
    /// The new password: not blank, and within the host's password policy
    /// (`GET /auth/api/v1/auth/config`), else 422 naming the rules it breaks.
    #[schema(value_type = String, required = true, pattern = r"\S")]
    pub password: Option<String>,
}

pub fn router<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    AuthState: axum::extract::FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(forgot_password))
        .routes(routes!(reset_password))
}

/// Mails a password reset token to the account with this login, if there is one.
#[utoipa::path(
    post,
    path = "/auth/api/v1/auth/password/forgot",
    tag = "auth",
    request_body = ForgotPasswordRequest,
    responses(
        (status = 202, description = "Accepted: a reset mail goes out if an account has this login (the same answer either way)", body = MailAccepted),
        (status = 422, description = "Missing login"),
        (status = 429, description = "A mail was asked for this login, or too many from this address, too recently (`Retry-After`)"),
        (status = 503, description = "No mail relay is configured"),
    )
)]
async fn forgot_password(
    State(state): State<AuthState>,
    origin: RequestOrigin,
    ApiJson(body): ApiJson<ForgotPasswordRequest>,
) -> ApiResult<Response> {
    let mailer = state.sign_in_mailer()?;
    let mut errors = ValidationErrors::new();
    let login = errors.required("login", body.login);
    errors.into_result()?;
    let login = normalize_email(&login);
    mailed_token::request(
        &state.database,
        mailer,
        &origin,
        login,
        &PASSWORD_RESET,
        &state.public_url,
    )
    .await?;
    Ok(mail_accepted(
        "If an account has this login, a reset mail is on its way.",
    ))
}

/// Sets a new password with a reset token; every session of the user ends.
#[utoipa::path(
    post,
    path = "/auth/api/v1/auth/password/reset",
    tag = "auth",
    request_body = ResetPasswordRequest,
    responses(
        (status = 204, description = "The password is set; every session of the user ended"),
        (status = 401, description = "The token is unknown, used or expired"),
        (status = 422, description = "Missing fields, or the new password breaks the policy (the token stays usable)"),
    )
)]
async fn reset_password(
    State(state): State<AuthState>,
    origin: RequestOrigin,
    ApiJson(body): ApiJson<ResetPasswordRequest>,
) -> ApiResult<StatusCode> {
    let mut errors = ValidationErrors::new();
    let token = errors.required("token", body.token);
    let password = errors.required("password", body.password);
    for rule in state.config.password_policy.violations(&password) {
        errors.add("password", rule);
    }
    errors.into_result()?;

    let token_hash = hash_token(token.trim());
    let refused = || async {
        let entry = AuditEntry::new(AuditEvent::PasswordResetFailed).origin(&origin);
        audit::record(&state.database, &entry).await?;
        Err::<StatusCode, ApiError>(ApiError::Unauthenticated)
    };
    // Checked before the password is hashed, so bad tokens cost no argon2 work.
    if store::sign_in::token_user(
        &state.database,
        &token_hash,
        PASSWORD_RESET.purpose,
        &time::now(),
    )
    .await?
    .is_none()
    {
        return refused().await;
    }
    let password_hash = state.password_hasher.hash(password).await?;
    let now = time::now();
    let mut tx = state.database.begin().await?;
    // Spent here, with the new password: a parallel reset with the same token gets nothing.
    let Some(user_id) =
        store::sign_in::spend_token(&mut tx, &token_hash, PASSWORD_RESET.purpose, &now).await?
    else {
        drop(tx);
        return refused().await;
    };
    store::sign_in::spend_tokens_of(&mut tx, &user_id, PASSWORD_RESET.purpose, &now).await?;
    let ended = state
        .sessions
        .replace_password(tx, &user_id, &password_hash, None, REVOKED_BY_RESET)
        .await?;
    if let Some(login) = store::email_of(&state.database, &user_id).await? {
        // Whoever held the mailbox may sign in at once, whatever guesses came before.
        lockout::clear(&state.database, &login).await?;
    }
    let entry = audit::entry_for_user(&state.database, AuditEvent::PasswordReset, &user_id)
        .await?
        .origin(&origin)
        .detail("sessions_ended", ended);
    audit::record(&state.database, &entry).await?;
    Ok(StatusCode::NO_CONTENT)
}
