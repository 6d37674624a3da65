//! In-memory fakes of every host import, with the signatures of the generated bindings, that
//! the SDK's wrappers call instead of the component's imports when the `test-kit` feature is
//! on. They keep the host's semantics (`wit/engine.wit`): one call, one unit of work buffered
//! over the committed state and committed only when the call succeeds; `compare-and-swap` and
//! `transact` as synchronisation points; scans bounded by a page and a per-call budget; blob
//! quotas; jobs, events and realtime publications in the unit; mail and outbound HTTP not
//! undone.
//!
//! The state is per thread (each Rust test runs on a thread of its own), driven by
//! [`TestHost`](super::TestHost).

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};

/// A job the fake scheduler holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduledJob {
    /// Its id, as `schedule` returned it.
    pub id: String,
    /// The tenant of the call that scheduled it.
    pub tenant_id: String,
    /// When it is due (Unix milliseconds).
    pub at_unix_ms: u64,
    /// Its payload.
    pub payload: Vec<u8>,
    /// Runs so far (the next run is `attempt + 1`).
    pub attempt: u32,
}

/// An event an engine call published and committed.
#[derive(Debug, Clone, PartialEq)]
pub struct PublishedEvent {
    /// The tenant of the call.
    pub tenant_id: String,
    /// Its type.
    pub event_type: String,
    /// Its payload (a JSON object).
    pub payload: serde_json::Value,
    /// The user whose request the call served; `None` from jobs, events and provisioning.
    pub actor_id: Option<String>,
}

/// A realtime event an engine call published (`realtime.publish`, `publish-to-user`) and
/// committed.
#[derive(Debug, Clone, PartialEq)]
pub struct RealtimeEvent {
    /// The tenant of the call: only that tenant's subscribers hear it.
    pub tenant_id: String,
    /// The topic, without the engine code (`conversation.c1`).
    pub topic: String,
    /// `publish-to-user`'s user: only their subscriptions to the topic hear it. `None` from
    /// `publish` (every subscriber).
    pub user_id: Option<String>,
    /// Its type (`message.created`).
    pub event_type: String,
    /// Its data (a JSON object).
    pub data: serde_json::Value,
}

/// A committed `realtime.end-subscriptions`: `user_id`'s subscriptions to `topic` end (an
/// `error` frame with status 403 each).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndedSubscription {
    /// The tenant of the call.
    pub tenant_id: String,
    /// The topic, without the engine code.
    pub topic: String,
    /// Whose subscriptions end.
    pub user_id: String,
}

/// One thing a call sent to the engine's realtime topics, in the order it was sent.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Realtime {
    Event(RealtimeEvent),
    End(EndedSubscription),
}

/// The committed state of one tenant, and the working copy of a call.
#[derive(Debug, Clone, Default)]
pub(crate) struct TenantState {
    pub(crate) entries: BTreeMap<String, Vec<u8>>,
    pub(crate) blobs: BTreeMap<String, Vec<u8>>,
}

/// The call being served: its tenant and its unit of work.
#[derive(Debug)]
pub(crate) struct Call {
    pub(crate) tenant_id: Option<String>,
    pub(crate) actor_id: Option<String>,
    /// The tenant's state as this call sees it: committed values and its buffered writes.
    pub(crate) view: TenantState,
    pub(crate) jobs: Vec<ScheduledJob>,
    pub(crate) events: Vec<PublishedEvent>,
    pub(crate) realtime: Vec<Realtime>,
    pub(crate) scanned: u64,
}

/// Everything the fakes hold on this thread.
#[derive(Debug, Default)]
pub(crate) struct FakeHost {
    pub(crate) tenants: HashMap<String, TenantState>,
    pub(crate) jobs: Vec<ScheduledJob>,
    pub(crate) published: Vec<PublishedEvent>,
    pub(crate) realtime: Vec<Realtime>,
    /// The engine's topic patterns (`describe-topics`), each split into its segments.
    pub(crate) topics: Vec<Vec<String>>,
    pub(crate) settings: HashMap<String, String>,
    pub(crate) outbound_hosts: Vec<String>,
    pub(crate) responses: Vec<CannedResponse>,
    pub(crate) requests: Vec<outbound_http::OutboundRequest>,
    pub(crate) mail_allowed: bool,
    pub(crate) mails: Vec<mail_transport::OutgoingMail>,
    pub(crate) logs: Vec<(log::Level, String)>,
    pub(crate) call: Option<Call>,
    pub(crate) next_id: u64,
}

