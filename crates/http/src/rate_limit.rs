//! Rate limiting of every endpoint (CONTRACT §2: `TESSERA_RATE_LIMIT_AUTH` / `_READ` /
//! `_WRITE`, requests per 60 s), one middleware inside the conventions layer so a 429 carries
//! the correlation id and is logged like any other response.
//!
//! - **Classes.** `/auth` and everything under it: the auth limit, per client IP, whatever the
//!   method or credentials. Everything else: `GET`/`HEAD`/`OPTIONS` take the read limit, other
//!   methods the write limit, each with its own budget.
//! - **Keys.** Read and write requests with an `Authorization: Bearer` header are counted per
//!   token, keyed by the SHA-256 of the token (the token itself is never stored). The token is
//!   not verified here: that is the `Caller` extractor's job, and an unverified token only picks
//!   a bucket. Without a bearer token, per client IP.
//! - **Per-IP ceiling.** So that a client cannot escape its limit by sending a fresh (random)
//!   token with every request, every read or write request also counts against a looser
//!   ceiling of its client IP: [`PER_IP_CEILING_FACTOR`] times the class limit (several users
//!   behind one NAT share it). The ceiling is checked after the client's own bucket, so requests
//!   refused by their own limit do not eat into the budget of the others behind that IP.
//! - **Client IP.** The TCP peer (`ConnectInfo<SocketAddr>`), or, when the peer is one of the
//!   operator's trusted proxies, the client they forwarded for (`client_address.rs`,
//!   `TESSERA_TRUSTED_PROXIES`). Without that list no forwarding header is believed (any
//!   client could pick its own key), and behind a reverse proxy every client shares the
//!   proxy's address. IPv4-mapped IPv6 addresses count as their IPv4 address; other IPv6 addresses are
//!   counted per /64, the block a single subscriber usually gets. Without `ConnectInfo` (a
//!   router served by an embedder without it), all clients share one key.
//! - **Headers.** Every limited response, success or error, carries `X-RateLimit-Limit` (the
//!   class limit per 60 s) and `X-RateLimit-Remaining` (requests left in the client's bucket).
//!   Beyond the limit: 429 `{message}` with `Retry-After` (seconds until one more request is
//!   allowed) and `X-RateLimit-Remaining: 0`; when the per-IP ceiling refused, `X-RateLimit-Limit`
//!   is the ceiling's.
//! - **Exempt.** The health endpoints and `/api/openapi.json` are neither counted nor limited,
//!   so monitors never see a 429 and never use up a client's budget.
//! - **0 disables** a class (no limit, no headers), e.g. for benchmarks.
//! - **Scope.** By default each host keeps its buckets in memory; with
//!   `TESSERA_RATE_LIMIT_SCOPE=cluster` (the default on PostgreSQL) every host of a cluster
//!   draws from the same buckets in the database, in batches ([`shared`]), so a limit holds
//!   for the cluster, whichever host a request reaches.
//! - **Algorithm and memory.** `governor`'s GCRA: a bucket of `limit` requests refilled
//!   evenly over 60 s (one request every `60 s / limit`), so a burst of `limit` is allowed and
//!   the long-run rate is `limit` per minute. Each limiter keeps one small entry per key seen;
//!   at most once every [`SWEEP_INTERVAL`], the first request after it starts a background sweep
//!   (`retain_recent`) that drops every entry whose bucket is full again, so memory is bounded
//!   by the keys active in about the last minute.

use std::hash::Hash;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::extract::{ConnectInfo, FromRequestParts, Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use governor::clock::{Clock as _, DefaultClock};
use governor::middleware::StateInformationMiddleware;
use governor::state::keyed::DashMapStateStore;
use governor::{Quota, RateLimiter};
use sha2::{Digest, Sha256};

mod shared;

use crate::usage::LimitHit;

pub use shared::{BucketDraw, BucketGrant, DrawFuture, SharedBuckets};

use super::error::ApiError;
use crate::client_address::ClientAddress;
use crate::config::RateLimitConfig;

pub static X_RATELIMIT_LIMIT: HeaderName = HeaderName::from_static("x-ratelimit-limit");
pub static X_RATELIMIT_REMAINING: HeaderName = HeaderName::from_static("x-ratelimit-remaining");

/// The per-IP ceiling of reads and writes, as a multiple of the class limit.
pub const PER_IP_CEILING_FACTOR: u32 = 10;

/// How often, at most, idle keys are dropped from the limiters.
pub const SWEEP_INTERVAL: Duration = Duration::from_secs(60);

/// Paths that are never limited: probes, health checks and the API description.
const EXEMPT_PATHS: [&str; 6] = [
    "/livez",
    "/readyz",
    "/auth/api/health",
    "/core/api/health",
    "/core/api/health/extended",
    "/api/openapi.json",
];

/// Which budget a request draws from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Auth,
    Read,
    Write,
}

