//! Rate limits that hold for a cluster (`TESSERA_RATE_LIMIT_SCOPE=cluster`, the default on
//! PostgreSQL): the buckets live in the database every host shares, so a client gets
//! its limit once, whichever hosts its requests reach.
//!
//! Requests are decided in batches, as commits are grouped: one task per host takes every
//! request waiting, draws them from their buckets in one statement (the client's own buckets),
//! then the requests those allowed from their addresses' ceilings in a second, and answers
//! each. While a batch is in the database the next one gathers, so a busy host makes two
//! statements per batch, not per request; an idle host answers a lone request after two round
//! trips. The database decides under each bucket's row lock and on its own clock, so the limit
//! is exact across hosts (no tolerance beyond GCRA's own). When the database cannot be reached
//! the batch is decided by this host's in-memory buckets (logged), as with one host.

use std::collections::HashMap;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use super::{Class, Decision, Limiters, PER_IP_CEILING_FACTOR};

/// Requests wanted from one shared bucket (see `tessera_storage::rate_limit_buckets`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketDraw {
    pub key: String,
    pub wanted: u32,
    /// The bucket's size: requests per 60 s.
    pub burst: u32,
    /// One request's share of the window (60 s / burst), in microseconds.
    pub interval_us: i64,
}

/// What one shared bucket granted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketGrant {
    pub key: String,
    /// How many of the requests wanted fit (the first ones of the batch).
    pub granted: u32,
    /// Requests the bucket holds after the draw.
    pub remaining: u32,
    /// Until one more request would fit.
    pub retry_after: Duration,
}

/// The future of a draw.
pub type DrawFuture<'a> =
    Pin<Box<dyn Future<Output = anyhow::Result<Vec<BucketGrant>>> + Send + 'a>>;

/// Buckets every host of a cluster draws from: owned here, implemented by the assembly over
/// the database.
pub trait SharedBuckets: Send + Sync + 'static {
    /// Draws each entry (distinct keys) from its bucket, atomically per bucket.
    fn draw(&self, draws: Vec<BucketDraw>) -> DrawFuture<'_>;
    /// Deletes the buckets that are full again; how many.
    fn sweep(&self) -> Pin<Box<dyn Future<Output = anyhow::Result<u64>> + Send + '_>>;
}

/// The most requests one batch decides.
const MAX_BATCH: usize = 512;

/// One request waiting for its decision.
struct Pending {
    class: Class,
    address: IpAddr,
    token: Option<[u8; 32]>,
    reply: oneshot::Sender<Option<Decision>>,
}

/// The handle requests send themselves through to the batching task.
#[derive(Clone)]
pub(super) struct SharedLimiter {
    sender: mpsc::UnboundedSender<Pending>,
    pub(super) buckets: Arc<dyn SharedBuckets>,
}

impl SharedLimiter {
    /// Starts the batching task (on the current tokio runtime).
    pub(super) fn start(buckets: Arc<dyn SharedBuckets>, local: Arc<Limiters>) -> Self {
        let (sender, receiver) = mpsc::unbounded_channel();
        tokio::spawn(run(buckets.clone(), local, receiver));
        Self { sender, buckets }
    }

    /// The decision for one request; `None` when the class is off. Falls back to `local` when
    /// the task is gone.
    pub(super) async fn check(
        &self,
        local: &Limiters,
        class: Class,
        address: IpAddr,
        token: Option<[u8; 32]>,
    ) -> Option<Decision> {
        local.limit(class)?;
        let (reply, decided) = oneshot::channel();
        let pending = Pending {
            class,
            address,
            token,
            reply,
        };
        if self.sender.send(pending).is_ok()
            && let Ok(decision) = decided.await
        {
            return decision;
        }
        local.check(class, address, token)
    }
}

/// The batching task: every request waiting, decided together, until every sender is gone.
async fn run(
    buckets: Arc<dyn SharedBuckets>,
    local: Arc<Limiters>,
    mut receiver: mpsc::UnboundedReceiver<Pending>,
) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    let mut last_warning: Option<tokio::time::Instant> = None;
    while receiver.recv_many(&mut batch, MAX_BATCH).await > 0 {
        let requests: Vec<Request> = batch
            .iter()
            .map(|pending| Request {
                class: pending.class,
                address: pending.address,
                token: pending.token,
            })
            .collect();
        let decisions = match decide(buckets.as_ref(), &local, &requests).await {
            Ok(decisions) => decisions,
            Err(error) => {
                // At most one warning a minute while the database is away.
                if last_warning.is_none_or(|at| at.elapsed() >= Duration::from_secs(60)) {
                    last_warning = Some(tokio::time::Instant::now());
                    tracing::warn!(
                        error = format!("{error:#}"),
                        "the shared rate-limit buckets are unreachable; this host's own buckets decide meanwhile"
                    );
                }
                requests
                    .iter()
                    .map(|request| local.check(request.class, request.address, request.token))
                    .collect()
            }
        };
        for (pending, decision) in batch.drain(..).zip(decisions) {
            let _ = pending.reply.send(decision);
        }
    }
}

