//! `/core/api/v1/entities`: the tenant's entities (offset-paged list, read).

use axum::Json;
use axum::extract::{Path, State};
use axum::response::Response;
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::entities::{self, Entity, EntitySort};
use crate::state::CoreState;
use tessera_auth::caller::Caller;
use tessera_http::envelope::{self, Data, DataWithMeta};
use tessera_http::extract::{ApiQuery, NoQuery};
use tessera_http::paging::{
    DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, OffsetMeta, OffsetPage, SortKey, sorting,
};
use tessera_http::{ApiError, ApiResult};

pub(super) fn router<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    CoreState: axum::extract::FromRef<S>,
    tessera_auth::AuthState: axum::extract::FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(list_entities))
        .routes(routes!(get_entity))
}

/// Query of the entity list.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct EntityListQuery {
    #[param(value_type = Option<i64>, minimum = 1, maximum = 4294967295_u64)]
    pub page: Option<u32>,
    #[param(value_type = Option<i64>, minimum = 1, maximum = 4294967295_u64)]
    pub per_page: Option<u32>,
    /// Only entities of this family code.
    pub family: Option<String>,
    /// `created_at` (default) or `updated_at`.
    #[param(pattern = "^(created_at|updated_at)$")]
    pub sort: Option<String>,
    /// `asc` or `desc` (default).
    #[param(pattern = "^(asc|desc)$")]
    pub direction: Option<String>,
}

const ENTITY_SORTS: [SortKey<EntitySort>; 2] = [
    SortKey {
        name: "created_at",
        key: EntitySort::CreatedAt,
        is_timestamp: true,
    },
    SortKey {
        name: "updated_at",
        key: EntitySort::UpdatedAt,
        is_timestamp: true,
    },
];

/// The tenant's entities, offset-paged, newest first by default.
#[utoipa::path(
    get,
    path = "/core/api/v1/entities",
    tag = "core",
    security(("bearer" = [])),
    params(EntityListQuery),
    responses(
        (status = 200, description = "A page of entities", body = DataWithMeta<Vec<Entity>, OffsetMeta>),
        (status = 400, description = "Unknown query parameter"),
        (status = 401, description = "Unauthenticated"),
        (status = 422, description = "Invalid paging or sorting"),
    )
)]
async fn list_entities(
    State(state): State<CoreState>,
    caller: Caller,
    ApiQuery(query): ApiQuery<EntityListQuery>,
) -> ApiResult<Response> {
    let page = OffsetPage::new(query.page, query.per_page, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)?;
    let (sort, descending) = sorting(
        query.sort.as_deref(),
        query.direction.as_deref(),
        &ENTITY_SORTS,
    )?;
    let family = query.family.as_deref().filter(|family| !family.is_empty());
    let (items, total) = entities::list(
        &state.database,
        &caller.tenant_id,
        family,
        sort,
        descending,
        &page,
    )
    .await?;
    Ok(envelope::ok_with_meta(items, page.meta(total)))
}

/// An entity of the caller's tenant.
#[utoipa::path(
    get,
    path = "/core/api/v1/entities/{id}",
    tag = "core",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "The entity id")),
    responses(
        (status = 200, description = "The entity", body = Data<Entity>),
        (status = 401, description = "Unauthenticated"),
        (status = 404, description = "No such entity in the tenant"),
    )
)]
async fn get_entity(
    State(state): State<CoreState>,
    caller: Caller,
    Path(id): Path<String>,
    _: NoQuery,
) -> ApiResult<Json<Data<Entity>>> {
    let entity = entities::find(&state.database, &caller.tenant_id, &id)
        .await?
        .ok_or_else(|| ApiError::not_found("Entity"))?;
    Ok(Json(Data { data: entity }))
}
