//! Engines' realtime topics as the hub sees them: the port the host wires the engine runtime
//! into (the core never links the runtime, as with the bus relay's `EventSink`). Through it the
//! hub asks an engine whether a caller may subscribe to one of its topics, and reads what the
//! engines' committed calls published, in commit order, from a table of its own (a second
//! stream beside the event log, with positions and cursors of its own).

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;

use crate::projections::worker::LogPosition;
use tessera_auth::caller::Caller;

/// A future of the port.
pub type PortFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// An engine's answer to a subscription to one of its topics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineTopicAccess {
    Allowed,
    /// 403: the engine refused.
    Forbidden,
    /// 404: no loaded engine owns the topic.
    Unknown,
}

/// What an engine's committed call published.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineEvent {
    pub position: LogPosition,
    pub tenant_id: String,
    /// The full topic name, `<engine_code>.<name>`.
    pub topic: String,
    /// Only this user's subscriptions hear it; `None`: every subscriber of the topic.
    pub user_id: Option<String>,
    pub kind: EngineEventKind,
    pub occurred_at: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum EngineEventKind {
    /// An event frame's type and data.
    Event { event_type: String, data: Value },
    /// The user's subscriptions to the topic end (`error` 403 for the topic).
    End,
}

/// The engines' side of realtime, implemented by the host over the engine runtime.
pub trait EngineTopics: Send + Sync + 'static {
    /// Whether `caller` may subscribe to the engine topic `topic` (`<code>.<name>`).
    fn authorize<'a>(
        &'a self,
        caller: &'a Caller,
        topic: &'a str,
    ) -> PortFuture<'a, anyhow::Result<EngineTopicAccess>>;

    /// The last position no later commit can precede.
    fn head(&self) -> PortFuture<'_, anyhow::Result<LogPosition>>;

    /// Up to `limit` events after `after`, in commit order.
    fn after(
        &self,
        after: LogPosition,
        limit: u32,
    ) -> PortFuture<'_, anyhow::Result<Vec<EngineEvent>>>;

    /// Up to `limit` events of `topic` in `tenant_id` heard by `user_id`, after `after` and
    /// not after `until`; `None` when the retention deleted some after `after` (reset).
    fn replay<'a>(
        &'a self,
        tenant_id: &'a str,
        topic: &'a str,
        user_id: &'a str,
        after: LogPosition,
        until: LogPosition,
        limit: u32,
    ) -> PortFuture<'a, anyhow::Result<Option<Vec<EngineEvent>>>>;

    /// Deletes what the retention no longer keeps; how many events.
    fn prune(&self) -> PortFuture<'_, anyhow::Result<u64>>;

    /// Resolves when a call of this host committed publications.
    fn published(&self) -> PortFuture<'_, ()>;
}

/// Whether `name` names an engine's topic rather than the core's.
pub fn is_engine_topic(name: &str) -> bool {
    !name.starts_with("core.") && name.contains('.')
}
