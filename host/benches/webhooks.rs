//! Benchmark of webhook deliveries (`cargo bench -p tessera-host --bench webhooks`): how many
//! deliveries per second the chat engine (a WebAssembly component, built from `engines/chat`)
//! gets to a local HTTPS receiver through the host's durable work queue, against a native
//! ceiling. On SQLite (a temp data dir) and on PostgreSQL (a fresh database created on the server
//! named by `TESSERA_TEST_POSTGRES_URL` and dropped afterwards; skipped with a message when
//! unset).
//!
//! The **receiver** is an axum server over rustls on 127.0.0.1 with a fresh self-signed
//! certificate for `localhost` / `127.0.0.1`, which the host trusts through
//! `config.outbound.extra_ca` (private targets allowed). `POST /hook/<n>` answers 204; it verifies
//! each `X-Service-Signature` with `tessera_signature::verify` against webhook `n`'s secret,
//! checks the headers and the body (`event_type` `message.created`, `data.message_id`), and
//! records the arrival time of each distinct `X-Webhook-Delivery` id (a repeated id is counted
//! as a duplicate, not as an arrival).
//!
//! 1. **Ceiling**: signed POSTs as a delivery makes them (a body of the same shape and size,
//!    the same headers, a fresh delivery id and a signature computed per request with
//!    `tessera_signature::sign`) from native `reqwest` (rustls, the receiver's certificate
//!    trusted, keep-alive) to the same receiver: 1 sequential loop, and as many concurrent
//!    loops sharing one client as the items of engine work the host runs at once
//!    (`WorkerConfig::default().concurrency`, 64). 1 s warm-up, then the 2xx answers completed
//!    in a 5 s window. The single loop is the ceiling the target is judged against ("a native
//!    reqwest loop"); the concurrent loops, what the receiver takes at most, are
//!    reported beside it.
//! 2. **Engine deliveries at 1 webhook**: a fresh host with the chat engine; a tenant created
//!    through `TenancyService` (the orchestrator runs chat's `provision_tenant`), an owner
//!    user (chat's `provision_user`), a session token of theirs; one webhook subscribed to
//!    `message.created` (`POST /chat/api/v1/webhooks`), one conversation; then 2,000 messages
//!    posted by 4 concurrent clients as fast as the host answers. Each message makes one
//!    delivery, sent by the host's work worker. Measured: the message POST rate; the rate at
//!    which deliveries arrive at the receiver, deliveries / (last arrival − first arrival);
//!    end to end, deliveries / (last arrival − first message POST); the gaps between
//!    consecutive arrivals (p50 / p99 / max, and the time spent in gaps ≥ 100 ms: the
//!    receiver waiting on the host, not the reverse). Verified: every delivery
//!    arrived exactly once (distinct ids, one per webhook and message), every signature
//!    verified, and the engine lists them all as `delivered`
//!    (`GET /chat/api/v1/webhooks/{id}/deliveries`, whose `response_time_ms` and `attempt`
//!    are reported too).
//! 3. **At 50 webhooks**: the same with 50 webhooks (`/hook/1` … `/hook/50`, each its own
//!    secret) and 200 messages: 10,000 deliveries.
//! 4. **Backlog drains**: 2 (with 10,000 messages) and 3 again, with the receiver holding every
//!    request while the messages are posted (the first deliveries wait in flight, one per work
//!    slot, the rest queue in the host's work queue), then answering all: deliveries / (last
//!    arrival − release), the delivery path alone, not paced by the chat message POSTs as 2 is,
//!    with the CPU used from the release to the last arrival.
//!
//! The target: backlog drain deliveries/s ≥ 50 % of the single-loop ceiling, at 1 and at 50
//! webhooks (the drain table comes first in the output, with its verdicts). The host, the receiver and
//! the load generators share one multi-thread tokio runtime (one worker per core) on loopback,
//! as the other host benchmarks do; rate limits are off; mimalloc is the global allocator, as
//! in the `tessera` binary. The result is printed as Markdown tables for BENCHMARKS.md, with
//! the CPU the run and everything else on the machine used, and what the hypervisor stole
//! (progress goes to stderr). A scenario that cannot run (e.g. an engine that does not serve
//! the webhook API) is reported in the tables and makes the run exit with an error. Run with
//! `TESSERA_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test cargo bench -p tessera-host --bench webhooks`
//! on a quiet machine; the first run also builds the engines (wasm32-wasip2, release). Most of
//! the time goes to posting the messages and waiting for the 32,000 deliveries per database:
//! about two minutes with both databases at the rates in BENCHMARKS.md.
//!
//! For iterating: `TESSERA_BENCH_ONLY` (a comma list of `sqlite`, `postgres`, `live`, `drain`)
//! narrows the run, and `TESSERA_BENCH_PERF_DIR` records each drain with `perf record`.

#[allow(dead_code)]
#[path = "../../tests/it/components.rs"]
mod components;
#[path = "support/mod.rs"]
mod support;

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use serde_json::{Value, json};
use tessera_host::runtime::work::WorkerConfig;
use tessera_host::tenancy::Role;

use support::{Backend, BenchDatabase, Server, count, cpu_share, cpu_ticks, verdict};

/// The `tessera` binary's allocator, so the benchmark measures what the binary runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const CEILING_WARM_UP: Duration = Duration::from_secs(1);
const CEILING_WINDOW: Duration = Duration::from_secs(5);
/// Messages of the 1-webhook scenario.
const MESSAGES_AT_ONE: usize = 2_000;
/// Messages of the 1-webhook backlog drain: as many deliveries as the 50-webhook one, so both
/// drains last long enough for their start (the first deliveries released at once) not to
/// weigh on the rate.
const MESSAGES_AT_ONE_DRAINED: usize = 10_000;
/// Webhooks and messages of the second scenario (10,000 deliveries).
const MANY_WEBHOOKS: usize = 50;
const MESSAGES_AT_MANY: usize = 200;
/// Concurrent clients posting messages.
const POSTERS: usize = 4;
/// Stop waiting for deliveries after this long without a new one.
const STALL_TIMEOUT: Duration = Duration::from_secs(60);
/// How long duplicates (retries) may still come after the last expected delivery.
const GRACE: Duration = Duration::from_secs(1);
/// How long the engine may take to record the last outcomes after they arrived.
const API_SETTLE_TIMEOUT: Duration = Duration::from_secs(30);
const TARGET_RATIO: f64 = 0.5;
/// A gap between two arrivals at least this long counts as idle time of the receiver.
const IDLE_GAP: Duration = Duration::from_millis(100);

