//! `/auth/api/v1/auth/*`: login, refresh, logout, logout everywhere, me, switch-context and the
//! auth configuration, plus the JWKS document at `/auth/.well-known/jwks.json`.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::audit::{self, AuditEntry, AuditEvent, RequestOrigin};
use crate::caller::Caller;
use crate::identity::{is_valid_email, normalize_email};
use crate::keys::Jwks;
use crate::lockout;
use crate::password::{PasswordPolicy, Verified};
use crate::routes::answers::{TokenSetWithServices, mfa_challenged, signed_in, with_services};
use crate::sessions::{RefreshError, TokenScope, TokenSet};
use crate::state::AuthState;
use crate::store;
use tessera_http::envelope::Data;
use tessera_http::extract::{ApiJson, NoQuery};
use tessera_http::{ApiError, ApiResult, ValidationErrors};

#[derive(Debug, Deserialize, ToSchema)]
pub struct LoginRequest {
    /// The account's e-mail.
    #[schema(value_type = String, required = true, format = Email, min_length = 1)]
    pub login: Option<String>,
    /// Not blank.
    #[schema(value_type = String, required = true, pattern = r"\S")]
    pub password: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct RefreshRequest {
    /// Not blank.
    #[schema(value_type = String, required = true, pattern = r"\S")]
    pub refresh_token: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct SwitchContextRequest {
    #[schema(schema_with = tenant_id_schema)]
    pub tenant_id: Option<String>,
    #[schema(schema_with = workspace_id_schema)]
    pub workspace_id: Option<String>,
}

/// `tenant_id` of [`SwitchContextRequest`].
fn tenant_id_schema() -> utoipa::openapi::Object {
    context_id_schema("A tenant the caller belongs to; absent or `null`: the current one")
}

/// `workspace_id` of [`SwitchContextRequest`].
fn workspace_id_schema() -> utoipa::openapi::Object {
    context_id_schema("A workspace of that tenant; absent or `null`: its default workspace")
}

/// `null`, or a UUID as `ValidationErrors::uuid` reads it (never blank).
fn context_id_schema(what: &str) -> utoipa::openapi::Object {
    tessera_http::schema::nullable_string(tessera_http::schema::UUID)
        .description(Some(format!(
            "{what}. A UUID: hyphenated, simple, braced or `urn:uuid:`, either case, \
             surrounding white space allowed"
        )))
        .build()
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Me {
    pub user_id: String,
    pub email: String,
    pub tenant_id: String,
    pub workspace_id: Option<String>,
    pub role: String,
    #[serde(rename = "type")]
    pub user_type: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SessionSettings {
    pub token_lifetime: u64,
    pub refresh_token_lifetime: u64,
    pub max_active_sessions: u32,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct LockoutSettings {
    pub max_attempts: u32,
    pub lockout_duration: u64,
}

/// `data` of the config endpoint.
#[derive(Debug, Serialize, ToSchema)]
pub struct AuthConfiguration {
    /// The MFA methods this host offers.
    pub mfa_methods: Vec<&'static str>,
    pub password_policy: PasswordPolicy,
    pub session: SessionSettings,
    pub lockout: LockoutSettings,
}

pub fn router<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    AuthState: axum::extract::FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(login))
        .routes(routes!(refresh))
        .routes(routes!(logout))
        .routes(routes!(logout_all))
        .routes(routes!(me))
        .routes(routes!(switch_context))
        .routes(routes!(config))
        .routes(routes!(jwks))
}

/// Logs in with e-mail and password.
#[utoipa::path(
    post,
    path = "/auth/api/v1/auth/login",
    tag = "auth",
    request_body = LoginRequest,
    responses(
        (status = 200, description = "Token set and service map", body = TokenSetWithServices),
        (status = 401, description = "Wrong login or password (the same answer for unknown accounts)"),
        (status = 422, description = "Missing or malformed fields"),
        (status = 429, description = "Locked after too many failures (`Retry-After`)"),
    )
)]
async fn login(
    State(state): State<AuthState>,
    origin: RequestOrigin,
    ApiJson(body): ApiJson<LoginRequest>,
) -> ApiResult<Response> {
    let mut errors = ValidationErrors::new();
    let login = errors.required("login", body.login);
    let password = errors.required("password", body.password);
    if !login.is_empty() && !is_valid_email(&normalize_email(&login)) {
        errors.add("login", "email");
    }
    errors.into_result()?;
    let login = normalize_email(&login);
    let auth = &state.config;

    let attempt = AuditEntry::new(AuditEvent::LoginFailed)
        .login(&login)
        .origin(&origin);
    // The guess is counted before it is evaluated, so parallel guesses cannot pass the limit.
    lockout::reserve_or_refuse(&state.database, auth, &login, attempt.clone()).await?;
    let account = store::account_by_email(&state.database, &login).await?;
    // An unknown account is checked against a dummy hash: the same work, the same answer.
    let phc = account.as_ref().map_or_else(
        || state.dummy_password_hash.to_string(),
        |account| account.password_hash.clone(),
    );
    let verified = state.password_hasher.verify(password.clone(), phc).await?;
    let account = match (account, verified) {
        (Some(account), Verified::Yes | Verified::YesNeedsRehash) => account,
        (account, _) => {
            // A known account's failures show in its (first) tenant's trail. The guess stays
            // counted: its reservation is the failure.
            let attempt = match &account {
                Some(account) => {
                    let tenant = store::membership(&state.database, &account.user_id, None).await?;
                    let attempt = attempt.user(&account.user_id);
                    match tenant {
                        Some(membership) => attempt.tenant(membership.tenant_id),
                        None => attempt,
                    }
                }
                None => attempt,
            };
            audit::record(&state.database, &attempt.detail("reason", "credentials")).await?;
            return Err(ApiError::Unauthenticated);
        }
    };
    lockout::clear(&state.database, &login).await?;
    if verified == Verified::YesNeedsRehash {
        let rehashed = state.password_hasher.hash(password).await?;
        store::update_password_hash(&state.database, &account.user_id, &rehashed).await?;
    }
    if crate::mfa::enabled(&state.database, &account.user_id).await? {
        return mfa_challenged(&state, &account.user_id, &login, &origin).await;
    }
    signed_in(
        &state,
        &account.user_id,
        &login,
        &origin,
        AuditEntry::new(AuditEvent::LoginSucceeded),
    )
    .await
}

/// Rotates a refresh token into a new token set.
#[utoipa::path(
    post,
    path = "/auth/api/v1/auth/refresh",
    tag = "auth",
    request_body = RefreshRequest,
    responses(
        (status = 200, description = "A new token set; the presented refresh token is spent", body = Data<TokenSet>),
        (status = 401, description = "Unknown, expired or revoked; a spent token also revokes its session"),
        (status = 422, description = "Missing `refresh_token`"),
    )
)]
async fn refresh(
    State(state): State<AuthState>,
    origin: RequestOrigin,
    ApiJson(body): ApiJson<RefreshRequest>,
) -> ApiResult<Json<Data<TokenSet>>> {
    let mut errors = ValidationErrors::new();
    let refresh_token = errors.required("refresh_token", body.refresh_token);
    errors.into_result()?;
    match state.sessions.refresh(refresh_token.trim()).await {
        Ok(token_set) => Ok(Json(Data { data: token_set })),
        Err(RefreshError::Invalid) => Err(ApiError::Unauthenticated),
        Err(RefreshError::Reused {
            session_id,
            user_id,
        }) => {
            tracing::warn!(%session_id, "a spent refresh token was presented again: session revoked");
            let entry = AuditEntry::new(AuditEvent::RefreshReused)
                .user(user_id)
                .origin(&origin)
                .detail("session_id", session_id);
            audit::record(&state.database, &entry).await?;
            Err(ApiError::Unauthenticated)
        }
        Err(RefreshError::Storage(error)) => Err(ApiError::Internal(error)),
    }
}

