//! What a tenant's owners see of their tenant as a whole, and the operator's view of
//! every tenant's usage:
//!
//! - `GET /core/api/v1/tenant`: the tenant with its counts and its provisioning on each engine
//!   (`admin show-tenant`'s answer), and `POST /core/api/v1/tenant/provisioning/retry`, which
//!   runs the provisioning again on the engines that failed it (`admin retry-provisioning`);
//! - `GET /core/api/v1/usage?days=N`: the engine calls and the limits hit, by day, by engine
//!   and by limit (the usage meter's counters, `tessera_http::usage`), and what each engine
//!   keeps for the tenant;
//! - `GET /core/api/operator/usage?days=N`: every tenant's totals, for the operator.

use std::collections::BTreeMap;

use axum::extract::{FromRef, RawQuery, State};
use axum::response::Response;
use chrono::{Duration, Utc};
use serde::{Deserialize, Serialize};
use tessera_auth::caller::Caller;
use tessera_auth::state::AuthState;
use tessera_http::envelope::{self, Data};
use tessera_http::extract::{NoQuery, parse_query};
use tessera_http::operator::{Operator, OperatorCredential};
use tessera_http::{ApiError, ApiResult, ValidationErrors};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::routes::refusal;
use crate::{RetriedProvisioning, ShownTenant, TenancyService};

/// The most days one usage answer covers (the counters kept may be fewer:
/// `TESSERA_USAGE_RETENTION_DAYS`).
pub const MAX_USAGE_DAYS: u32 = 366;

/// The days a usage answer covers when the query names none.
pub const DEFAULT_USAGE_DAYS: u32 = 7;

pub fn router<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    TenancyService: FromRef<S>,
    AuthState: FromRef<S>,
    OperatorCredential: FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(show_tenant))
        .routes(routes!(retry_provisioning))
        .routes(routes!(tenant_usage))
        .routes(routes!(operator_usage))
}

/// The caller's tenant: its counts (members, workspaces, entities) and its provisioning on
/// each engine that provisions tenants (owners only).
#[utoipa::path(
    get,
    path = "/core/api/v1/tenant",
    operation_id = "tenant_show",
    tag = "core",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The tenant; `provisioning` is null when it never ran", body = Data<ShownTenant>),
        (status = 401, description = "Missing or invalid bearer token"),
        (status = 403, description = "The caller is not an owner of the tenant"),
    )
)]
async fn show_tenant(
    State(tenancy): State<TenancyService>,
    caller: Caller,
    _: NoQuery,
) -> ApiResult<Response> {
    caller.require_owner()?;
    let tenant = tenancy
        .tenant_by_id(&caller.tenant_id)
        .await
        .map_err(refusal)?;
    let shown = tenancy.show_tenant(&tenant.slug).await.map_err(refusal)?;
    Ok(envelope::ok(shown))
}

/// Runs the tenant's provisioning again on every engine that has not provisioned it (failed,
/// or never run); engines already done are left alone (owners only).
#[utoipa::path(
    post,
    path = "/core/api/v1/tenant/provisioning/retry",
    operation_id = "tenant_retry_provisioning",
    tag = "core",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The tenant's status after the retry and the engines it ran", body = Data<RetriedProvisioning>),
        (status = 401, description = "Missing or invalid bearer token"),
        (status = 403, description = "The caller is not an owner of the tenant"),
        (status = 409, description = "The tenant's provisioning never ran (the operator's `admin create-tenant` runs it)"),
    )
)]
async fn retry_provisioning(
    State(tenancy): State<TenancyService>,
    caller: Caller,
    _: NoQuery,
) -> ApiResult<Response> {
    caller.require_owner()?;
    let tenant = tenancy
        .tenant_by_id(&caller.tenant_id)
        .await
        .map_err(refusal)?;
    let shown = tenancy.show_tenant(&tenant.slug).await.map_err(refusal)?;
    if shown.provisioning.is_none() {
        return Err(ApiError::Conflict(
            "This tenant's provisioning never ran; nothing to retry.".into(),
        ));
    }
    let retried = tenancy
        .retry_provisioning(&tenant.slug)
        .await
        .map_err(refusal)?;
    Ok(envelope::ok(retried))
}

/// The query of the usage endpoints.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct UsageQuery {
    /// How many days, today included (UTC): 1 to 366, default 7.
    #[param(value_type = Option<i64>, minimum = 1, maximum = 366)]
    pub days: Option<i64>,
}

