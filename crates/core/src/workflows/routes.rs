//! `/core/api/v1/workflows`: the tenant's workflows (owners manage them; editors and viewers
//! read them) and their run history.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::Deserialize;
use serde_json::Value;
use utoipa::IntoParams;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::definition;
use super::schema::{NewWorkflow, WorkflowPatch};
use super::service::{self, Activation, WorkflowActivation, WorkflowView};
use super::store::{self, WorkflowRun};
use crate::state::CoreState;
use tessera_auth::caller::Caller;
use tessera_http::envelope::{self, Data, DataWithMeta};
use tessera_http::extract::{ApiJson, ApiQuery, NoQuery};
use tessera_http::paging::{DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, OffsetMeta, OffsetPage};
use tessera_http::{ApiError, ApiResult};

/// `/core/api/v1/workflows…`.
pub(crate) fn router<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    CoreState: axum::extract::FromRef<S>,
    tessera_auth::AuthState: axum::extract::FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(list_workflows, create_workflow))
        .routes(routes!(get_workflow, update_workflow, delete_workflow))
        .routes(routes!(activate_workflow))
        .routes(routes!(deactivate_workflow))
        .routes(routes!(list_runs))
}

/// Offset paging of the workflow and run lists.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct WorkflowPageQuery {
    #[param(value_type = Option<i64>, minimum = 1, maximum = 4294967295_u64)]
    pub page: Option<u32>,
    #[param(value_type = Option<i64>, minimum = 1, maximum = 4294967295_u64)]
    pub per_page: Option<u32>,
}

impl WorkflowPageQuery {
    fn page(&self) -> Result<OffsetPage, ApiError> {
        OffsetPage::new(self.page, self.per_page, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
    }
}

/// Workflows are read by every member of the tenant except guests.
fn require_reader(caller: &Caller) -> Result<(), ApiError> {
    if caller.is_guest() {
        Err(ApiError::Forbidden)
    } else {
        Ok(())
    }
}

/// Workflow ids are UUIDs: anything else names no workflow.
fn workflow_id(id: &str) -> Result<String, ApiError> {
    uuid::Uuid::try_parse(id)
        .map(|id| id.hyphenated().to_string())
        .map_err(|_| ApiError::not_found("Workflow"))
}

/// The tenant's workflows, newest first, offset-paged.
#[utoipa::path(
    get,
    path = "/core/api/v1/workflows",
    tag = "workflows",
    security(("bearer" = [])),
    params(WorkflowPageQuery),
    responses(
        (status = 200, description = "A page of workflows", body = DataWithMeta<Vec<WorkflowView>, OffsetMeta>),
        (status = 400, description = "Unknown query parameter"),
        (status = 401, description = "Unauthenticated"),
        (status = 403, description = "Guests do not read workflows"),
        (status = 422, description = "Invalid paging"),
    )
)]
async fn list_workflows(
    State(state): State<CoreState>,
    caller: Caller,
    ApiQuery(query): ApiQuery<WorkflowPageQuery>,
) -> ApiResult<Response> {
    require_reader(&caller)?;
    let page = query.page()?;
    let (workflows, total) = service::list(&state.database, &caller.tenant_id, &page).await?;
    let views: Vec<WorkflowView> = workflows.iter().map(service::Workflow::view).collect();
    Ok(envelope::ok_with_meta(views, page.meta(total)))
}

/// Creates an inactive workflow (owners only).
#[utoipa::path(
    post,
    path = "/core/api/v1/workflows",
    tag = "workflows",
    security(("bearer" = [])),
    request_body(content = NewWorkflow, description = "`name`, `trigger_event` and `actions` (at least one `{type, config}`) required; `description`, `family` and `conditions` (`{field, operator, value}`) optional"),
    responses(
        (status = 201, description = "The new workflow, inactive", body = Data<WorkflowView>),
        (status = 400, description = "Malformed JSON"),
        (status = 401, description = "Unauthenticated"),
        (status = 403, description = "Only owners manage workflows"),
        (status = 422, description = "Invalid definition; `errors` keys point at the item, e.g. `actions.0.config.field`"),
    )
)]
async fn create_workflow(
    State(state): State<CoreState>,
    caller: Caller,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<Response> {
    caller.require_owner()?;
    let definition = definition::parse_create(&body).map_err(ApiError::Validation)?;
    let workflow = service::create(
        &state.database,
        &caller.tenant_id,
        &caller.user_id,
        definition,
    )
    .await?;
    Ok(envelope::created(workflow.view()))
}

/// A workflow of the tenant.
#[utoipa::path(
    get,
    path = "/core/api/v1/workflows/{id}",
    tag = "workflows",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Workflow id")),
    responses(
        (status = 200, description = "The workflow", body = Data<WorkflowView>),
        (status = 401, description = "Unauthenticated"),
        (status = 403, description = "Guests do not read workflows"),
        (status = 404, description = "No such workflow in the tenant"),
    )
)]
async fn get_workflow(
    State(state): State<CoreState>,
    caller: Caller,
    Path(id): Path<String>,
    _: NoQuery,
) -> ApiResult<Json<Data<WorkflowView>>> {
    require_reader(&caller)?;
    let workflow = service::find(&state.database, &caller.tenant_id, &workflow_id(&id)?)
        .await?
        .ok_or_else(|| ApiError::not_found("Workflow"))?;
    Ok(Json(Data {
        data: workflow.view(),
    }))
}