/// Ends the caller's session: its access and refresh tokens stop working.
#[utoipa::path(
    post,
    path = "/auth/api/v1/auth/logout",
    tag = "auth",
    security(("bearer" = [])),
    responses((status = 204, description = "Logged out"), (status = 401, description = "Unauthenticated"))
)]
async fn logout(
    State(state): State<AuthState>,
    origin: RequestOrigin,
    caller: Caller,
) -> ApiResult<StatusCode> {
    state.sessions.revoke(&caller.session_id, "logout").await?;
    let entry = AuditEntry::new(AuditEvent::LoggedOut)
        .caller(&caller)
        .origin(&origin)
        .detail("session_id", caller.session_id.clone());
    audit::record(&state.database, &entry).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Ends every session of the caller, on every device.
#[utoipa::path(
    post,
    path = "/auth/api/v1/auth/logout/all",
    tag = "auth",
    security(("bearer" = [])),
    responses((status = 204, description = "Logged out everywhere"), (status = 401, description = "Unauthenticated"))
)]
async fn logout_all(
    State(state): State<AuthState>,
    origin: RequestOrigin,
    caller: Caller,
) -> ApiResult<StatusCode> {
    state
        .sessions
        .revoke_all(&caller.user_id, "logout_all")
        .await?;
    let entry = AuditEntry::new(AuditEvent::LoggedOutEverywhere)
        .caller(&caller)
        .origin(&origin);
    audit::record(&state.database, &entry).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Who the bearer token speaks for.
#[utoipa::path(
    get,
    path = "/auth/api/v1/auth/me",
    tag = "auth",
    security(("bearer" = [])),
    responses((status = 200, description = "The caller", body = Data<Me>), (status = 401, description = "Unauthenticated"))
)]
async fn me(
    State(state): State<AuthState>,
    caller: Caller,
    _: NoQuery,
) -> ApiResult<Json<Data<Me>>> {
    let email = store::email_of(&state.database, &caller.user_id)
        .await?
        .ok_or(ApiError::Unauthenticated)?;
    Ok(Json(Data {
        data: Me {
            user_id: caller.user_id,
            email,
            tenant_id: caller.tenant_id,
            workspace_id: caller.workspace_id,
            role: caller.role,
            user_type: caller.token_type,
        },
    }))
}

