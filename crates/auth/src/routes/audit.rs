//! `GET /auth/api/v1/audit`: the audit trail of the caller's tenant for its owners, newest
//! first, cursor-paged, filtered by event, user or engine (the trail itself is `audit.rs`).

use axum::extract::{RawQuery, State};
use axum::response::Response;
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::audit::{AuditEventFilter, AuditFilter, AuditItem, list};
use crate::caller::Caller;
use crate::state::AuthState;
use tessera_http::envelope::{self, DataWithMeta};
use tessera_http::extract::parse_query;
use tessera_http::paging::{CursorMeta, CursorPage, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE};
use tessera_http::{ApiError, ApiResult, ValidationErrors};

pub fn router<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    AuthState: axum::extract::FromRef<S>,
{
    OpenApiRouter::new().routes(routes!(list_audit))
}

/// The query of `GET /auth/api/v1/audit`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct AuditQuery {
    /// Opaque cursor from a previous page's `meta.next_cursor`.
    pub cursor: Option<String>,
    /// Page size; default 50, clamped to 100.
    #[param(value_type = Option<i64>, minimum = 1, maximum = 4294967295_u64)]
    pub limit: Option<u32>,
    /// Only this event: `login.succeeded`, `login.failed`, `account.locked_out`,
    /// `mfa.challenged`, `mfa.succeeded`, `mfa.failed`, `mfa.recovery_code_used`,
    /// `mfa.enabled`, `mfa.disabled`, `token.refreshed`, `token.refresh_reused`,
    /// `session.logged_out`, `session.logged_out_everywhere`, `session.evicted`,
    /// `context.switched`, `password.changed`, `password.change_failed`,
    /// `password.reset_requested`, `password.reset`, `password.reset_failed`,
    /// `magic_link.requested`, `magic_link.used`, `magic_link.failed`, `passkey.used`,
    /// `passkey.failed`, `member.created`, `member.role_changed`, `session.revoked`,
    /// `member.mfa_reset`, `member.disabled`, `member.enabled`, `workspace.created`; or an
    /// engine's audited
    /// operation, `<code>.<name>` (its `x-tessera-audit`, e.g. `chat.webhook.created`).
    pub event: Option<String>,
    /// Only entries of this user.
    pub user_id: Option<String>,
    /// Only the entries of this engine's audited operations.
    pub engine: Option<String>,
}

/// The audit trail of the caller's tenant, newest first (owners only): the host's
/// authentication and membership events, and the engines' audited operations.
#[utoipa::path(
    get,
    path = "/auth/api/v1/audit",
    operation_id = "auth_audit_list",
    tag = "auth",
    params(AuditQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "A page of the trail, newest first", body = DataWithMeta<Vec<AuditItem>, CursorMeta>),
        (status = 400, description = "Unknown query parameter"),
        (status = 401, description = "Missing or invalid bearer token"),
        (status = 403, description = "The caller is not an owner of the tenant"),
        (status = 422, description = "Invalid `cursor`, `limit` or `event` (neither a host event nor a well-formed `<code>.<name>`)"),
    )
)]
async fn list_audit(
    State(state): State<AuthState>,
    caller: Caller,
    RawQuery(query): RawQuery,
) -> ApiResult<Response> {
    // Authorization before the query is read: a non-owner learns nothing from its answers.
    caller.require_owner()?;
    let query: AuditQuery = parse_query(query.as_deref().unwrap_or(""))?;
    let page = CursorPage::with_bounds(
        query.cursor.as_deref(),
        query.limit,
        DEFAULT_PAGE_SIZE,
        MAX_PAGE_SIZE,
    )?;
    let event = match query.event.as_deref().filter(|event| !event.is_empty()) {
        None => None,
        Some(name) => Some(
            name.parse::<AuditEventFilter>()
                .map_err(|_| ApiError::Validation(ValidationErrors::single("event", "in")))?,
        ),
    };
    let filter = AuditFilter {
        event,
        user_id: query.user_id.filter(|user_id| !user_id.is_empty()),
        engine: query.engine.filter(|engine| !engine.is_empty()),
    };
    let (items, meta) = list(&state.database, &caller.tenant_id, &filter, &page).await?;
    Ok(envelope::ok_with_meta(items, meta))
}