/// The first day (UTC, `YYYY-MM-DD`) of a window of `query.days` days ending today, and the
/// days in it, oldest first.
fn window(query: Option<&str>) -> ApiResult<(u32, Vec<String>)> {
    let query: UsageQuery = parse_query(query.unwrap_or(""))?;
    let days = match query.days {
        None => DEFAULT_USAGE_DAYS,
        Some(days) => u32::try_from(days)
            .ok()
            .filter(|days| (1..=MAX_USAGE_DAYS).contains(days))
            .ok_or_else(|| {
                ApiError::Validation(ValidationErrors::single(
                    "days",
                    format!("between:1,{MAX_USAGE_DAYS}"),
                ))
            })?,
    };
    let today = Utc::now().date_naive();
    let listed = (0..days)
        .rev()
        .map(|back| {
            (today - Duration::days(i64::from(back)))
                .format("%Y-%m-%d")
                .to_string()
        })
        .collect();
    Ok((days, listed))
}

/// One day of a tenant's usage.
#[derive(Debug, Clone, Default, Serialize, ToSchema)]
pub struct UsageDay {
    /// UTC, `YYYY-MM-DD`.
    pub day: String,
    pub engine_calls: i64,
    pub limits_hit: i64,
}

/// What one engine keeps for the tenant.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct EngineStorageUsage {
    pub engine: String,
    /// Key-value entries, and the bytes of their values.
    pub entries: i64,
    pub entry_bytes: i64,
    /// Bytes of its blobs (files).
    pub blob_bytes: i64,
}

/// A tenant's usage over a window of days.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TenantUsage {
    /// The first day of the window (UTC, `YYYY-MM-DD`); the window ends today.
    pub since: String,
    pub days: u32,
    /// Requests handed to an engine in the window.
    pub engine_calls: i64,
    /// By engine code.
    pub engine_calls_by_engine: BTreeMap<String, i64>,
    /// Requests refused by a limit in the window.
    pub limits_hit: i64,
    /// By limit: `rate_limit.read`, `rate_limit.write`, `engine_capacity`, `backlog`,
    /// `engine_deadline`, `body_size`, and realtime's `realtime.connections`,
    /// `realtime.subscriptions`, `realtime.send_queue`, `realtime.frame_size`,
    /// `realtime.publish`.
    pub limits_hit_by_limit: BTreeMap<String, i64>,
    /// Realtime connections (WebSockets and event streams) opened in the window.
    pub realtime_connections: i64,
    /// Event frames sent to the tenant's realtime connections in the window.
    pub realtime_events_delivered: i64,
    /// Every day of the window, oldest first (days without any are zeros).
    pub daily: Vec<UsageDay>,
    /// What each engine keeps for the tenant now.
    pub storage: Vec<EngineStorageUsage>,
}

/// The caller's tenant's usage: engine calls and limits hit by day, by engine and by limit, as
/// the hosts counted them (added to the database every `TESSERA_USAGE_FLUSH_INTERVAL`), and
/// what each engine keeps for it (owners only).
#[utoipa::path(
    get,
    path = "/core/api/v1/usage",
    operation_id = "tenant_usage",
    tag = "core",
    params(UsageQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The tenant's usage over the window", body = Data<TenantUsage>),
        (status = 400, description = "Unknown query parameter"),
        (status = 401, description = "Missing or invalid bearer token"),
        (status = 403, description = "The caller is not an owner of the tenant"),
        (status = 422, description = "`days` is not between 1 and 366"),
    )
)]
async fn tenant_usage(
    State(tenancy): State<TenancyService>,
    caller: Caller,
    RawQuery(query): RawQuery,
) -> ApiResult<Response> {
    // Authorization before the query is read: a non-owner learns nothing from its answers.
    caller.require_owner()?;
    let (days, listed) = window(query.as_deref())?;
    let since = listed[0].clone();
    let rows = tenancy
        .usage_of(&caller.tenant_id, &since)
        .await
        .map_err(refusal)?;
    let storage = tenancy
        .engine_storage_of(&caller.tenant_id)
        .await
        .map_err(refusal)?;
    let mut daily: BTreeMap<String, UsageDay> = listed
        .iter()
        .map(|day| {
            (
                day.clone(),
                UsageDay {
                    day: day.clone(),
                    ..UsageDay::default()
                },
            )
        })
        .collect();
    let mut usage = TenantUsage {
        since,
        days,
        engine_calls: 0,
        engine_calls_by_engine: BTreeMap::new(),
        limits_hit: 0,
        limits_hit_by_limit: BTreeMap::new(),
        realtime_connections: 0,
        realtime_events_delivered: 0,
        daily: Vec::new(),
        storage: storage
            .into_iter()
            .map(|engine| EngineStorageUsage {
                engine: engine.engine_code,
                entries: engine.entries,
                entry_bytes: engine.entry_bytes,
                blob_bytes: engine.blob_bytes,
            })
            .collect(),
    };
    for row in rows {
        let day = daily.get_mut(&row.day);
        match row.metric.as_str() {
            "engine_calls" => {
                usage.engine_calls += row.amount;
                *usage
                    .engine_calls_by_engine
                    .entry(row.dimension)
                    .or_default() += row.amount;
                if let Some(day) = day {
                    day.engine_calls += row.amount;
                }
            }
            "limits_hit" => {
                usage.limits_hit += row.amount;
                *usage.limits_hit_by_limit.entry(row.dimension).or_default() += row.amount;
                if let Some(day) = day {
                    day.limits_hit += row.amount;
                }
            }
            "realtime" => match row.dimension.as_str() {
                "connections" => usage.realtime_connections += row.amount,
                "events_delivered" => usage.realtime_events_delivered += row.amount,
                _ => {}
            },
            _ => {}
        }
    }
    usage.daily = daily.into_values().collect();
    Ok(envelope::ok(usage))
}

