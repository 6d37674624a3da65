//! `/auth/api/v1/auth/sessions…` and `/auth/api/v1/auth/memberships`: a signed-in user's own
//! sessions, listed and ended one by one, and the tenants and workspaces they may switch to
//! (what they hold is `own_sessions.rs`).
//!
//! A session of another user is answered as unknown (404), never as forbidden: its id tells
//! nothing. Ending the session of the calling token is a logout.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::audit::RequestOrigin;
use crate::caller::Caller;
use crate::own_sessions::{self, MembershipItem, SessionItem};
use crate::state::AuthState;
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
    let data = own_sessions::sessions_of(&state.sessions, &caller).await?;
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
    let ended =
        own_sessions::end_own_session(&state.sessions, &caller, &origin, &session_id).await?;
    if ended {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound(
            "No active session of yours has this id.".into(),
        ))
    }
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
    let data = own_sessions::memberships_of(&state.database, &caller).await?;
    Ok(Json(Data { data }))
}
