//! Magic links (CONTRACT §4a, `magic_link`): `POST /auth/api/v1/auth/magic-link` mails a
//! single-use sign-in link (15 minutes) to the account's address, pointing at `redirect_url`
//! (only an origin on the operator's allow-list, `TESSERA_MAGIC_LINK_REDIRECT_ORIGINS`, or the
//! public URL) or the public URL, with `token=<token>` in its query; `POST
//! /auth/api/v1/auth/magic-link/verify` spends the token and signs in like a login: 200 with a
//! token set, or 202 with the MFA challenge when the account has a second factor.
//!
//! No account discovery, as for password recovery ([`mailed_token::request`]).

use axum::extract::State;
use axum::response::Response;
use serde::Deserialize;
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::audit::{self, AuditEntry, AuditEvent, RequestOrigin};
use crate::identity::normalize_email;
use crate::mailed_token::{self, MAGIC_LINK};
use crate::routes::answers::{
    MailAccepted, MfaChallengeBody, TokenSetWithServices, mail_accepted, mfa_challenged, signed_in,
};
use crate::sessions::hash_token;
use crate::state::AuthState;
use crate::store;
use tessera_http::extract::ApiJson;
use tessera_http::{ApiError, ApiResult, ValidationErrors};
use tessera_storage::time;

#[derive(Debug, Deserialize, ToSchema)]
pub struct MagicLinkRequest {
    /// The account's e-mail address. Not blank.
    #[schema(value_type = String, required = true, pattern = r"\S")]
    pub login: Option<String>,
    /// Where the link points (`token=<token>` is added to its query): an absolute URL whose
    /// origin is the public URL's or on the operator's allow-list
    /// (`TESSERA_MAGIC_LINK_REDIRECT_ORIGINS`), else 422. Default: the public URL.
    pub redirect_url: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct MagicLinkVerifyRequest {
    /// The token of the link. Not blank.
    #[schema(value_type = String, required = true, pattern = r"\S")]
    pub token: Option<String>,
}

pub fn router<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    AuthState: axum::extract::FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(request_magic_link))
        .routes(routes!(verify_magic_link))
}

/// Mails a sign-in link to the account with this login, if there is one.
#[utoipa::path(
    post,
    path = "/auth/api/v1/auth/magic-link",
    tag = "auth",
    request_body = MagicLinkRequest,
    responses(
        (status = 202, description = "Accepted: a sign-in link goes out if an account has this login (the same answer either way)", body = MailAccepted),
        (status = 422, description = "Missing login, or a `redirect_url` off the allow-list"),
        (status = 429, description = "A mail was asked for this login, or too many from this address, too recently (`Retry-After`)"),
        (status = 503, description = "No mail relay is configured"),
    )
)]
async fn request_magic_link(
    State(state): State<AuthState>,
    origin: RequestOrigin,
    ApiJson(body): ApiJson<MagicLinkRequest>,
) -> ApiResult<Response> {
    let mailer = state.sign_in_mailer()?;
    let mut errors = ValidationErrors::new();
    let login = errors.required("login", body.login);
    let link_base = match body.redirect_url {
        None => state.public_url.clone(),
        Some(url) if mailer.redirect_allowed(&url, &state.public_url) => url,
        Some(_) => {
            errors.add("redirect_url", "not_allowed");
            String::new()
        }
    };
    errors.into_result()?;
    let login = normalize_email(&login);
    mailed_token::request(
        &state.database,
        mailer,
        &origin,
        login,
        &MAGIC_LINK,
        &link_base,
    )
    .await?;
    Ok(mail_accepted(
        "If an account has this login, a sign-in link is on its way.",
    ))
}

/// Signs in with a magic link's token, as a login does.
#[utoipa::path(
    post,
    path = "/auth/api/v1/auth/magic-link/verify",
    tag = "auth",
    request_body = MagicLinkVerifyRequest,
    responses(
        (status = 200, description = "Token set and service map, as a login", body = TokenSetWithServices),
        (status = 202, description = "The account has a second factor: its MFA challenge, as a login's", body = MfaChallengeBody),
        (status = 401, description = "The token is unknown, used or expired"),
        (status = 422, description = "Missing token"),
    )
)]
async fn verify_magic_link(
    State(state): State<AuthState>,
    origin: RequestOrigin,
    ApiJson(body): ApiJson<MagicLinkVerifyRequest>,
) -> ApiResult<Response> {
    let mut errors = ValidationErrors::new();
    let token = errors.required("token", body.token);
    errors.into_result()?;
    let mut tx = state.database.begin().await?;
    let spent = store::sign_in::spend_token(
        &mut tx,
        &hash_token(token.trim()),
        MAGIC_LINK.purpose,
        &time::now(),
    )
    .await?;
    tx.commit().await?;
    let Some(user_id) = spent else {
        let entry = AuditEntry::new(AuditEvent::MagicLinkFailed).origin(&origin);
        audit::record(&state.database, &entry).await?;
        return Err(ApiError::Unauthenticated);
    };
    // Disabled since the mail went out: no sign-in.
    let Some(login) = store::email_of(&state.database, &user_id).await? else {
        return Err(ApiError::Unauthenticated);
    };
    if store::account_by_email(&state.database, &login)
        .await?
        .is_none()
    {
        return Err(ApiError::Unauthenticated);
    }
    // The link stands for the password: an account with a second factor still gets its
    // challenge.
    if crate::mfa::enabled(&state.database, &user_id).await? {
        return mfa_challenged(&state, &user_id, &login, &origin).await;
    }
    let entry = AuditEntry::new(AuditEvent::MagicLinkUsed);
    signed_in(&state, &user_id, &login, &origin, entry).await
}