/// An answer `fetch` gives to a method and URL.
#[derive(Debug, Clone)]
pub(crate) struct CannedResponse {
    pub(crate) method: String,
    pub(crate) url: String,
    pub(crate) result: Result<outbound_http::OutboundResponse, String>,
}

thread_local! {
    pub(crate) static HOST: RefCell<FakeHost> = RefCell::new(FakeHost::default());
}

/// Runs `f` on this thread's fake host.
pub(crate) fn with_host<T>(f: impl FnOnce(&mut FakeHost) -> T) -> T {
    HOST.with(|host| f(&mut host.borrow_mut()))
}

impl FakeHost {
    /// The host's own settings (`settings.get` names with a dot) and their defaults.
    pub(crate) fn host_setting(&self, name: &str) -> Option<String> {
        let default = match name {
            "webhook.retry-schedule-ms" => "30000,120000,600000,1800000",
            "engine.max-body-bytes" => "8388608",
            "storage.scan-page" => "1000",
            "storage.scan-budget" => "10000",
            "mail-transport.available" => {
                return Some(self.mail_allowed.to_string());
            }
            _ => return None,
        };
        Some(default.to_owned())
    }

    fn limit(&self, name: &str) -> u64 {
        self.settings
            .get(name)
            .cloned()
            .or_else(|| self.host_setting(name))
            .and_then(|value| value.parse().ok())
            .unwrap_or(u64::MAX)
    }

    /// A fresh id (UUID-shaped, increasing).
    pub(crate) fn new_id(&mut self) -> String {
        self.next_id += 1;
        format!("00000000-0000-7000-8000-{:012x}", self.next_id)
    }

    /// Starts serving a call in `tenant_id` (`None`: outside a tenant).
    pub(crate) fn begin(&mut self, tenant_id: Option<&str>, actor_id: Option<&str>) {
        let view = tenant_id
            .map(|tenant| self.tenants.get(tenant).cloned().unwrap_or_default())
            .unwrap_or_default();
        self.call = Some(Call {
            tenant_id: tenant_id.map(str::to_owned),
            actor_id: actor_id.map(str::to_owned),
            view,
            jobs: Vec::new(),
            events: Vec::new(),
            realtime: Vec::new(),
            scanned: 0,
        });
    }

    /// Commits what the current call buffered since its last synchronisation point.
    fn commit(&mut self) {
        let Some(call) = self.call.as_mut() else {
            return;
        };
        if let Some(tenant_id) = &call.tenant_id {
            self.tenants.insert(tenant_id.clone(), call.view.clone());
        }
        self.jobs.append(&mut call.jobs);
        self.published.append(&mut call.events);
        self.realtime.append(&mut call.realtime);
    }

    /// Ends the current call: its unit commits when it `succeeded`, else nothing it buffered
    /// since its last synchronisation point is kept.
    pub(crate) fn end(&mut self, succeeded: bool) {
        if succeeded {
            self.commit();
        }
        self.call = None;
    }

    fn call(&mut self) -> Result<&mut Call, String> {
        let call = self.call.as_mut().ok_or(
            "a host import was used outside an engine call (drive the engine through TestHost)",
        )?;
        if call.tenant_id.is_none() {
            return Err("storage is scoped to a tenant; this call has none".into());
        }
        Ok(call)
    }
}

fn with_call<T>(f: impl FnOnce(&mut Call) -> Result<T, String>) -> Result<T, String> {
    with_host(|host| f(host.call()?))
}

/// The fake of `tessera:engine/storage`.
pub mod storage {
    pub use crate::generated::bindings::tessera::engine::storage::Transaction;

    use super::{with_call, with_host};