/// The class of a request, `None` when it is exempt.
pub fn classify(method: &Method, path: &str) -> Option<Class> {
    if EXEMPT_PATHS.contains(&path) {
        return None;
    }
    if path == "/auth" || path.starts_with("/auth/") {
        return Some(Class::Auth);
    }
    if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) {
        Some(Class::Read)
    } else {
        Some(Class::Write)
    }
}

/// What a read or write is counted by: its bearer token (hashed) or, without one, its IP.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ClientKey {
    Token([u8; 32]),
    Address(IpAddr),
}

/// The SHA-256 of the bearer token of a request, if it has one. Not verified.
pub fn bearer_token_key(headers: &HeaderMap) -> Option<[u8; 32]> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() {
        return None;
    }
    Some(Sha256::digest(token.as_bytes()).into())
}

/// The address a client is counted by: IPv4 as is (also when IPv4-mapped), IPv6 by its /64,
/// and one shared key when the peer is unknown.
pub fn client_address(peer: Option<IpAddr>) -> IpAddr {
    match peer.map(|address| address.to_canonical()) {
        Some(IpAddr::V4(address)) => IpAddr::V4(address),
        Some(IpAddr::V6(address)) => {
            let prefix = u128::from(address) & !((1u128 << 64) - 1);
            IpAddr::V6(Ipv6Addr::from(prefix))
        }
        None => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
    }
}

/// The outcome of counting one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Allowed {
        limit: u32,
        remaining: u32,
    },
    Refused {
        limit: u32,
        retry_after_seconds: u64,
    },
}

type KeyedLimiter<K> =
    RateLimiter<K, DashMapStateStore<K>, DefaultClock, StateInformationMiddleware>;

/// One keyed limiter: `limit` requests per 60 s per key.
struct Bucket<K: Hash + Eq + Clone> {
    limit: u32,
    limiter: KeyedLimiter<K>,
}

impl<K: Hash + Eq + Clone> Bucket<K> {
    /// `None` when `limit` is 0 (off).
    fn new(limit: u32) -> Option<Self> {
        let burst = NonZeroU32::new(limit)?;
        Some(Self {
            limit,
            limiter: RateLimiter::dashmap(Quota::per_minute(burst))
                .with_middleware::<StateInformationMiddleware>(),
        })
    }

    fn check(&self, key: &K) -> Decision {
        match self.limiter.check_key(key) {
            Ok(snapshot) => Decision::Allowed {
                limit: self.limit,
                remaining: snapshot.remaining_burst_capacity(),
            },
            Err(not_until) => {
                let wait = not_until.wait_time_from(self.limiter.clock().now());
                Decision::Refused {
                    limit: self.limit,
                    retry_after_seconds: wait.as_secs_f64().ceil().max(1.0) as u64,
                }
            }
        }
    }

    fn sweep(&self) {
        self.limiter.retain_recent();
        self.limiter.shrink_to_fit();
    }

    fn len(&self) -> usize {
        self.limiter.len()
    }
}

/// The read or the write class: each client's own bucket and its IP's ceiling.
struct ClientClass {
    client: Bucket<ClientKey>,
    ceiling: Bucket<IpAddr>,
}

impl ClientClass {
    fn new(limit: u32) -> Option<Self> {
        Some(Self {
            client: Bucket::new(limit)?,
            ceiling: Bucket::new(limit.saturating_mul(PER_IP_CEILING_FACTOR))?,
        })
    }

