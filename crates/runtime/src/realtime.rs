//! Engines' realtime topics (world 0.3): the patterns an engine declares (`describe-topics`),
//! what its calls publish through the `realtime` import (buffered in the call's unit of work
//! and written with it: `batch_writer.rs`, `tessera_storage::realtime_events`), and the feed the core's
//! realtime hub reads those events from ([`RealtimeFeed`], wired in by the host: the core never
//! links the runtime).

use std::num::NonZeroU32;
use std::sync::Arc;

use governor::state::keyed::DashMapStateStore;
use governor::{Quota, RateLimiter};
use tokio::sync::Notify;

use crate::store::realtime_events;
pub use crate::store::realtime_events::{FeedPosition, PublishedKind, PublishedRow};
use tessera_storage::Database;

/// Most bytes of one published event's `data`.
pub const MAX_DATA_BYTES: usize = 64 * 1024;

/// Most topic patterns one engine declares.
const MAX_PATTERNS: usize = 64;

/// Retention for resuming (CONTRACT §9): an event is kept while it is younger than this…
pub const RETENTION: std::time::Duration = std::time::Duration::from_secs(15 * 60);
/// …or among the last this many of its topic, whichever keeps more.
pub const RETAINED_PER_TOPIC: i64 = 10_000;

/// The topic patterns of one engine: dot-separated segments, `*` matching any one segment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicPatterns(Vec<Vec<String>>);

impl TopicPatterns {
    /// The patterns an engine declared; `Err` names the first malformed one.
    pub fn parse(patterns: &[String]) -> Result<Self, String> {
        if patterns.len() > MAX_PATTERNS {
            return Err(format!(
                "{} topic patterns (at most {MAX_PATTERNS})",
                patterns.len()
            ));
        }
        let parsed = patterns
            .iter()
            .map(|pattern| {
                let segments: Vec<String> = pattern.split('.').map(str::to_owned).collect();
                let valid = pattern.len() <= 200
                    && segments
                        .iter()
                        .all(|segment| segment == "*" || valid_segment(segment));
                valid
                    .then_some(segments)
                    .ok_or_else(|| format!("the topic pattern {pattern:?} is malformed"))
            })
            .collect::<Result<_, _>>()?;
        Ok(Self(parsed))
    }

    /// Whether `name` (a topic without the engine code) is one of these.
    pub fn matches(&self, name: &str) -> bool {
        if !valid_topic_name(name) {
            return false;
        }
        let segments: Vec<&str> = name.split('.').collect();
        self.0.iter().any(|pattern| {
            pattern.len() == segments.len()
                && pattern
                    .iter()
                    .zip(&segments)
                    .all(|(expected, segment)| expected == "*" || expected == segment)
        })
    }

