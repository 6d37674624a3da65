//! What a signed-in user manages of their own sign-in: their active sessions, listed with where
//! each was opened and ended one by one (`GET`/`DELETE /auth/api/v1/auth/sessions…`), and the
//! tenants and workspaces they may switch to (`GET /auth/api/v1/auth/memberships`, the choices
//! of `switch-context`).
//!
//! A session of another user is answered as unknown (404), never as forbidden: its id tells
//! nothing. Ending the session of the calling token is a logout.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::audit::{AuditEntry, AuditEvent, RequestOrigin};
use crate::caller::Caller;
use crate::state::AuthState;
use crate::store::memberships as store;
use tessera_http::envelope::Data;
use tessera_http::extract::NoQuery;
use tessera_http::{ApiError, ApiResult};

pub fn router<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    AuthState: axum::extract::FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(list_sessions))
        .routes(routes!(end_session))
        .routes(routes!(list_memberships))
}

/// One of the caller's active sessions.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SessionItem {
    pub id: String,
    /// When it was opened (the sign-in), RFC 3339 UTC.
    pub created_at: String,
    /// When its newest token set was issued (sign-in, refresh or context switch).
    pub last_active_at: Option<String>,
    /// When its refresh token stops working unless used.
    pub expires_at: String,
    /// The address it was opened from; `null` when unknown.
    pub client_ip: Option<String>,
    /// The `User-Agent` it was opened with (printable, at most 256 characters).
    pub user_agent: Option<String>,
    /// Whether it is the session of the token making this request.
    pub current: bool,
}

/// The caller's active sessions, newest first (every device they are signed in on).
#[utoipa::path(
    get,
    path = "/auth/api/v1/auth/sessions",
    operation_id = "auth_sessions_list",
    tag = "auth",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The caller's active sessions, newest first", body = Data<Vec<SessionItem>>),
        (status = 401, description = "Unauthenticated"),
    )
)]
async fn list_sessions(
    State(state): State<AuthState>,
    caller: Caller,
    _: NoQuery,
) -> ApiResult<Json<Data<Vec<SessionItem>>>> {
    let sessions = state.sessions.list_active(&caller.user_id).await?;
    let data = sessions
        .into_iter()
        .map(|session| SessionItem {
            current: session.id == caller.session_id,
            id: session.id,
            created_at: session.created_at,
            last_active_at: session.last_active_at,
            expires_at: session.expires_at,
            client_ip: session.client_ip,
            user_agent: session.user_agent,
        })
        .collect();
    Ok(Json(Data { data }))
}

/// Ends one of the caller's sessions: its refresh token stops working at once and its access
/// tokens within seconds on every host (at once on this one).
#[utoipa::path(
    delete,
    path = "/auth/api/v1/auth/sessions/{session_id}",
    operation_id = "auth_sessions_end",
    tag = "auth",
    security(("bearer" = [])),
    params(("session_id" = String, Path, description = "A session id from the caller's list")),
    responses(
        (status = 204, description = "The session ended (`session.revoked` in the audit trail)"),
        (status = 401, description = "Unauthenticated"),
        (status = 404, description = "No active session of the caller has this id"),
    )
)]
async fn end_session(
    State(state): State<AuthState>,
    origin: RequestOrigin,
    caller: Caller,
    Path(session_id): Path<String>,
    _: NoQuery,
) -> ApiResult<StatusCode> {
    let entry = AuditEntry::new(AuditEvent::SessionRevoked)
        .caller(&caller)
        .origin(&origin)
        .detail("session_id", session_id.clone())
        .detail("current", session_id == caller.session_id);
    let ended = state
        .sessions
        .revoke_own(&caller.user_id, &session_id, &entry)
        .await?;
    if ended {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound(
            "No active session of yours has this id.".into(),
        ))
    }
}

/// A tenant the caller belongs to, with its workspaces.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MembershipItem {
    pub tenant_id: String,
    pub tenant_slug: String,
    pub tenant_name: String,
    /// The caller's role there: `owner`, `editor` or `viewer`.
    pub role: String,
    /// Whether the calling token is scoped to this tenant.
    pub current: bool,
    /// Its workspaces, the default first, then by name.
    pub workspaces: Vec<WorkspaceChoice>,
}

/// A workspace `switch-context` may scope tokens to.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WorkspaceChoice {
    pub id: String,
    pub name: String,
    pub is_default: bool,
    /// Whether the calling token is scoped to this workspace.
    pub current: bool,
}

/// The tenants the caller may switch to (`switch-context`), each with its workspaces; disabled
/// tenants are left out, as sign-in leaves them out.
#[utoipa::path(
    get,
    path = "/auth/api/v1/auth/memberships",
    operation_id = "auth_memberships_list",
    tag = "auth",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The caller's tenants, oldest membership first", body = Data<Vec<MembershipItem>>),
        (status = 401, description = "Unauthenticated"),
    )
)]
async fn list_memberships(
    State(state): State<AuthState>,
    caller: Caller,
    _: NoQuery,
) -> ApiResult<Json<Data<Vec<MembershipItem>>>> {
    let memberships = store::of_user(&state.database, &caller.user_id).await?;
    let mut workspaces = store::workspaces_of(&state.database, &caller.user_id).await?;
    let data = memberships
        .into_iter()
        .map(|membership| {
            let current_tenant = membership.tenant_id == caller.tenant_id;
            let (of_tenant, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut workspaces)
                .into_iter()
                .partition(|workspace| workspace.tenant_id == membership.tenant_id);
            workspaces = rest;
            MembershipItem {
                workspaces: of_tenant
                    .into_iter()
                    .map(|workspace| WorkspaceChoice {
                        current: current_tenant
                            && caller.workspace_id.as_deref() == Some(workspace.id.as_str()),
                        id: workspace.id,
                        name: workspace.name,
                        is_default: workspace.is_default,
                    })
                    .collect(),
                current: current_tenant,
                tenant_id: membership.tenant_id,
                tenant_slug: membership.tenant_slug,
                tenant_name: membership.tenant_name,
                role: membership.role,
            }
        })
        .collect();
    Ok(Json(Data { data }))
}
