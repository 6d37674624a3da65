//! Realtime (CONTRACT §9): clients subscribe over a WebSocket (`GET /core/api/v1/realtime`)
//! or Server-Sent Events (`GET /core/api/v1/realtime/events`) to the core's topics, derived
//! from the event log: `core.timeline`, `core.entity.<id>`, `core.inbox`; and to engines'
//! topics (`<engine_code>.<name>`), which `engine_topics.rs` reaches through a port the host
//! wires the engine runtime into. `hub.rs` tails the log and the engines' stream once per host
//! and fans events out; `session.rs` serves one connection; `access.rs`
//! verifies and re-verifies who is connected, and issues tickets; `topics.rs` maps events to
//! topics with the REST reads' rules; `protocol.rs` holds the frames and cursors; `store.rs`
//! the SQL.

pub mod access;
pub mod engine_topics;
pub mod hub;
pub mod protocol;
pub mod session;
mod store;
pub mod topics;

pub use hub::{Hub, RealtimeConfig};
