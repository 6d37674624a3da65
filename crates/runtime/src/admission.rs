//! Admission control in front of every engine call: a global budget of calls running at once
//! (the size of the instance pool, so instantiation never fails for lack of a slot), and a
//! share of it per tenant, so one tenant flooding slow calls cannot take every slot.
//!
//! One small scheduler behind a mutex decides who runs. A call starts at once when its tenant
//! is below its share, nobody of that tenant waits before it and the global budget has room;
//! otherwise it waits in its tenant's FIFO queue. Whenever a call ends, the freed slot goes to
//! the waiting tenant with the fewest calls running (the oldest waiter first among equals) that
//! is still below its share. So a tenant below its share never waits behind another tenant's
//! queue: while one tenant floods, the global budget is never full (a share is less than the
//! pool), and when several tenants are at their share and the pool is full, a quiet tenant
//! gets the next slot that frees. HTTP requests wait in a bounded queue for a bounded time
//! (then 503 with `Retry-After`); jobs and event deliveries wait without a length bound (the
//! worker's concurrency bounds them) and are handed back without counting an attempt when no
//! slot came in time.
//!
//! An engine may have a cap of its own on its calls alive at once
//! (`TESSERA_ENGINE_LIMITS__<CODE>__MAX_INSTANCES`): a call of an engine at its cap waits like
//! one of a tenant at its share, and the waiters behind it in its tenant's queue that call
//! other engines are not held up by it (the first waiter whose engine has room goes first).
//!
//! The tenant share can change while calls run ([`Admission::set_tenant_share`]: a cluster's
//! share divided among its live hosts): a lower share holds new calls back until the tenant's
//! running calls drop below it (none is stopped), a higher one admits its waiters at once.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::oneshot;

/// The limits of admission (from [`crate::config::RuntimeConfig`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdmissionLimits {
    /// Calls running at once on this host, all tenants together (the instance pool's size).
    pub capacity: usize,
    /// Calls one tenant may run at once (at most `capacity`).
    pub tenant_share: usize,
    /// HTTP requests of one tenant that may wait beyond its share; more are refused at once.
    pub tenant_queue: usize,
}

/// Who a waiting call is, which decides the queue bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallKind {
    /// An HTTP request: counted against the tenant's queue length.
    Request,
    /// A job, an event delivery, a lifecycle call or `describe`: not counted.
    Background,
}

/// Why a call was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("the tenant's queue of waiting engine calls is full")]
    QueueFull,
    #[error("no engine capacity became free within {0:?}")]
    TimedOut(Duration),
}

/// A tenant's key in the scheduler: `None` for calls outside any tenant (`describe`), which
/// have no share of their own beyond the global budget.
type TenantKey = Option<String>;

struct Waiter {
    ticket: u64,
    kind: CallKind,
    /// Its engine, when that engine has a cap of its own.
    engine: EngineKey,
    grant: oneshot::Sender<()>,
}

/// A capped engine's code; `None` for calls of engines without a cap of their own.
type EngineKey = Option<String>;

#[derive(Default)]
struct TenantState {
    running: usize,
    waiters: VecDeque<Waiter>,
    /// Waiters of kind [`CallKind::Request`].
    queued_requests: usize,
}

#[derive(Default)]
struct State {
    running: usize,
    next_ticket: u64,
    tenants: HashMap<TenantKey, TenantState>,
    /// Calls running per capped engine.
    engines: HashMap<String, usize>,
}

struct Inner {
    /// The limits as built; the tenant share in force is `tenant_share`.
    limits: AdmissionLimits,
    /// Calls one tenant may run at once now (between 1 and the capacity).
    tenant_share: AtomicUsize,
    /// Engine code → its calls alive at once, for the engines with a cap of their own.
    engine_caps: HashMap<String, usize>,
    state: Mutex<State>,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn share_of(&self, key: &TenantKey) -> usize {
        match key {
            Some(_) => self.tenant_share.load(Ordering::Relaxed),
            None => self.limits.capacity,
        }
    }