/// Changes the supplied fields of a workflow (owners only); `conditions` and `actions` are
/// replaced whole, the active state is kept.
#[utoipa::path(
    patch,
    path = "/core/api/v1/workflows/{id}",
    tag = "workflows",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Workflow id")),
    request_body(content = WorkflowPatch, description = "Any of `name`, `description`, `trigger_event`, `family`, `conditions`, `actions`"),
    responses(
        (status = 200, description = "The changed workflow", body = Data<WorkflowView>),
        (status = 400, description = "Malformed JSON"),
        (status = 401, description = "Unauthenticated"),
        (status = 403, description = "Only owners manage workflows"),
        (status = 404, description = "No such workflow in the tenant"),
        (status = 422, description = "Invalid fields"),
    )
)]
async fn update_workflow(
    State(state): State<CoreState>,
    caller: Caller,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<Json<Data<WorkflowView>>> {
    caller.require_owner()?;
    let id = workflow_id(&id)?;
    let patch = definition::parse_patch(&body).map_err(ApiError::Validation)?;
    let workflow = service::update(&state.database, &caller.tenant_id, &id, patch)
        .await?
        .ok_or_else(|| ApiError::not_found("Workflow"))?;
    Ok(Json(Data {
        data: workflow.view(),
    }))
}

/// Deletes a workflow (owners only); its run history stays.
#[utoipa::path(
    delete,
    path = "/core/api/v1/workflows/{id}",
    tag = "workflows",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Workflow id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 401, description = "Unauthenticated"),
        (status = 403, description = "Only owners manage workflows"),
        (status = 404, description = "No such workflow in the tenant"),
    )
)]
async fn delete_workflow(
    State(state): State<CoreState>,
    caller: Caller,
    Path(id): Path<String>,
    _: NoQuery,
) -> ApiResult<StatusCode> {
    caller.require_owner()?;
    if store::delete(&state.database, &caller.tenant_id, &workflow_id(&id)?).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found("Workflow"))
    }
}

async fn set_active(
    state: &CoreState,
    caller: &Caller,
    id: &str,
    active: bool,
) -> ApiResult<Json<Data<WorkflowActivation>>> {
    caller.require_owner()?;
    match service::set_active(
        &state.database,
        &caller.tenant_id,
        &workflow_id(id)?,
        active,
        state.workflows.max_active_per_tenant,
    )
    .await?
    {
        Activation::Changed(workflow) => Ok(Json(Data {
            data: workflow.activation(),
        })),
        Activation::AlreadyThere if active => Err(ApiError::Conflict(
            "The workflow is already active.".to_owned(),
        )),
        Activation::AlreadyThere => Err(ApiError::Conflict(
            "The workflow is already inactive.".to_owned(),
        )),
        Activation::LimitReached(max) => Err(ApiError::Conflict(format!(
            "This tenant already has {max} active workflows, the most its operator allows; \
             deactivate one first."
        ))),
        Activation::NotFound => Err(ApiError::not_found("Workflow")),
    }
}

/// Activates an inactive workflow (owners only): it runs on its trigger from now on, unless
/// the tenant already has its most active workflows (409).
#[utoipa::path(
    post,
    path = "/core/api/v1/workflows/{id}/activate",
    tag = "workflows",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Workflow id")),
    responses(
        (status = 200, description = "`{id, name, is_active: true}`", body = Data<WorkflowActivation>),
        (status = 401, description = "Unauthenticated"),
        (status = 403, description = "Only owners manage workflows"),
        (status = 404, description = "No such workflow in the tenant"),
        (status = 409, description = "Already active, or the tenant already has its most active workflows (`TESSERA_WORKFLOW_MAX_ACTIVE_PER_TENANT`)"),
    )
)]
async fn activate_workflow(
    State(state): State<CoreState>,
    caller: Caller,
    Path(id): Path<String>,
    _: NoQuery,
) -> ApiResult<Json<Data<WorkflowActivation>>> {
    set_active(&state, &caller, &id, true).await
}

/// Deactivates an active workflow (owners only); its configuration is kept.
#[utoipa::path(
    post,
    path = "/core/api/v1/workflows/{id}/deactivate",
    tag = "workflows",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Workflow id")),
    responses(
        (status = 200, description = "`{id, name, is_active: false}`", body = Data<WorkflowActivation>),
        (status = 401, description = "Unauthenticated"),
        (status = 403, description = "Only owners manage workflows"),
        (status = 404, description = "No such workflow in the tenant"),
        (status = 409, description = "Already inactive"),
    )
)]
async fn deactivate_workflow(
    State(state): State<CoreState>,
    caller: Caller,
    Path(id): Path<String>,
    _: NoQuery,
) -> ApiResult<Json<Data<WorkflowActivation>>> {
    set_active(&state, &caller, &id, false).await
}

/// A workflow's runs, newest first, offset-paged; a deleted workflow's runs stay readable.
#[utoipa::path(
    get,
    path = "/core/api/v1/workflows/{id}/runs",
    tag = "workflows",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Workflow id"), WorkflowPageQuery),
    responses(
        (status = 200, description = "A page of runs", body = DataWithMeta<Vec<WorkflowRun>, OffsetMeta>),
        (status = 400, description = "Unknown query parameter"),
        (status = 401, description = "Unauthenticated"),
        (status = 403, description = "Guests do not read workflows"),
        (status = 404, description = "Neither the workflow nor runs of it exist in the tenant"),
        (status = 422, description = "Invalid paging"),
    )
)]
async fn list_runs(
    State(state): State<CoreState>,
    caller: Caller,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<WorkflowPageQuery>,
) -> ApiResult<Response> {
    require_reader(&caller)?;
    let page = query.page()?;
    let (runs, total) = service::runs(
        &state.database,
        &caller.tenant_id,
        &workflow_id(&id)?,
        &page,
    )
    .await?
    .ok_or_else(|| ApiError::not_found("Workflow"))?;
    Ok(envelope::ok_with_meta(runs, page.meta(total)))
}
