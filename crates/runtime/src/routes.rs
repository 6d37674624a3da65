//! HTTP into engines: `/<code>/api/v1/…` is authenticated by the host, admitted within the
//! tenant's share of the engine runtime (or 503 with `Retry-After`), then handed to that
//! engine's `handle` with the verified caller; and the public engine list.

use axum::Json;
use axum::body::Body;
use axum::extract::{FromRequestParts, Path, Request, State};
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::admission::{CallKind, Refused};
use super::bindings::v0_3::tessera::engine::types as wit;
use super::engine::CallError;
use super::imports::CallScope;
use super::registry::{EngineDetails, EngineRecord};
use crate::state::RuntimeState;
use axum::extract::FromRef;
use serde_json::json;
use tessera_auth::AuthState;
use tessera_auth::audit::{EngineAuditEntry, RequestOrigin};
use tessera_auth::caller::Caller;
use tessera_http::conventions::CorrelationId;
use tessera_http::envelope::Data;
use tessera_http::error::unavailable_retry_after;
use tessera_http::extract::NoQuery;
use tessera_http::usage::{EngineCall, LimitHit};
use tessera_http::{ApiError, ApiResult};

/// What a request refused for lack of engine capacity is told to wait before retrying.
const BUSY_RETRY_AFTER_SECONDS: u64 = 1;

/// Request headers an engine never sees: credentials stay with the host.
const WITHHELD_REQUEST_HEADERS: [HeaderName; 3] = [
    header::AUTHORIZATION,
    header::COOKIE,
    header::PROXY_AUTHORIZATION,
];

pub fn core_router<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    RuntimeState: FromRef<S>,
    AuthState: FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(list_engines))
        .routes(routes!(show_engine))
}

/// The catch-all route of every engine (documented in `openapi.rs`).
pub fn engine_router<S>() -> axum::Router<S>
where
    S: Clone + Send + Sync + 'static,
    RuntimeState: FromRef<S>,
    AuthState: FromRef<S>,
{
    axum::Router::new().route("/{code}/api/v1/{*path}", any(handle_engine_request))
}

/// Every engine this platform knows, loaded ones active.
#[utoipa::path(
    get,
    path = "/core/api/v1/engines",
    operation_id = "list_engines",
    tag = "engines",
    responses((status = 200, description = "The engine registry", body = Data<Vec<EngineRecord>>))
)]
async fn list_engines(
    State(state): State<RuntimeState>,
    _: NoQuery,
) -> ApiResult<Json<Data<Vec<EngineRecord>>>> {
    let records = state.engines.records(&state.public_url).await?;
    Ok(Json(Data { data: records }))
}

/// A loaded engine as this host runs it: its world version, permissions and declared settings
/// with their effective values (a secret setting shows only whether it is set). Owners only.
#[utoipa::path(
    get,
    path = "/core/api/v1/engines/{code}",
    operation_id = "show_engine",
    tag = "engines",
    params(("code" = String, Path, description = "The engine code")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The engine", body = Data<EngineDetails>),
        (status = 403, description = "The caller is not an owner"),
        (status = 404, description = "No engine with that code is loaded"),
    )
)]
async fn show_engine(
    State(state): State<RuntimeState>,
    caller: Caller,
    Path(code): Path<String>,
    _: NoQuery,
) -> ApiResult<Json<Data<EngineDetails>>> {
    caller.require_owner()?;
    let details = state
        .engines
        .details(&code, &state.public_url)
        .ok_or_else(|| ApiError::NotFound("Engine not found.".into()))?;
    Ok(Json(Data { data: details }))
}

