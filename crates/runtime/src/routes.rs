//! HTTP into engines: `/<code>/api/v1/…` is authenticated by the host, admitted within the
//! tenant's share of the engine runtime (or 503 with `Retry-After`), then handed to that
//! engine's `handle` with the verified caller; every path under `/<code>/` of a `wasi:http`
//! component engine goes the same way to its `incoming-handler`, with the caller's identity in
//! headers the host sets (CONTRACT §10); and the public engine list.

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
use super::registry::{EngineDetails, EngineRecord, LoadedEngine};
use crate::state::RuntimeState;
use axum::extract::FromRef;
use serde_json::json;
use std::sync::Arc;
use tessera_auth::AuthState;
use tessera_auth::audit::{EngineAuditEntry, RequestOrigin};
use tessera_auth::caller::Caller;
use tessera_http::conventions::{CorrelationId, VerbatimBody};
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

/// The catch-all routes of every engine (documented in `openapi.rs`, and for each `wasi:http`
/// component in its described API): `/<code>/api/v1/…` of every engine, and the rest of
/// `/<code>/…` for `wasi:http` components (a 404 for the others, as any unknown path).
pub fn engine_router<S>() -> axum::Router<S>
where
    S: Clone + Send + Sync + 'static,
    RuntimeState: FromRef<S>,
    AuthState: FromRef<S>,
{
    axum::Router::new()
        .route("/{code}/api/v1/{*path}", any(handle_engine_request))
        .route("/{code}", any(handle_component_request))
        .route("/{code}/", any(handle_component_request))
        .route("/{code}/{*path}", any(handle_component_request))
}

/// The identity headers a `wasi:http` component receives, set by the host (copies the client
/// sent are removed first, as is every other `x-tessera-` header).
const TENANT_HEADER: &str = "x-tessera-tenant-id";
const USER_HEADER: &str = "x-tessera-user-id";
const ROLE_HEADER: &str = "x-tessera-role";
const USER_TYPE_HEADER: &str = "x-tessera-user-type";
const CORRELATION_HEADER: &str = "x-correlation-id";

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
    if engine.pre.is_wasi_http() {
        return serve_component(&state, &auth, engine, request).await;
    }
    let (mut parts, body) = request.into_parts();
    let caller = Caller::from_request_parts(&mut parts, &auth).await?;
    let correlation_id = correlation_id_of(&parts);
    let body = read_body(&state, body).await?;

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
    let permit = match admit(runtime, Some(&caller.tenant_id), &code, &correlation_id).await {
        Ok(permit) => permit,
        Err(refused) => return Ok(refused),
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
    let mut answer = answer_of(
        &code,
        &correlation_id,
        outcome,
        runtime.config().max_response_bytes,
    );
    // Counted in the tenant's usage (`tessera_http::usage`).
    answer.extensions_mut().insert(EngineCall(code));
    Ok(answer)
}

/// A request under `/<code>/` outside `/api/v1/`: a `wasi:http` component's, else unknown.
async fn handle_component_request(
    State(state): State<RuntimeState>,
    State(auth): State<AuthState>,
    request: Request,
) -> ApiResult<Response> {
    let code = first_segment(request.uri().path());
    match state.engines.get(code) {
        Some(engine) if engine.pre.is_wasi_http() => {
            serve_component(&state, &auth, engine, request).await
        }
        _ => Ok(tessera_http::conventions::fallback().await.into_response()),
    }
}

/// The first segment of a path (`chat` of `/chat/x`), as the client spelt it.
fn first_segment(path: &str) -> &str {
    let path = path.strip_prefix('/').unwrap_or(path);
    path.split('/').next().unwrap_or_default()
}

/// The path a component sees: the request's, as the client spelt it, without its first
/// segment (`/x?y` of `/<code>/x?y`; `/` of `/<code>`).
fn component_path(uri: &axum::http::Uri) -> String {
    let path = uri.path();
    let rest = path
        .strip_prefix('/')
        .and_then(|path| path.find('/').map(|slash| &path[slash..]))
        .unwrap_or("/");
    match uri.query() {
        Some(query) => format!("{rest}?{query}"),
        None => rest.to_owned(),
    }
}

