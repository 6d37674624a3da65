//! A tenant's members over HTTP, for its owners (issue 31: the console's users screen, and any
//! client): `GET /auth/api/v1/members`, `POST /auth/api/v1/members` (a new account in the
//! caller's tenant, provisioned on the engines like `tessera admin create-user`) and
//! `PATCH /auth/api/v1/members/{user_id}` (the role; a tenant keeps an owner). The same
//! service as the admin CLI, so the same rules; every change is in the audit trail
//! (`member.created`, `member.role_changed`), never with a password.

use axum::extract::{FromRef, Path, State};
use axum::response::Response;
use serde::{Deserialize, Serialize};
use tessera_auth::audit::{self, AuditEntry, AuditEvent, RequestOrigin};
use tessera_auth::caller::Caller;
use tessera_auth::state::AuthState;
use tessera_http::envelope::{self, Data};
use tessera_http::extract::{ApiJson, NoQuery};
use tessera_http::{ApiError, ApiResult, ValidationErrors};
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::{MemberSummary, NewUser, Role, TenancyError, TenancyService, UserType};

pub fn router<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    TenancyService: FromRef<S>,
    AuthState: FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(list_members, create_member))
        .routes(routes!(change_role))
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
    /// Whether an operator disabled the account (it cannot sign in).
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
    }
    // The member as read before, with the role just written (no second read of the list).
    Ok(envelope::ok(Member {
        role: role.as_str().to_owned(),
        ..Member::from(current)
    }))
}
