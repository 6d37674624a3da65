//! A tenant's members over HTTP, for its owners (the console's users screen, and any
//! client): `GET /auth/api/v1/members`, `POST /auth/api/v1/members` (a new account in the
//! caller's tenant, provisioned on the engines like `tessera admin create-user`) and
//! `PATCH /auth/api/v1/members/{user_id}` (the role; a tenant keeps an owner),
//! `POST …/{user_id}/mfa/reset`, `…/disable` and `…/enable`; and the tenant's workspaces
//! (`GET`/`POST /auth/api/v1/workspaces`). The same service as the admin CLI, so the same rules;
//! every change is in the audit trail (`member.created`, `member.role_changed`,
//! `member.mfa_reset`, `member.disabled`, `member.enabled`, `workspace.created`), never with a
//! password.
//!
//! An account may belong to several tenants, and one tenant's owner must not lock its user out
//! of another: an owner resets the second factors of, disables or enables only an account that
//! belongs to their tenant alone (409 otherwise: the operator's `tessera admin disable-user`
//! is for the rest), and never their own (their account page is for that).

use axum::extract::{FromRef, Path, State};
use axum::response::Response;
use serde::{Deserialize, Serialize};
use tessera_auth::audit::{self, AuditEntry, AuditEvent, RequestOrigin};
use tessera_auth::caller::Caller;
use tessera_auth::sessions::AccessChange;
use tessera_auth::state::AuthState;
use tessera_http::envelope::{self, Data};
use tessera_http::extract::{ApiJson, NoQuery};
use tessera_http::{ApiError, ApiResult, ValidationErrors};
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::{
    MemberAccess, MemberSummary, NewUser, Role, TenancyError, TenancyService, UserType,
    WorkspaceSummary,
};

pub fn router<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    TenancyService: FromRef<S>,
    AuthState: FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(list_members, create_member))
        .routes(routes!(change_role))
        .routes(routes!(reset_member_mfa))
        .routes(routes!(disable_member))
        .routes(routes!(enable_member))
        .routes(routes!(list_workspaces, create_workspace))
}

/// A member of the caller's tenant.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Member {
    pub user_id: String,
    pub email: String,
    pub first_name: String,
    pub last_name: String,
    /// `user`, `guest` or `agent`.
    #[serde(rename = "type")]
    pub user_type: String,
    /// `owner`, `editor` or `viewer`.
    pub role: String,
    pub member_since: String,
    /// Whether the account is disabled (it cannot sign in): by an owner, or the operator.
    pub disabled: bool,
}

impl From<MemberSummary> for Member {
    fn from(member: MemberSummary) -> Self {
        Self {
            user_id: member.user_id,
            email: member.email,
            first_name: member.first_name,
            last_name: member.last_name,
            user_type: member.user_type,
            role: member.role,
            member_since: member.member_since,
            disabled: member.disabled_at.is_some(),
        }
    }
}

/// A new member: a new account of the caller's tenant.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewMemberBody {
    /// The e-mail address they sign in with; no account may have it yet.
    pub email: String,
    /// Their first password (the password policy applies); they change it once signed in.
    pub password: String,
    /// `owner`, `editor` or `viewer`.
    pub role: String,
    #[serde(default)]
    pub first_name: String,
    #[serde(default)]
    pub last_name: String,
}

/// A member's new role.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RoleBody {
    /// `owner`, `editor` or `viewer`.
    pub role: String,
}

fn parse_role(role: &str) -> Result<Role, ApiError> {
    match role {
        "owner" => Ok(Role::Owner),
        "editor" => Ok(Role::Editor),
        "viewer" => Ok(Role::Viewer),
        _ => {
            let mut errors = ValidationErrors::new();
            errors.add("role", "in:owner,editor,viewer");
            Err(ApiError::Validation(errors))
        }
    }
}