    /// `get`.
    pub fn get(key: &str) -> Result<Option<Vec<u8>>, String> {
        with_call(|call| Ok(call.view.entries.get(key).cloned()))
    }

    /// `get-many`: at most 1000 keys.
    pub fn get_many(keys: &[String]) -> Result<Vec<Option<Vec<u8>>>, String> {
        if keys.len() > 1000 {
            return Err(format!(
                "get-many reads at most 1000 keys, not {}",
                keys.len()
            ));
        }
        with_call(|call| {
            Ok(keys
                .iter()
                .map(|key| call.view.entries.get(key).cloned())
                .collect())
        })
    }

    /// `set`.
    pub fn set(key: &str, value: &[u8]) -> Result<(), String> {
        with_call(|call| {
            call.view.entries.insert(key.to_owned(), value.to_vec());
            Ok(())
        })
    }

    /// `delete`: true when the key existed.
    pub fn delete(key: &str) -> Result<bool, String> {
        with_call(|call| Ok(call.view.entries.remove(key).is_some()))
    }

    /// `scan`: at most a page (`storage.scan-page`) and what the call's budget
    /// (`storage.scan-budget`) has left.
    pub fn scan(
        prefix: &str,
        after: Option<&str>,
        limit: u32,
        reverse: bool,
    ) -> Result<Vec<(String, Vec<u8>)>, String> {
        with_host(|host| {
            let page = host.limit("storage.scan-page");
            let budget = host.limit("storage.scan-budget");
            let call = host.call()?;
            let left = budget.saturating_sub(call.scanned);
            if left == 0 {
                return Err(format!(
                    "scan budget exhausted: this call scanned {budget} entries"
                ));
            }
            let take = u64::from(limit).min(page).min(left);
            let take = usize::try_from(take).unwrap_or(usize::MAX);
            let under = call
                .view
                .entries
                .range(prefix.to_owned()..)
                .take_while(|(key, _)| key.starts_with(prefix));
            let entries: Vec<(String, Vec<u8>)> = if reverse {
                under
                    .filter(|(key, _)| after.is_none_or(|after| key.as_str() < after))
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .take(take)
                    .map(|(key, value)| (key.clone(), value.clone()))
                    .collect()
            } else {
                under
                    .filter(|(key, _)| after.is_none_or(|after| key.as_str() > after))
                    .take(take)
                    .map(|(key, value)| (key.clone(), value.clone()))
                    .collect()
            };
            call.scanned += entries.len() as u64;
            Ok(entries)
        })
    }

    /// `delete-prefix`: how many entries the call's view held.
    pub fn delete_prefix(prefix: &str) -> Result<u64, String> {
        with_call(|call| {
            let before = call.view.entries.len();
            call.view.entries.retain(|key, _| !key.starts_with(prefix));
            Ok((before - call.view.entries.len()) as u64)
        })
    }

    /// `compare-and-swap`: a synchronisation point.
    pub fn compare_and_swap(
        key: &str,
        expected: Option<&[u8]>,
        value: Option<&[u8]>,
    ) -> Result<bool, String> {
        with_host(|host| {
            let call = host.call()?;
            if call.view.entries.get(key).map(Vec::as_slice) != expected {
                return Ok(false);
            }
            match value {
                Some(value) => call.view.entries.insert(key.to_owned(), value.to_vec()),
                None => call.view.entries.remove(key),
            };
            host.commit();
            Ok(true)
        })
    }

    /// `write-batch`: the sets, then the deletes, and the jobs, in the call's unit.
    pub fn write_batch(
        sets: &[(String, Vec<u8>)],
        deletes: &[String],
        jobs: &[(u64, Vec<u8>)],
    ) -> Result<Vec<String>, String> {
        super::scheduler::check_jobs(jobs)?;
        with_host(|host| {
            let ids: Vec<String> = jobs.iter().map(|_| host.new_id()).collect();
            let call = host.call()?;
            for (key, value) in sets {
                call.view.entries.insert(key.clone(), value.clone());
            }
            for key in deletes {
                call.view.entries.remove(key);
            }
            super::scheduler::buffer_jobs(call, &ids, jobs);
            Ok(ids)
        })
    }