    /// Whether a call of `engine` may start as far as its engine's cap goes.
    fn engine_room(&self, engines: &HashMap<String, usize>, engine: &EngineKey) -> bool {
        match engine {
            None => true,
            Some(code) => {
                let cap = self.engine_caps.get(code).copied().unwrap_or(usize::MAX);
                engines.get(code).copied().unwrap_or(0) < cap
            }
        }
    }

    /// Hands free slots to waiters, fewest running first. A waiter taken off its queue is
    /// counted as running whether or not it is still listening: its [`WaitGuard`] (or the
    /// [`Permit`] it becomes) gives the slot back.
    fn dispatch(&self, state: &mut State) {
        while state.running < self.limits.capacity {
            // Of each tenant below its share, its first waiter whose engine has room.
            let chosen = state
                .tenants
                .iter()
                .filter(|(key, tenant)| tenant.running < self.share_of(key))
                .filter_map(|(key, tenant)| {
                    let position = tenant
                        .waiters
                        .iter()
                        .position(|waiter| self.engine_room(&state.engines, &waiter.engine))?;
                    Some((
                        key,
                        tenant.running,
                        tenant.waiters[position].ticket,
                        position,
                    ))
                })
                .min_by_key(|(_, running, ticket, _)| (*running, *ticket))
                .map(|(key, _, _, position)| (key.clone(), position));
            let Some((key, position)) = chosen else { break };
            let Some(tenant) = state.tenants.get_mut(&key) else {
                break;
            };
            let Some(waiter) = tenant.waiters.remove(position) else {
                break;
            };
            if waiter.kind == CallKind::Request {
                tenant.queued_requests -= 1;
            }
            tenant.running += 1;
            state.running += 1;
            if let Some(code) = &waiter.engine {
                *state.engines.entry(code.clone()).or_default() += 1;
            }
            // A receiver already gone (its caller stopped waiting) is fine: its guard, which
            // finds its ticket no longer queued, releases the slot.
            let _ = waiter.grant.send(());
        }
    }

    /// A call of `key` (and `engine`) ended: its slot goes to the next waiter.
    fn release(&self, key: &TenantKey, engine: &EngineKey) {
        let mut guard = self.lock();
        let state = &mut *guard;
        state.running = state.running.saturating_sub(1);
        if let Some(code) = engine
            && let Some(running) = state.engines.get_mut(code)
        {
            *running = running.saturating_sub(1);
            if *running == 0 {
                state.engines.remove(code);
            }
        }
        if let Some(tenant) = state.tenants.get_mut(key) {
            tenant.running = tenant.running.saturating_sub(1);
            if tenant.running == 0 && tenant.waiters.is_empty() {
                state.tenants.remove(key);
            }
        }
        self.dispatch(state);
    }

    /// Stops waiting: true when the waiter was still queued (now removed), false when it was
    /// granted a slot meanwhile (it then holds that slot).
    fn withdraw(&self, key: &TenantKey, ticket: u64) -> bool {
        let mut guard = self.lock();
        let state = &mut *guard;
        let Some(tenant) = state.tenants.get_mut(key) else {
            return false;
        };
        let Some(index) = tenant
            .waiters
            .iter()
            .position(|waiter| waiter.ticket == ticket)
        else {
            return false;
        };
        if let Some(waiter) = tenant.waiters.remove(index)
            && waiter.kind == CallKind::Request
        {
            tenant.queued_requests -= 1;
        }
        if tenant.running == 0 && tenant.waiters.is_empty() {
            state.tenants.remove(key);
        }
        true
    }
}

/// The scheduler; cheap to clone.
#[derive(Clone)]
pub struct Admission {
    inner: Arc<Inner>,
}

/// A slot to run one engine call; given back when dropped.
pub struct Permit {
    inner: Arc<Inner>,
    key: TenantKey,
    engine: EngineKey,
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.inner.release(&self.key, &self.engine);
    }
}

impl Permit {
    /// A handle that reads how many calls this permit's tenant runs now: the weight of its
    /// turns at the CPU (see [`TenantLoad::running`]).
    pub fn tenant_load(&self) -> TenantLoad {
        TenantLoad {
            inner: self.inner.clone(),
            key: self.key.clone(),
        }
    }
}

