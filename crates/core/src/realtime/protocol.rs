//! The realtime protocol's frames (CONTRACT §9) and its cursors. Client frames:
//! `subscribe` (with an optional `since` cursor), `unsubscribe`, `ping`; server frames:
//! `subscribed`, `event`, `reset`, `error`, `pong`. A cursor is a position in the reading
//! order of the stream its topic's events come from (the event log, or what engines
//! published), opaque to clients.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::projections::worker::LogPosition;

/// A frame a client sends.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase", deny_unknown_fields)]
pub enum ClientFrame {
    Subscribe {
        topic: String,
        since: Option<String>,
    },
    Unsubscribe {
        topic: String,
    },
    Ping,
}

impl ClientFrame {
    /// The frame of a text message; `None` for anything else (a 422 `error` frame).
    pub fn parse(text: &str) -> Option<Self> {
        serde_json::from_str(text).ok()
    }
}

/// The two streams events come from: the event log (the core's topics) and what engines
/// published (their topics). Each has positions, and cursors, of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Log,
    Engines,
}

/// A decoded cursor: a position in one stream, or (a Server-Sent Events id, which stands for
/// every topic of its stream) in both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Cursor {
    pub log: Option<LogPosition>,
    pub engines: Option<LogPosition>,
}

impl Cursor {
    /// The position this cursor gives in `stream`.
    pub fn of(&self, stream: Stream) -> Option<LogPosition> {
        match stream {
            Stream::Log => self.log,
            Stream::Engines => self.engines,
        }
    }
}

fn hex_position(position: LogPosition) -> String {
    format!(
        "{:016x}{:016x}",
        position.transaction_id as u64, position.position as u64
    )
}

fn position_of_hex(text: &str) -> Option<LogPosition> {
    if text.len() != 32 || !text.bytes().all(|byte| byte.is_ascii_hexdigit()) {
        return None;
    }
    let transaction_id = u64::from_str_radix(&text[..16], 16).ok()? as i64;
    let position = u64::from_str_radix(&text[16..], 16).ok()? as i64;
    Some(LogPosition {
        transaction_id,
        position,
    })
}

/// The opaque cursor of a position of `stream`: 32 hex digits for the log, `e` and 32 for
/// the engines' stream.
pub fn encode_cursor(stream: Stream, position: LogPosition) -> String {
    match stream {
        Stream::Log => hex_position(position),
        Stream::Engines => format!("e{}", hex_position(position)),
    }
}

/// The cursor of a position in each stream (a Server-Sent Events id): `<log>.e<engines>`.
pub fn encode_pair(log: LogPosition, engines: LogPosition) -> String {
    format!("{}.e{}", hex_position(log), hex_position(engines))
}

/// The positions a cursor names; `None` when it is not a cursor.
pub fn decode_cursor(cursor: &str) -> Option<Cursor> {
    let (log, engines) = match cursor.split_once('.') {
        Some((log, engines)) => (Some(log), Some(engines.strip_prefix('e')?)),
        None => match cursor.strip_prefix('e') {
            Some(engines) => (None, Some(engines)),
            None => (Some(cursor), None),
        },
    };
    let log = match log {
        Some(text) => Some(position_of_hex(text)?),
        None => None,
    };
    let engines = match engines {
        Some(text) => Some(position_of_hex(text)?),
        None => None,
    };
    Some(Cursor { log, engines })
}

/// `{"op":"subscribed","topic":T}`.
pub fn subscribed(topic: &str) -> String {
    json!({"op": "subscribed", "topic": topic}).to_string()
}

/// `{"op":"reset","topic":T}`: the cursor is outside what can be replayed; refetch.
pub fn reset(topic: &str) -> String {
    json!({"op": "reset", "topic": topic}).to_string()
}

/// `{"op":"pong"}`.
pub fn pong() -> String {
    json!({"op": "pong"}).to_string()
}