    /// `transact`: a synchronisation point when its expectations hold.
    pub fn transact(transaction: &Transaction) -> Result<Option<Vec<String>>, String> {
        super::scheduler::check_jobs(&transaction.jobs)?;
        with_host(|host| {
            let ids: Vec<String> = transaction.jobs.iter().map(|_| host.new_id()).collect();
            let call = host.call()?;
            let holds = transaction
                .expect
                .iter()
                .all(|(key, expected)| call.view.entries.get(key) == expected.as_ref());
            if !holds {
                return Ok(None);
            }
            for (key, _) in &transaction.add {
                let written = transaction.sets.iter().any(|(set, _)| set == key)
                    || transaction.deletes.contains(key);
                if written {
                    return Err(format!(
                        "{key} is both counted and set or deleted in one transaction"
                    ));
                }
            }
            let mut view = call.view.entries.clone();
            for (key, value) in &transaction.sets {
                view.insert(key.clone(), value.clone());
            }
            for key in &transaction.deletes {
                view.remove(key);
            }
            for (key, amount) in &transaction.add {
                let current = match view.get(key) {
                    None => 0,
                    Some(value) => std::str::from_utf8(value)
                        .ok()
                        .and_then(|text| text.trim().parse::<i64>().ok())
                        .ok_or_else(|| format!("{key} does not hold an integer"))?,
                };
                let sum = current
                    .checked_add(*amount)
                    .ok_or_else(|| format!("adding {amount} to {key} ({current}) overflows"))?;
                view.insert(key.clone(), sum.to_string().into_bytes());
            }
            call.view.entries = view;
            super::scheduler::buffer_jobs(call, &ids, &transaction.jobs);
            host.commit();
            Ok(Some(ids))
        })
    }
}

/// The fake of `tessera:engine/blobs`.
pub mod blobs {
    use super::{Call, with_call};

    fn usage_of(call: &Call) -> u64 {
        call.view.blobs.values().map(|blob| blob.len() as u64).sum()
    }

    /// `put`: false, and nothing added, over `quota_bytes`.
    pub fn put(
        key: &str,
        content: &[u8],
        quota_bytes: Option<u64>,
        sets: &[(String, Vec<u8>)],
    ) -> Result<bool, String> {
        with_call(|call| {
            let replaced = call.view.blobs.get(key).map_or(0, |blob| blob.len() as u64);
            let total = usage_of(call) - replaced + content.len() as u64;
            if quota_bytes.is_some_and(|quota| total > quota) {
                return Ok(false);
            }
            call.view.blobs.insert(key.to_owned(), content.to_vec());
            for (key, value) in sets {
                call.view.entries.insert(key.clone(), value.clone());
            }
            Ok(true)
        })
    }

    /// `get`.
    pub fn get(key: &str) -> Result<Option<Vec<u8>>, String> {
        with_call(|call| Ok(call.view.blobs.get(key).cloned()))
    }

    /// `delete`: how many of the blobs existed.
    pub fn delete(keys: &[String], deletes: &[String]) -> Result<u64, String> {
        with_call(|call| {
            let removed = keys
                .iter()
                .filter(|key| call.view.blobs.remove(key.as_str()).is_some())
                .count();
            for key in deletes {
                call.view.entries.remove(key);
            }
            Ok(removed as u64)
        })
    }

    /// `delete-prefix`.
    pub fn delete_prefix(prefix: &str) -> Result<u64, String> {
        with_call(|call| {
            let before = call.view.blobs.len();
            call.view.blobs.retain(|key, _| !key.starts_with(prefix));
            Ok((before - call.view.blobs.len()) as u64)
        })
    }

    /// `usage`.
    pub fn usage() -> Result<u64, String> {
        with_call(|call| Ok(usage_of(call)))
    }
}

/// The fake of `tessera:engine/scheduler`.
pub mod scheduler {
    use super::{Call, ScheduledJob, with_host};

