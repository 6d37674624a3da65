//! Backpressure: while the platform's backlog of accepted but unfinished work (event deliveries
//! and jobs due to engines, events the projections have not applied) is past the operator's
//! bound, write requests are refused with 503 `{message}` and `Retry-After` instead of being
//! accepted as more work the platform cannot finish. Reads, `/auth` (signing in, refreshing)
//! and the health and metrics endpoints are never refused.
//!
//! Writes are refused from the tenants that hold the backlog, not from everyone: while past the
//! bound, the sampler finds the fewest tenants that together hold at least half of it (at most
//! [`MAX_HELD_TENANTS`]) and only their writes are refused, so one tenant flooding the platform
//! does not stop another's work. A backlog spread over more tenants than that refuses every
//! tenant's writes. The request's tenant is read from its bearer token's `tid` claim without
//! checking the signature: a forged claim only escapes this refusal to be refused by
//! authentication right after; a request without one is not held back for a tenant.
//!
//! The backlog is measured in the database (so every host of a cluster sees the same one, and a
//! host without workers too) by a sampler the binary runs every [`SAMPLE_INTERVAL`]; a request
//! reads the last sample, never the database. `Retry-After` is the time the backlog, draining at
//! the rate measured between samples, takes to fall back under the bound (1 to
//! [`MAX_RETRY_AFTER_SECONDS`] s; [`STALLED_RETRY_AFTER_SECONDS`] when it is not draining).

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
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
/// Most tenants whose writes are refused alone; a backlog needing more to make up half of it
/// refuses everyone's.
pub const MAX_HELD_TENANTS: usize = 8;

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
    /// While refusing: the tenants whose writes are refused (those holding the backlog), or
    /// `null` when every tenant's are.
    pub refused_tenants: Option<Vec<String>>,
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
    /// While refusing: the tenants refused, `None` for every tenant.
    held_back: RwLock<Option<BTreeSet<String>>>,
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
                held_back: RwLock::new(None),
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
        if !refusing {
            *gauge.held_back.write().expect("backpressure lock") = None;
        }
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

    /// Whether writes are refused now (the sampler then asks who holds the backlog).
    pub fn refusing(&self) -> bool {
        self.inner.refusing.load(Ordering::Relaxed)
    }

    /// Narrows the refusal to the tenants holding the backlog: `heaviest` are the tenants with
    /// the most waiting items (up to [`MAX_HELD_TENANTS`] or more, any order) and `total` the
    /// items sampled. See [`holders`].
    pub fn hold_back(&self, total: u64, heaviest: Vec<(String, u64)>) {
        let held = holders(total, heaviest);
        *self.inner.held_back.write().expect("backpressure lock") = held;
    }

    /// Ok while writes of `tenant_id` (`None`: a request naming no tenant) are admitted;
    /// refused (503 with `Retry-After`) while the backlog is past its bound and the tenant is
    /// one holding it (or every tenant is refused).
    pub fn admit(&self, tenant_id: Option<&str>) -> Result<(), Refused> {
        if !self.inner.refusing.load(Ordering::Relaxed) {
            return Ok(());
        }
        let held_back = match &*self.inner.held_back.read().expect("backpressure lock") {
            None => true,
            Some(tenants) => tenant_id.is_some_and(|tenant_id| tenants.contains(tenant_id)),
        };
        if !held_back {
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
            refused_tenants: gauge
                .held_back
                .read()
                .expect("backpressure lock")
                .as_ref()
                .map(|tenants| tenants.iter().cloned().collect()),
        }
    }
}

/// The fewest tenants of `heaviest` that together hold at least half of the `total` items
/// sampled, the heaviest first; `None` (everyone) when that takes more than
/// [`MAX_HELD_TENANTS`] tenants or nothing is known of them.
pub fn holders(total: u64, mut heaviest: Vec<(String, u64)>) -> Option<BTreeSet<String>> {
    heaviest.sort_by(|left, right| right.1.cmp(&left.1).then_with(|| left.0.cmp(&right.0)));
    let mut held = BTreeSet::new();
    let mut holding = 0u64;
    for (tenant_id, items) in heaviest.into_iter().take(MAX_HELD_TENANTS) {
        if items == 0 {
            break;
        }
        held.insert(tenant_id);
        holding = holding.saturating_add(items);
        if holding.saturating_mul(2) >= total {
            return Some(held);
        }
    }
    None
}

/// The tenant a request's bearer token claims (`tid`), read without checking the signature.
fn claimed_tenant(request: &Request) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Claims {
        tid: String,
    }
    let authorization = request
        .headers()
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let token = authorization
        .strip_prefix("Bearer ")
        .or_else(|| authorization.strip_prefix("bearer "))?;
    let payload = token.split('.').nth(1)?;
    let claims = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    serde_json::from_slice::<Claims>(&claims)
        .ok()
        .map(|claims| claims.tid)
}

