//! Per-tenant usage metering (a tenant owner sees their engine calls and the limits
//! they hit): what the host answered each tenant, counted in memory by day and written to the
//! database in batches by the assembly's flusher (a [`UsageSink`], every
//! `TESSERA_USAGE_FLUSH_INTERVAL`, and once more at shutdown).
//!
//! - **What is counted.** `engine_calls` (by engine): every request an engine route handed to
//!   an engine, whatever it answered. `limits_hit` (by limit): every request refused by a limit:
//!   `rate_limit.read` / `rate_limit.write` (429), `engine_capacity` (503, the tenant's share of
//!   engine calls full), `backlog` (503, the platform's backlog of accepted work past its
//!   bound), `engine_deadline` (504), `body_size` (413). Whatever refused a request says which
//!   limit by a [`LimitHit`] in the response's extensions; an engine route marks its answers
//!   with [`EngineCall`].
//! - **Realtime** (counted by the realtime hub and the engine runtime, not this middleware):
//!   `realtime` by `connections` (WebSockets and event streams opened) and `events_delivered`
//!   (frames of events queued for the tenant's connections, metered every few seconds); and
//!   the realtime limits among `limits_hit`: `realtime.connections`
//!   (4029 / 429), `realtime.subscriptions` (an `error` frame with 429), `realtime.send_queue`
//!   (4008), `realtime.frame_size` (1009), `realtime.publish` (a publication refused to an
//!   engine).
//! - **Whose.** The tenant of the request's bearer token, only when the host verified that token
//!   recently ([`TenantOfBearer`]: a lookup in the verified-token cache, never a signature
//!   check here, so a flood of forged tokens costs nothing more and counts for no one).
//!   Requests without a token (sign-in) are counted for nobody.
//! - **Memory.** At most [`MAX_PENDING_KEYS`] (tenant, day, metric, dimension) counters wait
//!   between flushes; increments of new keys beyond that are dropped (and counted in
//!   `tessera_usage_dropped_total`), never blocking a request.
//! - **Loss.** Counts not yet flushed are lost if the process dies: usage is an account of
//!   what happened, not acknowledged data; at most one interval's worth.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::Response;

/// How the meter's counters are kept (`TESSERA_USAGE_FLUSH_INTERVAL`,
/// `TESSERA_USAGE_RETENTION_DAYS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UsageConfig {
    /// How often counters are written to the database (and at most how much is lost when the
    /// process dies).
    pub flush_interval: std::time::Duration,
    /// Days of counters kept; older days are pruned.
    pub retention_days: u32,
}

impl Default for UsageConfig {
    fn default() -> Self {
        Self {
            flush_interval: std::time::Duration::from_secs(10),
            retention_days: 90,
        }
    }
}

/// The most counters kept between two flushes.
pub const MAX_PENDING_KEYS: usize = 100_000;

/// A response extension naming the limit that refused the request (e.g. `rate_limit.write`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitHit(pub &'static str);

/// A response extension marking an answer of an engine route: the engine's code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineCall(pub String);

/// One counter: a tenant's `metric` on a UTC day (`YYYY-MM-DD`), by `dimension` (an engine
/// code, a limit's name).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UsageKey {
    pub tenant_id: String,
    pub day: String,
    pub metric: &'static str,
    pub dimension: String,
}

/// Counters waiting to be written; cheap to clone.
#[derive(Clone, Default)]
pub struct UsageMeter {
    pending: Arc<Mutex<HashMap<UsageKey, u64>>>,
}

impl UsageMeter {
    /// Adds one to the tenant's `metric` by `dimension` today.
    pub fn record(&self, tenant_id: &str, metric: &'static str, dimension: &str) {
        self.record_amount(tenant_id, metric, dimension, 1);
    }

    /// Adds `amount` to the tenant's `metric` by `dimension` today.
    pub fn record_amount(
        &self,
        tenant_id: &str,
        metric: &'static str,
        dimension: &str,
        amount: u64,
    ) {
        if amount == 0 {
            return;
        }
        let key = UsageKey {
            tenant_id: tenant_id.to_owned(),
            day: chrono::Utc::now().format("%Y-%m-%d").to_string(),
            metric,
            dimension: dimension.to_owned(),
        };
        let mut pending = self
            .pending
            .lock()
            .unwrap_or_else(|error| error.into_inner());
        let full = pending.len() >= MAX_PENDING_KEYS;
        match pending.get_mut(&key) {
            Some(count) => *count += amount,
            None if full => {
                metrics::counter!("tessera_usage_dropped_total").increment(amount);
            }
            None => {
                pending.insert(key, amount);
            }
        }
    }