    /// The host's limits of a job: a payload of at most 256 KiB, due before the year 10000.
    pub(crate) fn check_jobs(jobs: &[(u64, Vec<u8>)]) -> Result<(), String> {
        const MAX_PAYLOAD_BYTES: usize = 256 * 1024;
        const YEAR_10000_MS: u64 = 253_402_300_800_000;
        for (at_unix_ms, payload) in jobs {
            if payload.len() > MAX_PAYLOAD_BYTES {
                return Err(format!(
                    "job payloads are at most {MAX_PAYLOAD_BYTES} bytes"
                ));
            }
            if *at_unix_ms >= YEAR_10000_MS {
                return Err(format!("{at_unix_ms} is not a time the scheduler accepts"));
            }
        }
        Ok(())
    }

    pub(crate) fn buffer_jobs(call: &mut Call, ids: &[String], jobs: &[(u64, Vec<u8>)]) {
        let tenant_id = call.tenant_id.clone().unwrap_or_default();
        for (id, (at_unix_ms, payload)) in ids.iter().zip(jobs) {
            call.jobs.push(ScheduledJob {
                id: id.clone(),
                tenant_id: tenant_id.clone(),
                at_unix_ms: *at_unix_ms,
                payload: payload.clone(),
                attempt: 0,
            });
        }
    }

    /// `schedule`: in the call's unit.
    pub fn schedule(at_unix_ms: u64, payload: &[u8]) -> Result<String, String> {
        check_jobs(&[(at_unix_ms, payload.to_vec())])?;
        with_host(|host| {
            let id = host.new_id();
            let call = host.call()?;
            buffer_jobs(
                call,
                std::slice::from_ref(&id),
                &[(at_unix_ms, payload.to_vec())],
            );
            Ok(id)
        })
    }

    /// `cancel`: a job of this call's unit is taken out of it; a committed one is cancelled at
    /// once, whatever the call does next.
    pub fn cancel(job_id: &str) -> Result<bool, String> {
        with_host(|host| {
            let call = host.call()?;
            let tenant_id = call.tenant_id.clone();
            let buffered = call.jobs.len();
            call.jobs.retain(|job| job.id != job_id);
            if call.jobs.len() < buffered {
                return Ok(true);
            }
            let committed = host.jobs.len();
            host.jobs
                .retain(|job| !(job.id == job_id && Some(&job.tenant_id) == tenant_id.as_ref()));
            Ok(host.jobs.len() < committed)
        })
    }
}

/// The fake of `tessera:engine/events`.
pub mod events {
    use super::{PublishedEvent, with_host};

    /// `publish`: `payload` must be a JSON object; the event exists once the call commits.
    pub fn publish(event_type: &str, payload: &str) -> Result<(), String> {
        let payload: serde_json::Value = serde_json::from_str(payload)
            .map_err(|error| format!("the payload is not JSON: {error}"))?;
        if !payload.is_object() {
            return Err("the payload must be a JSON object".into());
        }
        with_host(|host| {
            let call = host.call()?;
            call.events.push(PublishedEvent {
                tenant_id: call.tenant_id.clone().unwrap_or_default(),
                event_type: event_type.to_owned(),
                payload,
                actor_id: call.actor_id.clone(),
            });
            Ok(())
        })
    }
}

/// The fake of `tessera:engine/realtime`, with the host's checks: a topic one of the engine's
/// patterns match, an event type as the bus's, `data` a JSON object of at most 64 KiB, a user
/// id of 1 to 200 bytes. What a call publishes is kept once it commits.
pub mod realtime {
    use super::{EndedSubscription, Realtime, RealtimeEvent, with_host};

    /// The most bytes of an event's `data`.
    const MAX_DATA_BYTES: usize = 64 * 1024;

    /// A segment of a topic: 1 to 64 ASCII letters, digits, `_` or `-`.
    fn valid_segment(segment: &str) -> bool {
        (1..=64).contains(&segment.len())
            && segment
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
    }