    /// The patterns as declared.
    pub fn to_strings(&self) -> Vec<String> {
        self.0.iter().map(|segments| segments.join(".")).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A segment: 1 to 64 ASCII letters, digits, `_` or `-`.
fn valid_segment(segment: &str) -> bool {
    (1..=64).contains(&segment.len())
        && segment
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
}

/// A topic name (without the engine code): up to 200 bytes of valid segments.
pub fn valid_topic_name(name: &str) -> bool {
    name.len() <= 200 && name.split('.').all(valid_segment)
}

/// The publish rate of each engine in each tenant (`TESSERA_REALTIME_MAX_PUBLISH_PER_SECOND`):
/// a publication beyond it is refused to the engine, which may retry or drop it; one tenant's
/// flood never slows another's.
pub struct PublishRate {
    per_second: NonZeroU32,
    limiter: RateLimiter<
        (String, String),
        DashMapStateStore<(String, String)>,
        governor::clock::DefaultClock,
    >,
    /// Counts a refusal among the tenant's limits hit (`realtime.publish`).
    usage: Option<tessera_http::usage::UsageMeter>,
}

impl PublishRate {
    pub fn new(per_second: u32, usage: Option<tessera_http::usage::UsageMeter>) -> Self {
        let per_second = NonZeroU32::new(per_second.max(1)).expect("at least one");
        Self {
            per_second,
            limiter: RateLimiter::keyed(Quota::per_second(per_second)),
            usage,
        }
    }

    /// Takes one publication of `engine_code` in `tenant_id`; `Err` when over the rate.
    pub fn take(&self, engine_code: &str, tenant_id: &str) -> Result<(), String> {
        let key = (engine_code.to_owned(), tenant_id.to_owned());
        if self.limiter.check_key(&key).is_ok() {
            return Ok(());
        }
        metrics::counter!("tessera_realtime_publish_refused_total", "engine" => engine_code.to_owned())
            .increment(1);
        if let Some(usage) = &self.usage {
            usage.record(tenant_id, "limits_hit", "realtime.publish");
        }
        Err(format!(
            "realtime publish rate exceeded: at most {} events per second per engine and tenant \
             (TESSERA_REALTIME_MAX_PUBLISH_PER_SECOND)",
            self.per_second
        ))
    }

    /// Forgets the keys that are back to a full budget.
    pub fn sweep(&self) {
        self.limiter.retain_recent();
    }
}

/// Who asks to subscribe to an engine's topic: the caller its `authorize-subscription` sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscriber {
    pub tenant_id: String,
    pub workspace_id: Option<String>,
    pub user_id: String,
    /// `owner`, `editor` or `viewer`.
    pub role: String,
    /// `user`, `guest` or `agent`.
    pub token_type: String,
    pub correlation_id: String,
}

impl Subscriber {
    pub(crate) fn to_wit(&self) -> crate::bindings::v0_3::tessera::engine::types::Caller {
        crate::bindings::v0_3::tessera::engine::types::Caller {
            tenant_id: self.tenant_id.clone(),
            workspace_id: self.workspace_id.clone(),
            user_id: self.user_id.clone(),
            role: self.role.clone(),
            token_type: self.token_type.clone(),
            correlation_id: self.correlation_id.clone(),
        }
    }
}

/// What an engine answers a subscription to one of its topics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopicDecision {
    Allowed,
    /// The engine refused (or failed to answer): 403.
    Forbidden,
    /// No loaded engine owns the topic: 404.
    Unknown,
}

/// What one call published, buffered in its unit of work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Publication {
    /// The topic without the engine code.
    pub topic: String,
    /// Only this user's subscriptions hear it (`publish-to-user`, `end-subscriptions`).
    pub user_id: Option<String>,
    pub kind: PublishedKind,
}

impl Publication {
    /// The bytes it holds, counted against the unit's value bytes.
    pub fn bytes(&self) -> usize {
        let payload = match &self.kind {
            PublishedKind::Event { event_type, data } => event_type.len() + data.len(),
            PublishedKind::End => 0,
        };
        self.topic.len() + payload
    }
}

/// Checks a publication of an engine whose patterns are `patterns`.
pub fn check_publication(
    patterns: &TopicPatterns,
    topic: &str,
    event_type: Option<(&str, &str)>,
) -> Result<(), String> {
    if !patterns.matches(topic) {
        return Err(format!(
            "the topic {topic:?} matches none of the engine's topic patterns (describe-topics)"
        ));
    }
    if let Some((event_type, data)) = event_type {
        crate::bus::check_event_type(event_type)?;
        if data.len() > MAX_DATA_BYTES {
            return Err(format!(
                "a realtime event's data is at most {MAX_DATA_BYTES} bytes ({} given)",
                data.len()
            ));
        }
        let parsed: serde_json::Value = serde_json::from_str(data)
            .map_err(|error| format!("a realtime event's data is not JSON: {error}"))?;
        if !parsed.is_object() {
            return Err("a realtime event's data is a JSON object".into());
        }
    }
    Ok(())
}

/// The engines' published events as the core's realtime hub reads them: in commit order
/// (`tessera_storage::realtime_events`), with a wake-up when a unit holding some committed on this
/// host. Cheap to clone.
#[derive(Clone)]
pub struct RealtimeFeed {
    database: Database,
    published: Arc<Notify>,
}

impl RealtimeFeed {
    pub fn new(database: Database, published: Arc<Notify>) -> Self {
        Self {
            database,
            published,
        }
    }

