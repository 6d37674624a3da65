//! `/core/api/v1/families`: the tenant's entity families (list, read, create).

use axum::Json;
use axum::extract::{Path, State};
use axum::response::Response;
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::families::{self, Family, FamilyItem, FamilySort};
use crate::state::CoreState;
use tessera_auth::caller::Caller;
use tessera_http::envelope::{self, Data, DataWithMeta};
use tessera_http::extract::{ApiJson, ApiQuery, NoQuery};
use tessera_http::paging::{
    DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, OffsetMeta, OffsetPage, SortKey, sorting,
};
use tessera_http::{ApiError, ApiResult, ValidationErrors};

pub(super) fn router<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    CoreState: axum::extract::FromRef<S>,
    tessera_auth::AuthState: axum::extract::FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(list_families, create_family))
        .routes(routes!(get_family))
}

/// Query of the family list.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct FamilyListQuery {
    #[param(value_type = Option<i64>, minimum = 1, maximum = 4294967295_u64)]
    pub page: Option<u32>,
    #[param(value_type = Option<i64>, minimum = 1, maximum = 4294967295_u64)]
    pub per_page: Option<u32>,
    /// `label` (default), `code` or `created_at`.
    #[param(pattern = "^(label|code|created_at)$")]
    pub sort: Option<String>,
    /// `asc` or `desc`; default `asc` for names, `desc` for `created_at`.
    #[param(pattern = "^(asc|desc)$")]
    pub direction: Option<String>,
}

const FAMILY_SORTS: [SortKey<FamilySort>; 3] = [
    SortKey {
        name: "label",
        key: FamilySort::Label,
        is_timestamp: false,
    },
    SortKey {
        name: "code",
        key: FamilySort::Code,
        is_timestamp: false,
    },
    SortKey {
        name: "created_at",
        key: FamilySort::CreatedAt,
        is_timestamp: true,
    },
];

/// The tenant's families, offset-paged.
#[utoipa::path(
    get,
    path = "/core/api/v1/families",
    tag = "core",
    security(("bearer" = [])),
    params(FamilyListQuery),
    responses(
        (status = 200, description = "A page of families", body = DataWithMeta<Vec<FamilyItem>, OffsetMeta>),
        (status = 400, description = "Unknown query parameter"),
        (status = 401, description = "Unauthenticated"),
        (status = 422, description = "Invalid paging or sorting"),
    )
)]
async fn list_families(
    State(state): State<CoreState>,
    caller: Caller,
    ApiQuery(query): ApiQuery<FamilyListQuery>,
) -> ApiResult<Response> {
    let page = OffsetPage::new(query.page, query.per_page, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)?;
    let (sort, descending) = sorting(
        query.sort.as_deref(),
        query.direction.as_deref(),
        &FAMILY_SORTS,
    )?;
    let (items, total) =
        families::list(&state.database, &caller.tenant_id, sort, descending, &page).await?;
    Ok(envelope::ok_with_meta(items, page.meta(total)))
}

/// A family of the caller's tenant, with its status pipeline.
#[utoipa::path(
    get,
    path = "/core/api/v1/families/{code}",
    tag = "core",
    security(("bearer" = [])),
    params(("code" = String, Path, description = "The family code, e.g. `deal`")),
    responses(
        (status = 200, description = "The family", body = Data<Family>),
        (status = 401, description = "Unauthenticated"),
        (status = 404, description = "No such family in the tenant"),
    )
)]
async fn get_family(
    State(state): State<CoreState>,
    caller: Caller,
    Path(code): Path<String>,
    _: NoQuery,
) -> ApiResult<Json<Data<Family>>> {
    let family = families::find(&state.database, &caller.tenant_id, &code)
        .await?
        .ok_or_else(|| ApiError::not_found("Family"))?;
    Ok(Json(Data { data: family }))
}

/// The body of a family creation.
#[derive(Debug, Deserialize, ToSchema)]
pub struct NewFamily {
    /// 1-50 lower-case letters, digits or `_`, starting with a letter; unique in the tenant.
    /// Surrounding spaces are trimmed.
    #[schema(value_type = String, required = true, pattern = r"^\s*[a-z][a-z0-9_]{0,49}\s*$")]
    pub code: Option<String>,
    /// Not blank; at most 100 characters once trimmed.
    #[schema(value_type = String, required = true, pattern = r"\S")]
    pub label: Option<String>,
    /// At least one; unique; the first is the default status. Each like `code`, untrimmed.
    #[schema(schema_with = statuses_schema, required = true)]
    pub statuses: Option<Vec<String>>,
}

/// `statuses` of [`NewFamily`]: at least one distinct code.
fn statuses_schema() -> utoipa::openapi::schema::Array {
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Type};
    ArrayBuilder::new()
        .items(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .pattern(Some("^[a-z][a-z0-9_]{0,49}$")),
        )
        .min_items(Some(1))
        .unique_items(true)
        .description(Some(
            "At least one; unique; the first is the default status. Each like `code`, untrimmed.",
        ))
        .build()
}

fn is_code(text: &str) -> bool {
    (1..=50).contains(&text.len())
        && text.as_bytes()[0].is_ascii_lowercase()
        && text
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// Creates a family (owners only).
#[utoipa::path(
    post,
    path = "/core/api/v1/families",
    tag = "core",
    security(("bearer" = [])),
    request_body = NewFamily,
    responses(
        (status = 201, description = "The new family", body = Data<Family>),
        (status = 401, description = "Unauthenticated"),
        (status = 403, description = "Only owners manage families"),
        (status = 422, description = "Invalid fields, or the code exists (`unique`)"),
    )
)]
async fn create_family(
    State(state): State<CoreState>,
    caller: Caller,
    ApiJson(body): ApiJson<NewFamily>,
) -> ApiResult<Response> {
    caller.require_owner()?;
    let mut errors = ValidationErrors::new();
    let code = errors.required("code", body.code).trim().to_owned();
    if !code.is_empty() && !is_code(&code) {
        errors.add("code", "regex");
    }
    let label = errors.required("label", body.label).trim().to_owned();
    if label.chars().count() > 100 {
        errors.add("label", "max:100");
    }
    let statuses = body.statuses.unwrap_or_default();
    if statuses.is_empty() {
        errors.add("statuses", "required");
    }
    for (index, status) in statuses.iter().enumerate() {
        if !is_code(status) {
            errors.add(format!("statuses.{index}"), "regex");
        } else if statuses[..index].contains(status) {
            errors.add(format!("statuses.{index}"), "distinct");
        }
    }
    errors.into_result()?;
    let family = families::create(&state.database, &caller.tenant_id, &code, &label, &statuses)
        .await?
        .ok_or_else(|| ApiError::Validation(ValidationErrors::single("code", "unique")))?;
    Ok(envelope::created(family))
}