    /// A topic pattern, split into its segments, or why it is malformed (the host refuses to
    /// load an engine declaring one).
    pub(crate) fn parse_pattern(pattern: &str) -> Result<Vec<String>, String> {
        let segments: Vec<String> = pattern.split('.').map(str::to_owned).collect();
        let valid = pattern.len() <= 200
            && segments
                .iter()
                .all(|segment| segment == "*" || valid_segment(segment));
        if valid {
            Ok(segments)
        } else {
            Err(format!("the topic pattern {pattern:?} is malformed"))
        }
    }

    /// Whether `topic` (without the engine code) is one the `patterns` match.
    pub(crate) fn matches(patterns: &[Vec<String>], topic: &str) -> bool {
        if topic.len() > 200 || !topic.split('.').all(valid_segment) {
            return false;
        }
        let segments: Vec<&str> = topic.split('.').collect();
        patterns.iter().any(|pattern| {
            pattern.len() == segments.len()
                && pattern
                    .iter()
                    .zip(&segments)
                    .all(|(expected, segment)| expected == "*" || expected == segment)
        })
    }

    fn check_event(event_type: &str, data: &str) -> Result<serde_json::Value, String> {
        let well_formed = (1..=100).contains(&event_type.len())
            && event_type.as_bytes()[0].is_ascii_lowercase()
            && event_type
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b));
        if !well_formed {
            return Err(format!(
                "{event_type:?} is not an event type (1-100 lower-case letters, digits, '.', '_' \
                 or '-', starting with a letter)"
            ));
        }
        if data.len() > MAX_DATA_BYTES {
            return Err(format!(
                "a realtime event's data is at most {MAX_DATA_BYTES} bytes ({} given)",
                data.len()
            ));
        }
        let data: serde_json::Value = serde_json::from_str(data)
            .map_err(|error| format!("a realtime event's data is not JSON: {error}"))?;
        if !data.is_object() {
            return Err("a realtime event's data is a JSON object".into());
        }
        Ok(data)
    }

    /// Buffers `sent` in the call's unit after the checks every realtime import makes.
    fn buffer(
        topic: &str,
        user_id: Option<&str>,
        sent: impl FnOnce(String) -> Realtime,
    ) -> Result<(), String> {
        with_host(|host| {
            if !matches(&host.topics, topic) {
                return Err(format!(
                    "the topic {topic:?} matches none of the engine's topic patterns \
                     (describe-topics)"
                ));
            }
            if user_id.is_some_and(|user_id| user_id.is_empty() || user_id.len() > 200) {
                return Err("a user id is 1 to 200 bytes".into());
            }
            let call = host.call()?;
            let tenant_id = call.tenant_id.clone().unwrap_or_default();
            call.realtime.push(sent(tenant_id));
            Ok(())
        })
    }

    /// `publish`.
    pub fn publish(topic: &str, event_type: &str, data: &str) -> Result<(), String> {
        let data = check_event(event_type, data)?;
        buffer(topic, None, |tenant_id| {
            Realtime::Event(RealtimeEvent {
                tenant_id,
                topic: topic.to_owned(),
                user_id: None,
                event_type: event_type.to_owned(),
                data,
            })
        })
    }

    /// `publish-to-user`.
    pub fn publish_to_user(
        user_id: &str,
        topic: &str,
        event_type: &str,
        data: &str,
    ) -> Result<(), String> {
        let data = check_event(event_type, data)?;
        buffer(topic, Some(user_id), |tenant_id| {
            Realtime::Event(RealtimeEvent {
                tenant_id,
                topic: topic.to_owned(),
                user_id: Some(user_id.to_owned()),
                event_type: event_type.to_owned(),
                data,
            })
        })
    }

    /// `end-subscriptions`.
    pub fn end_subscriptions(topic: &str, user_id: &str) -> Result<(), String> {
        buffer(topic, Some(user_id), |tenant_id| {
            Realtime::End(EndedSubscription {
                tenant_id,
                topic: topic.to_owned(),
                user_id: user_id.to_owned(),
            })
        })
    }
}

/// The fake of `tessera:engine/outbound-http`: canned answers, every request recorded.
pub mod outbound_http {
    pub use crate::generated::bindings::tessera::engine::outbound_http::{
        OutboundRequest, OutboundResponse,
    };

