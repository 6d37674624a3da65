//! One realtime connection: a WebSocket reading client frames and writing the queued server
//! frames, or a Server-Sent Events stream subscribed once to the topics of its request. Both
//! check their credential again on a timer (`access.rs`), close when the hub says (a full send
//! queue) and when the host stops.

use std::sync::Arc;

use axum::extract::ws::{CloseFrame, Message, WebSocket};
use axum::response::sse::Event;
use futures_util::{SinkExt as _, StreamExt as _};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use super::access::{self, Viewer};
use super::hub::{Hub, Link, Registration, SubscribeError, close, stream_of_topic};
use super::protocol::{self, ClientFrame, Cursor, Outbound};
use super::topics::{self, AuthorizeError, Refusal};
use tessera_auth::AuthState;
use tessera_auth::caller::Caller;
use tessera_storage::Database;

/// What a connection needs.
#[derive(Clone)]
pub struct SessionInputs {
    pub hub: Hub,
    pub auth: AuthState,
    pub database: Database,
}

/// Closes a freshly upgraded WebSocket at once with `code` (a connection limit).
pub async fn refuse(mut socket: WebSocket, code: u16, reason: &'static str) {
    let _ = socket
        .send(Message::Close(Some(CloseFrame {
            code,
            reason: reason.into(),
        })))
        .await;
}

/// Serves a WebSocket until it ends.
pub async fn run_websocket(
    socket: WebSocket,
    inputs: SessionInputs,
    viewer: Viewer,
    link: Arc<Link>,
    mut queue: mpsc::Receiver<Outbound>,
    registration: Registration,
) {
    let (mut sink, mut stream) = socket.split();
    let mut subscribing: JoinSet<()> = JoinSet::new();
    let mut recheck = tokio::time::interval(inputs.hub.config().recheck_interval);
    recheck.tick().await;
    let code = loop {
        tokio::select! {
            message = stream.next() => match message {
                Some(Ok(Message::Text(text))) => {
                    handle_frame(&inputs, &viewer, &link, text.as_str(), &mut subscribing);
                }
                Some(Ok(Message::Binary(_))) => {
                    link.push(Outbound::control(protocol::error(None, 422, "Frames are JSON text")));
                }
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break None,
                Some(Ok(_)) => {}
            },
            frame = queue.recv() => match frame {
                Some(frame) => {
                    if sink.send(Message::Text(frame.text.into())).await.is_err() {
                        break None;
                    }
                }
                None => break None,
            },
            () = link.closed() => break Some(link.close_code()),
            () = inputs.hub.stopping() => break Some(close::GOING_AWAY),
            _ = recheck.tick() => {
                match access::recheck(&inputs.auth, &viewer).await {
                    Ok(Err(code)) => {
                        link.close(code);
                        break Some(code);
                    }
                    Ok(Ok(())) => {}
                    Err(error) => tracing::warn!(
                        error = format!("{error:#}"),
                        "rechecking a realtime connection failed"
                    ),
                }
            }
            Some(_) = subscribing.join_next(), if !subscribing.is_empty() => {}
        }
    };
    subscribing.abort_all();
    drop(registration);
    if let Some(code) = code.filter(|code| *code != 0) {
        let reason = match code {
            close::UNAUTHENTICATED => "token expired, revoked or logged out",
            close::TENANT_ENDED => "access to the tenant ended",
            close::TOO_SLOW => "the client reads too slowly",
            close::LIMIT => "a connection limit",
            _ => "the host is stopping",
        };
        link.close(code);
        let _ = sink
            .send(Message::Close(Some(CloseFrame {
                code,
                reason: reason.into(),
            })))
            .await;
    }
}

/// Handles one client frame; a subscription runs beside the connection (it may replay).
fn handle_frame(
    inputs: &SessionInputs,
    viewer: &Viewer,
    link: &Arc<Link>,
    text: &str,
    subscribing: &mut JoinSet<()>,
) {
    let Some(frame) = ClientFrame::parse(text) else {
        link.push(Outbound::control(protocol::error(
            None,
            422,
            "Not a frame of the protocol: subscribe, unsubscribe or ping",
        )));
        return;
    };
    match frame {
        ClientFrame::Ping => link.push(Outbound::control(protocol::pong())),
        ClientFrame::Unsubscribe { topic } => {
            inputs.hub.unsubscribe(link, &topic);
        }
        ClientFrame::Subscribe { topic, since } => {
            let inputs = inputs.clone();
            let caller = viewer.caller.clone();
            let link = link.clone();
            subscribing.spawn(async move {
                let since = match since.as_deref().map(protocol::decode_cursor) {
                    None => Ok(Cursor::default()),
                    Some(Some(cursor)) => Ok(cursor),
                    Some(None) => Err((422, "`since` is not a cursor of this host".to_owned())),
                };
                let subscribed = match since {
                    Ok(since) => subscribe(&inputs, &link, &caller, &topic, since, true).await,
                    Err(refusal) => Err(refusal),
                };
                if let Err((status, message)) = subscribed {
                    link.push(Outbound::control(protocol::error(
                        Some(&topic),
                        status,
                        &message,
                    )));
                }
            });
        }
    }
}

