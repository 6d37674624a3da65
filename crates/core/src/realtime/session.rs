//! One realtime connection: a WebSocket reading client frames and writing the queued server
//! frames, or a Server-Sent Events stream subscribed once to the topics of its request. Both
//! close when the hub says (a credential that no longer holds, a full send queue) and when the
//! host stops; a Server-Sent Events stream then ends with a `close` event carrying the code a
//! WebSocket would close with.

use std::sync::Arc;

use axum::extract::ws::{CloseFrame, Message, WebSocket};
use axum::response::sse::Event;
use futures_util::{SinkExt as _, StreamExt as _};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use super::hub::{Hub, Link, Registration, SubscribeError, stream_of_topic};
use super::protocol::{self, ClientFrame, Cursor, Outbound, close};
use super::topics::{self, AuthorizeError};
use tessera_auth::caller::Caller;
use tessera_storage::Database;

/// How long a closing WebSocket waits for its close frame to be written (behind the frames
/// already on their way) before it drops the socket.
const CLOSE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// What a connection needs.
#[derive(Clone)]
pub struct SessionInputs {
    pub hub: Hub,
    pub database: Database,
}

/// Closes a freshly upgraded WebSocket at once with `code` (a connection limit).
pub async fn refuse(mut socket: WebSocket, code: u16) {
    let _ = socket
        .send(Message::Close(Some(CloseFrame {
            code,
            reason: close::reason(code).into(),
        })))
        .await;
}

/// Serves a WebSocket until it ends.
pub async fn run_websocket(
    socket: WebSocket,
    inputs: SessionInputs,
    link: Arc<Link>,
    mut queue: mpsc::Receiver<Outbound>,
    registration: Registration,
) {
    let (mut sink, mut stream) = socket.split();
    let mut subscribing: JoinSet<()> = JoinSet::new();
    let code = loop {
        tokio::select! {
            message = stream.next() => match message {
                Some(Ok(Message::Text(text))) => {
                    handle_frame(&inputs, &link, text.as_str(), &mut subscribing);
                }
                Some(Ok(Message::Binary(_))) => {
                    link.push(Outbound::control(protocol::error(None, 422, "Frames are JSON text")));
                }
                Some(Err(error)) if too_big(&error) => break Some(close::TOO_BIG),
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break None,
                Some(Ok(_)) => {}
            },
            frame = queue.recv() => match frame {
                // A client that stops reading blocks the write: the connection still closes
                // when the hub closes it (its queue fills meanwhile) or the host stops.
                Some(frame) => tokio::select! {
                    sent = sink.send(Message::Text(frame.text.into())) => {
                        if sent.is_err() {
                            break None;
                        }
                    }
                    () = link.closed() => break Some(link.close_code()),
                    () = inputs.hub.stopping() => break Some(close::GOING_AWAY),
                },
                None => break None,
            },
            () = link.closed() => break Some(link.close_code()),
            () = inputs.hub.stopping() => break Some(close::GOING_AWAY),
            Some(_) = subscribing.join_next(), if !subscribing.is_empty() => {}
        }
    };
    subscribing.abort_all();
    drop(registration);
    if let Some(code) = code.filter(|code| *code != 0) {
        link.close(code);
        // A client that reads nothing gets no close frame: the socket is dropped.
        let _ = tokio::time::timeout(
            CLOSE_TIMEOUT,
            sink.send(Message::Close(Some(CloseFrame {
                code,
                reason: close::reason(code).into(),
            }))),
        )
        .await;
    }
}

