//! Backpressure: while the platform's backlog of accepted but unfinished work (event deliveries
//! and jobs due to engines, events the projections have not applied) is past the operator's
//! bound, write requests are refused with 503 `{message}` and `Retry-After` instead of being
//! accepted as more work the platform cannot finish. Reads, `/auth` (signing in, refreshing)
//! and the health and metrics endpoints are never refused.
//!
//! The backlog is measured in the database (so every host of a cluster sees the same one, and a
//! host without workers too) by a sampler the binary runs every [`SAMPLE_INTERVAL`]; a request
//! reads the last sample, never the database. `Retry-After` is the time the backlog, draining at
//! the rate measured between samples, takes to fall back under the bound (1 to
//! [`MAX_RETRY_AFTER_SECONDS`] s; [`STALLED_RETRY_AFTER_SECONDS`] when it is not draining).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::unavailable_retry_after;

/// How often the binary samples the backlog.
pub const SAMPLE_INTERVAL: Duration = Duration::from_millis(500);
/// The longest `Retry-After` answered.
pub const MAX_RETRY_AFTER_SECONDS: u64 = 30;
/// `Retry-After` while the backlog is not shrinking.
pub const STALLED_RETRY_AFTER_SECONDS: u64 = 5;
/// How far the backlog is counted (for the metrics) when no bound is set on its items.
pub const UNBOUNDED_COUNT_CAP: u64 = 100_000;

/// The operator's bound on the backlog (`TESSERA_BACKLOG_MAX_ITEMS`,
/// `TESSERA_BACKLOG_MAX_AGE`); 0 turns a bound off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BacklogBound {
    /// Most items waiting: due engine work plus events not yet applied by every projection.
    pub max_items: u64,
    /// Longest an item may have waited (zero: no bound on age).
    pub max_age: Duration,
}

impl Default for BacklogBound {
    fn default() -> Self {
        Self {
            max_items: 50_000,
            max_age: Duration::from_secs(120),
        }
    }
}

/// One measurement of a part of the backlog.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BacklogSample {
    /// Items waiting (counted up to the bound and a little beyond: see [`Backpressure::count_cap`]).
    pub items: u64,
    /// How long the oldest of them has waited.
    pub oldest_age: Duration,
}

impl BacklogSample {
    /// Both parts of the backlog as one: items added, the older age.
    pub fn and(self, other: Self) -> Self {
        Self {
            items: self.items.saturating_add(other.items),
            oldest_age: self.oldest_age.max(other.oldest_age),
        }
    }
}

/// The backlog as the metrics report it.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct BacklogReport {
    /// Items waiting: due engine work (event deliveries and jobs) and events not yet applied by
    /// every projection, counted up to a little beyond `max_items`.
    pub items: u64,
    /// Seconds the oldest waiting item has waited.
    pub oldest_age_seconds: f64,
    /// The bound on `items` (0: none).
    pub max_items: u64,
    /// The bound on `oldest_age_seconds` (0: none).
    pub max_age_seconds: u64,
    /// Whether write requests are refused (503) until the backlog is back under its bounds.
    pub refusing_writes: bool,
}

/// The shared gauge: written by the sampler, read by every write request. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Backpressure {
    inner: Arc<Gauge>,
}

#[derive(Debug)]
struct Gauge {
    bound: BacklogBound,
    items: AtomicU64,
    oldest_age_ms: AtomicU64,
    refusing: AtomicBool,
    retry_after_seconds: AtomicU64,
}

impl Backpressure {
    pub fn new(bound: BacklogBound) -> Self {
        Self {
            inner: Arc::new(Gauge {
                bound,
                items: AtomicU64::new(0),
                oldest_age_ms: AtomicU64::new(0),
                refusing: AtomicBool::new(false),
                retry_after_seconds: AtomicU64::new(1),
            }),
        }
    }

    pub fn bound(&self) -> BacklogBound {
        self.inner.bound
    }

    /// How far the sampler counts items: twice the bound (past it is all admission must
    /// know), or [`UNBOUNDED_COUNT_CAP`] without one.
    pub fn count_cap(&self) -> u64 {
        match self.inner.bound.max_items {
            0 => UNBOUNDED_COUNT_CAP,
            max_items => max_items.saturating_mul(2),
        }
    }

    /// Records a sample taken `elapsed` after the previous one.
    pub fn record(&self, sample: BacklogSample, elapsed: Duration) {
        let gauge = &self.inner;
        let previous = gauge.items.swap(sample.items, Ordering::Relaxed);
        let age_ms = u64::try_from(sample.oldest_age.as_millis()).unwrap_or(u64::MAX);
        gauge.oldest_age_ms.store(age_ms, Ordering::Relaxed);
        let over_items = gauge.bound.max_items > 0 && sample.items > gauge.bound.max_items;
        let over_age = !gauge.bound.max_age.is_zero() && sample.oldest_age > gauge.bound.max_age;
        let drained = previous.saturating_sub(sample.items);
        let retry_after = if drained == 0 || elapsed.is_zero() {
            STALLED_RETRY_AFTER_SECONDS
        } else {
            let per_second = drained as f64 / elapsed.as_secs_f64();
            let excess = sample.items.saturating_sub(gauge.bound.max_items).max(1);
            (excess as f64 / per_second).ceil() as u64
        };
        gauge.retry_after_seconds.store(
            retry_after.clamp(1, MAX_RETRY_AFTER_SECONDS),
            Ordering::Relaxed,
        );
        let refusing = over_items || over_age;
        if gauge.refusing.swap(refusing, Ordering::Relaxed) != refusing {
            if refusing {
                tracing::warn!(
                    items = sample.items,
                    oldest_age_ms = age_ms,
                    "the backlog is past its bound: write requests are refused until it drains"
                );
            } else {
                tracing::info!(items = sample.items, "the backlog is back under its bound");
            }
        }
    }