    fn check(&self, address: IpAddr, token: Option<[u8; 32]>) -> Decision {
        let key = match token {
            Some(digest) => ClientKey::Token(digest),
            None => ClientKey::Address(address),
        };
        // The client's own bucket first: a request it refuses must not use up the ceiling
        // its neighbours share. (A request the ceiling then refuses has used one of the
        // client's own requests: governor has no look-ahead, and this only happens while the
        // address is saturated.)
        let own = self.client.check(&key);
        if matches!(own, Decision::Refused { .. }) {
            return own;
        }
        match self.ceiling.check(&address) {
            Decision::Allowed { .. } => own,
            refused => refused,
        }
    }

    fn sweep(&self) {
        self.client.sweep();
        self.ceiling.sweep();
    }
}

struct Limiters {
    auth: Option<Bucket<IpAddr>>,
    read: Option<ClientClass>,
    write: Option<ClientClass>,
    started: Instant,
    /// Milliseconds after `started` when the next sweep is due.
    next_sweep_ms: AtomicU64,
}

impl Limiters {
    /// Counts one request of `class` from `address` (already through [`client_address`]) with
    /// the bearer token digest `token` in this host's buckets; `None` when the class is off.
    fn check(&self, class: Class, address: IpAddr, token: Option<[u8; 32]>) -> Option<Decision> {
        match class {
            Class::Auth => self.auth.as_ref().map(|bucket| bucket.check(&address)),
            Class::Read => self.read.as_ref().map(|c| c.check(address, token)),
            Class::Write => self.write.as_ref().map(|c| c.check(address, token)),
        }
    }

    /// The limit of `class` per 60 s; `None` when it is off.
    fn limit(&self, class: Class) -> Option<u32> {
        match class {
            Class::Auth => self.auth.as_ref().map(|bucket| bucket.limit),
            Class::Read => self.read.as_ref().map(|c| c.client.limit),
            Class::Write => self.write.as_ref().map(|c| c.client.limit),
        }
    }
}

/// The limiters of one router, built from the configuration; cheap to clone.
#[derive(Clone)]
pub struct RateLimits {
    inner: Arc<Limiters>,
    /// The cluster's buckets, when the limits hold for the cluster.
    shared: Option<shared::SharedLimiter>,
}

impl RateLimits {
    /// Limits kept in this host's memory.
    pub fn new(config: &RateLimitConfig) -> Self {
        Self {
            inner: Arc::new(Limiters {
                auth: Bucket::new(config.auth_per_minute),
                read: ClientClass::new(config.read_per_minute),
                write: ClientClass::new(config.write_per_minute),
                started: Instant::now(),
                next_sweep_ms: AtomicU64::new(millis(SWEEP_INTERVAL)),
            }),
            shared: None,
        }
    }

    /// Limits that hold for a cluster: drawn from `buckets`, which every host shares (this
    /// host's own buckets decide while they cannot be reached). Starts the batching task on the
    /// current tokio runtime.
    pub fn shared(config: &RateLimitConfig, buckets: Arc<dyn SharedBuckets>) -> Self {
        let mut limits = Self::new(config);
        limits.shared = Some(shared::SharedLimiter::start(buckets, limits.inner.clone()));
        limits
    }

    /// Counts one request of `class` from `address` (already through [`client_address`]) with
    /// the bearer token digest `token`; `None` when the class is off.
    pub async fn check(
        &self,
        class: Class,
        address: IpAddr,
        token: Option<[u8; 32]>,
    ) -> Option<Decision> {
        match &self.shared {
            Some(shared) => shared.check(&self.inner, class, address, token).await,
            None => self.inner.check(class, address, token),
        }
    }

    /// Drops every key whose bucket is full again, in every limiter.
    pub fn sweep(&self) {
        let limiters = &self.inner;
        if let Some(bucket) = &limiters.auth {
            bucket.sweep();
        }
        for class in [&limiters.read, &limiters.write].into_iter().flatten() {
            class.sweep();
        }
    }

    /// How many keys the limiters hold (an estimate while requests run).
    pub fn tracked_keys(&self) -> usize {
        let limiters = &self.inner;
        limiters.auth.as_ref().map_or(0, Bucket::len)
            + [&limiters.read, &limiters.write]
                .into_iter()
                .flatten()
                .map(|class| class.client.len() + class.ceiling.len())
                .sum::<usize>()
    }