/// Tenancy's refusals in the API's shapes.
pub(crate) fn refusal(error: TenancyError) -> ApiError {
    match error {
        TenancyError::SlugTaken(slug) => {
            ApiError::Conflict(format!("A tenant with the slug \"{slug}\" already exists."))
        }
        TenancyError::Invalid(errors) => ApiError::Validation(errors),
        TenancyError::EmailTaken(_) => {
            let mut errors = ValidationErrors::new();
            errors.add("email", "unique");
            ApiError::Validation(errors)
        }
        TenancyError::LastOwner { .. } => ApiError::Conflict(
            "This is the tenant's last owner; make another member owner first.".into(),
        ),
        TenancyError::NotMember { .. } | TenancyError::UserNotFound(_) => {
            ApiError::not_found("Member")
        }
        TenancyError::TenantNotFound(_) => ApiError::not_found("Tenant"),
        TenancyError::WorkspaceNameTaken { name, .. } => ApiError::Conflict(format!(
            "The tenant already has a workspace named \"{name}\"."
        )),
        TenancyError::OwnAccount => ApiError::Conflict(
            "This is your own account; manage it on your account page.".into(),
        ),
        TenancyError::SharedAccount => ApiError::Conflict(
            "This account also belongs to another tenant; only an operator can change its access (tessera admin disable-user, reset-password)."
                .into(),
        ),
        other => ApiError::Internal(anyhow::Error::new(other)),
    }
}

async fn member(
    tenancy: &TenancyService,
    tenant_id: &str,
    user_id: &str,
) -> ApiResult<MemberSummary> {
    tenancy
        .members_of(tenant_id)
        .await
        .map_err(refusal)?
        .into_iter()
        .find(|member| member.user_id == user_id)
        .ok_or_else(|| ApiError::not_found("Member"))
}

/// The members of the caller's tenant, by e-mail (owners only).
#[utoipa::path(
    get,
    path = "/auth/api/v1/members",
    operation_id = "members_list",
    tag = "auth",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The members, by e-mail", body = Data<Vec<Member>>),
        (status = 401, description = "Missing or invalid bearer token"),
        (status = 403, description = "The caller is not an owner of the tenant"),
    )
)]
async fn list_members(
    State(tenancy): State<TenancyService>,
    caller: Caller,
    _: NoQuery,
) -> ApiResult<Response> {
    caller.require_owner()?;
    let members = tenancy
        .members_of(&caller.tenant_id)
        .await
        .map_err(refusal)?;
    Ok(envelope::ok(
        members.into_iter().map(Member::from).collect::<Vec<_>>(),
    ))
}

/// Creates an account in the caller's tenant with a first password and a role, provisioned on
/// every engine that provisions users (owners only).
#[utoipa::path(
    post,
    path = "/auth/api/v1/members",
    operation_id = "members_create",
    tag = "auth",
    security(("bearer" = [])),
    request_body = NewMemberBody,
    responses(
        (status = 201, description = "The new member", body = Data<Member>),
        (status = 401, description = "Missing or invalid bearer token"),
        (status = 403, description = "The caller is not an owner of the tenant"),
        (status = 422, description = "Invalid e-mail (or one an account has: `unique`), a password the policy refuses, an unknown role, a name over 100 characters"),
    )
)]
async fn create_member(
    State(tenancy): State<TenancyService>,
    State(auth): State<AuthState>,
    caller: Caller,
    origin: RequestOrigin,
    _: NoQuery,
    ApiJson(body): ApiJson<NewMemberBody>,
) -> ApiResult<Response> {
    caller.require_owner()?;
    let role = parse_role(&body.role)?;
    let tenant = tenancy
        .tenant_by_id(&caller.tenant_id)
        .await
        .map_err(refusal)?;
    let created = tenancy
        .create_user(NewUser {
            tenant_slug: tenant.slug,
            email: body.email,
            password: body.password,
            role,
            user_type: UserType::User,
            first_name: body.first_name,
            last_name: body.last_name,
        })
        .await
        .map_err(refusal)?;
    let entry = AuditEntry::new(AuditEvent::MemberCreated)
        .caller(&caller)
        .origin(&origin)
        .detail("member_id", created.user_id.clone())
        .detail("role", role.as_str());
    audit::record(&auth.database, &entry).await?;
    let member = member(&tenancy, &caller.tenant_id, &created.user_id).await?;
    Ok(envelope::created(Member::from(member)))
}