/// `{"op":"error","topic":T?,"status":N,"message":M}`.
pub fn error(topic: Option<&str>, status: u16, message: &str) -> String {
    let mut frame = Map::new();
    frame.insert("op".into(), "error".into());
    if let Some(topic) = topic {
        frame.insert("topic".into(), topic.into());
    }
    frame.insert("status".into(), status.into());
    frame.insert("message".into(), message.into());
    Value::Object(frame).to_string()
}

/// `{"op":"event","topic":T,"cursor":C,"type":E,"occurred_at":TS,"data":{…}}`.
pub fn event(topic: &str, cursor: &str, kind: &str, occurred_at: &str, data: &Value) -> String {
    json!({
        "op": "event",
        "topic": topic,
        "cursor": cursor,
        "type": kind,
        "occurred_at": occurred_at,
        "data": data,
    })
    .to_string()
}

/// A frame on its way to a client, with what Server-Sent Events need of it.
#[derive(Debug, Clone)]
pub struct Outbound {
    /// The frame's JSON text.
    pub text: String,
    /// The event's cursor and type (event frames only), boxed: every connection's send queue
    /// allocates its first block of slots when it opens, so a small frame keeps an idle
    /// connection light.
    pub event: Option<Box<(String, String)>>,
    /// A `reset` frame.
    pub reset: bool,
}

impl Outbound {
    /// A frame other than an event.
    pub fn control(text: String) -> Self {
        Self {
            text,
            event: None,
            reset: false,
        }
    }
}

/// Close codes of the contract (§9).
pub mod close {
    /// Token expired, revoked or logged out.
    pub const UNAUTHENTICATED: u16 = 4001;
    /// Access to the tenant ended.
    pub const TENANT_ENDED: u16 = 4003;
    /// The client reads too slowly (send queue full).
    pub const TOO_SLOW: u16 = 4008;
    /// A connection limit.
    pub const LIMIT: u16 = 4029;
    /// A client's message is larger than `TESSERA_REALTIME_MAX_FRAME_BYTES`.
    pub const TOO_BIG: u16 = 1009;
    /// The host is stopping.
    pub const GOING_AWAY: u16 = 1001;

    /// The reason sent with a close code.
    pub fn reason(code: u16) -> &'static str {
        match code {
            UNAUTHENTICATED => "token expired, revoked or logged out",
            TENANT_ENDED => "access to the tenant ended",
            TOO_SLOW => "the client reads too slowly",
            LIMIT => "a connection limit",
            TOO_BIG => "the message is too big",
            _ => "the host is stopping",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_refuse_anything_else() {
        let position = LogPosition {
            transaction_id: 7_000_000_123,
            position: 42,
        };
        assert_eq!(
            decode_cursor(&encode_cursor(Stream::Log, position)).and_then(|c| c.of(Stream::Log)),
            Some(position)
        );
        let cursor = decode_cursor(&encode_cursor(Stream::Engines, position)).unwrap();
        assert_eq!((cursor.log, cursor.engines), (None, Some(position)));
        let other = LogPosition {
            transaction_id: 0,
            position: 7,
        };
        let pair = decode_cursor(&encode_pair(position, other)).unwrap();
        assert_eq!((pair.log, pair.engines), (Some(position), Some(other)));
        assert_eq!(decode_cursor("e42"), None);
        assert_eq!(
            decode_cursor(&format!("{}.{}", "0".repeat(32), "0".repeat(32))),
            None
        );
        assert_eq!(decode_cursor("42"), None);
        assert_eq!(decode_cursor(&"g".repeat(32)), None);
    }

    #[test]
    fn client_frames_are_exactly_the_contracts() {
        assert_eq!(
            ClientFrame::parse(r#"{"op":"subscribe","topic":"core.inbox"}"#),
            Some(ClientFrame::Subscribe {
                topic: "core.inbox".into(),
                since: None
            })
        );
        assert_eq!(
            ClientFrame::parse(r#"{"op":"ping"}"#),
            Some(ClientFrame::Ping)
        );
        assert_eq!(ClientFrame::parse(r#"{"op":"subscribe"}"#), None);
        assert_eq!(ClientFrame::parse(r#"{"op":"shout"}"#), None);
        assert_eq!(ClientFrame::parse("not json"), None);
    }
}
