//! The per-host hub: tails the event log once for every connection of this host, in the
//! projections' commit-order-safe reading order (`(transaction_id, position)`, below the
//! PostgreSQL horizon: `projections/worker.rs`), woken by the append signal (local, and
//! `LISTEN/NOTIFY` across hosts: `projections/signal.rs`) or a short poll, maps each event to
//! its topics once (`topics.rs`) and hands it to the subscriptions of its tenant's
//! connections, each through its bounded send queue (full: the connection closes with 4008).
//! It tails the engines' stream the same way (`engine_topics.rs`: what engines' committed calls
//! published, in a table of its own), woken by the engine runtime on this host and, through
//! the same signal's `NOTIFY`, on the others; and prunes that stream to its retention.
//!
//! The hub also checks every connection's credential again (`access.rs`): every
//! `recheck_interval`, and at once for the connections an access change of this host concerns
//! (a logout, a revoked session, a role change, a disabled member or tenant).
//!
//! A subscription with `since` replays its topic from the log in bounded pages up to the
//! position the hub had reached when the subscription was registered, while the hub buffers
//! the topic's later events for it; then the buffer follows, past what the replay sent. Events
//! of a topic are sent in cursor order, none missed and none twice.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU16, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{broadcast, mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::access::{Check, Verdict, Verifier, Viewer};
use super::engine_topics::EngineTopics;
use super::protocol::{self, Cursor, Outbound, Stream, close};
use super::store;
use super::topics::{self, PreparedEvent, Topic};
use crate::projections::signal::EventSignal;
use crate::projections::worker::LogPosition;
use tessera_auth::caller::Caller;
use tessera_auth::sessions::AccessChange;
use tessera_http::usage::UsageMeter;
use tessera_storage::Database;

/// Realtime limits (`TESSERA_REALTIME_*`).
#[derive(Debug, Clone)]
pub struct RealtimeConfig {
    /// Connections of one user in one tenant on this host
    /// (`TESSERA_REALTIME_MAX_CONNECTIONS_PER_USER`, default 20).
    pub max_connections_per_user: u32,
    /// Connections of one tenant on this host (`TESSERA_REALTIME_MAX_CONNECTIONS_PER_TENANT`,
    /// default 2,000).
    pub max_connections_per_tenant: u32,
    /// Subscriptions of one connection (`TESSERA_REALTIME_MAX_SUBSCRIPTIONS`, default 100).
    pub max_subscriptions: u32,
    /// Frames waiting to be sent to one connection (`TESSERA_REALTIME_SEND_QUEUE`, 256).
    pub send_queue: usize,
    /// The largest message a client may send (`TESSERA_REALTIME_MAX_FRAME_BYTES`, 16 KiB):
    /// beyond it the WebSocket closes with 1009.
    pub max_frame_bytes: usize,
    /// How often every connection's token, session and membership are read again (an access
    /// change made on this host is checked at once).
    pub recheck_interval: Duration,
    /// How often the hub reads the log without a wake-up.
    pub poll_interval: Duration,
}

impl Default for RealtimeConfig {
    fn default() -> Self {
        Self {
            max_connections_per_user: 20,
            max_connections_per_tenant: 2_000,
            max_subscriptions: 100,
            send_queue: 256,
            max_frame_bytes: 16 * 1024,
            recheck_interval: Duration::from_secs(2),
            poll_interval: Duration::from_millis(500),
        }
    }
}

/// Events read from the log per batch, and per page of a replay.
const PAGE: u32 = 500;

/// How often the engines' stream is pruned to its retention.
const PRUNE_INTERVAL: Duration = Duration::from_secs(60);

/// The first wait before reading again after a wake-up that read nothing new (doubling up to
/// the poll interval while reads stay empty).
const REREAD_FIRST: Duration = Duration::from_millis(10);

/// The hub: cheap to clone.
#[derive(Clone)]
pub struct Hub(Arc<HubInner>);

struct HubInner {
    database: Database,
    signal: EventSignal,
    verifier: Verifier,
    /// The engines' topics, when the host wires the engine runtime in.
    engines: Option<Arc<dyn EngineTopics>>,
    /// Each tenant's realtime usage and the realtime limits it hit.
    usage: UsageMeter,
    config: RealtimeConfig,
    registry: Mutex<Registry>,
    stopping: CancellationToken,
    started: watch::Sender<bool>,
}

#[derive(Default)]
struct Registry {
    /// The last position of the log fanned out.
    head: LogPosition,
    /// The last position of the engines' stream fanned out.
    engine_head: LogPosition,
    tenants: HashMap<String, HashMap<u64, Arc<Link>>>,
    per_user: HashMap<(String, String), u32>,
    next_id: u64,
}

impl Registry {
    /// The last position of `stream` fanned out.
    fn head_of(&self, stream: Stream) -> LogPosition {
        match stream {
            Stream::Log => self.head,
            Stream::Engines => self.engine_head,
        }
    }