    /// Ok while writes are admitted; refused (503 with `Retry-After`) while the backlog is
    /// past its bound.
    pub fn admit(&self) -> Result<(), Refused> {
        if !self.inner.refusing.load(Ordering::Relaxed) {
            return Ok(());
        }
        Err(Refused {
            retry_after_seconds: self.inner.retry_after_seconds.load(Ordering::Relaxed),
        })
    }

    pub fn report(&self) -> BacklogReport {
        let gauge = &self.inner;
        BacklogReport {
            items: gauge.items.load(Ordering::Relaxed),
            oldest_age_seconds: gauge.oldest_age_ms.load(Ordering::Relaxed) as f64 / 1000.0,
            max_items: gauge.bound.max_items,
            max_age_seconds: gauge.bound.max_age.as_secs(),
            refusing_writes: gauge.refusing.load(Ordering::Relaxed),
        }
    }
}

/// A write refused for the backlog: 503 `{message}` with `Retry-After`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused {
    pub retry_after_seconds: u64,
}

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        unavailable_retry_after(
            "The platform is catching up with work already accepted; retry later.".into(),
            self.retry_after_seconds,
        )
    }
}

/// Whether backpressure applies to a request: a write outside `/auth`.
pub fn applies_to(method: &Method, path: &str) -> bool {
    let write = !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS);
    let auth = path == "/auth" || path.starts_with("/auth/");
    write && !auth
}

/// The middleware: refuses writes while the backlog is past its bound.
pub async fn enforce(
    State(backpressure): State<Backpressure>,
    request: Request,
    next: Next,
) -> Response {
    if applies_to(request.method(), request.uri().path())
        && let Err(refused) = backpressure.admit()
    {
        return refused.into_response();
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::header;

    fn bound(max_items: u64, max_age_seconds: u64) -> Backpressure {
        Backpressure::new(BacklogBound {
            max_items,
            max_age: Duration::from_secs(max_age_seconds),
        })
    }

    fn sample(items: u64, age_seconds: u64) -> BacklogSample {
        BacklogSample {
            items,
            oldest_age: Duration::from_secs(age_seconds),
        }
    }

    fn retry_after(refused: Refused) -> u64 {
        let refused = refused.into_response();
        assert_eq!(refused.status(), 503);
        refused.headers()[header::RETRY_AFTER]
            .to_str()
            .unwrap()
            .parse()
            .unwrap()
    }

    #[test]
    fn writes_are_refused_past_either_bound_and_admitted_again_under_both() {
        let gauge = bound(100, 60);
        gauge.record(sample(100, 60), Duration::from_secs(1));
        assert!(gauge.admit().is_ok());
        gauge.record(sample(101, 0), Duration::from_secs(1));
        assert!(gauge.admit().is_err());
        gauge.record(sample(5, 61), Duration::from_secs(1));
        assert!(gauge.admit().is_err());
        gauge.record(sample(5, 1), Duration::from_secs(1));
        assert!(gauge.admit().is_ok());
        let off = bound(0, 0);
        off.record(sample(u64::MAX, 1_000_000), Duration::from_secs(1));
        assert!(off.admit().is_ok());
        assert_eq!(off.count_cap(), UNBOUNDED_COUNT_CAP);
        assert_eq!(bound(100, 0).count_cap(), 200);
    }

    #[test]
    fn retry_after_is_the_time_to_drain_below_the_bound_at_the_measured_rate() {
        let gauge = bound(100, 0);
        gauge.record(sample(400, 0), Duration::from_secs(1));
        // Not draining: the stalled default.
        assert_eq!(
            retry_after(gauge.admit().unwrap_err()),
            STALLED_RETRY_AFTER_SECONDS
        );
        // 100 items drained in 0.5 s (200/s); 200 over the bound: 1 s.
        gauge.record(sample(300, 0), Duration::from_millis(500));
        assert_eq!(retry_after(gauge.admit().unwrap_err()), 1);
        // 10 items drained in 1 s; 190 over: 19 s.
        gauge.record(sample(290, 0), Duration::from_secs(1));
        assert_eq!(retry_after(gauge.admit().unwrap_err()), 19);
        // 1 item drained in 1 s; 189 over: capped.
        gauge.record(sample(289, 0), Duration::from_secs(1));
        assert_eq!(
            retry_after(gauge.admit().unwrap_err()),
            MAX_RETRY_AFTER_SECONDS
        );
        assert!(gauge.report().refusing_writes);
        assert_eq!(gauge.report().items, 289);
    }

    #[test]
    fn only_writes_outside_auth_are_subject() {
        assert!(applies_to(&Method::POST, "/core/api/v1/intentions"));
        assert!(applies_to(&Method::DELETE, "/notes/api/v1/notes/1"));
        assert!(!applies_to(&Method::GET, "/core/api/v1/intentions"));
        assert!(!applies_to(&Method::POST, "/auth/api/v1/auth/login"));
        assert!(applies_to(&Method::POST, "/authors"));
    }
}
