//! `/core/api/v1/realtime` (WebSocket), `/core/api/v1/realtime/tickets` and
//! `/core/api/v1/realtime/events` (Server-Sent Events): the protocol of CONTRACT §9
//! (`docs/src/api/realtime.md`), served by `crate::realtime`.

use axum::extract::ws::{WebSocketUpgrade, rejection::WebSocketUpgradeRejection};
use axum::extract::{FromRef, MatchedPath, State};
use axum::http::HeaderMap;
use axum::response::sse::{KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt as _;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::realtime::access::{self, Viewer};
use crate::realtime::protocol;
use crate::realtime::protocol::close;
use crate::realtime::session::{self, SessionInputs};
use crate::state::CoreState;
use tessera_http::envelope::{self, Data};
use tessera_http::extract::{ApiQuery, NoQuery, bearer_token};
use tessera_http::{ApiError, ApiResult};

pub(super) fn router<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    CoreState: FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(connect))
        .routes(routes!(create_ticket))
        .routes(routes!(events))
}

/// Query of the WebSocket endpoint.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ConnectQuery {
    /// A ticket from `POST /core/api/v1/realtime/tickets`, for clients that cannot send an
    /// `Authorization` header (browsers): single use, valid 30 s.
    pub ticket: Option<String>,
}

/// Query of the Server-Sent Events endpoint.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct EventsQuery {
    /// The topics, comma-separated: `core.inbox`, `core.timeline`, `core.entity.<id>`.
    pub topics: String,
}

/// A realtime ticket.
#[derive(Debug, Serialize, ToSchema)]
pub struct Ticket {
    /// Pass it as `?ticket=` to `GET /core/api/v1/realtime`, once.
    pub ticket: String,
    pub expires_at: String,
}

fn inputs(state: &CoreState) -> SessionInputs {
    SessionInputs {
        hub: state.realtime.clone(),
        database: state.database.clone(),
    }
}

/// The caller of the request's bearer token, as the `Caller` extractor checks it on `route`.
async fn bearer_viewer(
    state: &CoreState,
    headers: &HeaderMap,
    route: &MatchedPath,
) -> Result<Viewer, ApiError> {
    let token = bearer_token(headers).ok_or(ApiError::Unauthenticated)?;
    access::from_bearer(state.realtime.verifier(), token, route.as_str()).await
}

/// Opens a realtime WebSocket (JSON text frames; see the realtime page of the book).
#[utoipa::path(
    get,
    path = "/core/api/v1/realtime",
    tag = "core",
    security(("bearer" = [])),
    params(ConnectQuery),
    responses(
        (status = 101, description = "Switching to the WebSocket protocol"),
        (status = 400, description = "Not a WebSocket upgrade, or an unknown query parameter"),
        (status = 401, description = "Neither a valid bearer token nor a valid ticket"),
    )
)]
async fn connect(
    State(state): State<CoreState>,
    route: MatchedPath,
    headers: HeaderMap,
    ApiQuery(query): ApiQuery<ConnectQuery>,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> ApiResult<Response> {
    let viewer = match &query.ticket {
        Some(ticket) => {
            access::redeem_ticket(state.realtime.verifier(), &state.database, ticket).await?
        }
        None => bearer_viewer(&state, &headers, &route).await?,
    };
    let inputs = inputs(&state);
    let max_frame_bytes = inputs.hub.config().max_frame_bytes;
    let upgrade = upgrade
        .map_err(|rejection| ApiError::BadRequest(format!("Not a WebSocket upgrade: {rejection}")))?
        // A client's messages are small: a small read buffer keeps an idle connection light.
        .read_buffer_size(4096)
        .max_message_size(max_frame_bytes)
        .max_frame_size(max_frame_bytes);
    let connected = inputs.hub.connect(viewer);
    Ok(match connected {
        Ok((link, queue, registration)) => upgrade
            .on_upgrade(move |socket| {
                session::run_websocket(socket, inputs, link, queue, registration)
            })
            .into_response(),
        Err(_) => upgrade
            .on_upgrade(|socket| session::refuse(socket, close::LIMIT))
            .into_response(),
    })
}

/// Issues a single-use ticket (valid 30 s) to open the WebSocket with `?ticket=`.
#[utoipa::path(
    post,
    path = "/core/api/v1/realtime/tickets",
    tag = "core",
    security(("bearer" = [])),
    responses(
        (status = 201, description = "The ticket", body = Data<Ticket>),
        (status = 401, description = "Unauthenticated"),
    )
)]
async fn create_ticket(
    State(state): State<CoreState>,
    route: MatchedPath,
    headers: HeaderMap,
    _: NoQuery,
) -> ApiResult<Response> {
    let viewer = bearer_viewer(&state, &headers, &route).await?;
    let (ticket, expires_at) = access::issue_ticket(&state.database, &viewer).await?;
    Ok(envelope::created(Ticket { ticket, expires_at }))
}