    /// Starts a sweep on the blocking pool when one is due; at most one per interval.
    fn sweep_when_due(&self) {
        let now = millis(self.inner.started.elapsed());
        let due = self.inner.next_sweep_ms.load(Ordering::Relaxed);
        if now < due
            || self
                .inner
                .next_sweep_ms
                .compare_exchange(
                    due,
                    now + millis(SWEEP_INTERVAL),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                )
                .is_err()
        {
            return;
        }
        if let Some(shared) = &self.shared {
            let buckets = shared.buckets.clone();
            tokio::spawn(async move {
                match buckets.sweep().await {
                    Ok(deleted) => {
                        tracing::debug!(deleted, "full shared rate-limit buckets deleted")
                    }
                    Err(error) => tracing::warn!(
                        error = format!("{error:#}"),
                        "deleting full shared rate-limit buckets failed"
                    ),
                }
            });
            return;
        }
        let limits = self.clone();
        tokio::task::spawn_blocking(move || {
            let before = limits.tracked_keys();
            limits.sweep();
            tracing::debug!(
                before,
                after = limits.tracked_keys(),
                "rate limiter keys swept"
            );
        });
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// The middleware: counts the request in its class and answers 429 beyond the limit; adds the
/// `X-RateLimit-*` headers to every limited response.
pub async fn enforce(State(limits): State<RateLimits>, request: Request, next: Next) -> Response {
    let Some(class) = classify(request.method(), request.uri().path()) else {
        return next.run(request).await;
    };
    // The client behind trusted proxies when the host resolved it (`client_address.rs`), else
    // the peer through the extractor, so axum's `MockConnectInfo` works too.
    let (mut parts, body) = request.into_parts();
    let peer = match parts.extensions.get::<ClientAddress>() {
        Some(ClientAddress(address)) => Some(*address),
        None => ConnectInfo::<SocketAddr>::from_request_parts(&mut parts, &())
            .await
            .ok()
            .map(|ConnectInfo(address)| address.ip()),
    };
    let request = Request::from_parts(parts, body);
    let token = match class {
        Class::Auth => None,
        Class::Read | Class::Write => bearer_token_key(request.headers()),
    };
    let decision = limits.check(class, client_address(peer), token).await;
    limits.sweep_when_due();
    match decision {
        None => next.run(request).await,
        Some(Decision::Allowed { limit, remaining }) => {
            let mut response = next.run(request).await;
            set_headers(&mut response, limit, remaining);
            response
        }
        Some(Decision::Refused {
            limit,
            retry_after_seconds,
        }) => {
            tracing::debug!(
                ?class,
                by_token = token.is_some(),
                limit,
                retry_after_seconds,
                "rate limit exceeded"
            );
            let mut response = ApiError::TooManyRequests {
                retry_after_seconds,
            }
            .into_response();
            set_headers(&mut response, limit, 0);
            response.extensions_mut().insert(LimitHit(match class {
                Class::Auth => "rate_limit.auth",
                Class::Read => "rate_limit.read",
                Class::Write => "rate_limit.write",
            }));
            response
        }
    }
}

fn set_headers(response: &mut Response, limit: u32, remaining: u32) {
    let headers = response.headers_mut();
    headers.insert(X_RATELIMIT_LIMIT.clone(), HeaderValue::from(limit));
    headers.insert(X_RATELIMIT_REMAINING.clone(), HeaderValue::from(remaining));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(auth: u32, read: u32, write: u32) -> RateLimitConfig {
        RateLimitConfig {
            auth_per_minute: auth,
            read_per_minute: read,
            write_per_minute: write,
        }
    }

    const HOME: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1));

    #[test]
    fn requests_are_classified_by_path_and_method() {
        assert_eq!(
            classify(&Method::POST, "/auth/api/v1/login"),
            Some(Class::Auth)
        );
        assert_eq!(classify(&Method::GET, "/auth"), Some(Class::Auth));
        assert_eq!(classify(&Method::GET, "/authx/api/v1/a"), Some(Class::Read));
        for method in [Method::GET, Method::HEAD, Method::OPTIONS] {
            assert_eq!(classify(&method, "/core/api/v1/engines"), Some(Class::Read));
        }
        for method in [Method::POST, Method::PUT, Method::PATCH, Method::DELETE] {
            assert_eq!(
                classify(&method, "/chat/api/v1/messages"),
                Some(Class::Write)
            );
        }
        for path in EXEMPT_PATHS {
            assert_eq!(classify(&Method::GET, path), None);
        }
    }