    fn head_mut(&mut self, stream: Stream) -> &mut LogPosition {
        match stream {
            Stream::Log => &mut self.head,
            Stream::Engines => &mut self.engine_head,
        }
    }
}

/// One connection's place in the hub.
pub struct Link {
    id: u64,
    pub tenant_id: String,
    pub user_id: String,
    /// Who is connected, as last checked.
    viewer: Mutex<Viewer>,
    subscriptions: Mutex<HashMap<String, Subscription>>,
    queue: mpsc::Sender<Outbound>,
    closed: CancellationToken,
    close_code: AtomicU16,
    /// Server-Sent Events only: the positions served in each stream (log, engines), which
    /// every event's `id:` names, so `Last-Event-ID` resumes every topic of the stream.
    served: Option<Mutex<(LogPosition, LogPosition)>>,
    /// Event frames queued since the hub last metered them (usage).
    delivered: AtomicU64,
}

struct Subscription {
    topic: Topic,
    state: SubscriptionState,
}

enum SubscriptionState {
    /// Replaying from the log; the hub's events of the topic wait here.
    Replaying(Vec<Arc<PreparedEvent>>),
    /// Sending the hub's events after `last`.
    Live(LogPosition),
}

impl Link {
    fn new(
        id: u64,
        viewer: Viewer,
        queue: mpsc::Sender<Outbound>,
        served: Option<Mutex<(LogPosition, LogPosition)>>,
    ) -> Self {
        Self {
            id,
            tenant_id: viewer.caller.tenant_id.clone(),
            user_id: viewer.caller.user_id.clone(),
            viewer: Mutex::new(viewer),
            subscriptions: Mutex::new(HashMap::new()),
            queue,
            closed: CancellationToken::new(),
            close_code: AtomicU16::new(0),
            served,
            delivered: AtomicU64::new(0),
        }
    }

    /// Who is connected, as last checked.
    pub fn viewer(&self) -> Viewer {
        self.viewer.lock().expect("viewer lock").clone()
    }

    /// The caller now (its role and type as last checked), for authorizing a subscription.
    pub fn caller(&self) -> Caller {
        self.viewer.lock().expect("viewer lock").caller.clone()
    }

    /// Whether an access change concerns this connection.
    fn concerned_by(&self, change: &AccessChange) -> bool {
        match change {
            AccessChange::Sessions(ids) => {
                let viewer = self.viewer.lock().expect("viewer lock");
                ids.contains(&viewer.caller.session_id)
            }
            AccessChange::User(user_id) => *user_id == self.user_id,
            AccessChange::Tenant(tenant_id) => *tenant_id == self.tenant_id,
        }
    }

    /// The topics the connection subscribes to.
    pub fn topics(&self) -> Vec<String> {
        self.subscriptions
            .lock()
            .expect("subscriptions lock")
            .keys()
            .cloned()
            .collect()
    }

    /// Authorizes every subscription again with `authorize` (a topic's name to its refusal, a
    /// status and a message, or `None` when still allowed): each refused one ends with an
    /// `error` frame of that status. Returns the topics dropped. A subscription that cannot be
    /// decided (`authorize` fails) stays.
    pub async fn reauthorize<F, Fut>(&self, mut authorize: F) -> Vec<String>
    where
        F: FnMut(String) -> Fut,
        Fut: Future<Output = anyhow::Result<Option<(u16, String)>>>,
    {
        let mut dropped = Vec::new();
        for name in self.topics() {
            match authorize(name.clone()).await {
                Ok(None) => {}
                Ok(Some((status, message))) => {
                    let removed = self
                        .subscriptions
                        .lock()
                        .expect("subscriptions lock")
                        .remove(&name)
                        .is_some();
                    if removed {
                        self.push(Outbound::control(protocol::error(
                            Some(&name),
                            status,
                            &message,
                        )));
                        dropped.push(name);
                    }
                }
                Err(error) => tracing::warn!(
                    error = format!("{error:#}"),
                    topic = name,
                    "re-authorizing a realtime subscription failed; it stays"
                ),
            }
        }
        dropped
    }

    /// Ends the connection with `code` (the first code given wins).
    pub fn close(&self, code: u16) {
        let _ = self
            .close_code
            .compare_exchange(0, code, Ordering::AcqRel, Ordering::Acquire);
        self.closed.cancel();
    }

    /// Resolves when the connection is to close.
    pub async fn closed(&self) {
        self.closed.cancelled().await;
    }

    /// The code it closes with.
    pub fn close_code(&self) -> u16 {
        self.close_code.load(Ordering::Acquire)
    }