/// Changes a member's role (owners only); the tenant keeps at least one owner.
#[utoipa::path(
    patch,
    path = "/auth/api/v1/members/{user_id}",
    operation_id = "members_change_role",
    tag = "auth",
    security(("bearer" = [])),
    params(("user_id" = String, Path, description = "The member's user id")),
    request_body = RoleBody,
    responses(
        (status = 200, description = "The member with the new role", body = Data<Member>),
        (status = 401, description = "Missing or invalid bearer token"),
        (status = 403, description = "The caller is not an owner of the tenant"),
        (status = 404, description = "No such member in the caller's tenant"),
        (status = 409, description = "The tenant's last owner would lose the role"),
        (status = 422, description = "`role` is not `owner`, `editor` or `viewer`"),
    )
)]
async fn change_role(
    State(tenancy): State<TenancyService>,
    State(auth): State<AuthState>,
    caller: Caller,
    origin: RequestOrigin,
    Path(user_id): Path<String>,
    _: NoQuery,
    ApiJson(body): ApiJson<RoleBody>,
) -> ApiResult<Response> {
    caller.require_owner()?;
    let role = parse_role(&body.role)?;
    let current = member(&tenancy, &caller.tenant_id, &user_id).await?;
    let tenant = tenancy
        .tenant_by_id(&caller.tenant_id)
        .await
        .map_err(refusal)?;
    tenancy
        .set_role(&tenant.slug, &current.email, role)
        .await
        .map_err(refusal)?;
    if current.role != role.as_str() {
        let entry = AuditEntry::new(AuditEvent::MemberRoleChanged)
            .caller(&caller)
            .origin(&origin)
            .detail("member_id", user_id.clone())
            .detail("previous_role", current.role.clone())
            .detail("role", role.as_str());
        audit::record(&auth.database, &entry).await?;
        auth.sessions.announce(AccessChange::User(user_id.clone()));
    }
    // The member as read before, with the role just written (no second read of the list).
    Ok(envelope::ok(Member {
        role: role.as_str().to_owned(),
        ..Member::from(current)
    }))
}

/// What an owner's change to a member's access did.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MemberAccessResult {
    pub user_id: String,
    /// False when it already was so (no second factor on, already disabled or enabled).
    pub changed: bool,
    /// The member's sessions ended by it (every one, on a reset or a disable).
    pub sessions_ended: u64,
}

async fn change_access(
    tenancy: &TenancyService,
    auth: &AuthState,
    caller: &Caller,
    origin: &RequestOrigin,
    user_id: String,
    change: MemberAccess,
    event: AuditEvent,
) -> ApiResult<Response> {
    caller.require_owner()?;
    let entry = AuditEntry::new(event).caller(caller).origin(origin);
    let changed = tenancy
        .change_member_access(&caller.tenant_id, &user_id, &caller.user_id, change, entry)
        .await
        .map_err(refusal)?;
    if changed.changed || changed.sessions_ended > 0 {
        auth.sessions.announce(AccessChange::User(user_id.clone()));
    }
    Ok(envelope::ok(MemberAccessResult {
        user_id,
        changed: changed.changed,
        sessions_ended: changed.sessions_ended,
    }))
}

/// Removes every second factor of a member (TOTP with its recovery codes, e-mailed codes,
/// passkeys) and ends their sessions, for a member who lost their device (owners only; an
/// account of this tenant alone, not the caller's own). They sign in with their password next.
#[utoipa::path(
    post,
    path = "/auth/api/v1/members/{user_id}/mfa/reset",
    operation_id = "members_reset_mfa",
    tag = "auth",
    security(("bearer" = [])),
    params(("user_id" = String, Path, description = "The member's user id")),
    responses(
        (status = 200, description = "The second factors removed (`member.mfa_reset` in the audit trail)", body = Data<MemberAccessResult>),
        (status = 401, description = "Missing or invalid bearer token"),
        (status = 403, description = "The caller is not an owner of the tenant"),
        (status = 404, description = "No such member in the caller's tenant"),
        (status = 409, description = "The caller's own account, or an account that also belongs to another tenant"),
    )
)]
async fn reset_member_mfa(
    State(tenancy): State<TenancyService>,
    State(auth): State<AuthState>,
    caller: Caller,
    origin: RequestOrigin,
    Path(user_id): Path<String>,
    _: NoQuery,
) -> ApiResult<Response> {
    change_access(
        &tenancy,
        &auth,
        &caller,
        &origin,
        user_id,
        MemberAccess::ResetSecondFactors,
        AuditEvent::MemberMfaReset,
    )
    .await
}

/// Disables a member's account: it cannot sign in, and its sessions end (owners only; an
/// account of this tenant alone, not the caller's own).
#[utoipa::path(
    post,
    path = "/auth/api/v1/members/{user_id}/disable",
    operation_id = "members_disable",
    tag = "auth",
    security(("bearer" = [])),
    params(("user_id" = String, Path, description = "The member's user id")),
    responses(
        (status = 200, description = "The account disabled (`member.disabled` in the audit trail)", body = Data<MemberAccessResult>),
        (status = 401, description = "Missing or invalid bearer token"),
        (status = 403, description = "The caller is not an owner of the tenant"),
        (status = 404, description = "No such member in the caller's tenant"),
        (status = 409, description = "The caller's own account, or an account that also belongs to another tenant"),
    )
)]
async fn disable_member(
    State(tenancy): State<TenancyService>,
    State(auth): State<AuthState>,
    caller: Caller,
    origin: RequestOrigin,
    Path(user_id): Path<String>,
    _: NoQuery,
) -> ApiResult<Response> {
    change_access(
        &tenancy,
        &auth,
        &caller,
        &origin,
        user_id,
        MemberAccess::Disable,
        AuditEvent::MemberDisabled,
    )
    .await
}