    /// Resolves when a unit of work with publications committed on this host.
    pub fn published(&self) -> tokio::sync::futures::Notified<'_> {
        self.published.notified()
    }

    /// The last position no later commit can precede.
    pub async fn head(&self) -> anyhow::Result<FeedPosition> {
        realtime_events::head(&self.database).await
    }

    /// Up to `limit` events after `after`, in commit order, below the head.
    pub async fn after(
        &self,
        after: FeedPosition,
        limit: u32,
    ) -> anyhow::Result<Vec<PublishedRow>> {
        realtime_events::after(&self.database, after, limit).await
    }

    /// Up to `limit` events of `topic` (full name) in `tenant_id` after `after` and not after
    /// `until`, for `user_id` (its own and everyone's), in commit order; `None` when events of
    /// the topic after `after` were already pruned (the client refetches).
    pub async fn replay(
        &self,
        tenant_id: &str,
        topic: &str,
        user_id: &str,
        after: FeedPosition,
        until: FeedPosition,
        limit: u32,
    ) -> anyhow::Result<Option<Vec<PublishedRow>>> {
        if realtime_events::pruned_after(&self.database, tenant_id, topic, after).await? {
            return Ok(None);
        }
        realtime_events::of_topic_between(
            &self.database,
            tenant_id,
            topic,
            user_id,
            after,
            until,
            limit,
        )
        .await
        .map(Some)
    }

    /// Deletes what the retention no longer keeps ([`RETENTION`], [`RETAINED_PER_TOPIC`]);
    /// how many events.
    pub async fn prune(&self) -> anyhow::Result<u64> {
        let cutoff =
            chrono::Utc::now() - chrono::Duration::from_std(RETENTION).expect("the retention fits");
        self.prune_older_than(cutoff, RETAINED_PER_TOPIC).await
    }

    /// Deletes the events older than `cutoff` beyond the last `keep` of each topic.
    pub async fn prune_older_than(
        &self,
        cutoff: chrono::DateTime<chrono::Utc>,
        keep: i64,
    ) -> anyhow::Result<u64> {
        realtime_events::prune(&self.database, &timestamp(cutoff), keep).await
    }
}

/// The stored form of an instant: RFC 3339 in UTC with milliseconds, so text order is time
/// order.
pub fn timestamp(at: chrono::DateTime<chrono::Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patterns(list: &[&str]) -> TopicPatterns {
        TopicPatterns::parse(&list.iter().map(|p| p.to_string()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn a_star_matches_exactly_one_segment() {
        let chat = patterns(&["conversation.*", "me"]);
        assert!(chat.matches("conversation.c1"));
        assert!(chat.matches("me"));
        assert!(!chat.matches("conversation"));
        assert!(!chat.matches("conversation.c1.extra"));
        assert!(!chat.matches("conversations.c1"));
        assert!(!chat.matches("conversation."));
        assert!(!chat.matches("conversation.c 1"));
    }

    #[test]
    fn the_publish_rate_is_per_engine_and_tenant() {
        let rate = PublishRate::new(2, None);
        assert!(rate.take("chat", "t1").is_ok());
        assert!(rate.take("chat", "t1").is_ok());
        let refused = rate.take("chat", "t1").unwrap_err();
        assert!(
            refused.contains("TESSERA_REALTIME_MAX_PUBLISH_PER_SECOND"),
            "{refused}"
        );
        // Another tenant, another engine: their own budgets.
        assert!(rate.take("chat", "t2").is_ok());
        assert!(rate.take("notes", "t1").is_ok());
    }

    #[test]
    fn malformed_patterns_are_refused() {
        for bad in ["", "a..b", "a.b c", "ä", "a.**"] {
            assert!(
                TopicPatterns::parse(&[bad.to_string()]).is_err(),
                "{bad:?} was accepted"
            );
        }
        assert!(TopicPatterns::parse(&vec!["a".to_string(); 65]).is_err());
    }

    #[test]
    fn publications_need_a_declared_topic_an_event_type_and_a_json_object() {
        let chat = patterns(&["conversation.*"]);
        assert!(
            check_publication(&chat, "conversation.c1", Some(("message.created", "{}"))).is_ok()
        );
        assert!(check_publication(&chat, "other", Some(("message.created", "{}"))).is_err());
        assert!(check_publication(&chat, "conversation.c1", Some(("Bad Type", "{}"))).is_err());
        assert!(
            check_publication(&chat, "conversation.c1", Some(("message.created", "[1]"))).is_err()
        );
        assert!(
            check_publication(&chat, "conversation.c1", Some(("message.created", "{"))).is_err()
        );
        let big = format!("{{\"body\":\"{}\"}}", "x".repeat(MAX_DATA_BYTES));
        assert!(
            check_publication(&chat, "conversation.c1", Some(("message.created", &big))).is_err()
        );
        assert!(check_publication(&chat, "conversation.c1", None).is_ok());
    }
}