async fn handle_engine_request(
    State(state): State<RuntimeState>,
    State(auth): State<AuthState>,
    Path((code, path)): Path<(String, String)>,
    request: Request,
) -> ApiResult<Response> {
    let engine = state
        .engines
        .get(&code)
        .ok_or_else(|| ApiError::NotFound(format!("No engine is registered under {code:?}.")))?;
    let (mut parts, body) = request.into_parts();
    let caller = Caller::from_request_parts(&mut parts, &auth).await?;
    let correlation_id = parts
        .extensions
        .get::<CorrelationId>()
        .map(|id| id.0.clone())
        .unwrap_or_default();
    let body = axum::body::to_bytes(body, state.max_request_bytes)
        .await
        .map_err(|_| ApiError::PayloadTooLarge)?;

    let headers = parts
        .headers
        .iter()
        .filter(|(name, _)| !WITHHELD_REQUEST_HEADERS.contains(name))
        .filter_map(|(name, value)| {
            Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned()))
        })
        .collect();
    let engine_path = format!("/api/v1/{path}");
    // An audited operation (`x-tessera-audit`) answered with a success is recorded with the
    // call's unit of work; the entry is made here, from the request, never by the engine.
    let audit_entry = engine
        .api
        .audited_request(parts.method.as_str(), &engine_path)
        .map(|audited| EngineAuditEntry {
            engine_code: code.clone(),
            event: audited.operation.event.clone(),
            tenant_id: caller.tenant_id.clone(),
            user_id: caller.user_id.clone(),
            origin: RequestOrigin::from_parts(&parts),
            details: json!({
                "method": parts.method.as_str(),
                "path": format!("/{code}{engine_path}"),
                "parameters": audited.parameters,
            }),
        });
    let wit_request = wit::Request {
        method: parts.method.as_str().to_owned(),
        path: engine_path,
        query: parts.uri.query().unwrap_or("").to_owned(),
        headers,
        body: body.to_vec(),
    };
    let wit_caller = wit::Caller {
        tenant_id: caller.tenant_id.clone(),
        workspace_id: caller.workspace_id.clone(),
        user_id: caller.user_id.clone(),
        role: caller.role.clone(),
        token_type: caller.token_type.clone(),
        correlation_id: correlation_id.clone(),
    };
    let scope = CallScope {
        actor_id: Some(caller.user_id.clone()),
        ..engine.scope(&caller.tenant_id, Some(correlation_id.clone()))
    };
    let runtime = state.engines.runtime();
    let permit = match runtime
        .admission()
        .admit_to(
            Some(&caller.tenant_id),
            Some(&code),
            CallKind::Request,
            runtime.config().tenant_queue_timeout,
        )
        .await
    {
        Ok(permit) => permit,
        Err(refused) => return Ok(busy(&code, &correlation_id, refused)),
    };
    let outcome = runtime
        .call_admitted(
            permit,
            &engine.pre,
            scope,
            runtime.config().limits_of(&code).handle_timeout,
            response_commits,
            async |guest, store| {
                let response = guest
                    .call_handle(&mut *store, &wit_caller, &wit_request)
                    .await?;
                if let Some(entry) = audit_entry
                    && (200..300).contains(&response.status)
                {
                    store.data_mut().record_audit(audited(entry, &response));
                }
                Ok(response)
            },
        )
        .await;
    let mut answer = match outcome {
        Ok(response) => into_http_response(
            &code,
            &correlation_id,
            response,
            runtime.config().max_response_bytes,
        )
        .unwrap_or_else(IntoResponse::into_response),
        Err(CallError::Timeout(deadline)) => {
            tracing::error!(engine = %code, %correlation_id, ?deadline, "engine call timed out");
            let mut timed_out =
                ApiError::GatewayTimeout(format!("The engine {code} did not answer in time."))
                    .into_response();
            timed_out
                .extensions_mut()
                .insert(LimitHit("engine_deadline"));
            timed_out
        }
        Err(CallError::Trap(detail)) => {
            tracing::error!(engine = %code, %correlation_id, error = %detail, "engine call failed");
            ApiError::BadGateway(format!("The engine {code} failed to handle the request."))
                .into_response()
        }
        Err(CallError::Busy(refused)) => busy(&code, &correlation_id, refused),
        Err(CallError::Commit(detail)) => {
            tracing::error!(engine = %code, %correlation_id, error = %detail, "committing an engine call failed");
            retry_later(format!(
                "The changes of this request to the engine {code} could not be saved; nothing was changed. Retry later."
            ))
        }
    };
    // Counted in the tenant's usage (`tessera_http::usage`).
    answer.extensions_mut().insert(EngineCall(code));
    Ok(answer)
}

/// The audit entry of an audited operation with what its success answered: the status, and
/// the id of what a `201` created (`data.id` or `id` of its JSON body).
fn audited(mut entry: EngineAuditEntry, response: &wit::Response) -> EngineAuditEntry {
    if let Some(details) = entry.details.as_object_mut() {
        details.insert("status".into(), response.status.into());
        let created = (response.status == 201)
            .then(|| serde_json::from_slice::<serde_json::Value>(&response.body).ok())
            .flatten();
        let created_id = created.as_ref().and_then(|body| {
            body.pointer("/data/id")
                .or_else(|| body.get("id"))
                .and_then(serde_json::Value::as_str)
        });
        if let Some(id) = created_id {
            details.insert("created_id".into(), id.into());
        }
    }
    entry
}

/// Whether an engine's answer keeps the writes of its call (its unit of work): a success or a
/// redirect. An error answer (4xx, 5xx), like a trap or a timeout, commits nothing the call
/// buffered: a request refused halfway leaves no half of it. What must outlive a refusal (a
/// failed-attempt count) is written with a synchronisation point, which commits at once.
fn response_commits(response: &wit::Response) -> bool {
    response.status < 400
}

/// 503 `{message}` with `Retry-After`.
fn retry_later(message: String) -> Response {
    unavailable_retry_after(message, BUSY_RETRY_AFTER_SECONDS)
}

/// 503 `{message}` with `Retry-After`: the tenant already runs its share of engine calls and
/// its queue was full, or no slot freed within the queue's wait.
fn busy(code: &str, correlation_id: &str, refused: Refused) -> Response {
    tracing::warn!(engine = %code, %correlation_id, reason = %refused, "engine request refused: no capacity");
    let message = match refused {
        Refused::QueueFull => format!(
            "Too many requests of this tenant are running or waiting in the engine {code}; retry later."
        ),
        Refused::TimedOut(_) => {
            format!("The engine {code} had no capacity free for this tenant in time; retry later.")
        }
    };
    let mut response = retry_later(message);
    response
        .extensions_mut()
        .insert(LimitHit("engine_capacity"));
    response
}

/// Converts an engine's response, refusing what no client should receive: an invalid status,
/// an oversized body.
fn into_http_response(
    code: &str,
    correlation_id: &str,
    response: wit::Response,
    max_bytes: usize,
) -> ApiResult<Response> {
    let invalid = |reason: &str| {
        tracing::error!(engine = %code, %correlation_id, reason, "engine returned an invalid response");
        ApiError::BadGateway(format!("The engine {code} returned an invalid response."))
    };
    let status = StatusCode::from_u16(response.status).map_err(|_| invalid("invalid status"))?;
    if response.body.len() > max_bytes {
        return Err(invalid("response body over the limit"));
    }
    let mut http_response = Response::new(Body::from(response.body));
    *http_response.status_mut() = status;
    let headers = http_response.headers_mut();
    for (name, value) in response.headers {
        let (Ok(name), Ok(value)) = (HeaderName::try_from(name), HeaderValue::try_from(value))
        else {
            continue;
        };
        if matches!(
            name,
            header::CONNECTION | header::TRANSFER_ENCODING | header::CONTENT_LENGTH
        ) {
            continue;
        }
        headers.append(name, value);
    }
    Ok(http_response.into_response())
}
