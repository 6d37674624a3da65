//! Instances kept warm between calls: a call that ended cleanly gives its store and instance
//! back, and the next call of the same engine version in the same tenant runs on it instead of
//! instantiating again. Instantiating costs little for a Rust engine and most of a request for
//! an interpreter's component (componentize-py links 14 core instances through thousands of
//! imports, and its interpreter writes across its image on first touch).
//!
//! What keeps this safe: an instance serves one tenant for its whole life (the key holds the
//! tenant id); only a call that returned a value gives its instance back (a trap, a timeout or
//! a dropped call discards it); an instance serves at most `max_calls` calls and waits at most
//! `idle_timeout`; a lifecycle call (provisioning) retires the tenant's idle instances, so no
//! instance outlives a change of what the engine knows about its tenant; an instance whose linear
//! memory grew past half its cap is retired rather than kept, so what earlier calls left
//! behind never makes a later call fail on the cap. The pool holds
//! `capacity` slots beyond the calls admission lets run, so idle instances never take a slot
//! from a call.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use wasmtime::Store;

use super::imports::StoreState;
pub use crate::config::WarmInstanceConfig;
use crate::guest::Guest;
pub use crate::instance_limits::InstanceLimits;

/// Which calls may share an instance: those of one engine version (a prepared component, by its
/// id) in one tenant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceKey {
    pub prepared_id: u64,
    pub tenant_id: String,
}

/// An instance between two calls, with the store it lives in.
pub struct WarmInstance {
    pub store: Store<StoreState>,
    pub guest: Guest,
    /// Calls it served so far.
    pub calls: u32,
}

struct Idle {
    key: InstanceKey,
    instance: WarmInstance,
    since: Instant,
}

/// The host's idle instances, oldest first.
pub struct WarmInstances {
    config: WarmInstanceConfig,
    idle: Mutex<VecDeque<Idle>>,
    /// Advanced by every retirement: a call that started before one does not give its instance
    /// back (it may have read what the retirement was for).
    retirements: AtomicU64,
}

/// When a call started, as the warm instances count retirements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallStart(u64);

impl WarmInstances {
    pub fn new(config: WarmInstanceConfig) -> Self {
        Self {
            config,
            idle: Mutex::new(VecDeque::new()),
            retirements: AtomicU64::new(0),
        }
    }

    /// Marks a call's start, for [`Self::give_back`].
    pub fn call_start(&self) -> CallStart {
        CallStart(self.retirements.load(Ordering::Acquire))
    }

    /// The most recently used idle instance of `key`, if one is warm.
    pub fn take(&self, key: &InstanceKey) -> Option<WarmInstance> {
        if !self.config.enabled() {
            return None;
        }
        let (taken, expired) = {
            let mut idle = self.lock();
            let expired = Self::drain_expired(&mut idle, self.config.idle_timeout);
            let position = idle.iter().rposition(|entry| &entry.key == key);
            (position.and_then(|position| idle.remove(position)), expired)
        };
        // Retired instances go back to the pool outside the lock.
        drop(expired);
        taken.map(|entry| entry.instance)
    }

    /// Keeps `instance` warm for the next call of `key`, unless it served its calls or an
    /// instance was retired since its call started (`started`); the oldest idle instance makes
    /// room when the host holds as many as it may.
    pub fn give_back(&self, key: InstanceKey, instance: WarmInstance, started: CallStart) {
        if !self.config.enabled() || instance.calls >= self.config.max_calls {
            return;
        }
        let capacity = usize::try_from(self.config.capacity).unwrap_or(usize::MAX);
        let retired = {
            let mut idle = self.lock();
            // Checked under the lock retirements take: a retirement either came first (and the
            // instance is not kept) or finds it in the queue.
            if self.call_start() != started {
                drop(idle);
                drop(instance);
                return;
            }
            let mut retired = Self::drain_expired(&mut idle, self.config.idle_timeout);
            idle.push_back(Idle {
                key,
                instance,
                since: Instant::now(),
            });
            while idle.len() > capacity {
                retired.extend(idle.pop_front());
            }
            retired
        };
        drop(retired);
    }

    /// Retires every idle instance of `tenant_id` (its provisioning changed).
    pub fn retire_tenant(&self, tenant_id: &str) {
        self.retire_where(|key| key.tenant_id == tenant_id);
    }

    /// Retires every idle instance of the prepared component `prepared_id` (unloaded or
    /// replaced).
    pub fn retire_prepared(&self, prepared_id: u64) {
        self.retire_where(|key| key.prepared_id == prepared_id);
    }

    /// Retires the idle instances whose key `retired` picks, and keeps every call running now
    /// from giving its instance back.
    fn retire_where(&self, retired: impl Fn(&InstanceKey) -> bool) {
        let retired: VecDeque<Idle> = {
            let mut idle = self.lock();
            self.retirements.fetch_add(1, Ordering::AcqRel);
            let (retired, kept) = std::mem::take(&mut *idle)
                .into_iter()
                .partition(|entry| retired(&entry.key));
            *idle = kept;
            retired
        };
        drop(retired);
    }

    /// Retires the instances idle for longer than the idle timeout (the epoch ticker calls this
    /// now and then, so a quiet host gives their memory back).
    pub fn retire_expired(&self) {
        let retired = {
            let mut idle = self.lock();
            Self::drain_expired(&mut idle, self.config.idle_timeout)
        };
        drop(retired);
    }

    /// How many instances are idle now.
    pub fn idle_count(&self) -> usize {
        self.lock().len()
    }

    fn drain_expired(idle: &mut VecDeque<Idle>, idle_timeout: Duration) -> Vec<Idle> {
        let mut expired = Vec::new();
        while idle
            .front()
            .is_some_and(|entry| entry.since.elapsed() >= idle_timeout)
        {
            expired.extend(idle.pop_front());
        }
        expired
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Idle>> {
        // A panic while holding the lock leaves a consistent queue (every step is one push or
        // pop), so a poisoned lock is still usable.
        self.idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
