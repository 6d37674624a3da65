//! The registry of background workers (`projector`, `search`, `workflow`): each reports a
//! heartbeat and its lag, and extended health reads their state from here. Each heartbeat
//! also sets the worker's `tessera_projection_lag_seconds` gauge.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use super::health::HealthStatus;

/// The worker slots extended health reports, in the spec's order.
pub const WORKER_NAMES: [&str; 3] = ["projector", "search", "workflow"];

/// By default, a worker lagging more than this behind the log is `degraded`.
pub const DEGRADED_LAG: Duration = Duration::from_secs(30);
/// A worker silent for longer than this is `down`.
pub const HEARTBEAT_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, Copy)]
struct Heartbeat {
    at: Instant,
    lag: Duration,
}

/// Shared, cheap to clone.
#[derive(Clone)]
pub struct WorkerRegistry {
    heartbeats: Arc<RwLock<HashMap<&'static str, Heartbeat>>>,
    degraded_lag: Duration,
}

impl Default for WorkerRegistry {
    fn default() -> Self {
        Self::new(DEGRADED_LAG)
    }
}

impl WorkerRegistry {
    /// A registry where workers lagging more than `degraded_lag` are `degraded`.
    pub fn new(degraded_lag: Duration) -> Self {
        Self {
            heartbeats: Arc::default(),
            degraded_lag,
        }
    }

    /// Called by a running worker after each batch (or idle poll).
    pub fn heartbeat(&self, worker: &'static str, lag: Duration) {
        metrics::gauge!("tessera_projection_lag_seconds", "projection" => worker)
            .set(lag.as_secs_f64());
        let mut heartbeats = self.heartbeats.write().expect("worker registry lock");
        heartbeats.insert(
            worker,
            Heartbeat {
                at: Instant::now(),
                lag,
            },
        );
    }

    /// Called by a worker that stops.
    pub fn stopped(&self, worker: &'static str) {
        self.heartbeats
            .write()
            .expect("worker registry lock")
            .remove(worker);
    }

    /// `down` when the worker is not running (never reported, stopped, or silent too long),
    /// `degraded` when it lags, else `ok`.
    pub fn status(&self, worker: &str) -> HealthStatus {
        let heartbeats = self.heartbeats.read().expect("worker registry lock");
        match heartbeats.get(worker) {
            None => HealthStatus::Down,
            Some(beat) if beat.at.elapsed() > HEARTBEAT_TIMEOUT => HealthStatus::Down,
            Some(beat) if beat.lag > self.degraded_lag => HealthStatus::Degraded,
            Some(_) => HealthStatus::Ok,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_are_down_until_they_report_and_degraded_when_lagging() {
        let registry = WorkerRegistry::default();
        assert_eq!(registry.status("projector"), HealthStatus::Down);
        registry.heartbeat("projector", Duration::from_millis(5));
        assert_eq!(registry.status("projector"), HealthStatus::Ok);
        registry.heartbeat("projector", DEGRADED_LAG + Duration::from_secs(1));
        assert_eq!(registry.status("projector"), HealthStatus::Degraded);
        registry.stopped("projector");
        assert_eq!(registry.status("projector"), HealthStatus::Down);
    }
}