/// The events of the topics as Server-Sent Events: `id:` the cursor, `event:` the type,
/// `data:` the event frame; `Last-Event-ID` resumes after a cursor.
#[utoipa::path(
    get,
    path = "/core/api/v1/realtime/events",
    tag = "core",
    security(("bearer" = [])),
    params(
        EventsQuery,
        ("Last-Event-ID" = Option<String>, Header, description = "Resume after this cursor"),
    ),
    responses(
        (status = 200, description = "A stream of events (`text/event-stream`)", content_type = "text/event-stream", body = String),
        (status = 401, description = "Unauthenticated"),
        (status = 403, description = "A guest's topic other than `core.inbox`"),
        (status = 404, description = "An unknown topic"),
        (status = 422, description = "No topics, or `Last-Event-ID` is not a cursor"),
        (status = 429, description = "A connection or subscription limit"),
    )
)]
async fn events(
    State(state): State<CoreState>,
    route: MatchedPath,
    headers: HeaderMap,
    ApiQuery(query): ApiQuery<EventsQuery>,
) -> ApiResult<Response> {
    let viewer = bearer_viewer(&state, &headers, &route).await?;
    let inputs = inputs(&state);
    let mut names: Vec<String> = Vec::new();
    for name in query.topics.split(',').map(str::trim) {
        if !name.is_empty() && !names.iter().any(|known| known == name) {
            names.push(name.to_owned());
        }
    }
    let invalid = |field: &str, message: &str| {
        ApiError::Validation(tessera_http::ValidationErrors::single(field, message))
    };
    if names.is_empty() {
        return Err(invalid("topics", "Name at least one topic"));
    }
    if names.len() > inputs.hub.config().max_subscriptions as usize {
        return Err(ApiError::TooManyRequests {
            retry_after_seconds: 1,
        });
    }
    let since = match headers.get("last-event-id") {
        None => protocol::Cursor::default(),
        Some(value) => value
            .to_str()
            .ok()
            .and_then(protocol::decode_cursor)
            .ok_or_else(|| invalid("Last-Event-ID", "Not a cursor of this host"))?,
    };
    session::authorize_all(&inputs, &viewer.caller, &names)
        .await
        .map_err(|(status, message)| match status {
            403 => ApiError::Forbidden,
            404 => ApiError::not_found("Topic"),
            _ => ApiError::Internal(anyhow::anyhow!(message)),
        })?;
    let (link, queue, registration) =
        inputs
            .hub
            .connect_events(viewer, since)
            .map_err(|_| ApiError::TooManyRequests {
                retry_after_seconds: 1,
            })?;
    let stream = session::sse_stream(link.clone(), queue).map(Ok::<_, std::convert::Infallible>);
    tokio::spawn(session::run_events(
        inputs,
        link,
        registration,
        names,
        since,
    ));
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response())
}