const EVENT: &str = "message.created";

/// The secret of webhook `index` (0 is the ceiling's): distinct per webhook, ≥ 32 characters.
fn secret(index: usize) -> String {
    format!("whsec_bench_{index:03}_0123456789abcdef0123456789abcdef")
}

// ---------------------------------------------------------------------------------------------
// Small helpers: formatting, CPU.

fn seconds(duration: Duration) -> String {
    let secs = duration.as_secs_f64();
    if secs < 1.0 {
        format!("{:.0} ms", secs * 1e3)
    } else {
        format!("{secs:.2} s")
    }
}

/// A ratio as a percentage, with decimals when it is small.
fn percent(ratio: f64) -> String {
    let percent = ratio * 100.0;
    if percent < 1.0 {
        format!("{percent:.2} %")
    } else if percent < 10.0 {
        format!("{percent:.1} %")
    } else {
        format!("{percent:.0} %")
    }
}

fn percentile(samples: &mut [u64], fraction: f64) -> Option<u64> {
    if samples.is_empty() {
        return None;
    }
    samples.sort_unstable();
    Some(samples[((samples.len() - 1) as f64 * fraction).round() as usize])
}

fn cpu_text(cpu: Option<(f64, f64, f64)>) -> String {
    match cpu {
        Some((own, other, steal)) => format!("{own:.2} / {other:.2} / {steal:.2}"),
        None => "n/a".into(),
    }
}

// ---------------------------------------------------------------------------------------------
// The HTTPS receiver.

/// What the receiver saw since the last [`Receiver::reset`].
#[derive(Default)]
struct ReceiverLog {
    requests: u64,
    /// Distinct `X-Webhook-Delivery` ids.
    ids: HashSet<String>,
    /// Requests whose delivery id had arrived before.
    duplicates: u64,
    /// Distinct (webhook, message id) of the first arrivals: one per webhook and message.
    events: HashSet<(usize, String)>,
    bad_signatures: u64,
    /// Missing or wrong headers, or a body without `event_type` `message.created` and a
    /// `data.message_id`.
    malformed: u64,
    /// When each distinct delivery first arrived.
    arrivals: Vec<Instant>,
    body_bytes: u64,
}

struct Receiver {
    port: u16,
    /// The certificate's PEM, and the file the host reads it from.
    pem: String,
    pem_path: PathBuf,
    secrets: Vec<String>,
    log: Mutex<ReceiverLog>,
    /// `true` while requests are answered; while `false` each request waits (the backlog
    /// scenarios hold the deliveries in flight, so the rest queue in the host's work queue).
    gate: tokio::sync::watch::Sender<bool>,
}

impl Receiver {
    fn url(&self, index: usize) -> String {
        format!("https://127.0.0.1:{}/hook/{index}", self.port)
    }

    fn reset(&self) {
        *self.log.lock().unwrap() = ReceiverLog::default();
    }

    fn take(&self) -> ReceiverLog {
        std::mem::take(&mut *self.log.lock().unwrap())
    }

    fn distinct(&self) -> usize {
        self.log.lock().unwrap().ids.len()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.pem_path);
    }
}

async fn hook(
    State(receiver): State<Arc<Receiver>>,
    Path(index): Path<usize>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    // A held request counts as arriving when it is let through.
    let _ = receiver.gate.subscribe().wait_for(|open| *open).await;
    let arrived = Instant::now();
    let Some(secret) = receiver.secrets.get(index) else {
        return StatusCode::NOT_FOUND;
    };
    let header = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
    let signed = header(tessera_signature::SIGNATURE_HEADER).is_some_and(|signature| {
        tessera_signature::verify(
            secret.as_bytes(),
            signature,
            &body,
            chrono::Utc::now().timestamp(),
        )
        .is_ok()
    });
    let delivery = header("x-webhook-delivery").map(str::to_owned);
    let message_id = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|event| {
            (event["event_type"] == EVENT)
                .then(|| event["data"]["message_id"].as_str().map(str::to_owned))
                .flatten()
        });
    let headers_ok = header("content-type")
        .is_some_and(|value| value.to_ascii_lowercase().starts_with("application/json"))
        && header("x-webhook-event") == Some(EVENT);

    let mut log = receiver.log.lock().unwrap();
    log.requests += 1;
    log.body_bytes += body.len() as u64;
    if !signed {
        log.bad_signatures += 1;
    }
    if !headers_ok || delivery.is_none() || message_id.is_none() {
        log.malformed += 1;
    }
    if let Some(delivery) = delivery {
        if log.ids.insert(delivery) {
            log.arrivals.push(arrived);
            if let Some(message_id) = message_id {
                log.events.insert((index, message_id));
            }
        } else {
            log.duplicates += 1;
        }
    }
    StatusCode::NO_CONTENT
}