/// Lets a disabled member sign in again, with the same password and second factors (owners
/// only; an account of this tenant alone).
#[utoipa::path(
    post,
    path = "/auth/api/v1/members/{user_id}/enable",
    operation_id = "members_enable",
    tag = "auth",
    security(("bearer" = [])),
    params(("user_id" = String, Path, description = "The member's user id")),
    responses(
        (status = 200, description = "The account enabled (`member.enabled` in the audit trail)", body = Data<MemberAccessResult>),
        (status = 401, description = "Missing or invalid bearer token"),
        (status = 403, description = "The caller is not an owner of the tenant"),
        (status = 404, description = "No such member in the caller's tenant"),
        (status = 409, description = "The caller's own account, or an account that also belongs to another tenant"),
    )
)]
async fn enable_member(
    State(tenancy): State<TenancyService>,
    State(auth): State<AuthState>,
    caller: Caller,
    origin: RequestOrigin,
    Path(user_id): Path<String>,
    _: NoQuery,
) -> ApiResult<Response> {
    change_access(
        &tenancy,
        &auth,
        &caller,
        &origin,
        user_id,
        MemberAccess::Enable,
        AuditEvent::MemberEnabled,
    )
    .await
}

/// The workspaces of the caller's tenant, the default first (any member).
#[utoipa::path(
    get,
    path = "/auth/api/v1/workspaces",
    operation_id = "workspaces_list",
    tag = "auth",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The tenant's workspaces, the default first, then by name", body = Data<Vec<WorkspaceSummary>>),
        (status = 401, description = "Missing or invalid bearer token"),
    )
)]
async fn list_workspaces(
    State(tenancy): State<TenancyService>,
    caller: Caller,
    _: NoQuery,
) -> ApiResult<Response> {
    let workspaces = tenancy
        .workspaces_of(&caller.tenant_id)
        .await
        .map_err(refusal)?;
    Ok(envelope::ok(workspaces))
}

/// A new workspace's name.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewWorkspaceBody {
    /// 1 to 100 characters, unique in the tenant.
    pub name: String,
}

/// Adds a workspace to the caller's tenant (owners only).
#[utoipa::path(
    post,
    path = "/auth/api/v1/workspaces",
    operation_id = "workspaces_create",
    tag = "auth",
    security(("bearer" = [])),
    request_body = NewWorkspaceBody,
    responses(
        (status = 201, description = "The new workspace (`workspace.created` in the audit trail)", body = Data<WorkspaceSummary>),
        (status = 401, description = "Missing or invalid bearer token"),
        (status = 403, description = "The caller is not an owner of the tenant"),
        (status = 409, description = "The tenant already has a workspace of this name"),
        (status = 422, description = "`name` empty or over 100 characters"),
    )
)]
async fn create_workspace(
    State(tenancy): State<TenancyService>,
    State(auth): State<AuthState>,
    caller: Caller,
    origin: RequestOrigin,
    _: NoQuery,
    ApiJson(body): ApiJson<NewWorkspaceBody>,
) -> ApiResult<Response> {
    caller.require_owner()?;
    let tenant = tenancy
        .tenant_by_id(&caller.tenant_id)
        .await
        .map_err(refusal)?;
    let created = tenancy
        .create_workspace(&tenant.slug, &body.name)
        .await
        .map_err(refusal)?;
    let entry = AuditEntry::new(AuditEvent::WorkspaceCreated)
        .caller(&caller)
        .origin(&origin)
        .detail("workspace_id", created.workspace_id.clone())
        .detail("name", created.name.clone());
    audit::record(&auth.database, &entry).await?;
    let workspace = tenancy
        .workspaces_of(&caller.tenant_id)
        .await
        .map_err(refusal)?
        .into_iter()
        .find(|workspace| workspace.id == created.workspace_id)
        .ok_or_else(|| ApiError::not_found("Workspace"))?;
    Ok(envelope::created(workspace))
}