    use super::with_host;

    /// The scheme, host (lowercase; an IPv6 address in its brackets) and port of an
    /// `http(s)://` URL, or why it has none.
    fn origin_of(url: &str) -> Result<(&'static str, String, u16), String> {
        let (scheme, default_port, rest) = if let Some(rest) = url.strip_prefix("https://") {
            ("https", 443, rest)
        } else if let Some(rest) = url.strip_prefix("http://") {
            ("http", 80, rest)
        } else {
            return Err(format!("{url} is not an http(s) URL"));
        };
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        let authority = authority.rsplit('@').next().unwrap_or_default();
        let (host, port) = match authority.rfind(']') {
            Some(end) if authority.starts_with('[') => {
                (&authority[..=end], authority[end + 1..].strip_prefix(':'))
            }
            _ => match authority.split_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (authority, None),
            },
        };
        if host.is_empty() {
            return Err(format!("{url} names no host"));
        }
        let port = match port {
            None | Some("") => default_port,
            Some(port) => port
                .parse()
                .map_err(|_| format!("{url} has an invalid port"))?,
        };
        Ok((scheme, host.to_ascii_lowercase(), port))
    }

    /// True when `host` matches the host part of a pattern (`*` for any, `*.` for
    /// subdomains).
    fn host_matches(pattern: &str, host: &str) -> bool {
        pattern == "*"
            || pattern.eq_ignore_ascii_case(host)
            || pattern.strip_prefix("*.").is_some_and(|domain| {
                host.len() > domain.len() + 1
                    && host.ends_with(&format!(".{}", domain.to_ascii_lowercase()))
            })
    }

    /// True when the origin matches one of the engine's `outbound-hosts` patterns, as the host
    /// matches them: `scheme://host[:port]`, the port `*` for any and none for the scheme's
    /// default. A pattern without a scheme matches the host alone, on any scheme and port.
    fn allowed(patterns: &[String], (scheme, host, port): (&str, &str, u16)) -> bool {
        patterns.iter().any(|pattern| {
            let Some((pattern_scheme, rest)) = pattern.split_once("://") else {
                return host_matches(pattern, host);
            };
            let rest = rest.strip_suffix('/').unwrap_or(rest);
            let (pattern_host, pattern_port) = match rest.rfind(']') {
                Some(end) if rest.starts_with('[') => {
                    (&rest[..=end], rest[end + 1..].strip_prefix(':'))
                }
                _ => match rest.rsplit_once(':') {
                    Some((pattern_host, pattern_port)) => (pattern_host, Some(pattern_port)),
                    None => (rest, None),
                },
            };
            let default_port = if scheme == "https" { 443 } else { 80 };
            let port_matches = match pattern_port {
                None => port == default_port,
                Some("*") => true,
                Some(expected) => expected.parse() == Ok(port),
            };
            pattern_scheme.eq_ignore_ascii_case(scheme)
                && port_matches
                && host_matches(pattern_host, host)
        })
    }

    /// `check-target`: a valid http(s) URL the engine's outbound hosts allow.
    pub fn check_target(url: &str) -> Result<(), String> {
        let (scheme, host, port) = origin_of(url)?;
        with_host(|fake| {
            if allowed(&fake.outbound_hosts, (scheme, &host, port)) {
                Ok(())
            } else {
                Err(format!(
                    "{host} is not among the engine's outbound hosts {:?}",
                    fake.outbound_hosts
                ))
            }
        })
    }

    /// `fetch`: the canned answer for the method and URL (`TestHost::respond`), the request
    /// recorded either way.
    pub fn fetch(request: &OutboundRequest) -> Result<OutboundResponse, String> {
        check_target(&request.url)?;
        with_host(|fake| {
            fake.requests.push(request.clone());
            fake.responses
                .iter()
                .find(|canned| {
                    canned.method.eq_ignore_ascii_case(&request.method) && canned.url == request.url
                })
                .map(|canned| canned.result.clone())
                .unwrap_or_else(|| {
                    Err(format!(
                        "no answer for {} {} (give one with TestHost::respond)",
                        request.method, request.url
                    ))
                })
        })
    }

    #[cfg(test)]
    mod tests {
        use super::{allowed, origin_of};

        fn allows(patterns: &[&str], url: &str) -> bool {
            let patterns: Vec<String> = patterns
                .iter()
                .map(|pattern| (*pattern).to_owned())
                .collect();
            let (scheme, host, port) = origin_of(url).unwrap();
            allowed(&patterns, (scheme, &host, port))
        }

        #[test]
        fn patterns_match_as_the_host_matches_them() {
            // chat's: any HTTPS origin, any port.
            assert!(allows(&["https://*:*"], "https://hooks.example.com/in"));
            assert!(allows(&["https://*:*"], "https://127.0.0.1:8443/in"));
            assert!(!allows(&["https://*:*"], "http://hooks.example.com/in"));
            // No port: the scheme's default only.
            assert!(allows(
                &["https://api.example.com"],
                "https://API.example.com/v1"
            ));
            assert!(!allows(
                &["https://api.example.com"],
                "https://api.example.com:8443/"
            ));
            assert!(allows(
                &["http://127.0.0.1:8080"],
                "http://127.0.0.1:8080/x"
            ));
            assert!(!allows(
                &["http://127.0.0.1:8080"],
                "http://127.0.0.1:8081/x"
            ));
            assert!(allows(&["https://*.example.com"], "https://a.example.com/"));
            assert!(!allows(&["https://*.example.com"], "https://example.com/"));
            assert!(allows(&["https://[::1]:*"], "https://[::1]:9/"));
            // A bare host: any scheme and port.
            assert!(allows(&["*.example.com"], "http://a.example.com:81/"));
            assert!(!allows(&[], "https://a.example.com/"));
        }
    }
}