    #[test]
    fn the_bearer_token_is_hashed_never_kept() {
        let mut headers = HeaderMap::new();
        assert_eq!(bearer_token_key(&headers), None);
        headers.insert(header::AUTHORIZATION, "Basic dXNlcjpwdw==".parse().unwrap());
        assert_eq!(bearer_token_key(&headers), None);
        headers.insert(header::AUTHORIZATION, "Bearer  ".parse().unwrap());
        assert_eq!(bearer_token_key(&headers), None);
        headers.insert(header::AUTHORIZATION, "Bearer abc.def".parse().unwrap());
        let digest: [u8; 32] = Sha256::digest(b"abc.def").into();
        assert_eq!(bearer_token_key(&headers), Some(digest));
        headers.insert(header::AUTHORIZATION, "bearer abc.def".parse().unwrap());
        assert_eq!(bearer_token_key(&headers), Some(digest));
    }

    #[test]
    fn clients_are_counted_by_ipv4_or_ipv6_slash_64() {
        assert_eq!(client_address(Some(HOME)), HOME);
        let mapped: IpAddr = "::ffff:192.0.2.1".parse().unwrap();
        assert_eq!(client_address(Some(mapped)), HOME);
        let one: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let same_block: IpAddr = "2001:db8:1:2:ffff::9".parse().unwrap();
        let other_block: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(client_address(Some(one)), client_address(Some(same_block)));
        assert_ne!(client_address(Some(one)), client_address(Some(other_block)));
        assert_eq!(
            client_address(Some(one)),
            "2001:db8:1:2::".parse::<IpAddr>().unwrap()
        );
        assert_eq!(client_address(None), IpAddr::V4(Ipv4Addr::UNSPECIFIED));
    }

    #[test]
    fn a_bucket_allows_its_burst_then_refuses_with_a_retry_delay() {
        let limits = RateLimits::new(&config(60, 600, 2));
        let token = Some([7; 32]);
        assert_eq!(
            limits.inner.check(Class::Write, HOME, token),
            Some(Decision::Allowed {
                limit: 2,
                remaining: 1
            })
        );
        assert_eq!(
            limits.inner.check(Class::Write, HOME, token),
            Some(Decision::Allowed {
                limit: 2,
                remaining: 0
            })
        );
        let Some(Decision::Refused {
            limit,
            retry_after_seconds,
        }) = limits.inner.check(Class::Write, HOME, token)
        else {
            panic!("the third write is refused");
        };
        assert_eq!(limit, 2);
        // One request comes back every 60 s / 2.
        assert!(
            (29..=30).contains(&retry_after_seconds),
            "{retry_after_seconds}"
        );
        // Reads, other tokens and anonymous clients have budgets of their own.
        assert!(matches!(
            limits.inner.check(Class::Read, HOME, token),
            Some(Decision::Allowed { limit: 600, .. })
        ));
        assert!(matches!(
            limits.inner.check(Class::Write, HOME, Some([8; 32])),
            Some(Decision::Allowed { .. })
        ));
        assert!(matches!(
            limits.inner.check(Class::Write, HOME, None),
            Some(Decision::Allowed { .. })
        ));
    }

    #[test]
    fn fresh_tokens_from_one_address_hit_its_ceiling() {
        let limits = RateLimits::new(&config(60, 600, 1));
        for n in 0..PER_IP_CEILING_FACTOR {
            let token = Some([n as u8; 32]);
            assert!(matches!(
                limits.inner.check(Class::Write, HOME, token),
                Some(Decision::Allowed { limit: 1, .. })
            ));
        }
        assert!(matches!(
            limits.inner.check(Class::Write, HOME, Some([255; 32])),
            Some(Decision::Refused { limit, .. }) if limit == PER_IP_CEILING_FACTOR
        ));
        let elsewhere = IpAddr::V4(Ipv4Addr::new(198, 51, 100, 7));
        assert!(matches!(
            limits.inner.check(Class::Write, elsewhere, Some([254; 32])),
            Some(Decision::Allowed { .. })
        ));
    }