/// An HTTPS receiver on 127.0.0.1 with a new self-signed certificate for `localhost` and
/// `127.0.0.1`, written to a PEM file in the temp dir for the host to trust.
async fn https_receiver() -> anyhow::Result<Arc<Receiver>> {
    let certified =
        rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])?;
    let pem = certified.cert.pem();
    let pem_path =
        std::env::temp_dir().join(format!("tessera-bench-ca-{}.pem", uuid::Uuid::new_v4()));
    std::fs::write(&pem_path, &pem)?;
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(rustls::pki_types::PrivatePkcs8KeyDer::from(
        certified.signing_key.serialize_der(),
    ));
    let tls = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_no_client_auth()
    .with_single_cert(vec![certified.cert.der().clone()], key)?;
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    listener.set_nonblocking(true)?;
    let port = listener.local_addr()?.port();
    let receiver = Arc::new(Receiver {
        port,
        pem,
        pem_path,
        secrets: (0..=MANY_WEBHOOKS).map(secret).collect(),
        log: Mutex::new(ReceiverLog::default()),
        gate: tokio::sync::watch::Sender::new(true),
    });
    let server = axum_server::from_tcp_rustls(
        listener,
        axum_server::tls_rustls::RustlsConfig::from_config(Arc::new(tls)),
    )?;
    let routes = Router::new()
        .route("/hook/{index}", post(hook))
        .with_state(receiver.clone());
    tokio::spawn(async move { server.serve(routes.into_make_service()).await });
    Ok(receiver)
}

// ---------------------------------------------------------------------------------------------
// 1. The native ceiling.

struct CeilingRun {
    loops: usize,
    per_second: f64,
    failures: u64,
}

struct Ceiling {
    runs: Vec<CeilingRun>,
    /// What the receiver saw over all ceiling runs.
    log: ReceiverLog,
    body_bytes: usize,
    cpu: Option<(f64, f64, f64)>,
}

impl Ceiling {
    fn of(&self, loops: usize) -> f64 {
        self.runs
            .iter()
            .find(|run| run.loops == loops)
            .map_or(0.0, |run| run.per_second)
    }
}

/// A body like a delivery's: `{id, event_type, tenant_id, occurred_at, data}`.
fn delivery_body(tenant_id: &str) -> String {
    json!({
        "id": uuid::Uuid::now_v7().to_string(),
        "event_type": EVENT,
        "tenant_id": tenant_id,
        "occurred_at": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        "data": {
            "conversation_id": uuid::Uuid::now_v7().to_string(),
            "message_id": uuid::Uuid::now_v7().to_string(),
            "user_id": uuid::Uuid::new_v4().to_string(),
        },
    })
    .to_string()
}

/// One signed delivery-like POST; whether it was answered 2xx.
async fn signed_post(client: &reqwest::Client, url: &str, secret: &str, tenant_id: &str) -> bool {
    let body = delivery_body(tenant_id);
    let signature = tessera_signature::sign(
        secret.as_bytes(),
        chrono::Utc::now().timestamp(),
        body.as_bytes(),
    );
    let response = client
        .post(url)
        .header("content-type", "application/json")
        .header(tessera_signature::SIGNATURE_HEADER, signature)
        .header("x-webhook-event", EVENT)
        .header("x-webhook-delivery", uuid::Uuid::new_v4().to_string())
        .body(body)
        .send()
        .await;
    match response {
        Ok(response) => {
            let success = response.status().is_success();
            // Read to the end so the connection goes back to the pool.
            let _ = response.bytes().await;
            success
        }
        Err(_) => false,
    }
}