/// The fake of `tessera:engine/vault`: sealed bytes open only here.
pub mod vault {
    const SEALED: &[u8] = b"tessera-test-vault:";

    /// `seal`.
    pub fn seal(plaintext: &[u8]) -> Result<Vec<u8>, String> {
        let mut sealed = SEALED.to_vec();
        sealed.extend(plaintext.iter().map(|byte| byte ^ 0x5a));
        Ok(sealed)
    }

    /// `open`: `err` for bytes this vault did not seal.
    pub fn open(sealed: &[u8]) -> Result<Vec<u8>, String> {
        let content = sealed
            .strip_prefix(SEALED)
            .ok_or("the vault did not seal these bytes")?;
        Ok(content.iter().map(|byte| byte ^ 0x5a).collect())
    }
}

/// The fake of `tessera:engine/settings`: the test's values, else the declared defaults, else
/// the host's own settings.
pub mod settings {
    use super::with_host;

    /// `get`.
    pub fn get(name: &str) -> Option<String> {
        with_host(|host| {
            host.settings
                .get(name)
                .cloned()
                .or_else(|| host.host_setting(name))
        })
    }
}

/// The fake of `tessera:engine/mail-transport`: mail handed over is kept (and not undone).
pub mod mail_transport {
    pub use crate::generated::bindings::tessera::engine::mail_transport::OutgoingMail;

    use super::with_host;

    /// `send`: `err` unless the test allowed mail (`TestHost::allow_mail`).
    pub fn send(mail: &OutgoingMail) -> Result<(), String> {
        with_host(|host| {
            if !host.mail_allowed {
                return Err(
                    "mail transport unavailable: no relay (allow it with TestHost::allow_mail)"
                        .into(),
                );
            }
            if mail.recipients.is_empty() || mail.recipients.len() > 100 {
                return Err("a mail has 1 to 100 recipients".into());
            }
            host.mails.push(mail.clone());
            Ok(())
        })
    }
}

/// The fake of `tessera:engine/log`: kept for the test to read.
pub mod log {
    pub use crate::generated::bindings::tessera::engine::log::Level;

    use super::with_host;

    /// `log`.
    pub fn log(level: Level, message: &str) {
        with_host(|host| host.logs.push((level, message.to_owned())));
    }
}