/// One tenant's totals over the window, for the operator.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TenantUsageTotal {
    pub tenant_id: String,
    /// `null` for a tenant deleted since.
    pub slug: Option<String>,
    pub engine_calls: i64,
    pub limits_hit: i64,
}

/// Every tenant's engine calls and limits hit over the window, busiest first (the operator
/// token): who uses the platform, and who runs into its limits.
#[utoipa::path(
    get,
    path = "/core/api/operator/usage",
    operation_id = "operator_usage",
    tag = "operator",
    params(UsageQuery),
    security(("operator_token" = [])),
    responses(
        (status = 200, description = "Each tenant with any usage in the window, by engine calls then limits hit, most first", body = Data<Vec<TenantUsageTotal>>),
        (status = 400, description = "Unknown query parameter"),
        (status = 401, description = "Missing or wrong operator token"),
        (status = 422, description = "`days` is not between 1 and 366"),
    )
)]
async fn operator_usage(
    State(tenancy): State<TenancyService>,
    _: Operator,
    RawQuery(query): RawQuery,
) -> ApiResult<Response> {
    let (_, listed) = window(query.as_deref())?;
    let totals = tenancy.usage_totals(&listed[0]).await.map_err(refusal)?;
    let slugs: BTreeMap<String, String> = tenancy
        .list_tenants()
        .await
        .map_err(refusal)?
        .into_iter()
        .map(|tenant| (tenant.tenant_id, tenant.slug))
        .collect();
    let mut by_tenant: BTreeMap<String, TenantUsageTotal> = BTreeMap::new();
    for total in totals {
        let entry = by_tenant
            .entry(total.tenant_id.clone())
            .or_insert_with(|| TenantUsageTotal {
                slug: slugs.get(&total.tenant_id).cloned(),
                tenant_id: total.tenant_id.clone(),
                engine_calls: 0,
                limits_hit: 0,
            });
        match total.metric.as_str() {
            "engine_calls" => entry.engine_calls += total.amount,
            "limits_hit" => entry.limits_hit += total.amount,
            _ => {}
        }
    }
    let mut listed: Vec<TenantUsageTotal> = by_tenant.into_values().collect();
    listed.sort_by(|left, right| {
        (right.engine_calls, right.limits_hit).cmp(&(left.engine_calls, left.limits_hit))
    });
    Ok(envelope::ok(listed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_end_today_and_refuse_out_of_range_days() {
        let (days, listed) = window(None).unwrap();
        assert_eq!(days, DEFAULT_USAGE_DAYS);
        assert_eq!(listed.len(), 7);
        assert_eq!(
            listed.last().unwrap(),
            &Utc::now().date_naive().format("%Y-%m-%d").to_string()
        );
        assert!(listed.windows(2).all(|pair| pair[0] < pair[1]));
        assert_eq!(window(Some("days=1")).unwrap().1.len(), 1);
        for refused in ["days=0", "days=367", "days=-1", "days=x", "other=1"] {
            assert!(window(Some(refused)).is_err(), "{refused}");
        }
    }
}