    /// Queues a frame; a full queue closes the connection (4008).
    pub fn push(&self, frame: Outbound) {
        match self.queue.try_send(frame) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(_)) => self.close(close::TOO_SLOW),
            Err(mpsc::error::TrySendError::Closed(_)) => self.closed.cancel(),
        }
    }

    /// Resolves when the receiving side of the queue is gone.
    pub async fn receiver_gone(&self) {
        self.queue.closed().await;
    }

    /// The event frame of `event` in the topic `name`.
    fn frame(
        &self,
        name: &str,
        event: &PreparedEvent,
        kind: &str,
        data: &serde_json::Value,
    ) -> Outbound {
        let stream = stream_of(event);
        let cursor = protocol::encode_cursor(stream, event.position);
        let text = protocol::event(name, &cursor, kind, &event.occurred_at, data);
        let id = match &self.served {
            None => cursor,
            Some(served) => {
                let mut served = served.lock().expect("served lock");
                match stream {
                    Stream::Log => served.0 = served.0.max(event.position),
                    Stream::Engines => served.1 = served.1.max(event.position),
                }
                protocol::encode_pair(served.0, served.1)
            }
        };
        Outbound {
            text,
            event: Some(Box::new((id, kind.to_owned()))),
            reset: false,
        }
    }

    fn deliver(&self, name: &str, event: &PreparedEvent, kind: &str, data: &serde_json::Value) {
        self.push(self.frame(name, event, kind, data));
        self.sent();
    }

    /// Counts an event frame queued for the connection.
    fn sent(&self) {
        self.delivered.fetch_add(1, Ordering::Relaxed);
        metrics::counter!("tessera_realtime_events_sent_total").increment(1);
    }

    /// Hands a fanned-out event to the connection's subscriptions it belongs to; an engine's
    /// end of this user's subscriptions to a topic removes it, with an `error` 403.
    fn offer(&self, event: &Arc<PreparedEvent>, buffer_cap: usize) {
        let mut subscriptions = self.subscriptions.lock().expect("subscriptions lock");
        if let Some(topic) = event.ends_subscription_of(&self.user_id) {
            if subscriptions.remove(topic).is_some() {
                self.push(Outbound::control(protocol::error(
                    Some(topic),
                    403,
                    "The subscription was ended by the topic's engine",
                )));
                metrics::counter!("tessera_realtime_subscriptions_ended_total").increment(1);
            }
            return;
        }
        for (name, subscription) in subscriptions.iter_mut() {
            let Some((kind, data)) = event.in_topic(&subscription.topic, &self.user_id) else {
                continue;
            };
            match &mut subscription.state {
                SubscriptionState::Replaying(buffered) => {
                    if buffered.len() >= buffer_cap {
                        self.close(close::TOO_SLOW);
                    } else {
                        buffered.push(event.clone());
                    }
                }
                SubscriptionState::Live(last) => {
                    if event.position > *last {
                        *last = event.position;
                        self.deliver(name, event, kind, data);
                    }
                }
            }
        }
    }
}

/// A connection limit was reached (4029).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitReached;

/// Why a subscription failed.
#[derive(Debug, thiserror::Error)]
pub enum SubscribeError {
    /// Too many subscriptions on the connection (429).
    #[error("too many subscriptions")]
    TooMany,
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

/// Unregisters its connection when dropped.
pub struct Registration {
    hub: Hub,
    link: Arc<Link>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.hub.unregister(&self.link);
    }
}

/// The stream an event comes from.
fn stream_of(event: &PreparedEvent) -> Stream {
    if event.from_engine() {
        Stream::Engines
    } else {
        Stream::Log
    }
}

/// The stream a topic's events come from.
pub fn stream_of_topic(topic: &Topic) -> Stream {
    match topic {
        Topic::Engine(_) => Stream::Engines,
        _ => Stream::Log,
    }
}

impl Hub {
    /// A hub over the log of `database`, and over the engines' topics when `engines` is given;
    /// it checks connections with `verifier`.
    pub fn new(
        database: Database,
        signal: EventSignal,
        config: RealtimeConfig,
        verifier: Verifier,
        engines: Option<Arc<dyn EngineTopics>>,
        usage: UsageMeter,
    ) -> Self {
        Self(Arc::new(HubInner {
            database,
            signal,
            verifier,
            engines,
            usage,
            config,
            registry: Mutex::new(Registry::default()),
            stopping: CancellationToken::new(),
            started: watch::channel(false).0,
        }))
    }

    pub fn config(&self) -> &RealtimeConfig {
        &self.0.config
    }

    /// The engines' topics, when wired in.
    pub fn engines(&self) -> Option<&dyn EngineTopics> {
        self.0.engines.as_deref()
    }

    /// Resolves when the host is stopping (connections close with 1001).
    pub async fn stopping(&self) {
        self.0.stopping.cancelled().await;
    }

    /// The auth service's verifier the hub checks connections with.
    pub fn verifier(&self) -> &Verifier {
        &self.0.verifier
    }