    /// Takes every waiting counter (the meter starts again from nothing).
    pub fn take(&self) -> Vec<(UsageKey, u64)> {
        let mut pending = self
            .pending
            .lock()
            .unwrap_or_else(|error| error.into_inner());
        std::mem::take(&mut *pending).into_iter().collect()
    }

    /// Puts counters back after a failed write, adding to what came since (bounded like
    /// [`Self::record`]).
    pub fn restore(&self, counts: Vec<(UsageKey, u64)>) {
        let mut pending = self
            .pending
            .lock()
            .unwrap_or_else(|error| error.into_inner());
        for (key, amount) in counts {
            let full = pending.len() >= MAX_PENDING_KEYS;
            match pending.get_mut(&key) {
                Some(count) => *count += amount,
                None if full => {
                    metrics::counter!("tessera_usage_dropped_total").increment(amount);
                }
                None => {
                    pending.insert(key, amount);
                }
            }
        }
    }
}

/// Where the flusher writes counters: the database, in the assembly.
pub trait UsageSink: Send + Sync + 'static {
    /// Adds each amount to its stored counter, atomically for the whole batch.
    fn add<'a>(
        &'a self,
        counts: &'a [(UsageKey, u64)],
    ) -> std::pin::Pin<Box<dyn Future<Output = anyhow::Result<()>> + Send + 'a>>;
}

/// Writes what the meter holds; on failure the counts go back to the meter for the next try.
pub async fn flush(meter: &UsageMeter, sink: &dyn UsageSink) -> anyhow::Result<usize> {
    let counts = meter.take();
    if counts.is_empty() {
        return Ok(0);
    }
    match sink.add(&counts).await {
        Ok(()) => Ok(counts.len()),
        Err(error) => {
            meter.restore(counts);
            Err(error)
        }
    }
}

/// The tenant a bearer token speaks for, when this host verified it recently (no signature
/// check: a cache lookup).
pub trait TenantOfBearer: Send + Sync + 'static {
    fn tenant_of(
        &self,
        token: &str,
    ) -> std::pin::Pin<Box<dyn Future<Output = Option<String>> + Send + '_>>;
}

/// The state of [`meter`]: the counters and how a token's tenant is found.
#[derive(Clone)]
pub struct Metering {
    pub meter: UsageMeter,
    pub tenants: Arc<dyn TenantOfBearer>,
}

/// The limit a bare refusal (no [`LimitHit`]) stands for, by its status.
fn limit_of_status(status: StatusCode) -> Option<&'static str> {
    match status {
        StatusCode::PAYLOAD_TOO_LARGE => Some("body_size"),
        _ => None,
    }
}

/// Middleware: counts each answered request for the tenant of its (recently verified) bearer.
pub async fn meter(State(metering): State<Metering>, request: Request, next: Next) -> Response {
    let token = crate::extract::bearer_token(request.headers()).map(str::to_owned);
    let response = next.run(request).await;
    let Some(token) = token else {
        return response;
    };
    let engine = response.extensions().get::<EngineCall>().cloned();
    let limit = response
        .extensions()
        .get::<LimitHit>()
        .map(|hit| hit.0)
        .or_else(|| limit_of_status(response.status()));
    if engine.is_none() && limit.is_none() {
        return response;
    }
    if let Some(tenant_id) = metering.tenants.tenant_of(&token).await {
        if let Some(EngineCall(code)) = engine {
            metering.meter.record(&tenant_id, "engine_calls", &code);
        }
        if let Some(limit) = limit {
            metering.meter.record(&tenant_id, "limits_hit", limit);
        }
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_up_by_key_and_survive_a_failed_write() {
        let meter = UsageMeter::default();
        meter.record("t1", "engine_calls", "chat");
        meter.record("t1", "engine_calls", "chat");
        meter.record("t1", "limits_hit", "rate_limit.write");
        meter.record("t2", "engine_calls", "chat");
        let mut counts = meter.take();
        counts.sort_by(|left, right| {
            (&left.0.tenant_id, left.0.metric).cmp(&(&right.0.tenant_id, right.0.metric))
        });
        let amounts: Vec<(&str, &str, u64)> = counts
            .iter()
            .map(|(key, amount)| (key.tenant_id.as_str(), key.metric, *amount))
            .collect();
        assert_eq!(
            amounts,
            [
                ("t1", "engine_calls", 2),
                ("t1", "limits_hit", 1),
                ("t2", "engine_calls", 1)
            ]
        );
        assert!(meter.take().is_empty(), "taken once");

        meter.record("t1", "engine_calls", "chat");
        meter.restore(counts);
        let restored: u64 = meter
            .take()
            .into_iter()
            .filter(|(key, _)| key.tenant_id == "t1" && key.metric == "engine_calls")
            .map(|(_, amount)| amount)
            .sum();
        assert_eq!(restored, 3, "the failed batch and what came since");
    }
}