/// Hands a request to a `wasi:http` component engine: a bearer token is required (401 without)
/// unless the path is one of its manifest's public paths; then admitted and called as any
/// engine request, with the caller's identity in the `x-tessera-*` headers (none for an
/// anonymous request on a public path, which runs outside any tenant: no storage).
async fn serve_component(
    state: &RuntimeState,
    auth: &AuthState,
    engine: Arc<LoadedEngine>,
    request: Request,
) -> ApiResult<Response> {
    let code = engine.descriptor.code.clone();
    let (mut parts, body) = request.into_parts();
    let path = component_path(&parts.uri);
    let path_only = path.split('?').next().unwrap_or_default();
    let anonymous =
        engine.public_paths.allows(path_only) && !parts.headers.contains_key(header::AUTHORIZATION);
    let caller = if anonymous {
        None
    } else {
        Some(Caller::from_request_parts(&mut parts, auth).await?)
    };
    let correlation_id = correlation_id_of(&parts);
    let body = read_body(state, body).await?;

    let mut headers = parts.headers.clone();
    for name in WITHHELD_REQUEST_HEADERS {
        headers.remove(name);
    }
    let forged: Vec<HeaderName> = headers
        .keys()
        .filter(|name| {
            name.as_str().starts_with("x-tessera-") || name.as_str() == CORRELATION_HEADER
        })
        .cloned()
        .collect();
    for name in forged {
        headers.remove(name);
    }
    let mut identity = vec![(CORRELATION_HEADER, correlation_id.clone())];
    if let Some(caller) = &caller {
        identity.extend([
            (TENANT_HEADER, caller.tenant_id.clone()),
            (USER_HEADER, caller.user_id.clone()),
            (ROLE_HEADER, caller.role.clone()),
            (USER_TYPE_HEADER, caller.token_type.clone()),
        ]);
    }
    for (name, value) in identity {
        if let Ok(value) = HeaderValue::try_from(value) {
            headers.insert(HeaderName::from_static(name), value);
        }
    }
    if !headers.contains_key(header::HOST) {
        let authority = parts
            .uri
            .authority()
            .map_or_else(|| "localhost".to_owned(), ToString::to_string);
        if let Ok(host) = HeaderValue::try_from(authority) {
            headers.insert(header::HOST, host);
        }
    }
    let mut forwarded = http::Request::new(body);
    *forwarded.method_mut() = parts.method.clone();
    *forwarded.uri_mut() = path
        .parse()
        .map_err(|_| ApiError::BadRequest("The request path is not valid.".into()))?;
    *forwarded.headers_mut() = headers;

    let tenant_id = caller.as_ref().map(|caller| caller.tenant_id.clone());
    let scope = match &caller {
        Some(caller) => CallScope {
            actor_id: Some(caller.user_id.clone()),
            ..engine.scope(&caller.tenant_id, Some(correlation_id.clone()))
        },
        None => engine.anonymous_scope(Some(correlation_id.clone())),
    };
    let runtime = state.engines.runtime();
    let permit = match admit(runtime, tenant_id.as_deref(), &code, &correlation_id).await {
        Ok(permit) => permit,
        Err(refused) => return Ok(refused),
    };
    let max_response_bytes = runtime.config().max_response_bytes;
    let outcome = runtime
        .call_admitted(
            permit,
            &engine.pre,
            scope,
            runtime.config().limits_of(&code).handle_timeout,
            response_commits,
            async move |guest, store| {
                guest
                    .call_incoming_handler(store, forwarded, max_response_bytes)
                    .await
            },
        )
        .await;
    // What the component answered is its own whatever its status (an HTML error page passes as
    // written); the host's refusals (401, 413, 502, 503, 504) keep the API's `{message}`.
    let mut answer = match outcome {
        Ok(response) => {
            match into_http_response(&code, &correlation_id, response, max_response_bytes) {
                Ok(mut answer) => {
                    answer.extensions_mut().insert(VerbatimBody);
                    answer
                }
                Err(refused) => refused.into_response(),
            }
        }
        failed => answer_of(&code, &correlation_id, failed, max_response_bytes),
    };
    answer.extensions_mut().insert(EngineCall(code));
    Ok(answer)
}

/// The HTTP answer to an engine call's outcome: the engine's response, or the host's error.
fn answer_of(
    code: &str,
    correlation_id: &str,
    outcome: Result<wit::Response, CallError>,
    max_response_bytes: usize,
) -> Response {
    match outcome {
        Ok(response) => into_http_response(code, correlation_id, response, max_response_bytes)
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
        Err(CallError::Busy(refused)) => busy(code, correlation_id, refused),
        Err(CallError::Commit(detail)) => {
            tracing::error!(engine = %code, %correlation_id, error = %detail, "committing an engine call failed");
            retry_later(format!(
                "The changes of this request to the engine {code} could not be saved; nothing was changed. Retry later."
            ))
        }
    }
}

/// The correlation id the conventions layer gave the request.
fn correlation_id_of(parts: &axum::http::request::Parts) -> String {
    parts
        .extensions
        .get::<CorrelationId>()
        .map(|id| id.0.clone())
        .unwrap_or_default()
}

/// The request body, at most the engine body limit (413 beyond).
async fn read_body(state: &RuntimeState, body: Body) -> ApiResult<bytes::Bytes> {
    axum::body::to_bytes(body, state.max_request_bytes)
        .await
        .map_err(|_| ApiError::PayloadTooLarge)
}

/// A slot for a request to engine `code` in `tenant_id`'s share (the global budget alone for
/// an anonymous request), or the 503 answer when none frees in time.
async fn admit(
    runtime: &crate::EngineRuntime,
    tenant_id: Option<&str>,
    code: &str,
    correlation_id: &str,
) -> Result<super::admission::Permit, Response> {
    runtime
        .admission()
        .admit_to(
            tenant_id,
            Some(code),
            CallKind::Request,
            runtime.config().tenant_queue_timeout,
        )
        .await
        .map_err(|refused| busy(code, correlation_id, refused))
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