    /// Registers a connection of the viewer, unless a limit is reached: the connection, its
    /// queue's receiving side, and its registration (dropping it unregisters).
    pub fn connect(
        &self,
        viewer: Viewer,
    ) -> Result<(Arc<Link>, mpsc::Receiver<Outbound>, Registration), LimitReached> {
        self.connect_with(viewer, None)
    }

    /// As [`Self::connect`], for a Server-Sent Events stream resuming after `since` (each
    /// stream it does not name from the hub's head): its events' ids name both streams.
    pub fn connect_events(
        &self,
        viewer: Viewer,
        since: Cursor,
    ) -> Result<(Arc<Link>, mpsc::Receiver<Outbound>, Registration), LimitReached> {
        self.connect_with(viewer, Some(since))
    }

    fn connect_with(
        &self,
        viewer: Viewer,
        events_since: Option<Cursor>,
    ) -> Result<(Arc<Link>, mpsc::Receiver<Outbound>, Registration), LimitReached> {
        let config = &self.0.config;
        let tenant_id = viewer.caller.tenant_id.clone();
        let mut registry = self.0.registry.lock().expect("registry lock");
        let user_key = (tenant_id.clone(), viewer.caller.user_id.clone());
        let of_user = registry.per_user.get(&user_key).copied().unwrap_or(0);
        let of_tenant = registry.tenants.get(&tenant_id).map_or(0, HashMap::len);
        if of_user >= config.max_connections_per_user
            || of_tenant >= config.max_connections_per_tenant as usize
        {
            metrics::counter!("tessera_realtime_refused_total", "reason" => "limit").increment(1);
            self.0
                .usage
                .record(&tenant_id, "limits_hit", "realtime.connections");
            return Err(LimitReached);
        }
        self.0.usage.record(&tenant_id, "realtime", "connections");
        registry.next_id += 1;
        let (queue, receiver) = mpsc::channel(config.send_queue.max(1));
        let served = events_since.map(|since| {
            Mutex::new((
                since.log.unwrap_or(registry.head),
                since.engines.unwrap_or(registry.engine_head),
            ))
        });
        let link = Arc::new(Link::new(registry.next_id, viewer, queue, served));
        registry
            .tenants
            .entry(tenant_id)
            .or_default()
            .insert(link.id, link.clone());
        *registry.per_user.entry(user_key).or_default() += 1;
        metrics::gauge!("tessera_realtime_connections").increment(1.0);
        metrics::counter!("tessera_realtime_connections_total").increment(1);
        Ok((
            link.clone(),
            receiver,
            Registration {
                hub: self.clone(),
                link,
            },
        ))
    }

    fn unregister(&self, link: &Link) {
        let mut registry = self.0.registry.lock().expect("registry lock");
        if let Some(links) = registry.tenants.get_mut(&link.tenant_id) {
            links.remove(&link.id);
            if links.is_empty() {
                registry.tenants.remove(&link.tenant_id);
            }
        }
        let user_key = (link.tenant_id.clone(), link.user_id.clone());
        if let Some(count) = registry.per_user.get_mut(&user_key) {
            *count -= 1;
            if *count == 0 {
                registry.per_user.remove(&user_key);
            }
        }
        drop(registry);
        metrics::gauge!("tessera_realtime_connections").decrement(1.0);
        self.meter_deliveries(link);
        let code = link.close_code();
        if code != 0 {
            metrics::counter!("tessera_realtime_closed_total", "code" => code.to_string())
                .increment(1);
        }
        let limit = match code {
            close::TOO_SLOW => Some("realtime.send_queue"),
            close::TOO_BIG => Some("realtime.frame_size"),
            _ => None,
        };
        if let Some(limit) = limit {
            self.0.usage.record(&link.tenant_id, "limits_hit", limit);
        }
    }

    /// Adds the event frames queued for `link` since the last time to its tenant's usage.
    fn meter_deliveries(&self, link: &Link) {
        let delivered = link.delivered.swap(0, Ordering::Relaxed);
        self.0
            .usage
            .record_amount(&link.tenant_id, "realtime", "events_delivered", delivered);
    }

    /// Adds every connection's event frames queued since the last time to their tenants'
    /// usage (one counter per tenant).
    fn meter_all_deliveries(&self) {
        let registry = self.0.registry.lock().expect("registry lock");
        for (tenant_id, links) in &registry.tenants {
            let delivered: u64 = links
                .values()
                .map(|link| link.delivered.swap(0, Ordering::Relaxed))
                .sum();
            self.0
                .usage
                .record_amount(tenant_id, "realtime", "events_delivered", delivered);
        }
    }

    /// A subscription refused by `TESSERA_REALTIME_MAX_SUBSCRIPTIONS`, for the tenant's usage.
    pub fn subscriptions_limit_hit(&self, tenant_id: &str) {
        self.0
            .usage
            .record(tenant_id, "limits_hit", "realtime.subscriptions");
    }