    #[test]
    fn a_limit_of_zero_turns_the_class_off() {
        let limits = RateLimits::new(&config(0, 0, 1));
        for _ in 0..100 {
            assert_eq!(limits.inner.check(Class::Auth, HOME, None), None);
            assert_eq!(limits.inner.check(Class::Read, HOME, Some([1; 32])), None);
        }
        assert!(limits.inner.check(Class::Write, HOME, None).is_some());
    }

    /// The middleware alone, in front of a 204, as seen from `peer`.
    fn limited_router(limits: &RateLimits, peer: &str) -> axum::Router {
        axum::Router::new()
            .fallback(|| async { axum::http::StatusCode::NO_CONTENT })
            .layer(axum::middleware::from_fn_with_state(
                limits.clone(),
                enforce,
            ))
            .layer(axum::extract::connect_info::MockConnectInfo(
                peer.parse::<SocketAddr>().unwrap(),
            ))
    }

    async fn call(router: &axum::Router, path: &str) -> Response {
        use tower::ServiceExt as _;
        let request = Request::get(path).body(axum::body::Body::empty()).unwrap();
        router.clone().oneshot(request).await.unwrap()
    }

    #[tokio::test]
    async fn the_tcp_peer_picks_the_bucket_and_forwarded_headers_are_ignored() {
        let limits = RateLimits::new(&config(1, 600, 120));
        let first = limited_router(&limits, "192.0.2.1:4000");
        let same_address = limited_router(&limits, "192.0.2.1:5000");
        let other_address = limited_router(&limits, "192.0.2.2:4000");
        let ipv6_a = limited_router(&limits, "[2001:db8::1]:4000");
        let ipv6_same_block = limited_router(&limits, "[2001:db8::ffff:2]:4000");

        let allowed = call(&first, "/auth/api/v1/login").await;
        assert_eq!(allowed.status(), 204);
        assert_eq!(allowed.headers()[&X_RATELIMIT_LIMIT], "1");
        assert_eq!(allowed.headers()[&X_RATELIMIT_REMAINING], "0");
        let refused = call(&same_address, "/auth/api/v1/login").await;
        assert_eq!(refused.status(), 429);
        assert!(refused.headers().contains_key(header::RETRY_AFTER));
        // A client cannot choose its key with X-Forwarded-For.
        let spoofed = Request::get("/auth/api/v1/login")
            .header("x-forwarded-for", "203.0.113.9")
            .body(axum::body::Body::empty())
            .unwrap();
        let spoofed = {
            use tower::ServiceExt as _;
            first.clone().oneshot(spoofed).await.unwrap()
        };
        assert_eq!(spoofed.status(), 429);

        assert_eq!(
            call(&other_address, "/auth/api/v1/login").await.status(),
            204
        );
        assert_eq!(call(&ipv6_a, "/auth/api/v1/login").await.status(), 204);
        assert_eq!(
            call(&ipv6_same_block, "/auth/api/v1/login").await.status(),
            429
        );
        // Exempt paths get through without headers.
        let health = call(&first, "/auth/api/health").await;
        assert_eq!(health.status(), 204);
        assert!(!health.headers().contains_key(&X_RATELIMIT_LIMIT));
    }

    #[test]
    fn sweeping_drops_keys_whose_bucket_is_full_again() {
        // 60 000 per minute: one request comes back every millisecond.
        let limits = RateLimits::new(&config(60_000, 60_000, 60_000));
        for n in 0..50u8 {
            limits.inner.check(Class::Read, HOME, Some([n; 32]));
            limits
                .inner
                .check(Class::Auth, IpAddr::V4(Ipv4Addr::new(10, 0, 0, n)), None);
        }
        assert_eq!(limits.tracked_keys(), 50 + 1 + 50);
        std::thread::sleep(Duration::from_millis(20));
        limits.sweep();
        assert_eq!(limits.tracked_keys(), 0);
    }
}