/// What a request is counted by.
struct Request {
    class: Class,
    address: IpAddr,
    token: Option<[u8; 32]>,
}

/// The class's name in bucket keys.
fn class_name(class: Class) -> &'static str {
    match class {
        Class::Auth => "auth",
        Class::Read => "read",
        Class::Write => "write",
    }
}

/// The key of a request's own bucket: its address for auth, else its token (hashed) or address.
fn own_key(request: &Request) -> String {
    let class = class_name(request.class);
    match (request.class, request.token) {
        (Class::Read | Class::Write, Some(digest)) => {
            format!("{class}:token:{}", hex::encode(digest))
        }
        _ => format!("{class}:ip:{}", request.address),
    }
}

/// Decides `requests` against the shared buckets: the own buckets, then the ceilings of the
/// reads and writes their own buckets allowed.
async fn decide(
    buckets: &dyn SharedBuckets,
    local: &Limiters,
    requests: &[Request],
) -> anyhow::Result<Vec<Option<Decision>>> {
    let limit_of = |class: Class| local.limit(class);
    let own: Vec<Option<(String, u32)>> = requests
        .iter()
        .map(|request| limit_of(request.class).map(|limit| (own_key(request), limit)))
        .collect();
    let mut decisions = draw_in_order(buckets, &own).await?;
    let ceilings: Vec<Option<(String, u32)>> = requests
        .iter()
        .zip(&decisions)
        .map(|(request, decision)| match (request.class, decision) {
            (Class::Read | Class::Write, Some(Decision::Allowed { .. })) => limit_of(request.class)
                .map(|limit| {
                    (
                        format!("{}:ceiling:{}", class_name(request.class), request.address),
                        limit.saturating_mul(PER_IP_CEILING_FACTOR),
                    )
                }),
            _ => None,
        })
        .collect();
    if ceilings.iter().any(Option::is_some) {
        let ceiling_decisions = draw_in_order(buckets, &ceilings).await?;
        for (decision, ceiling) in decisions.iter_mut().zip(ceiling_decisions) {
            if let Some(refused @ Decision::Refused { .. }) = ceiling {
                *decision = Some(refused);
            }
        }
    }
    Ok(decisions)
}

/// Draws each entry's bucket (`None`: not counted) and decides the entries in order: the first
/// ones a bucket granted are allowed, the rest refused.
async fn draw_in_order(
    buckets: &dyn SharedBuckets,
    entries: &[Option<(String, u32)>],
) -> anyhow::Result<Vec<Option<Decision>>> {
    let mut wanted: HashMap<&str, BucketDraw> = HashMap::new();
    for (key, limit) in entries.iter().flatten() {
        wanted
            .entry(key.as_str())
            .and_modify(|draw| draw.wanted += 1)
            .or_insert_with(|| BucketDraw {
                key: key.clone(),
                wanted: 1,
                burst: *limit,
                interval_us: 60_000_000 / i64::from((*limit).max(1)),
            });
    }
    if wanted.is_empty() {
        return Ok(vec![None; entries.len()]);
    }
    let grants: HashMap<String, BucketGrant> = buckets
        .draw(wanted.into_values().collect())
        .await?
        .into_iter()
        .map(|grant| (grant.key.clone(), grant))
        .collect();
    let mut taken: HashMap<&str, u32> = HashMap::new();
    entries
        .iter()
        .map(|entry| {
            let Some((key, limit)) = entry else {
                return Ok(None);
            };
            let grant = grants
                .get(key)
                .ok_or_else(|| anyhow::anyhow!("the shared buckets answered no grant for a key"))?;
            let position = taken.entry(key.as_str()).or_default();
            let decision = if *position < grant.granted {
                // The earlier of the granted requests saw more left in the bucket.
                let remaining = grant.remaining + (grant.granted - 1 - *position);
                Decision::Allowed {
                    limit: *limit,
                    remaining: remaining.min(*limit),
                }
            } else {
                Decision::Refused {
                    limit: *limit,
                    retry_after_seconds: grant.retry_after.as_secs_f64().ceil().max(1.0) as u64,
                }
            };
            *position += 1;
            Ok(Some(decision))
        })
        .collect()
}