/// A new token set scoped to another tenant the caller belongs to and/or one of its
/// workspaces; the previous tokens stay valid until they expire.
#[utoipa::path(
    post,
    path = "/auth/api/v1/auth/switch-context",
    tag = "auth",
    security(("bearer" = [])),
    request_body = SwitchContextRequest,
    responses(
        (status = 200, description = "Token set and service map", body = TokenSetWithServices),
        (status = 401, description = "Unauthenticated"),
        (status = 403, description = "Not a member of that tenant"),
        (status = 404, description = "No such workspace in that tenant"),
        (status = 422, description = "Malformed ids"),
    )
)]
async fn switch_context(
    State(state): State<AuthState>,
    origin: RequestOrigin,
    caller: Caller,
    ApiJson(body): ApiJson<SwitchContextRequest>,
) -> ApiResult<Response> {
    let mut errors = ValidationErrors::new();
    let tenant_id = errors.uuid("tenant_id", body.tenant_id);
    let workspace_id = errors.uuid("workspace_id", body.workspace_id);
    errors.into_result()?;

    let tenant_id = tenant_id.unwrap_or_else(|| caller.tenant_id.clone());
    let membership = store::membership(&state.database, &caller.user_id, Some(&tenant_id))
        .await?
        .ok_or(ApiError::Forbidden)?;
    let workspace_id = match workspace_id {
        Some(workspace_id) => {
            if store::workspace_tenant(&state.database, &workspace_id).await?
                != Some(tenant_id.clone())
            {
                return Err(ApiError::not_found("Workspace"));
            }
            Some(workspace_id)
        }
        None => store::default_workspace(&state.database, &tenant_id).await?,
    };
    let token_set = state
        .sessions
        .reissue(
            &caller.session_id,
            &TokenScope {
                user_id: caller.user_id.clone(),
                tenant_id: tenant_id.clone(),
                workspace_id: workspace_id.clone(),
                role: membership.role,
                user_type: membership.user_type,
            },
        )
        .await?;
    let entry = AuditEntry::new(AuditEvent::ContextSwitched)
        .tenant(tenant_id)
        .user(caller.user_id.clone())
        .origin(&origin)
        .detail("from_tenant_id", caller.tenant_id.clone())
        .detail("workspace_id", workspace_id);
    audit::record(&state.database, &entry).await?;
    Ok(with_services(&state, token_set))
}

/// The authentication settings of this host.
#[utoipa::path(
    get,
    path = "/auth/api/v1/auth/config",
    tag = "auth",
    responses((status = 200, description = "Auth configuration", body = Data<AuthConfiguration>))
)]
async fn config(State(state): State<AuthState>, _: NoQuery) -> Json<Data<AuthConfiguration>> {
    let auth = &state.config;
    Json(Data {
        data: AuthConfiguration {
            mfa_methods: state.offered_methods(),
            password_policy: auth.password_policy.clone(),
            session: SessionSettings {
                token_lifetime: auth.token_lifetime.as_secs(),
                refresh_token_lifetime: auth.refresh_token_lifetime.as_secs(),
                max_active_sessions: auth.max_active_sessions,
            },
            lockout: LockoutSettings {
                max_attempts: auth.lockout_max_attempts,
                lockout_duration: auth.lockout_duration.as_secs(),
            },
        },
    })
}

/// The public keys that verify access tokens (RFC 7517), for other services.
#[utoipa::path(
    get,
    path = "/auth/.well-known/jwks.json",
    tag = "auth",
    responses((status = 200, description = "JSON Web Key Set", body = Jwks))
)]
async fn jwks(State(state): State<AuthState>, _: NoQuery) -> Json<Jwks> {
    Json(state.access_tokens.keys().jwks())
}
