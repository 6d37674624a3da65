//! What a signed-in user manages of their own sign-in: their active sessions, listed with where
//! each was opened and ended one by one, and the tenants and workspaces they may switch to (the
//! choices of `switch-context`). The endpoints are `routes/own_sessions.rs`
//! (`GET`/`DELETE /auth/api/v1/auth/sessions…`, `GET /auth/api/v1/auth/memberships`).
//!
//! A session of another user is answered as unknown, never as forbidden: its id tells
//! nothing. Ending the session of the calling token is a logout.

use serde::Serialize;
use utoipa::ToSchema;

use crate::audit::{AuditEntry, AuditEvent, RequestOrigin};
use crate::caller::Caller;
use crate::sessions::Sessions;
use crate::store::memberships as store;
use tessera_storage::Database;

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

/// The caller's active sessions, newest first, the caller's own marked `current`.
pub async fn sessions_of(sessions: &Sessions, caller: &Caller) -> anyhow::Result<Vec<SessionItem>> {
    let sessions = sessions.list_active(&caller.user_id).await?;
    Ok(sessions
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
        .collect())
}

/// Ends one of the caller's active sessions, recording `session.revoked`: false (nothing
/// changed) when the session is not theirs or not active.
pub async fn end_own_session(
    sessions: &Sessions,
    caller: &Caller,
    origin: &RequestOrigin,
    session_id: &str,
) -> anyhow::Result<bool> {
    let entry = AuditEntry::new(AuditEvent::SessionRevoked)
        .caller(caller)
        .origin(origin)
        .detail("session_id", session_id.to_owned())
        .detail("current", session_id == caller.session_id);
    sessions
        .revoke_own(&caller.user_id, session_id, &entry)
        .await
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

/// The tenants the caller may switch to, oldest membership first, each with its workspaces;
/// disabled tenants are left out, as sign-in leaves them out.
pub async fn memberships_of(
    database: &Database,
    caller: &Caller,
) -> anyhow::Result<Vec<MembershipItem>> {
    let memberships = store::of_user(database, &caller.user_id).await?;
    let mut workspaces = store::workspaces_of(database, &caller.user_id).await?;
    Ok(memberships
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
        .collect())
}