/// Whether a read failed because the client's message is larger than the limit.
fn too_big(error: &axum::Error) -> bool {
    let source: &(dyn std::error::Error + 'static) = error;
    std::iter::successors(Some(source), |error| error.source()).any(|error| {
        matches!(
            error.downcast_ref::<tungstenite::Error>(),
            Some(tungstenite::Error::Capacity(_))
        )
    })
}

/// Handles one client frame; a subscription runs beside the connection (it may replay).
fn handle_frame(
    inputs: &SessionInputs,
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
            let link = link.clone();
            subscribing.spawn(async move {
                let since = match since.as_deref().map(protocol::decode_cursor) {
                    None => Ok(Cursor::default()),
                    Some(Some(cursor)) => Ok(cursor),
                    Some(None) => Err((422, "`since` is not a cursor of this host".to_owned())),
                };
                let subscribed = match since {
                    Ok(since) => subscribe(&inputs, &link, &topic, since, true).await,
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

/// Authorizes (as the connection's caller now) and subscribes, replaying after the position
/// `since` gives in the topic's stream (when `since` names only the other stream and `strict`,
/// a 422); the status and message of an `error` frame otherwise.
pub async fn subscribe(
    inputs: &SessionInputs,
    link: &Arc<Link>,
    name: &str,
    since: Cursor,
    strict: bool,
) -> Result<(), (u16, String)> {
    let caller = link.caller();
    let topic = authorize(inputs, &caller, name).await?;
    let after = since.of(stream_of_topic(&topic));
    if strict && after.is_none() && since != Cursor::default() {
        return Err((422, "`since` is not a cursor of this topic".to_owned()));
    }
    let subscribed = inputs.hub.subscribe(link, name, topic, after).await;
    // The caller's role or type changed while this subscription was decided: the check that
    // changed it may not have seen it yet, so it is decided again.
    let now = link.caller();
    if now.role != caller.role || now.token_type != caller.token_type {
        inputs.hub.reauthorize(link, &now).await;
    }
    match subscribed {
        Ok(()) => Ok(()),
        Err(SubscribeError::TooMany) => {
            inputs.hub.subscriptions_limit_hit(&link.tenant_id);
            Err((
                429,
                format!(
                    "A connection subscribes to at most {} topics",
                    inputs.hub.config().max_subscriptions
                ),
            ))
        }
        Err(SubscribeError::Internal(error)) => {
            tracing::error!(
                error = format!("{error:#}"),
                "a realtime subscription failed"
            );
            Err((500, "Internal error".to_owned()))
        }
    }
}

/// Whether `caller` may subscribe to `name`: the topic, or the status and message of the
/// refusal.
pub async fn authorize(
    inputs: &SessionInputs,
    caller: &Caller,
    name: &str,
) -> Result<topics::Topic, (u16, String)> {
    match topics::authorize(&inputs.database, inputs.hub.engines(), caller, name).await {
        Ok(topic) => Ok(topic),
        Err(AuthorizeError::Refused(refusal)) => Err(topics::refusal_answer(refusal, name)),
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
        authorize(inputs, caller, name).await?;
    }
    Ok(())
}

/// Drives a Server-Sent Events connection: subscribes its topics (replaying after `since`),
/// then waits until the hub closes it, the host stops or the stream's reader leaves.
pub async fn run_events(
    inputs: SessionInputs,
    link: Arc<Link>,
    registration: Registration,
    names: Vec<String>,
    since: Cursor,
) {
    let subscriptions = async {
        for name in &names {
            if let Err((status, message)) = subscribe(&inputs, &link, name, since, false).await {
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
    loop {
        tokio::select! {
            () = &mut subscriptions => {}
            () = link.closed() => break,
            () = link.receiver_gone() => break,
            () = inputs.hub.stopping() => {
                link.close(close::GOING_AWAY);
                break;
            }
        }
    }
    drop(registration);
}

/// A Server-Sent Events stream of a connection's queue: its frames as events until the
/// connection closes, then a `close` event with the code a WebSocket would close with
/// (`data: {"op":"close","code":C,"reason":R}`), and the end. Once closed, frames still
/// queued are not sent (the credential behind them may have ended).
pub fn sse_stream(
    link: Arc<Link>,
    queue: mpsc::Receiver<Outbound>,
) -> impl futures_util::Stream<Item = Event> + Send + 'static {
    futures_util::stream::unfold(Some((link, queue)), |state| async move {
        let (link, mut queue) = state?;
        loop {
            tokio::select! {
                biased;
                () = link.closed() => {
                    let code = link.close_code();
                    if code == 0 {
                        return None;
                    }
                    return Some((close_event(code), None));
                }
                frame = queue.recv() => match frame {
                    Some(frame) => {
                        if let Some(event) = sse_event(frame) {
                            return Some((event, Some((link, queue))));
                        }
                    }
                    None => return None,
                },
            }
        }
    })
}

/// The last event of a stream that closes with `code`.
fn close_event(code: u16) -> Event {
    let data = serde_json::json!({"op": "close", "code": code, "reason": close::reason(code)});
    Event::default().event("close").data(data.to_string())
}

/// The Server-Sent Event of a queued frame: events with their cursor as `id:` and their type
/// as `event:`, a `reset` as `event: reset`, an `error` as `event: error`; other frames none.
pub fn sse_event(frame: Outbound) -> Option<Event> {
    match frame.event {
        Some(event) => {
            let (cursor, kind) = *event;
            Some(Event::default().id(cursor).event(kind).data(frame.text))
        }
        None if frame.reset => Some(Event::default().event("reset").data(frame.text)),
        None if frame.text.contains(r#""op":"error""#) => {
            Some(Event::default().event("error").data(frame.text))
        }
        None => None,
    }
}