/// A write refused for the backlog: 503 `{message}` with `Retry-After`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused {
    pub retry_after_seconds: u64,
}

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        let mut response = unavailable_retry_after(
            "The platform is catching up with work already accepted; retry later.".into(),
            self.retry_after_seconds,
        );
        response
            .extensions_mut()
            .insert(crate::usage::LimitHit("backlog"));
        response
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
        && backpressure.refusing()
        && let Err(refused) = backpressure.admit(claimed_tenant(&request).as_deref())
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
        assert!(gauge.admit(None).is_ok());
        gauge.record(sample(101, 0), Duration::from_secs(1));
        assert!(gauge.admit(None).is_err());
        gauge.record(sample(5, 61), Duration::from_secs(1));
        assert!(gauge.admit(None).is_err());
        gauge.record(sample(5, 1), Duration::from_secs(1));
        assert!(gauge.admit(None).is_ok());
        let off = bound(0, 0);
        off.record(sample(u64::MAX, 1_000_000), Duration::from_secs(1));
        assert!(off.admit(None).is_ok());
        assert_eq!(off.count_cap(), UNBOUNDED_COUNT_CAP);
        assert_eq!(bound(100, 0).count_cap(), 200);
    }

    #[test]
    fn retry_after_is_the_time_to_drain_below_the_bound_at_the_measured_rate() {
        let gauge = bound(100, 0);
        gauge.record(sample(400, 0), Duration::from_secs(1));
        // Not draining: the stalled default.
        assert_eq!(
            retry_after(gauge.admit(None).unwrap_err()),
            STALLED_RETRY_AFTER_SECONDS
        );
        // 100 items drained in 0.5 s (200/s); 200 over the bound: 1 s.
        gauge.record(sample(300, 0), Duration::from_millis(500));
        assert_eq!(retry_after(gauge.admit(None).unwrap_err()), 1);
        // 10 items drained in 1 s; 190 over: 19 s.
        gauge.record(sample(290, 0), Duration::from_secs(1));
        assert_eq!(retry_after(gauge.admit(None).unwrap_err()), 19);
        // 1 item drained in 1 s; 189 over: capped.
        gauge.record(sample(289, 0), Duration::from_secs(1));
        assert_eq!(
            retry_after(gauge.admit(None).unwrap_err()),
            MAX_RETRY_AFTER_SECONDS
        );
        assert!(gauge.report().refusing_writes);
        assert_eq!(gauge.report().items, 289);
    }

    #[test]
    fn only_the_tenants_holding_the_backlog_are_refused() {
        let tenants = |names: &[&str]| Some(names.iter().map(|name| (*name).to_owned()).collect());
        let counts = |counts: &[(&str, u64)]| {
            counts
                .iter()
                .map(|(tenant, items)| ((*tenant).to_owned(), *items))
                .collect::<Vec<_>>()
        };
        // One tenant holds most: only it.
        assert_eq!(
            holders(1000, counts(&[("b", 10), ("a", 950)])),
            tenants(&["a"])
        );
        // Two make up half between them.
        assert_eq!(
            holders(1000, counts(&[("a", 300), ("b", 250), ("c", 100)])),
            tenants(&["a", "b"])
        );
        // Spread too thin, or unknown: everyone.
        let thin: Vec<(String, u64)> = (0..20).map(|index| (format!("t{index}"), 50)).collect();
        assert_eq!(holders(1000, thin), None);
        assert_eq!(holders(1000, Vec::new()), None);

        let gauge = bound(100, 0);
        gauge.record(sample(500, 0), Duration::from_secs(1));
        // Before the sampler narrowed it, everyone is refused.
        assert!(gauge.admit(Some("b")).is_err());
        gauge.hold_back(500, counts(&[("a", 480), ("b", 20)]));
        assert!(gauge.admit(Some("a")).is_err());
        assert!(gauge.admit(Some("b")).is_ok());
        assert!(gauge.admit(None).is_ok());
        assert_eq!(gauge.report().refused_tenants, Some(vec!["a".to_owned()]));
        // Drained: nobody, and the next refusal starts from everyone again.
        gauge.record(sample(10, 0), Duration::from_secs(1));
        assert!(gauge.admit(Some("a")).is_ok());
        assert_eq!(gauge.report().refused_tenants, None);
        gauge.record(sample(500, 0), Duration::from_secs(1));
        assert!(gauge.admit(Some("b")).is_err());
    }

    #[test]
    fn the_tenant_is_read_from_the_bearer_tokens_claims() {
        let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(br#"{"sub":"u1","tid":"acme","exp":1}"#);
        let request = |authorization: &str| {
            Request::builder()
                .header(header::AUTHORIZATION, authorization)
                .body(axum::body::Body::empty())
                .unwrap()
        };
        assert_eq!(
            claimed_tenant(&request(&format!("Bearer e30.{payload}.sig"))),
            Some("acme".to_owned())
        );
        assert_eq!(claimed_tenant(&request("Bearer not-a-token")), None);
        assert_eq!(
            claimed_tenant(&request(&format!("Basic e30.{payload}.sig"))),
            None
        );
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