/// A call's weight at the CPU, read at every epoch tick of its calls.
///
/// Admission bounds how many calls a tenant runs; this bounds how much CPU they get together.
/// At each tick a call yields to the async runtime [`TenantLoad::turns`] times: its tenant's
/// running calls divided by those of the tenant running the fewest (of those running any), so
/// a tenant running fifty calls beside a tenant running one gets about as many turns at the
/// CPU as that one, not fifty times as many (stride scheduling by yields). When one tenant
/// runs alone, or every tenant runs alike, it is the plain single yield of every tick; nothing
/// sleeps, so an idle CPU is always used.
#[derive(Clone)]
pub struct TenantLoad {
    inner: Arc<Inner>,
    key: TenantKey,
}

impl TenantLoad {
    /// How many times a call of this tenant yields at a tick (at least 1).
    pub fn turns(&self) -> usize {
        let state = self.inner.lock();
        let own = state
            .tenants
            .get(&self.key)
            .map_or(1, |tenant| tenant.running.max(1));
        let fewest = state
            .tenants
            .values()
            .map(|tenant| tenant.running)
            .filter(|running| *running > 0)
            .min()
            .unwrap_or(1);
        (own / fewest).max(1)
    }
}

/// Withdraws a waiter whose future is dropped before it learnt the outcome (a client gone, a
/// deadline): off the queue if still there, else the slot it was granted is given back.
struct WaitGuard {
    inner: Arc<Inner>,
    key: TenantKey,
    engine: EngineKey,
    ticket: u64,
    armed: bool,
}

impl Drop for WaitGuard {
    fn drop(&mut self) {
        if self.armed && !self.inner.withdraw(&self.key, self.ticket) {
            self.inner.release(&self.key, &self.engine);
        }
    }
}

impl Admission {
    pub fn new(limits: AdmissionLimits) -> Self {
        Self::with_engine_caps(limits, HashMap::new())
    }

    /// A scheduler where the engines of `engine_caps` (code → calls alive at once) run at
    /// most that many calls each, besides the global budget and the tenants' shares.
    pub fn with_engine_caps(limits: AdmissionLimits, engine_caps: HashMap<String, usize>) -> Self {
        let capacity = limits.capacity.max(1);
        let limits = AdmissionLimits {
            capacity,
            tenant_share: limits.tenant_share.clamp(1, capacity),
            tenant_queue: limits.tenant_queue,
        };
        Self {
            inner: Arc::new(Inner {
                limits,
                tenant_share: AtomicUsize::new(limits.tenant_share),
                engine_caps: engine_caps
                    .into_iter()
                    .map(|(code, cap)| (code, cap.clamp(1, capacity)))
                    .collect(),
                state: Mutex::new(State::default()),
            }),
        }
    }

    /// The limits in force (the tenant share as last set).
    pub fn limits(&self) -> AdmissionLimits {
        AdmissionLimits {
            tenant_share: self.inner.tenant_share.load(Ordering::Relaxed),
            ..self.inner.limits
        }
    }

    /// Sets the calls one tenant may run at once (clamped to 1..=capacity). Calls running
    /// beyond a lowered share finish; a raised share admits waiters at once.
    pub fn set_tenant_share(&self, share: usize) {
        let share = share.clamp(1, self.inner.limits.capacity);
        let mut guard = self.inner.lock();
        let previous = self.inner.tenant_share.swap(share, Ordering::Relaxed);
        if share > previous {
            self.inner.dispatch(&mut guard);
        }
    }

    /// Calls running now: all tenants, and those of `tenant`.
    pub fn running(&self, tenant: Option<&str>) -> (usize, usize) {
        let state = self.inner.lock();
        let key = tenant.map(str::to_owned);
        let of_tenant = state.tenants.get(&key).map_or(0, |tenant| tenant.running);
        (state.running, of_tenant)
    }

    /// Calls of the capped engine `code` running now (0 for an engine without a cap).
    pub fn running_in_engine(&self, code: &str) -> usize {
        self.inner.lock().engines.get(code).copied().unwrap_or(0)
    }

