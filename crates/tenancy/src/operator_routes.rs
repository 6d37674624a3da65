//! The operator's tenants over HTTP (the console's tenants screen, and any client
//! holding the operator token): `GET`/`POST /core/api/operator/tenants`,
//! `POST …/{slug}/disable`, `POST …/{slug}/enable` and `DELETE …/{slug}?confirm={slug}`. The
//! same service as `tessera admin create-tenant`, `disable-tenant`, `enable-tenant` and
//! `delete-tenant`, so the same rules and the same answers.

use axum::extract::{FromRef, Path, RawQuery, State};
use axum::response::Response;
use serde::Deserialize;
use tessera_auth::AuthState;
use tessera_auth::sessions::AccessChange;
use tessera_http::envelope::{self, Data};
use tessera_http::extract::{ApiJson, NoQuery, parse_query};
use tessera_http::operator::{Operator, OperatorCredential};
use tessera_http::{ApiError, ApiResult, ValidationErrors};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::routes::refusal;
use crate::{CreatedTenant, DeletedTenant, TenancyService, TenantAccess, TenantSummary};

pub fn router<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    TenancyService: FromRef<S>,
    OperatorCredential: FromRef<S>,
    AuthState: FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(list_tenants, create_tenant))
        .routes(routes!(delete_tenant))
        .routes(routes!(disable_tenant))
        .routes(routes!(enable_tenant))
}

/// A new tenant.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewTenantBody {
    /// 2 to 63 characters of lower-case letters, digits and inner hyphens; unique.
    pub slug: String,
    /// Its display name (1 to 200 characters).
    pub name: String,
}

/// What a deletion must name again.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct DeleteQuery {
    /// The tenant's slug once more: the deletion erases everything of the tenant.
    pub confirm: Option<String>,
}

/// Every tenant, with its member count.
#[utoipa::path(
    get,
    path = "/core/api/operator/tenants",
    tag = "operator",
    security(("operator_token" = [])),
    responses(
        (status = 200, description = "The tenants", body = Data<Vec<TenantSummary>>),
        (status = 401, description = "No bearer token, or not the operator token"),
    )
)]
async fn list_tenants(
    _: Operator,
    State(tenancy): State<TenancyService>,
    _: NoQuery,
) -> ApiResult<Response> {
    Ok(envelope::ok(tenancy.list_tenants().await.map_err(refusal)?))
}

/// Creates a tenant with its default workspace and families, provisioned on every engine that
/// provisions tenants (a failed engine is reported, not rolled back).
#[utoipa::path(
    post,
    path = "/core/api/operator/tenants",
    tag = "operator",
    security(("operator_token" = [])),
    request_body = NewTenantBody,
    responses(
        (status = 201, description = "The tenant and its provisioning", body = Data<CreatedTenant>),
        (status = 401, description = "No bearer token, or not the operator token"),
        (status = 409, description = "A tenant has that slug"),
        (status = 422, description = "An invalid slug or name"),
    )
)]
async fn create_tenant(
    _: Operator,
    State(tenancy): State<TenancyService>,
    _: NoQuery,
    ApiJson(body): ApiJson<NewTenantBody>,
) -> ApiResult<Response> {
    let created = tenancy
        .create_tenant(&body.slug, &body.name)
        .await
        .map_err(refusal)?;
    Ok(envelope::created(created))
}

/// Disables a tenant: its members get no token for it, and the tokens issued for it are
/// refused within seconds (its realtime connections on this host close at once); its data
/// stays.
#[utoipa::path(
    post,
    path = "/core/api/operator/tenants/{slug}/disable",
    tag = "operator",
    security(("operator_token" = [])),
    params(("slug" = String, Path, description = "The tenant's slug")),
    responses(
        (status = 200, description = "The tenant's access now", body = Data<TenantAccess>),
        (status = 401, description = "No bearer token, or not the operator token"),
        (status = 404, description = "No tenant has that slug"),
    )
)]
async fn disable_tenant(
    _: Operator,
    State(tenancy): State<TenancyService>,
    State(auth): State<AuthState>,
    Path(slug): Path<String>,
    _: NoQuery,
) -> ApiResult<Response> {
    let access = tenancy.disable_tenant(&slug).await.map_err(refusal)?;
    auth.sessions
        .announce(AccessChange::Tenant(access.tenant_id.clone()));
    Ok(envelope::ok(access))
}

/// Lets a disabled tenant's members in again.
#[utoipa::path(
    post,
    path = "/core/api/operator/tenants/{slug}/enable",
    tag = "operator",
    security(("operator_token" = [])),
    params(("slug" = String, Path, description = "The tenant's slug")),
    responses(
        (status = 200, description = "The tenant's access now", body = Data<TenantAccess>),
        (status = 401, description = "No bearer token, or not the operator token"),
        (status = 404, description = "No tenant has that slug"),
    )
)]
async fn enable_tenant(
    _: Operator,
    State(tenancy): State<TenancyService>,
    Path(slug): Path<String>,
    _: NoQuery,
) -> ApiResult<Response> {
    Ok(envelope::ok(
        tenancy.enable_tenant(&slug).await.map_err(refusal)?,
    ))
}

/// Deletes a tenant and everything of it: its data on every engine, its entities, log,
/// search documents and memberships. The query must name the slug again (`confirm`).
#[utoipa::path(
    delete,
    path = "/core/api/operator/tenants/{slug}",
    tag = "operator",
    security(("operator_token" = [])),
    params(("slug" = String, Path, description = "The tenant's slug"), DeleteQuery),
    responses(
        (status = 200, description = "What was removed", body = Data<DeletedTenant>),
        (status = 401, description = "No bearer token, or not the operator token"),
        (status = 404, description = "No tenant has that slug"),
        (status = 422, description = "`confirm` missing or not the slug"),
    )
)]
async fn delete_tenant(
    _: Operator,
    State(tenancy): State<TenancyService>,
    State(auth): State<AuthState>,
    Path(slug): Path<String>,
    RawQuery(query): RawQuery,
) -> ApiResult<Response> {
    let query: DeleteQuery = parse_query(query.as_deref().unwrap_or(""))?;
    if query.confirm.as_deref() != Some(slug.as_str()) {
        let mut errors = ValidationErrors::new();
        errors.add("confirm", "same:slug");
        return Err(ApiError::Validation(errors));
    }
    let deleted = tenancy.delete_tenant(&slug).await.map_err(refusal)?;
    auth.sessions
        .announce(AccessChange::Tenant(deleted.tenant_id.clone()));
    Ok(envelope::ok(deleted))
}