    /// Subscribes the connection to `topic` (named `name`), answering `subscribed`; with
    /// `since`, first replays the topic's events after it.
    pub async fn subscribe(
        &self,
        link: &Arc<Link>,
        name: &str,
        topic: Topic,
        since: Option<LogPosition>,
    ) -> Result<(), SubscribeError> {
        let mut started = self.0.started.subscribe();
        let _ = started.wait_for(|started| *started).await;
        let stream = stream_of_topic(&topic);
        let head = {
            let registry = self.0.registry.lock().expect("registry lock");
            let mut subscriptions = link.subscriptions.lock().expect("subscriptions lock");
            if !subscriptions.contains_key(name)
                && subscriptions.len() >= self.0.config.max_subscriptions as usize
            {
                return Err(SubscribeError::TooMany);
            }
            let head = registry.head_of(stream);
            let state = match since {
                Some(_) => SubscriptionState::Replaying(Vec::new()),
                None => SubscriptionState::Live(head),
            };
            subscriptions.insert(name.to_owned(), Subscription { topic, state });
            link.push(Outbound::control(protocol::subscribed(name)));
            head
        };
        let Some(since) = since else {
            return Ok(());
        };
        let last = match stream {
            Stream::Log => self.replay(link, name, since, head).await?,
            Stream::Engines => self.replay_engine_topic(link, name, since, head).await?,
        };
        let mut subscriptions = link.subscriptions.lock().expect("subscriptions lock");
        let Some(subscription) = subscriptions.get_mut(name) else {
            return Ok(());
        };
        let buffered =
            match std::mem::replace(&mut subscription.state, SubscriptionState::Live(last)) {
                SubscriptionState::Replaying(buffered) => buffered,
                SubscriptionState::Live(_) => Vec::new(),
            };
        let mut last = last;
        for event in buffered {
            if event.position <= last {
                continue;
            }
            if let Some((kind, data)) = event.in_topic(&subscription.topic, &link.user_id) {
                link.deliver(name, &event, kind, data);
            }
            last = event.position;
        }
        subscription.state = SubscriptionState::Live(last);
        Ok(())
    }

    /// Sends the topic's events after `since` up to `head` from the log, in pages; answers
    /// the last position read.
    async fn replay(
        &self,
        link: &Arc<Link>,
        name: &str,
        since: LogPosition,
        head: LogPosition,
    ) -> anyhow::Result<LogPosition> {
        let topic = Topic::parse(name).expect("a subscribed topic parses");
        let mut last = since;
        while last < head {
            let page =
                store::tenant_events_between(&self.0.database, &link.tenant_id, last, head, PAGE)
                    .await?;
            for event in &page {
                let prepared = topics::prepare(&self.0.database, event).await?;
                if let Some((kind, data)) = prepared.in_topic(&topic, &link.user_id) {
                    let frame = link.frame(name, &prepared, kind, data);
                    if link.queue.send(frame).await.is_err() {
                        return Ok(last);
                    }
                    link.sent();
                }
                last = prepared.position;
            }
            if page.len() < PAGE as usize {
                break;
            }
        }
        Ok(last.max(since))
    }