    /// A slot for a call of `tenant` (`None`: outside any tenant), waiting at most `wait`.
    /// A [`CallKind::Request`] beyond the tenant's queue length is refused at once.
    pub async fn admit(
        &self,
        tenant: Option<&str>,
        kind: CallKind,
        wait: Duration,
    ) -> Result<Permit, Refused> {
        self.admit_to(tenant, None, kind, wait).await
    }

    /// A slot for a call of `tenant` into the engine `engine`, as [`Self::admit`], and within
    /// that engine's own cap when it has one.
    pub async fn admit_to(
        &self,
        tenant: Option<&str>,
        engine: Option<&str>,
        kind: CallKind,
        wait: Duration,
    ) -> Result<Permit, Refused> {
        let admitted = self.admit_within_caps(tenant, engine, kind, wait).await;
        if admitted.is_err() {
            crate::call_metrics::record_refused(engine.unwrap_or_default());
        }
        admitted
    }

    async fn admit_within_caps(
        &self,
        tenant: Option<&str>,
        engine: Option<&str>,
        kind: CallKind,
        wait: Duration,
    ) -> Result<Permit, Refused> {
        let key: TenantKey = tenant.map(str::to_owned);
        let engine: EngineKey = engine
            .filter(|code| self.inner.engine_caps.contains_key(*code))
            .map(str::to_owned);
        let (receiver, ticket) = {
            let mut guard = self.inner.lock();
            let state = &mut *guard;
            let share = self.inner.share_of(&key);
            let global_room = state.running < self.inner.limits.capacity;
            let engine_room = self.inner.engine_room(&state.engines, &engine);
            let tenant = state.tenants.entry(key.clone()).or_default();
            // With room in the global budget nobody waits for it (a freed slot is handed out
            // at once), so every waiter is one held back by its own tenant's share or by its
            // engine's cap; a call goes ahead of those held back by their engine's cap only.
            let none_ready = tenant
                .waiters
                .iter()
                .all(|waiter| !self.inner.engine_room(&state.engines, &waiter.engine));
            if global_room && tenant.running < share && engine_room && none_ready {
                tenant.running += 1;
                state.running += 1;
                if let Some(code) = &engine {
                    *state.engines.entry(code.clone()).or_default() += 1;
                }
                return Ok(self.permit(key, engine));
            }
            if kind == CallKind::Request && tenant.queued_requests >= self.inner.limits.tenant_queue
            {
                if tenant.running == 0 && tenant.waiters.is_empty() {
                    state.tenants.remove(&key);
                }
                return Err(Refused::QueueFull);
            }
            let (grant, receiver) = oneshot::channel();
            let ticket = state.next_ticket;
            state.next_ticket += 1;
            let tenant = state.tenants.entry(key.clone()).or_default();
            tenant.waiters.push_back(Waiter {
                ticket,
                kind,
                engine: engine.clone(),
                grant,
            });
            if kind == CallKind::Request {
                tenant.queued_requests += 1;
            }
            (receiver, ticket)
        };
        let mut guard = WaitGuard {
            inner: self.inner.clone(),
            key: key.clone(),
            engine: engine.clone(),
            ticket,
            armed: true,
        };
        // Whatever ended the wait (a grant, the time limit), the queue decides: a waiter no
        // longer queued was granted its slot.
        let _ = tokio::time::timeout(wait, receiver).await;
        guard.armed = false;
        if self.inner.withdraw(&key, ticket) {
            Err(Refused::TimedOut(wait))
        } else {
            Ok(self.permit(key, engine))
        }
    }

