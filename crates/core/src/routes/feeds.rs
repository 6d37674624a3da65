//! `/core/api/v1/timeline` and `/core/api/v1/inbox`: cursor-paged read models, newest first by
//! default, with opaque cursors that stay valid while new items arrive.

use axum::Json;
use axum::extract::{Path, State};
use axum::response::Response;
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::feeds::{self, InboxItem, TimelineItem};
use crate::state::CoreState;
use tessera_auth::caller::Caller;
use tessera_http::envelope::{self, Data, DataWithMeta};
use tessera_http::extract::{ApiQuery, NoQuery};
use tessera_http::paging::{
    CursorMeta, CursorPage, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, SortKey, sorting,
};
use tessera_http::{ApiError, ApiResult};

pub(super) fn router<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    CoreState: axum::extract::FromRef<S>,
    tessera_auth::AuthState: axum::extract::FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(timeline))
        .routes(routes!(inbox))
        .routes(routes!(mark_read))
}

/// Query of the timeline.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct TimelineQuery {
    /// Opaque cursor from a previous page's `meta.next_cursor`.
    pub cursor: Option<String>,
    /// Page size; default 50, clamped to 100.
    #[param(value_type = Option<i64>, minimum = 1, maximum = 4294967295_u64)]
    pub limit: Option<u32>,
    /// Only the events of this entity.
    pub entity_id: Option<String>,
    /// `occurred_at` (the only order).
    #[param(pattern = "^occurred_at$")]
    pub sort: Option<String>,
    /// `desc` (default, newest first) or `asc`.
    #[param(pattern = "^(asc|desc)$")]
    pub direction: Option<String>,
}

/// Query of the inbox.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct InboxQuery {
    /// Opaque cursor from a previous page's `meta.next_cursor`.
    pub cursor: Option<String>,
    /// Page size; default 50, clamped to 100.
    #[param(value_type = Option<i64>, minimum = 1, maximum = 4294967295_u64)]
    pub limit: Option<u32>,
    /// `created_at` (the only order).
    #[param(pattern = "^created_at$")]
    pub sort: Option<String>,
    /// `desc` (default, newest first) or `asc`.
    #[param(pattern = "^(asc|desc)$")]
    pub direction: Option<String>,
}

/// Items are kept in the order the projector wrote them, which is the order of their events.
fn direction(
    sort: Option<&str>,
    direction: Option<&str>,
    name: &'static str,
) -> Result<bool, ApiError> {
    let keys = [SortKey {
        name,
        key: (),
        is_timestamp: true,
    }];
    Ok(sorting(sort, direction, &keys)?.1)
}

/// The tenant's timeline: one item per domain event.
#[utoipa::path(
    get,
    path = "/core/api/v1/timeline",
    tag = "core",
    security(("bearer" = [])),
    params(TimelineQuery),
    responses(
        (status = 200, description = "A page of timeline items", body = DataWithMeta<Vec<TimelineItem>, CursorMeta>),
        (status = 400, description = "Unknown query parameter"),
        (status = 401, description = "Unauthenticated"),
        (status = 422, description = "Invalid cursor, limit or sorting"),
    )
)]
async fn timeline(
    State(state): State<CoreState>,
    caller: Caller,
    ApiQuery(query): ApiQuery<TimelineQuery>,
) -> ApiResult<Response> {
    let page = CursorPage::<i64>::with_bounds(
        query.cursor.as_deref(),
        query.limit,
        DEFAULT_PAGE_SIZE,
        MAX_PAGE_SIZE,
    )?;
    let descending = direction(
        query.sort.as_deref(),
        query.direction.as_deref(),
        "occurred_at",
    )?;
    let entity_id = query.entity_id.as_deref().filter(|id| !id.is_empty());
    let rows = feeds::timeline(
        &state.database,
        &caller.tenant_id,
        entity_id,
        &page,
        descending,
    )
    .await?;
    let (items, meta) = page.finish_positioned(rows);
    Ok(envelope::ok_with_meta(items, meta))
}

/// The caller's inbox in the current tenant.
#[utoipa::path(
    get,
    path = "/core/api/v1/inbox",
    tag = "core",
    security(("bearer" = [])),
    params(InboxQuery),
    responses(
        (status = 200, description = "A page of inbox items", body = DataWithMeta<Vec<InboxItem>, CursorMeta>),
        (status = 400, description = "Unknown query parameter"),
        (status = 401, description = "Unauthenticated"),
        (status = 422, description = "Invalid cursor, limit or sorting"),
    )
)]
async fn inbox(
    State(state): State<CoreState>,
    caller: Caller,
    ApiQuery(query): ApiQuery<InboxQuery>,
) -> ApiResult<Response> {
    let page = CursorPage::<i64>::with_bounds(
        query.cursor.as_deref(),
        query.limit,
        DEFAULT_PAGE_SIZE,
        MAX_PAGE_SIZE,
    )?;
    let descending = direction(
        query.sort.as_deref(),
        query.direction.as_deref(),
        "created_at",
    )?;
    let rows = feeds::inbox(
        &state.database,
        &caller.tenant_id,
        &caller.user_id,
        &page,
        descending,
    )
    .await?;
    let (items, meta) = page.finish_positioned(rows);
    Ok(envelope::ok_with_meta(items, meta))
}

/// Marks one of the caller's inbox items read (again: keeps the first read time).
#[utoipa::path(
    post,
    path = "/core/api/v1/inbox/{id}/read",
    tag = "core",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "The inbox item id")),
    responses(
        (status = 200, description = "The item, with `read_at`", body = Data<InboxItem>),
        (status = 401, description = "Unauthenticated"),
        (status = 404, description = "The caller has no such item in the tenant"),
    )
)]
async fn mark_read(
    State(state): State<CoreState>,
    caller: Caller,
    Path(id): Path<String>,
    _: NoQuery,
) -> ApiResult<Json<Data<InboxItem>>> {
    let item = feeds::mark_read(
        &state.database,
        &state.event_signal,
        &caller.tenant_id,
        &caller.user_id,
        &id,
    )
    .await?
    .ok_or_else(|| ApiError::not_found("Inbox item"))?;
    Ok(Json(Data { data: item }))
}