    /// Sends the engine topic's events after `since` up to `head` from the engines' stream;
    /// answers the last position read. When the retention already deleted some of them, a
    /// `reset` instead (the client refetches), and the subscription goes on from `head`.
    async fn replay_engine_topic(
        &self,
        link: &Arc<Link>,
        name: &str,
        since: LogPosition,
        head: LogPosition,
    ) -> anyhow::Result<LogPosition> {
        let engines = self
            .0
            .engines
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("an engine topic without engines"))?;
        let topic = Topic::Engine(name.to_owned());
        let mut last = since;
        while last < head {
            let page = engines
                .replay(&link.tenant_id, name, &link.user_id, last, head, PAGE)
                .await?;
            let Some(page) = page else {
                let reset = Outbound {
                    text: protocol::reset(name),
                    event: None,
                    reset: true,
                };
                let _ = link.queue.send(reset).await;
                metrics::counter!("tessera_realtime_resets_total").increment(1);
                return Ok(head);
            };
            let complete = page.len() < PAGE as usize;
            for event in page {
                let prepared = topics::prepare_engine_event(event);
                if let Some((kind, data)) = prepared.in_topic(&topic, &link.user_id) {
                    let frame = link.frame(name, &prepared, kind, data);
                    if link.queue.send(frame).await.is_err() {
                        return Ok(last);
                    }
                    link.sent();
                }
                last = prepared.position;
            }
            if complete {
                break;
            }
        }
        Ok(last.max(since))
    }

    /// Ends the connection's subscription to `name`; false when it had none.
    pub fn unsubscribe(&self, link: &Link, name: &str) -> bool {
        link.subscriptions
            .lock()
            .expect("subscriptions lock")
            .remove(name)
            .is_some()
    }

    /// Tails the log and checks connections again until `shutdown`, then tells every
    /// connection the host is stopping.
    pub async fn run(self, shutdown: CancellationToken) {
        tokio::join!(self.recheck(shutdown.clone()), self.tail(shutdown));
    }

    /// Checks connections again until `shutdown`: all of them every `recheck_interval`, and
    /// those an access change of this host concerns as it is announced.
    async fn recheck(&self, shutdown: CancellationToken) {
        let mut changes = Some(self.0.verifier.sessions.access_changes());
        let mut timer = tokio::time::interval(self.0.config.recheck_interval);
        timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        timer.tick().await;
        loop {
            let change = async {
                match changes.as_mut() {
                    Some(changes) => Some(changes.recv().await),
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = shutdown.cancelled() => return,
                _ = timer.tick() => {
                    self.meter_all_deliveries();
                    self.check_links(|_| true).await;
                }
                Some(change) = change => match change {
                    Ok(change) => self.check_links(|link| link.concerned_by(&change)).await,
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        self.check_links(|_| true).await;
                    }
                    Err(broadcast::error::RecvError::Closed) => changes = None,
                },
            }
        }
    }

    /// Checks the credential of every connection `concerned` selects, reading sessions and
    /// memberships from the database: closes those that must close, and re-authorizes the
    /// subscriptions of those whose role or type changed.
    pub async fn check_links(&self, concerned: impl Fn(&Link) -> bool) {
        let links: Vec<Arc<Link>> = {
            let registry = self.0.registry.lock().expect("registry lock");
            registry
                .tenants
                .values()
                .flat_map(HashMap::values)
                .filter(|link| concerned(link))
                .cloned()
                .collect()
        };
        if links.is_empty() {
            return;
        }
        let started = std::time::Instant::now();
        let mut check = Check::fresh(&self.0.verifier);
        for link in &links {
            let viewer = link.viewer();
            match check.verdict(&viewer).await {
                Ok(Verdict::Closes(code)) => link.close(code),
                Ok(Verdict::Stays(caller)) => {
                    if caller.role != viewer.caller.role
                        || caller.token_type != viewer.caller.token_type
                    {
                        link.viewer.lock().expect("viewer lock").caller = caller.clone();
                        self.reauthorize(link, &caller).await;
                    }
                }
                Err(error) => tracing::warn!(
                    error = format!("{error:#}"),
                    "checking a realtime connection again failed; it stays until the next check"
                ),
            }
        }
        metrics::histogram!("tessera_realtime_recheck_seconds")
            .record(started.elapsed().as_secs_f64());
    }

    /// Authorizes every subscription of the connection again for `caller` (its role or type
    /// changed), with the rules of a new subscription: the refused ones end with an `error`
    /// frame (403).
    pub async fn reauthorize(&self, link: &Link, caller: &Caller) -> Vec<String> {
        let database = &self.0.database;
        link.reauthorize(|name| async move {
            match topics::authorize(database, self.engines(), caller, &name).await {
                Ok(_) => Ok(None),
                Err(topics::AuthorizeError::Refused(refusal)) => {
                    Ok(Some(topics::refusal_answer(refusal, &name)))
                }
                Err(topics::AuthorizeError::Internal(error)) => Err(error),
            }
        })
        .await
    }

    /// Tails the log until `shutdown`, then tells every connection the host is stopping.
    async fn tail(&self, shutdown: CancellationToken) {
        let inner = &self.0;
        let (head, engine_head) = loop {
            match self.heads().await {
                Ok(heads) => break heads,
                Err(error) => {
                    tracing::warn!(
                        error = format!("{error:#}"),
                        "realtime cannot read the log's head"
                    );
                    tokio::select! {
                        () = shutdown.cancelled() => {
                            inner.stopping.cancel();
                            return;
                        }
                        () = tokio::time::sleep(Duration::from_secs(1)) => {}
                    }
                }
            }
        };
        {
            let mut registry = inner.registry.lock().expect("registry lock");
            registry.head = head;
            registry.engine_head = engine_head;
        }
        inner.started.send_replace(true);
        let (mut head, mut engine_head) = (head, engine_head);
        let mut prune_at = tokio::time::Instant::now() + PRUNE_INTERVAL;
        // On SQLite (one host) the engines' stream changes only when this host's runtime says
        // so, so an append to the log alone does not read it (fewer readers holding the WAL
        // back from its checkpoints); on PostgreSQL another host's publication arrives as the
        // log's wake-up, so every wake-up reads both.
        let log_wakes_engines = matches!(inner.database.pool(), tessera_storage::Pool::Postgres(_));
        let mut engines_due = true;
        // After a wake-up that read nothing new, the next read comes soon rather than at the
        // poll: on PostgreSQL a commit another host announced is readable only once every
        // transaction that began before it has ended (the commit-order-safe horizon).
        let mut reread: Option<Duration> = None;
        let mut woken = true;
        while !shutdown.is_cancelled() {
            let heads_before = (head, engine_head);
            let notified = inner.signal.wait();
            tokio::pin!(notified);
            notified.as_mut().enable();
            // Registered before reading, so a commit between the read and the wait wakes it.
            let published = match &inner.engines {
                Some(engines) => engines.published(),
                None => Box::pin(std::future::pending()),
            };
            let mut full = false;
            match self.step(head).await {
                Ok((next, more)) => {
                    head = next;
                    full |= more;
                }
                Err(error) => tracing::warn!(
                    error = format!("{error:#}"),
                    "realtime failed to read the log; retrying"
                ),
            }
            if let Some(engines) = inner.engines.as_ref().filter(|_| engines_due) {
                match self.step_engines(engines.as_ref(), engine_head).await {
                    Ok((next, more)) => {
                        engine_head = next;
                        full |= more;
                    }
                    Err(error) => tracing::warn!(
                        error = format!("{error:#}"),
                        "realtime failed to read the engines' stream; retrying"
                    ),
                }
                if tokio::time::Instant::now() >= prune_at {
                    prune_at = tokio::time::Instant::now() + PRUNE_INTERVAL;
                    match engines.prune().await {
                        Ok(pruned) => {
                            metrics::counter!("tessera_realtime_pruned_total").increment(pruned)
                        }
                        Err(error) => tracing::warn!(
                            error = format!("{error:#}"),
                            "realtime failed to prune the engines' stream"
                        ),
                    }
                }
            }
            if full {
                continue;
            }
            let poll = inner.config.poll_interval;
            reread = match reread {
                _ if (head, engine_head) != heads_before => None,
                None if woken => Some(REREAD_FIRST.min(poll)),
                Some(wait) if wait < poll => Some((wait * 2).min(poll)),
                _ => None,
            };
            let sleep = reread.unwrap_or(poll);
            woken = true;
            tokio::select! {
                () = shutdown.cancelled() => break,
                () = &mut notified => engines_due = log_wakes_engines,
                // An engine's call committed publications here: the signal's `NOTIFY` wakes
                // the other hosts' hubs too.
                () = published => {
                    engines_due = true;
                    inner.signal.appended();
                }
                () = tokio::time::sleep(sleep) => {
                    engines_due = true;
                    woken = reread.is_some();
                }
            }
        }
        inner.stopping.cancel();
    }

    /// The heads of the log and of the engines' stream.
    async fn heads(&self) -> anyhow::Result<(LogPosition, LogPosition)> {
        let head = store::log_head(&self.0.database).await?;
        let engine_head = match &self.0.engines {
            Some(engines) => engines.head().await?,
            None => LogPosition::default(),
        };
        Ok((head, engine_head))
    }

    /// Reads and fans out the next batch of the engines' stream after `head`: the new head,
    /// and whether the batch was full.
    async fn step_engines(
        &self,
        engines: &dyn EngineTopics,
        head: LogPosition,
    ) -> anyhow::Result<(LogPosition, bool)> {
        let events = engines.after(head, PAGE).await?;
        let Some(last) = events.last().map(|event| event.position) else {
            return Ok((head, false));
        };
        let full = events.len() >= PAGE as usize;
        let prepared: Vec<_> = events
            .into_iter()
            .map(topics::prepare_engine_event)
            .collect();
        self.fan_out(&prepared, Stream::Engines, last);
        Ok((last, full))
    }

    /// Offers `prepared` (of `stream`, up to `last`) to every connection of their tenants, and
    /// records `last` as the stream's head, under one lock: a connection registered meanwhile
    /// starts after the batch or gets all of it.
    fn fan_out(&self, prepared: &[Arc<PreparedEvent>], stream: Stream, last: LogPosition) {
        let mut registry = self.0.registry.lock().expect("registry lock");
        let cap = self.0.config.send_queue.max(1);
        for event in prepared {
            if let Some(links) = registry.tenants.get(&event.tenant_id) {
                for link in links.values() {
                    link.offer(event, cap);
                }
            }
        }
        *registry.head_mut(stream) = last;
    }

    /// Reads and fans out the next batch after `head`: the new head, and whether the batch
    /// was full (more may follow at once).
    async fn step(&self, head: LogPosition) -> anyhow::Result<(LogPosition, bool)> {
        let inner = &self.0;
        let events = store::events_after(&inner.database, head, PAGE).await?;
        let Some(last) = events.last() else {
            return Ok((head, false));
        };
        let last = LogPosition::of(last);
        let full = events.len() >= PAGE as usize;
        // Every event is prepared: a connection registered while this batch is prepared
        // starts before it, so it gets the batch's events of its tenant too.
        let mut prepared = Vec::with_capacity(events.len());
        for event in &events {
            prepared.push(topics::prepare(&inner.database, event).await?);
        }
        self.fan_out(&prepared, Stream::Log, last);
        Ok((last, full))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::realtime::access::Credential;

    fn viewer(token_type: &str) -> Viewer {
        Viewer {
            caller: Caller {
                user_id: "u1".into(),
                tenant_id: "t1".into(),
                workspace_id: None,
                role: "editor".into(),
                token_type: token_type.into(),
                session_id: "s1".into(),
            },
            granted: ("editor".into(), token_type.into()),
            credential: Credential::Ticket {
                token_expires_at: i64::MAX,
            },
        }
    }

    /// A connection subscribed to `names`, live, and its queue.
    fn subscribed(names: &[&str]) -> (Link, mpsc::Receiver<Outbound>) {
        let (queue, receiver) = mpsc::channel(16);
        let link = Link::new(1, viewer("user"), queue, None);
        for name in names {
            link.subscriptions.lock().unwrap().insert(
                (*name).to_owned(),
                Subscription {
                    topic: Topic::parse(name).unwrap(),
                    state: SubscriptionState::Live(LogPosition::default()),
                },
            );
        }
        (link, receiver)
    }

    fn frames(receiver: &mut mpsc::Receiver<Outbound>) -> Vec<serde_json::Value> {
        let mut frames = Vec::new();
        while let Ok(frame) = receiver.try_recv() {
            frames.push(serde_json::from_str(&frame.text).unwrap());
        }
        frames
    }

    #[tokio::test]
    async fn reauthorizing_drops_the_refused_subscriptions_with_an_error_frame() {
        let (link, mut receiver) = subscribed(&["core.inbox", "core.timeline", "core.entity.e1"]);
        // A rule of the new role: only the inbox stays (as a member turned guest).
        let dropped = link
            .reauthorize(|name| async move {
                Ok((name != "core.inbox").then(|| (403, format!("{name} is not allowed"))))
            })
            .await;
        let mut dropped = dropped;
        dropped.sort();
        assert_eq!(dropped, ["core.entity.e1", "core.timeline"]);
        assert_eq!(link.topics(), ["core.inbox"]);
        let mut errors = frames(&mut receiver);
        errors.sort_by_key(|frame| frame["topic"].as_str().unwrap().to_owned());
        assert_eq!(errors.len(), 2);
        for (frame, topic) in errors.iter().zip(["core.entity.e1", "core.timeline"]) {
            assert_eq!(frame["op"], "error");
            assert_eq!(frame["topic"], topic);
            assert_eq!(frame["status"], 403);
        }
    }

    #[tokio::test]
    async fn a_subscription_that_cannot_be_decided_stays() {
        let (link, mut receiver) = subscribed(&["core.timeline"]);
        let dropped = link
            .reauthorize(|_| async { Err(anyhow::anyhow!("the database is away")) })
            .await;
        assert!(dropped.is_empty());
        assert_eq!(link.topics(), ["core.timeline"]);
        assert!(frames(&mut receiver).is_empty());
    }

    #[tokio::test]
    async fn the_core_topics_rules_keep_a_member_turned_guest_to_the_inbox_and_no_role_narrows_them()
     {
        let (link, mut receiver) = subscribed(&["core.inbox", "core.timeline"]);
        let guest = viewer("guest").caller;
        // An editor demoted to viewer: the core's topics do not narrow by role.
        let member = Caller {
            role: "viewer".into(),
            ..viewer("user").caller
        };
        let rule = |caller: &Caller, name: String| {
            let refusal = topics::permits(caller, &Topic::parse(&name).unwrap()).err();
            async move { Ok(refusal.map(|refusal| topics::refusal_answer(refusal, &name))) }
        };
        // Still a member, of any role: everything stays.
        assert!(
            link.reauthorize(|name| rule(&member, name))
                .await
                .is_empty()
        );
        assert!(frames(&mut receiver).is_empty());
        // A guest now: the timeline goes.
        let dropped = link.reauthorize(|name| rule(&guest, name)).await;
        assert_eq!(dropped, ["core.timeline"]);
        let errors = frames(&mut receiver);
        assert_eq!(errors[0]["status"], 403);
        assert_eq!(errors[0]["topic"], "core.timeline");
    }

    #[test]
    fn access_changes_concern_the_connections_they_name() {
        let (link, _receiver) = subscribed(&[]);
        assert!(link.concerned_by(&AccessChange::Sessions(vec!["s0".into(), "s1".into()])));
        assert!(!link.concerned_by(&AccessChange::Sessions(vec!["s2".into()])));
        assert!(link.concerned_by(&AccessChange::User("u1".into())));
        assert!(!link.concerned_by(&AccessChange::User("u2".into())));
        assert!(link.concerned_by(&AccessChange::Tenant("t1".into())));
        assert!(!link.concerned_by(&AccessChange::Tenant("t2".into())));
    }
}