/// Authorizes and subscribes, replaying after the position `since` gives in the topic's
/// stream (when `since` names only the other stream and `strict`, a 422); the status and
/// message of an `error` frame otherwise.
pub async fn subscribe(
    inputs: &SessionInputs,
    link: &Arc<Link>,
    caller: &Caller,
    name: &str,
    since: Cursor,
    strict: bool,
) -> Result<(), (u16, String)> {
    let topic = authorize(inputs, caller, name).await?;
    let after = since.of(stream_of_topic(&topic));
    if strict && after.is_none() && since != Cursor::default() {
        return Err((422, "`since` is not a cursor of this topic".to_owned()));
    }
    match inputs.hub.subscribe(link, name, topic, after).await {
        Ok(()) => Ok(()),
        Err(SubscribeError::TooMany) => Err((
            429,
            format!(
                "A connection subscribes to at most {} topics",
                inputs.hub.config().max_subscriptions
            ),
        )),
        Err(SubscribeError::Internal(error)) => {
            tracing::error!(
                error = format!("{error:#}"),
                "a realtime subscription failed"
            );
            Err((500, "Internal error".to_owned()))
        }
    }
}

async fn authorize(
    inputs: &SessionInputs,
    caller: &Caller,
    name: &str,
) -> Result<topics::Topic, (u16, String)> {
    match topics::authorize(&inputs.database, inputs.hub.engines(), caller, name).await {
        Ok(topic) => Ok(topic),
        Err(AuthorizeError::Refused(Refusal::Forbidden)) => {
            Err((403, "Guests may subscribe only to core.inbox".to_owned()))
        }
        Err(AuthorizeError::Refused(Refusal::ForbiddenByEngine)) => {
            Err((403, format!("Not allowed to subscribe to {name}")))
        }
        Err(AuthorizeError::Refused(Refusal::NotFound)) => {
            Err((404, format!("Unknown topic: {name}")))
        }
        Err(AuthorizeError::Internal(error)) => {
            tracing::error!(error = format!("{error:#}"), "authorizing a topic failed");
            Err((500, "Internal error".to_owned()))
        }
    }
}

/// Checks that every topic of a Server-Sent Events request may be read, before the stream
/// starts: the status and message of the refusal otherwise.
pub async fn authorize_all(
    inputs: &SessionInputs,
    caller: &Caller,
    names: &[String],
) -> Result<(), (u16, String)> {
    for name in names {
        match topics::authorize(&inputs.database, inputs.hub.engines(), caller, name).await {
            Ok(_) => {}
            Err(AuthorizeError::Refused(Refusal::Forbidden | Refusal::ForbiddenByEngine)) => {
                return Err((403, format!("Not allowed to subscribe to {name}")));
            }
            Err(AuthorizeError::Refused(Refusal::NotFound)) => {
                return Err((404, format!("Unknown topic: {name}")));
            }
            Err(AuthorizeError::Internal(error)) => return Err((500, format!("{error:#}"))),
        }
    }
    Ok(())
}

/// Drives a Server-Sent Events connection: subscribes its topics (replaying after `since`),
/// then watches its credential, the hub and the stream's reader until one ends it.
pub async fn run_events(
    inputs: SessionInputs,
    viewer: Viewer,
    link: Arc<Link>,
    registration: Registration,
    names: Vec<String>,
    since: Cursor,
) {
    let subscriptions = async {
        for name in &names {
            if let Err((status, message)) =
                subscribe(&inputs, &link, &viewer.caller, name, since, false).await
            {
                link.push(Outbound::control(protocol::error(
                    Some(name),
                    status,
                    &message,
                )));
            }
        }
        std::future::pending::<()>().await;
    };
    tokio::pin!(subscriptions);
    let mut recheck = tokio::time::interval(inputs.hub.config().recheck_interval);
    recheck.tick().await;
    loop {
        tokio::select! {
            () = &mut subscriptions => {}
            () = link.closed() => break,
            () = link.receiver_gone() => break,
            () = inputs.hub.stopping() => break,
            _ = recheck.tick() => {
                if let Ok(Err(code)) = access::recheck(&inputs.auth, &viewer).await {
                    link.close(code);
                    break;
                }
            }
        }
    }
    drop(registration);
}

/// The Server-Sent Event of a queued frame: events with their cursor as `id:` and their type
/// as `event:`, a `reset` as `event: reset`, an `error` as `event: error`; other frames none.
pub fn sse_event(frame: Outbound) -> Option<Event> {
    match frame.event {
        Some((cursor, kind)) => Some(Event::default().id(cursor).event(kind).data(frame.text)),
        None if frame.reset => Some(Event::default().event("reset").data(frame.text)),
        None if frame.text.contains(r#""op":"error""#) => {
            Some(Event::default().event("error").data(frame.text))
        }
        None => None,
    }
}
