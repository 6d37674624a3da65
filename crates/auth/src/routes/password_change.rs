//! `POST /auth/api/v1/auth/password/change` (CONTRACT §4a): a signed-in user replaces their
//! password. The current password is checked as a login checks it (the same lockout: a wrong
//! one counts as a failed login of the account), the password policy applies to the new one,
//! and the new hash and the end of the user's other sessions commit together; the caller's own
//! session goes on. Both outcomes are audited (`password.changed`, `password.change_failed`);
//! neither password is ever logged or stored in the trail.

use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::audit::{self, AuditEntry, AuditEvent, RequestOrigin};
use crate::caller::Caller;
use crate::lockout;
use crate::password::Verified;
use crate::state::AuthState;
use crate::store;
use tessera_http::extract::ApiJson;
use tessera_http::{ApiError, ApiResult, ValidationErrors};

/// The session revocation reason of the other sessions a change ends.
const REVOKED_BY_CHANGE: &str = "password_changed";

#[derive(Debug, Deserialize, ToSchema)]
pub struct PasswordChangeRequest {
    /// The password the account has now. Not blank.
    #[schema(value_type = String, required = true, pattern = r"\S")]
    pub current_password: Option<String>,
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
    OpenApiRouter::new().routes(routes!(change_password))
}

/// Replaces the caller's password; every other session of the caller ends.
#[utoipa::path(
    post,
    path = "/auth/api/v1/auth/password/change",
    tag = "auth",
    security(("bearer" = [])),
    request_body = PasswordChangeRequest,
    responses(
        (status = 204, description = "Changed; the caller's other sessions ended"),
        (status = 401, description = "Unauthenticated, or the current password is wrong"),
        (status = 422, description = "Missing fields, or the new password breaks the policy"),
        (status = 429, description = "Locked after too many failures (`Retry-After`)"),
    )
)]
async fn change_password(
    State(state): State<AuthState>,
    origin: RequestOrigin,
    caller: Caller,
    ApiJson(body): ApiJson<PasswordChangeRequest>,
) -> ApiResult<StatusCode> {
    let mut errors = ValidationErrors::new();
    let current_password = errors.required("current_password", body.current_password);
    let password = errors.required("password", body.password);
    for rule in state.config.password_policy.violations(&password) {
        errors.add("password", rule);
    }
    errors.into_result()?;

    let login = store::email_of(&state.database, &caller.user_id)
        .await?
        .ok_or(ApiError::Unauthenticated)?;
    // Counted before it is evaluated, as a login's guess is: parallel guesses cannot pass it.
    let locked_out = AuditEntry::new(AuditEvent::LockedOut)
        .caller(&caller)
        .login(&login)
        .origin(&origin);
    lockout::reserve_or_refuse(&state.database, &state.config, &login, locked_out).await?;
    let account = store::account_by_email(&state.database, &login)
        .await?
        .ok_or(ApiError::Unauthenticated)?;
    let verified = state
        .password_hasher
        .verify(current_password, account.password_hash)
        .await?;
    if verified == Verified::No {
        let entry = AuditEntry::new(AuditEvent::PasswordChangeFailed)
            .caller(&caller)
            .login(&login)
            .origin(&origin)
            .detail("reason", "current_password");
        audit::record(&state.database, &entry).await?;
        return Err(ApiError::Unauthenticated);
    }
    lockout::clear(&state.database, &login).await?;
    let password_hash = state.password_hasher.hash(password).await?;
    let tx = state.database.begin().await?;
    let ended = state
        .sessions
        .replace_password(
            tx,
            &caller.user_id,
            &password_hash,
            Some(&caller.session_id),
            REVOKED_BY_CHANGE,
        )
        .await?;
    let entry = AuditEntry::new(AuditEvent::PasswordChanged)
        .caller(&caller)
        .origin(&origin)
        .detail("sessions_ended", ended);
    audit::record(&state.database, &entry).await?;
    Ok(StatusCode::NO_CONTENT)
}
