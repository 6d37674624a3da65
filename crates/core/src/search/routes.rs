//! `GET /core/api/v1/search`: full-text search over the caller's tenant, relevance-ranked and
//! offset-paged, with highlights of the fields that matched.

use std::collections::BTreeMap;

use axum::extract::State;
use axum::response::Response;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::highlight::highlights;
use super::{Hit, IndexQuery, query};
use crate::state::CoreState;
use tessera_auth::caller::Caller;
use tessera_http::envelope::{self, DataWithMeta};
use tessera_http::extract::ApiQuery;
use tessera_http::paging::{MAX_PAGE_SIZE, OffsetPage};
use tessera_http::{ApiError, ApiResult, ValidationErrors};

/// The default `per_page` of search (the maximum is the common 100).
pub const DEFAULT_SEARCH_PAGE_SIZE: u32 = 20;

/// Longest `q`, in characters.
pub const MAX_QUERY_CHARS: usize = 1000;

/// `GET /core/api/v1/search`.
pub(crate) fn router<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    CoreState: axum::extract::FromRef<S>,
    tessera_auth::AuthState: axum::extract::FromRef<S>,
{
    OpenApiRouter::new().routes(routes!(search))
}

/// Query of a search.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct SearchParams {
    /// Required. Words separated by spaces, all required; each matches as the prefix of a
    /// word (`lov` finds "Lovelace"). `field:value` matches in that field only (every word of
    /// the value, as a prefix); `field:"several words"` keeps a value with spaces together.
    #[param(required = true, min_length = 1)]
    pub q: Option<String>,
    /// A family code: search that family only (default: all, interleaved by score).
    pub family: Option<String>,
    /// Default 1.
    #[param(value_type = Option<i64>, minimum = 1, maximum = 4294967295_u64)]
    pub page: Option<u32>,
    /// Default 20; larger values are clamped to 100.
    #[param(value_type = Option<i64>, minimum = 1, maximum = 4294967295_u64)]
    pub per_page: Option<u32>,
}

/// One entity found.
#[derive(Debug, Serialize, ToSchema)]
pub struct SearchResult {
    /// The entity's id.
    pub id: String,
    pub family_code: String,
    /// The entity's indexed field values.
    #[schema(value_type = Object)]
    pub fields: Map<String, Value>,
    /// Relevance, comparable within one response only; higher is better.
    pub score: f64,
    /// The fields that matched, their text HTML-escaped with the matched words in
    /// `<mark>…</mark>`.
    pub highlights: BTreeMap<String, String>,
}

/// `meta` of a search.
#[derive(Debug, Serialize, ToSchema)]
pub struct SearchMeta {
    pub total: u64,
    pub page: u32,
    pub per_page: u32,
}

/// Full-text search of the caller's tenant, best match first. The index follows the event log
/// asynchronously: a change shows up shortly after it is made.
#[utoipa::path(
    get,
    path = "/core/api/v1/search",
    tag = "core",
    security(("bearer" = [])),
    params(SearchParams),
    responses(
        (status = 200, description = "A page of results, best first", body = DataWithMeta<Vec<SearchResult>, SearchMeta>),
        (status = 400, description = "Unknown query parameter"),
        (status = 401, description = "Unauthenticated"),
        (status = 422, description = "Missing `q`, or invalid paging"),
    )
)]
async fn search(
    State(state): State<CoreState>,
    caller: Caller,
    ApiQuery(params): ApiQuery<SearchParams>,
) -> ApiResult<Response> {
    let mut errors = ValidationErrors::new();
    let q = errors.required("q", params.q);
    if q.chars().count() > MAX_QUERY_CHARS {
        errors.add("q", format!("max:{MAX_QUERY_CHARS}"));
    }
    let page = match OffsetPage::new(
        params.page,
        params.per_page,
        DEFAULT_SEARCH_PAGE_SIZE,
        MAX_PAGE_SIZE,
    ) {
        Ok(page) => Some(page),
        Err(ApiError::Validation(paging)) => {
            for (field, rules) in paging.fields() {
                for rule in rules {
                    errors.add(field.clone(), rule.clone());
                }
            }
            None
        }
        Err(other) => return Err(other),
    };
    errors.into_result()?;
    let page = page.expect("paging is valid when nothing failed");
    let family = params
        .family
        .as_deref()
        .map(str::trim)
        .filter(|family| !family.is_empty());
    let terms = query::parse(&q);
    let (hits, total) = super::search(
        &state.database,
        &IndexQuery {
            tenant_id: &caller.tenant_id,
            terms: &terms,
            family,
            limit: page.limit(),
            offset: page.offset(),
            window: i64::from(state.search.max_candidates),
        },
    )
    .await?;
    let results = hits
        .into_iter()
        .map(|hit| result(hit, &terms))
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(envelope::ok_with_meta(
        results,
        SearchMeta {
            total,
            page: page.page,
            per_page: page.per_page,
        },
    ))
}

fn result(hit: Hit, terms: &[query::Term]) -> anyhow::Result<SearchResult> {
    let document = super::Document::from_row(hit.entity_id, hit.family_code, &hit.fields)?;
    let highlights = highlights(&document.fields, terms);
    Ok(SearchResult {
        id: document.entity_id,
        family_code: document.family_code,
        fields: document.fields,
        score: hit.score,
        highlights,
    })
}