    fn permit(&self, key: TenantKey, engine: EngineKey) -> Permit {
        Permit {
            inner: self.inner.clone(),
            key,
            engine,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: AdmissionLimits = AdmissionLimits {
        capacity: 4,
        tenant_share: 2,
        tenant_queue: 1,
    };
    const SHORT: Duration = Duration::from_millis(20);

    #[tokio::test]
    async fn a_tenant_is_held_to_its_share_and_its_queue() {
        let admission = Admission::new(LIMITS);
        let first = admission.admit(Some("a"), CallKind::Request, SHORT).await;
        let second = admission.admit(Some("a"), CallKind::Request, SHORT).await;
        assert!(first.is_ok() && second.is_ok());
        assert_eq!(
            admission
                .admit(Some("a"), CallKind::Request, SHORT)
                .await
                .err(),
            Some(Refused::TimedOut(SHORT))
        );
        // Another tenant is not held back.
        let other = admission.admit(Some("b"), CallKind::Request, SHORT).await;
        assert!(other.is_ok());
        assert_eq!(admission.running(Some("a")), (3, 2));

        // One waiter fits the queue, a second is refused at once; the waiter gets the slot
        // that frees.
        let queued = tokio::spawn({
            let admission = admission.clone();
            async move {
                admission
                    .admit(Some("a"), CallKind::Request, Duration::from_secs(10))
                    .await
                    .is_ok()
            }
        });
        tokio::time::sleep(SHORT).await;
        assert_eq!(
            admission
                .admit(Some("a"), CallKind::Request, SHORT)
                .await
                .err(),
            Some(Refused::QueueFull)
        );
        drop(first);
        assert!(queued.await.unwrap());
        drop((second, other));
        assert_eq!(admission.running(None), (0, 0));
    }

    #[tokio::test]
    async fn a_changed_share_holds_new_calls_or_admits_waiters_at_once() {
        let admission = Admission::new(LIMITS);
        let first = admission.admit(Some("a"), CallKind::Request, SHORT).await;
        let second = admission.admit(Some("a"), CallKind::Request, SHORT).await;
        assert!(first.is_ok() && second.is_ok());

        // Lowered to 1: both running calls go on; a new one waits until one ends and then
        // the tenant runs one at most.
        admission.set_tenant_share(1);
        assert_eq!(admission.limits().tenant_share, 1);
        assert_eq!(admission.running(Some("a")), (2, 2));
        assert_eq!(
            admission
                .admit(Some("a"), CallKind::Request, SHORT)
                .await
                .err(),
            Some(Refused::TimedOut(SHORT))
        );
        drop(first);
        assert_eq!(
            admission
                .admit(Some("a"), CallKind::Request, SHORT)
                .await
                .err(),
            Some(Refused::TimedOut(SHORT)),
            "one still runs, and the share is one"
        );

        // A waiter held by the share is admitted as soon as the share is raised.
        let waiting = tokio::spawn({
            let admission = admission.clone();
            async move {
                admission
                    .admit(Some("a"), CallKind::Request, Duration::from_secs(10))
                    .await
            }
        });
        tokio::time::sleep(SHORT).await;
        assert_eq!(admission.running(Some("a")), (1, 1));
        admission.set_tenant_share(3);
        let third = waiting.await.unwrap();
        assert!(third.is_ok());
        assert_eq!(admission.running(Some("a")), (2, 2));

        // Clamped to the pool: never above the capacity, never below one.
        admission.set_tenant_share(100);
        assert_eq!(admission.limits().tenant_share, LIMITS.capacity);
        admission.set_tenant_share(0);
        assert_eq!(admission.limits().tenant_share, 1);
        drop((second, third));
        assert_eq!(admission.running(None), (0, 0));
    }

    #[tokio::test]
    async fn a_freed_slot_goes_to_the_tenant_with_the_fewest_running() {
        let admission = Admission::new(LIMITS);
        let mut held = Vec::new();
        for tenant in ["a", "a", "b", "b"] {
            held.push(
                admission
                    .admit(Some(tenant), CallKind::Background, SHORT)
                    .await
                    .unwrap(),
            );
        }
        // The pool is full: `a` waits first (for its share), then the quiet `c`.
        let waiting_a = tokio::spawn({
            let admission = admission.clone();
            async move {
                admission
                    .admit(Some("a"), CallKind::Background, Duration::from_secs(10))
                    .await
            }
        });
        tokio::time::sleep(SHORT).await;
        let waiting_c = tokio::spawn({
            let admission = admission.clone();
            async move {
                admission
                    .admit(Some("c"), CallKind::Background, Duration::from_secs(10))
                    .await
            }
        });
        tokio::time::sleep(SHORT).await;
        // `a` ends a call: `c` (none running) goes before `a` (one running).
        drop(held.remove(0));
        let c = waiting_c.await.unwrap().unwrap();
        assert!(!waiting_a.is_finished());
        drop(c);
        let a = waiting_a.await.unwrap().unwrap();
        drop((a, held));
        assert_eq!(admission.running(None), (0, 0));
    }

    #[tokio::test]
    async fn turns_at_the_cpu_follow_the_running_calls_relative_to_the_lightest_tenant() {
        let admission = Admission::new(AdmissionLimits {
            capacity: 16,
            tenant_share: 8,
            tenant_queue: 0,
        });
        let admit = |tenant: &'static str| {
            let admission = admission.clone();
            async move {
                admission
                    .admit(Some(tenant), CallKind::Background, SHORT)
                    .await
                    .unwrap()
            }
        };
        let mut busy = Vec::new();
        for _ in 0..6 {
            busy.push(admit("busy").await);
        }
        // Alone, a tenant's calls yield once per tick, however many it runs.
        assert_eq!(busy[0].tenant_load().turns(), 1);
        let quiet = admit("quiet").await;
        assert_eq!(busy[0].tenant_load().turns(), 6);
        assert_eq!(quiet.tenant_load().turns(), 1);
        let second_quiet = admit("quiet").await;
        assert_eq!(busy[0].tenant_load().turns(), 3);
        drop((quiet, second_quiet));
        assert_eq!(busy[0].tenant_load().turns(), 1);
    }

    #[tokio::test]
    async fn an_engine_cap_holds_its_own_calls_only() {
        let admission = Admission::with_engine_caps(
            AdmissionLimits {
                capacity: 8,
                tenant_share: 8,
                tenant_queue: 4,
            },
            HashMap::from([("slow".to_owned(), 1)]),
        );
        let first = admission
            .admit_to(Some("a"), Some("slow"), CallKind::Request, SHORT)
            .await
            .unwrap();
        // A second call of the capped engine waits for it, then gives up.
        assert_eq!(
            admission
                .admit_to(Some("b"), Some("slow"), CallKind::Request, SHORT)
                .await
                .err(),
            Some(Refused::TimedOut(SHORT))
        );
        let waiting = tokio::spawn({
            let admission = admission.clone();
            async move {
                admission
                    .admit_to(
                        Some("a"),
                        Some("slow"),
                        CallKind::Request,
                        Duration::from_secs(10),
                    )
                    .await
            }
        });
        tokio::time::sleep(SHORT).await;
        // Behind it in its tenant's queue, a call of another engine starts at once.
        let other = admission
            .admit_to(Some("a"), Some("fast"), CallKind::Request, SHORT)
            .await
            .unwrap();
        assert_eq!(admission.running(Some("a")), (2, 2));
        assert_eq!(admission.running_in_engine("slow"), 1);
        drop(first);
        let second = waiting.await.unwrap().unwrap();
        assert_eq!(admission.running_in_engine("slow"), 1);
        drop((second, other));
        assert_eq!(admission.running(None), (0, 0));
        assert_eq!(admission.running_in_engine("slow"), 0);
    }

    #[tokio::test]
    async fn an_abandoned_wait_gives_its_slot_back() {
        let admission = Admission::new(AdmissionLimits {
            capacity: 1,
            tenant_share: 1,
            tenant_queue: 4,
        });
        let held = admission
            .admit(Some("a"), CallKind::Request, SHORT)
            .await
            .unwrap();
        let abandoned = tokio::spawn({
            let admission = admission.clone();
            async move {
                admission
                    .admit(Some("b"), CallKind::Request, Duration::from_secs(10))
                    .await
                    .is_ok()
            }
        });
        tokio::time::sleep(SHORT).await;
        abandoned.abort();
        let _ = abandoned.await;
        drop(held);
        assert_eq!(admission.running(None), (0, 0));
        assert!(
            admission
                .admit(None, CallKind::Background, SHORT)
                .await
                .is_ok()
        );
    }
}