/// POSTs/s answered 2xx from `loops` concurrent loops sharing `client`.
async fn ceiling_loops(
    client: &reqwest::Client,
    receiver: &Receiver,
    loops: usize,
) -> anyhow::Result<CeilingRun> {
    let completed = Arc::new(AtomicU64::new(0));
    let failures = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let measure_from = started + CEILING_WARM_UP;
    let deadline = measure_from + CEILING_WINDOW;
    let tenant_id = uuid::Uuid::new_v4().to_string();
    let tasks: Vec<_> = (0..loops)
        .map(|_| {
            let (client, completed, failures) =
                (client.clone(), completed.clone(), failures.clone());
            let (url, secret, tenant_id) = (receiver.url(0), secret(0), tenant_id.clone());
            tokio::spawn(async move {
                loop {
                    let ok = signed_post(&client, &url, &secret, &tenant_id).await;
                    let now = Instant::now();
                    if now >= deadline {
                        break;
                    }
                    if now >= measure_from {
                        if ok {
                            completed.fetch_add(1, Ordering::Relaxed);
                        } else {
                            failures.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            })
        })
        .collect();
    for task in tasks {
        task.await?;
    }
    Ok(CeilingRun {
        loops,
        per_second: completed.load(Ordering::Relaxed) as f64 / CEILING_WINDOW.as_secs_f64(),
        failures: failures.load(Ordering::Relaxed),
    })
}

async fn ceiling(receiver: &Receiver) -> anyhow::Result<Ceiling> {
    let ticks_before = cpu_ticks();
    let client = reqwest::Client::builder()
        .use_rustls_tls()
        .no_proxy()
        .add_root_certificate(reqwest::Certificate::from_pem(receiver.pem.as_bytes())?)
        .pool_idle_timeout(Duration::from_secs(60))
        .pool_max_idle_per_host(WorkerConfig::default().concurrency)
        .build()?;
    receiver.reset();
    let mut runs = Vec::new();
    for loops in [1, WorkerConfig::default().concurrency] {
        eprintln!(
            "ceiling: {loops} loop(s) of signed POSTs for {CEILING_WARM_UP:?} + {CEILING_WINDOW:?}…"
        );
        let run = ceiling_loops(&client, receiver, loops).await?;
        eprintln!("  {:.0} POSTs/s", run.per_second);
        runs.push(run);
    }
    Ok(Ceiling {
        runs,
        log: receiver.take(),
        body_bytes: delivery_body(&uuid::Uuid::new_v4().to_string()).len(),
        cpu: cpu_share(ticks_before, cpu_ticks()),
    })
}

// ---------------------------------------------------------------------------------------------
// Databases and hosts.

/// A host with the chat engine, trusting the receiver's certificate on loopback.
async fn start_chat_host(
    database: &BenchDatabase,
    receiver: &Receiver,
    engines: &std::path::Path,
) -> anyhow::Result<Server> {
    let plugins_dir = database.plugins_dir();
    std::fs::create_dir_all(&plugins_dir)?;
    std::fs::copy(engines.join("chat.wasm"), plugins_dir.join("chat.wasm"))
        .context("copying chat.wasm")?;
    let server = Server::start(database, |config| {
        config.outbound.extra_ca = Some(receiver.pem_path.clone());
        config.outbound.allow_private_targets = true;
    })
    .await?;
    anyhow::ensure!(
        server.state.engines.get("chat").is_some(),
        "the chat engine did not load"
    );
    Ok(server)
}

/// A tenant provisioned on chat, with an owner provisioned on chat and a bearer token of theirs.
struct BenchTenant {
    token: String,
}

async fn create_tenant(server: &Server, slug: &str) -> anyhow::Result<BenchTenant> {
    let (_, users) = support::provisioned_tenant(&server.state, slug, &[Role::Owner]).await?;
    let tenant = BenchTenant {
        token: users.into_iter().next().context("the owner")?.token,
    };
    // Chat's own view of the provisioning, when it offers one.
    let client = reqwest::Client::new();
    let response = client
        .get(server.url("/chat/api/v1/status"))
        .bearer_auth(&tenant.token)
        .send()
        .await?;
    if response.status() == 200 {
        let status: Value = response.json().await?;
        anyhow::ensure!(
            status["data"]["tenant_provisioned"] == true
                && status["data"]["user_provisioned"] == true,
            "chat reports the tenant or the user as not provisioned: {status}"
        );
    }
    Ok(tenant)
}

/// POSTs `body` and returns the answer's `data`, or an error unless the status is `expected`.
async fn post_json(
    client: &reqwest::Client,
    url: &str,
    token: &str,
    body: &Value,
    expected: u16,
) -> anyhow::Result<Value> {
    support::data_of(client.post(url).bearer_auth(token).json(body), expected)
        .await
        .with_context(|| format!("POST {url}"))
}

fn id_of(data: &Value, what: &str) -> anyhow::Result<String> {
    data["id"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| anyhow::anyhow!("the created {what} has no id: {data}"))
}

// ---------------------------------------------------------------------------------------------
// 2–3. Engine deliveries.

/// The engine's record of a webhook's deliveries (`GET …/deliveries`).
#[derive(Default)]
struct ApiCheck {
    /// Deliveries by status, over all webhooks.
    statuses: BTreeMap<String, usize>,
    /// What `?status=delivered` lists, over all webhooks.
    delivered_filtered: usize,
    response_times_ms: Vec<u64>,
    /// Deliveries that took more than one attempt.
    retried: usize,
    /// Why the check could not be completed, if it could not.
    error: Option<String>,
}

struct ScenarioRun {
    messages: usize,
    expected: usize,
    post_started: Instant,
    post_finished: Instant,
    log: ReceiverLog,
    /// Every expected delivery arrived before the wait gave up.
    complete: bool,
    api: ApiCheck,
    cpu: Option<(f64, f64, f64)>,
    /// Backlog scenarios: when the receiver started answering (after the last POST).
    released: Option<Instant>,
}

impl ScenarioRun {
    /// Backlog scenarios: deliveries / (last arrival − release).
    fn backlog_drain_rate(&self) -> Option<f64> {
        let (released, last) = (self.released?, self.last_arrival()?);
        (last > released).then(|| self.delivered() as f64 / (last - released).as_secs_f64())
    }

    fn first_arrival(&self) -> Option<Instant> {
        self.log.arrivals.iter().min().copied()
    }

    fn last_arrival(&self) -> Option<Instant> {
        self.log.arrivals.iter().max().copied()
    }

    fn delivered(&self) -> usize {
        self.log.ids.len()
    }

    /// Deliveries / (last arrival − first arrival).
    fn arrival_rate(&self) -> f64 {
        match (self.first_arrival(), self.last_arrival()) {
            (Some(first), Some(last)) if last > first => {
                self.delivered() as f64 / (last - first).as_secs_f64()
            }
            _ => 0.0,
        }
    }

    /// Deliveries / (last arrival − first message POST).
    fn end_to_end_rate(&self) -> f64 {
        self.last_arrival().map_or(0.0, |last| {
            self.delivered() as f64 / (last - self.post_started).as_secs_f64()
        })
    }

    fn post_rate(&self) -> f64 {
        self.messages as f64 / (self.post_finished - self.post_started).as_secs_f64()
    }

    /// The gaps between consecutive arrivals: `p50 / p99 / max`, and how much of the arrival
    /// window passed in gaps of at least [`IDLE_GAP`] (the receiver waiting, not the network).
    fn gaps(&self) -> (String, String) {
        let mut arrivals = self.log.arrivals.clone();
        arrivals.sort_unstable();
        let mut gaps: Vec<Duration> = arrivals.windows(2).map(|pair| pair[1] - pair[0]).collect();
        if gaps.is_empty() {
            return ("–".into(), "–".into());
        }
        let idle: Duration = gaps.iter().filter(|gap| **gap >= IDLE_GAP).sum();
        let window = arrivals[arrivals.len() - 1] - arrivals[0];
        gaps.sort_unstable();
        let at = |fraction: f64| gaps[((gaps.len() - 1) as f64 * fraction).round() as usize];
        let millis = |duration: Duration| format!("{:.1}", duration.as_secs_f64() * 1e3);
        (
            format!(
                "{} / {} / {} ms",
                millis(at(0.5)),
                millis(at(0.99)),
                millis(gaps[gaps.len() - 1])
            ),
            format!(
                "{} of {} ({} gaps)",
                seconds(idle),
                seconds(window),
                gaps.iter().filter(|gap| **gap >= IDLE_GAP).count()
            ),
        )
    }

    /// Deliveries that arrived after the last message was answered, per second of that drain.
    fn drain_rate(&self) -> Option<f64> {
        let last = self.last_arrival()?;
        let after = self
            .log
            .arrivals
            .iter()
            .filter(|arrival| **arrival > self.post_finished)
            .count();
        (last > self.post_finished && after > 0)
            .then(|| after as f64 / (last - self.post_finished).as_secs_f64())
    }

    /// Every delivery arrived exactly once, one per webhook and message, signed and well formed.
    fn verified(&self) -> bool {
        self.complete
            && self.delivered() == self.expected
            && self.log.events.len() == self.expected
            && self.log.duplicates == 0
            && self.log.bad_signatures == 0
            && self.log.malformed == 0
            && self.log.requests == self.expected as u64
    }
}

/// Posts `messages` messages to the conversation from [`POSTERS`] clients; every answer must be
/// 201. Returns when the first was sent and when the last was answered.
async fn post_messages(
    server: &Server,
    token: &str,
    conversation_id: &str,
    messages: usize,
) -> anyhow::Result<(Instant, Instant)> {
    let url = server.url(&format!(
        "/chat/api/v1/conversations/{conversation_id}/messages"
    ));
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let posters: Vec<_> = (0..POSTERS)
        .map(|_| {
            let (url, token, next) = (url.clone(), token.to_owned(), next.clone());
            tokio::spawn(async move {
                let client = reqwest::Client::new();
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    if index >= messages {
                        return anyhow::Ok(());
                    }
                    let body = json!({ "body": format!("hello {index}") });
                    post_json(&client, &url, &token, &body, 201).await?;
                }
            })
        })
        .collect();
    for poster in posters {
        poster.await??;
    }
    Ok((started, Instant::now()))
}

/// `TESSERA_BENCH_PERF_DIR=<dir>`: each backlog drain is recorded by `perf record` (every
/// process on the machine, call graphs) into `<dir>/<database>-<webhooks>.perf.data`, from the
/// release until the last delivery (plus the grace period), for finding where a drain's time
/// goes; nothing else changes.
fn start_profiler(output: &std::path::Path) -> anyhow::Result<std::process::Child> {
    let child = std::process::Command::new("perf")
        .args(["record", "-F", "999", "-a", "-g", "-q", "-o"])
        .arg(output)
        .stdout(std::process::Stdio::null())
        .spawn()
        .context("starting perf record (TESSERA_BENCH_PERF_DIR)")?;
    Ok(child)
}

fn stop_profiler(mut profiler: std::process::Child) -> anyhow::Result<()> {
    let pid = libc::pid_t::try_from(profiler.id()).context("perf's process id")?;
    // SAFETY: `kill` on the pid of a child this process spawned and has not reaped yet.
    unsafe { libc::kill(pid, libc::SIGINT) };
    profiler.wait().context("waiting for perf record")?;
    Ok(())
}

/// Waits until `expected` distinct deliveries arrived (true), or none arrived for
/// [`STALL_TIMEOUT`] (false). The caller then waits [`GRACE`] for late duplicates.
async fn wait_for_deliveries(receiver: &Receiver, expected: usize) -> bool {
    let mut seen = receiver.distinct();
    let mut progressed = Instant::now();
    let mut last_report = Instant::now();
    loop {
        let now_seen = receiver.distinct();
        if now_seen >= expected {
            break true;
        }
        if now_seen > seen {
            seen = now_seen;
            progressed = Instant::now();
        }
        if progressed.elapsed() >= STALL_TIMEOUT {
            eprintln!("  no delivery for {STALL_TIMEOUT:?}: giving up at {seen} of {expected}");
            break false;
        }
        if last_report.elapsed() >= Duration::from_secs(10) {
            eprintln!("  {now_seen} of {expected} deliveries so far…");
            last_report = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Reads every page of a webhook's deliveries (`status` filter optional).
async fn list_deliveries(
    client: &reqwest::Client,
    server: &Server,
    token: &str,
    webhook_id: &str,
    status: Option<&str>,
) -> anyhow::Result<Vec<Value>> {
    let url = server.url(&format!("/chat/api/v1/webhooks/{webhook_id}/deliveries"));
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut query = vec![("limit", "100".to_owned())];
        if let Some(status) = status {
            query.push(("status", status.to_owned()));
        }
        if let Some(cursor) = &cursor {
            query.push(("cursor", cursor.clone()));
        }
        let response = client
            .get(&url)
            .bearer_auth(token)
            .query(&query)
            .send()
            .await?;
        let code = response.status();
        let text = response.text().await?;
        anyhow::ensure!(code == 200, "GET {url} answered {code}: {text}");
        let page: Value = serde_json::from_str(&text)?;
        let data = page["data"]
            .as_array()
            .ok_or_else(|| anyhow::anyhow!("GET {url}: no data array: {text}"))?;
        items.extend(data.iter().cloned());
        let next = page["meta"]["next_cursor"].as_str().map(str::to_owned);
        if page["meta"]["has_more"] != true || next.is_none() || data.is_empty() {
            break;
        }
        cursor = next;
    }
    Ok(items)
}

/// The engine's record of the deliveries, polled until every one is `delivered` (or
/// [`API_SETTLE_TIMEOUT`]), then the `?status=delivered` filter counted.
async fn api_check(
    server: &Server,
    token: &str,
    webhook_ids: &[String],
    messages: usize,
) -> ApiCheck {
    let client = reqwest::Client::new();
    let started = Instant::now();
    let attempt = async {
        let mut check;
        loop {
            check = ApiCheck::default();
            for webhook_id in webhook_ids {
                for delivery in list_deliveries(&client, server, token, webhook_id, None).await? {
                    let status = delivery["status"].as_str().unwrap_or("(none)").to_owned();
                    if status == "delivered"
                        && let Some(ms) = delivery["response_time_ms"].as_u64()
                    {
                        check.response_times_ms.push(ms);
                    }
                    if delivery["attempt"]
                        .as_u64()
                        .is_some_and(|attempt| attempt > 1)
                    {
                        check.retried += 1;
                    }
                    *check.statuses.entry(status).or_default() += 1;
                }
            }
            let delivered = check.statuses.get("delivered").copied().unwrap_or(0);
            if delivered >= messages * webhook_ids.len() || started.elapsed() > API_SETTLE_TIMEOUT {
                break;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        for webhook_id in webhook_ids {
            check.delivered_filtered +=
                list_deliveries(&client, server, token, webhook_id, Some("delivered"))
                    .await?
                    .len();
        }
        anyhow::Ok(check)
    };
    attempt.await.unwrap_or_else(|error| ApiCheck {
        error: Some(format!("{error:#}")),
        ..ApiCheck::default()
    })
}

/// One scenario on a fresh host: `webhooks` webhooks, `messages` messages.
async fn deliveries(
    backend: Backend,
    admin_url: Option<&str>,
    receiver: &Receiver,
    engines: &std::path::Path,
    webhooks: usize,
    messages: usize,
    backlog: bool,
) -> anyhow::Result<ScenarioRun> {
    let database = BenchDatabase::create(backend, admin_url, "webhooks").await?;
    let result = async {
        let server = start_chat_host(&database, receiver, engines).await?;
        let profile = std::env::var_os("TESSERA_BENCH_PERF_DIR")
            .filter(|_| backlog)
            .map(|dir| {
                PathBuf::from(dir).join(format!(
                    "{}-{webhooks}.perf.data",
                    backend.name().to_lowercase()
                ))
            });
        let result = scenario_on(&server, receiver, webhooks, messages, backlog, profile).await;
        server.shutdown().await?;
        result
    }
    .await;
    database.destroy().await;
    result
}

async fn scenario_on(
    server: &Server,
    receiver: &Receiver,
    webhooks: usize,
    messages: usize,
    backlog: bool,
    profile: Option<PathBuf>,
) -> anyhow::Result<ScenarioRun> {
    let tenant = create_tenant(server, &format!("webhooks{webhooks}")).await?;
    let client = reqwest::Client::new();
    let mut webhook_ids = Vec::with_capacity(webhooks);
    for index in 1..=webhooks {
        let data = post_json(
            &client,
            &server.url("/chat/api/v1/webhooks"),
            &tenant.token,
            &json!({
                "url": receiver.url(index),
                "events": [EVENT],
                "secret": secret(index),
            }),
            201,
        )
        .await?;
        anyhow::ensure!(
            data["is_active"] != false,
            "the created webhook is not active: {data}"
        );
        webhook_ids.push(id_of(&data, "webhook")?);
    }
    let conversation = post_json(
        &client,
        &server.url("/chat/api/v1/conversations"),
        &tenant.token,
        &json!({ "title": "Bench" }),
        201,
    )
    .await?;
    let conversation_id = id_of(&conversation, "conversation")?;

    let expected = webhooks * messages;
    eprintln!(
        "  {webhooks} webhook(s): {messages} messages from {POSTERS} clients → {expected} deliveries…"
    );
    receiver.reset();
    if backlog {
        receiver.gate.send_replace(false);
    }
    let mut ticks_before = cpu_ticks();
    let posted = post_messages(server, &tenant.token, &conversation_id, messages).await;
    let released = backlog.then(|| {
        // A drain's CPU is the drain's alone.
        ticks_before = cpu_ticks();
        receiver.gate.send_replace(true);
        Instant::now()
    });
    let profiler = profile.as_deref().map(start_profiler).transpose()?;
    let (post_started, post_finished) = posted?;
    eprintln!(
        "  posted in {}; waiting for the deliveries…",
        seconds(post_finished - post_started)
    );
    let complete = wait_for_deliveries(receiver, expected).await;
    let cpu = cpu_share(ticks_before, cpu_ticks());
    if let Some(profiler) = profiler {
        stop_profiler(profiler)?;
    }
    tokio::time::sleep(GRACE).await;
    let log = receiver.take();
    eprintln!(
        "  {} distinct deliveries ({} requests); checking the engine's record…",
        log.ids.len(),
        log.requests
    );
    let api = api_check(server, &tenant.token, &webhook_ids, messages).await;
    let run = ScenarioRun {
        messages,
        expected,
        post_started,
        post_finished,
        log,
        complete,
        api,
        cpu,
        released,
    };
    eprintln!(
        "  {:.0} deliveries/s at the receiver, {:.0} end to end{}",
        run.arrival_rate(),
        run.end_to_end_rate(),
        run.backlog_drain_rate()
            .map_or(String::new(), |rate| format!(
                ", {rate:.0} draining the backlog"
            ))
    );
    Ok(run)
}

struct BackendRun {
    backend: Backend,
    /// Per scenario (webhooks, messages): its run, or why it failed.
    scenarios: Vec<(usize, usize, Result<ScenarioRun, String>)>,
    /// The same with the receiver holding its answers while the messages are posted.
    backlogs: Vec<(usize, usize, Result<ScenarioRun, String>)>,
}

/// Whether `part` (`sqlite`, `postgres`, `live`, `drain`) runs: `TESSERA_BENCH_ONLY`, a comma
/// list of them, narrows a run while iterating on one (unset: everything). Within each pair,
/// naming neither means both.
fn selected(part: &str) -> bool {
    let Ok(only) = std::env::var("TESSERA_BENCH_ONLY") else {
        return true;
    };
    let named: Vec<&str> = only.split(',').map(str::trim).collect();
    let pair: &[&str] = match part {
        "sqlite" | "postgres" => &["sqlite", "postgres"],
        _ => &["live", "drain"],
    };
    named.contains(&part) || !pair.iter().any(|other| named.contains(other))
}

async fn run_backend(
    backend: Backend,
    admin_url: Option<&str>,
    receiver: &Receiver,
    engines: &std::path::Path,
) -> BackendRun {
    let mut scenarios = Vec::new();
    let mut backlogs = Vec::new();
    for backlog in [false, true] {
        if !selected(if backlog { "drain" } else { "live" }) {
            continue;
        }
        let at_one = if backlog {
            MESSAGES_AT_ONE_DRAINED
        } else {
            MESSAGES_AT_ONE
        };
        for (webhooks, messages) in [(1, at_one), (MANY_WEBHOOKS, MESSAGES_AT_MANY)] {
            eprintln!(
                "{}: {webhooks} webhook(s){}…",
                backend.name(),
                if backlog { ", backlog" } else { "" }
            );
            let result = deliveries(
                backend, admin_url, receiver, engines, webhooks, messages, backlog,
            )
            .await
            .map_err(|error| format!("{error:#}"));
            if let Err(error) = &result {
                eprintln!("  failed: {error}");
            }
            if backlog {
                backlogs.push((webhooks, messages, result));
            } else {
                scenarios.push((webhooks, messages, result));
            }
        }
    }
    BackendRun {
        backend,
        scenarios,
        backlogs,
    }
}

// ---------------------------------------------------------------------------------------------
// The report.

fn report(ceiling: &Ceiling, runs: &mut [BackendRun]) -> String {
    let mut out = String::new();
    let concurrency = WorkerConfig::default().concurrency;

    let _ = writeln!(
        out,
        "Ceiling: signed POSTs from native reqwest (rustls, keep-alive) to the same receiver, \
         {} ms warm-up, {} s window; body {} bytes like a delivery's.",
        CEILING_WARM_UP.as_millis(),
        CEILING_WINDOW.as_secs(),
        ceiling.body_bytes
    );
    let _ = writeln!(out);
    let _ = writeln!(out, "| ceiling | POSTs/s | failed |");
    let _ = writeln!(out, "|---|---|---|");
    for run in &ceiling.runs {
        let _ = writeln!(
            out,
            "| {} | {} | {} |",
            if run.loops == 1 {
                "1 sequential loop".to_owned()
            } else {
                format!("{} concurrent loops (= work concurrency)", run.loops)
            },
            count(run.per_second),
            run.failures
        );
    }
    let _ = writeln!(
        out,
        "\nThe receiver during the ceiling: {} requests, {} distinct delivery ids, {} bad \
         signatures, {} malformed; CPU (cores: this process / other processes / stolen) {}.",
        ceiling.log.requests,
        ceiling.log.ids.len(),
        ceiling.log.bad_signatures,
        ceiling.log.malformed,
        cpu_text(ceiling.cpu)
    );
    let _ = writeln!(out);

    out.push_str(&drain_table(ceiling, runs));
    let _ = writeln!(
        out,
        "\nLive: the messages posted while the receiver answers at once (at 1 webhook the \
         deliveries follow the message POSTs, so this is the chat write path's rate, not the \
         delivery path's)."
    );
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "| database | webhooks | messages | deliveries | message POSTs/s | deliveries/s at the \
         receiver | end to end deliveries/s | ceiling (1 loop / {concurrency} loops) | vs 1 loop |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|");
    for run in runs.iter() {
        for (webhooks, messages, result) in &run.scenarios {
            match result {
                Ok(scenario) => {
                    let ratio = scenario.arrival_rate() / ceiling.of(1);
                    let _ = writeln!(
                        out,
                        "| {} | {webhooks} | {} | {}{} | {} | {} | {} | {} / {} | {} |",
                        run.backend.name(),
                        count(*messages as f64),
                        count(scenario.delivered() as f64),
                        if scenario.delivered() == scenario.expected {
                            String::new()
                        } else {
                            format!(" of {}", count(scenario.expected as f64))
                        },
                        count(scenario.post_rate()),
                        count(scenario.arrival_rate()),
                        count(scenario.end_to_end_rate()),
                        count(ceiling.of(1)),
                        count(ceiling.of(concurrency)),
                        percent(ratio),
                    );
                }
                Err(error) => {
                    let _ = writeln!(
                        out,
                        "| {} | {webhooks} | {} | **failed**: {} | | | | | |",
                        run.backend.name(),
                        count(*messages as f64),
                        error.replace('|', "\\|").replace('\n', " ")
                    );
                }
            }
        }
    }
    let _ = writeln!(out);

    let _ = writeln!(
        out,
        "| database | webhooks | first POST → first delivery | posting took | last POST → last \
         delivery | deliveries/s after the last POST | gaps between arrivals p50 / p99 / max \
         | time in gaps ≥ {} ms | CPU cores: this / other / stolen |",
        IDLE_GAP.as_millis()
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|");
    for run in runs.iter() {
        for (webhooks, _, result) in &run.scenarios {
            if let Ok(scenario) = result {
                let (gaps, idle) = scenario.gaps();
                let _ = writeln!(
                    out,
                    "| {} | {webhooks} | {} | {} | {} | {} | {gaps} | {idle} | {} |",
                    run.backend.name(),
                    scenario
                        .first_arrival()
                        .map_or("–".into(), |first| seconds(first - scenario.post_started)),
                    seconds(scenario.post_finished - scenario.post_started),
                    scenario.last_arrival().map_or("–".into(), |last| seconds(
                        last.saturating_duration_since(scenario.post_finished)
                    )),
                    scenario.drain_rate().map_or("–".into(), count),
                    cpu_text(scenario.cpu),
                );
            }
        }
    }
    let _ = writeln!(out);

    let _ = writeln!(
        out,
        "| database | webhooks | requests | distinct deliveries | one per webhook × message | \
         duplicates | bad signatures | malformed | engine: statuses | engine: `?status=delivered` \
         | engine: response time p50 / p99 | engine: retried | verified |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for run in runs.iter_mut() {
        for (webhooks, _, result) in run.scenarios.iter_mut() {
            if let Ok(scenario) = result {
                let p50 = percentile(&mut scenario.api.response_times_ms, 0.5);
                let p99 = percentile(&mut scenario.api.response_times_ms, 0.99);
                let api = &scenario.api;
                let statuses = match &api.error {
                    Some(error) => format!("**error**: {}", error.replace('|', "\\|")),
                    None => api
                        .statuses
                        .iter()
                        .map(|(status, n)| format!("{status} {}", count(*n as f64)))
                        .collect::<Vec<_>>()
                        .join(", "),
                };
                let times = match (p50, p99) {
                    (Some(p50), Some(p99)) => format!("{p50} ms / {p99} ms"),
                    _ => "–".into(),
                };
                let _ = writeln!(
                    out,
                    "| {} | {webhooks} | {} | {} | {} | {} | {} | {} | {statuses} | {} | {times} | {} | {} |",
                    run.backend.name(),
                    count(scenario.log.requests as f64),
                    count(scenario.delivered() as f64),
                    count(scenario.log.events.len() as f64),
                    scenario.log.duplicates,
                    scenario.log.bad_signatures,
                    scenario.log.malformed,
                    count(api.delivered_filtered as f64),
                    api.retried,
                    if scenario.verified() {
                        "yes".to_owned()
                    } else {
                        format!("**no** (expected {})", count(scenario.expected as f64))
                    },
                );
            }
        }
    }
    let bodies: Vec<String> = runs
        .iter()
        .flat_map(|run| {
            run.scenarios
                .iter()
                .map(move |scenario| (run.backend, scenario))
        })
        .filter_map(|(backend, (webhooks, _, result))| {
            let scenario = result.as_ref().ok()?;
            (scenario.log.requests > 0).then(|| {
                format!(
                    "{} at {webhooks} webhook(s) {} bytes",
                    backend.name(),
                    scenario.log.body_bytes / scenario.log.requests
                )
            })
        })
        .collect();
    if !bodies.is_empty() {
        let _ = writeln!(
            out,
            "\nMean delivery body: {} (the ceiling's: {} bytes).",
            bodies.join(", "),
            ceiling.body_bytes
        );
    }
    out
}

/// The judged table: backlog drains, the delivery path alone, against the single loop.
fn drain_table(ceiling: &Ceiling, runs: &[BackendRun]) -> String {
    let mut out = String::new();
    let concurrency = WorkerConfig::default().concurrency;
    let _ = writeln!(
        out,
        "Backlog drains: the receiver holds every request while the messages are posted (the \
         first {concurrency} deliveries wait in flight, the rest queue in the host's work \
         queue), then answers: deliveries / (last arrival − release), the delivery path alone, \
         not paced by the message POSTs. Target: ≥ {:.0} % of the single loop (the issue's \
         \"a native reqwest loop\"); the {concurrency} concurrent loops are shown beside it. \
         CPU from the release to the last arrival.\n",
        TARGET_RATIO * 100.0
    );
    let _ = writeln!(
        out,
        "| database | webhooks | deliveries | message POSTs/s | drain deliveries/s | vs 1 loop ({}) | vs {concurrency} loops ({}) | ≥ {:.0} % of the 1-loop ceiling | CPU cores: this / other / stolen | verified |",
        count(ceiling.of(1)),
        count(ceiling.of(concurrency)),
        TARGET_RATIO * 100.0,
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|");
    for run in runs {
        for (webhooks, _, result) in &run.backlogs {
            match result {
                Ok(scenario) => {
                    let drain = scenario.backlog_drain_rate().unwrap_or(0.0);
                    let ratio = drain / ceiling.of(1);
                    let _ = writeln!(
                        out,
                        "| {} | {webhooks} | {} | {} | **{}** | {} | {} | {} | {} | {} |",
                        run.backend.name(),
                        count(scenario.delivered() as f64),
                        count(scenario.post_rate()),
                        count(drain),
                        percent(ratio),
                        percent(drain / ceiling.of(concurrency)),
                        verdict(ratio >= TARGET_RATIO && scenario.verified()),
                        cpu_text(scenario.cpu),
                        if scenario.verified() { "yes" } else { "**no**" },
                    );
                }
                Err(error) => {
                    let _ = writeln!(
                        out,
                        "| {} | {webhooks} | **failed**: {} | | | | | | | |",
                        run.backend.name(),
                        error.replace('|', "\\|")
                    );
                }
            }
        }
    }
    out
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let admin_url = std::env::var("TESSERA_TEST_POSTGRES_URL")
        .ok()
        .filter(|url| !url.is_empty());
    // The real engines, built once (wasm32-wasip2, release); each host gets a copy of chat.
    eprintln!("building the engines…");
    let engines =
        std::env::temp_dir().join(format!("tessera-bench-engines-{}", uuid::Uuid::new_v4()));
    components::install_engines(&engines, &["chat"]);
    let receiver = https_receiver().await?;
    let ceiling = ceiling(&receiver).await?;
    let mut runs = Vec::new();
    if selected("sqlite") {
        runs.push(run_backend(Backend::Sqlite, None, &receiver, &engines).await);
    }
    match &admin_url {
        Some(_) if !selected("postgres") => {}
        Some(url) => {
            runs.push(run_backend(Backend::Postgres, Some(url), &receiver, &engines).await);
        }
        None => eprintln!("TESSERA_TEST_POSTGRES_URL is not set: skipping PostgreSQL"),
    }
    let _ = std::fs::remove_dir_all(&engines);
    println!(
        "Machine: {cores} cores (`available_parallelism`); host, HTTPS receiver and load \
         generators share one multi-thread tokio runtime ({cores} workers) on loopback; rate \
         limits off; engine work concurrency {} (`WorkerConfig::default()`).",
        WorkerConfig::default().concurrency
    );
    if admin_url.is_none() {
        println!();
        println!("PostgreSQL skipped: TESSERA_TEST_POSTGRES_URL is not set.");
    }
    println!();
    print!("{}", report(&ceiling, &mut runs));
    let failed = runs
        .iter()
        .flat_map(|run| run.scenarios.iter().chain(run.backlogs.iter()))
        .filter(|(_, _, result)| result.is_err())
        .count();
    anyhow::ensure!(failed == 0, "{failed} scenario(s) failed (see the tables)");
    Ok(())
}
