//! Realtime measured as deployed: `tessera serve` (this package's release binary) as a child
//! process on SQLite with the seven engines, clients over real loopback WebSockets
//! (tokio-tungstenite) on `GET /core/api/v1/realtime` with a bearer token, each subscribed to
//! `chat.conversation.<id>` of one conversation whose members are the ten users of one tenant
//! (connections spread round-robin over them). In one
//! run:
//!
//! 1. **Idle connections held**: `TESSERA_BENCH_REALTIME_CONNECTIONS` (10,000) connections
//!    opened (64 handshakes at a time), each subscribed, then held idle for 5 s: how many the
//!    host held, its memory per idle connection (`VmRSS` of `/proc/<pid>/status` once the
//!    first 1,000 are open and after the last, divided by the connections in between: the
//!    first ones warm what every connection shares, e.g. the engine instances that authorize
//!    subscriptions and the allocator's pools, so the figure is what one more connection
//!    costs) and the CPU it spends on them idle.
//!    The host's per-user and per-tenant realtime limits are raised through
//!    `TESSERA_REALTIME_MAX_CONNECTIONS_PER_USER` / `_PER_TENANT`; the benchmark raises its
//!    own open-file limit to the hard limit (children inherit it; `ulimit -Hn` must allow
//!    the count plus a few hundred).
//! 2. **Fan-out latency**: all but `TESSERA_BENCH_REALTIME_SUBSCRIBERS` (1,000) of them close;
//!    one event at a time is published (a chat message posted to the conversation: one
//!    `message.created` event, with its text, on the conversation's topic), 5 warm-up events then
//!    `TESSERA_BENCH_REALTIME_EVENTS` (50), each once every subscriber received the previous
//!    one: the time from just before the request is sent until each subscriber has the frame,
//!    p50/p99 over all deliveries.
//! 3. **Sustained delivery**: 8 publishers post such messages as fast as the host answers
//!    for `TESSERA_BENCH_REALTIME_SECONDS` (3 s) per round, median of `TESSERA_BENCH_ROUNDS`
//!    (3) rounds: frames received by all subscribers per second, and per CPU-second of the
//!    target (steadier when other work shares the machine). Publishers stay at most 200
//!    events ahead of the slowest subscriber: further ahead the host's send queue (256
//!    frames) could close slow readers with 4008, which is the contract's answer to a reader
//!    that cannot keep up, not a delivery rate.
//!
//! The ceiling of the same run: a plain tokio-tungstenite server (this benchmark's binary
//! started again as a child process, `TESSERA_BENCH_REALTIME_PEER=1`) whose frames go through
//! a `tokio::sync::broadcast` channel (256 deep) to every accepted connection, publishing a
//! frame of the host's size (a host frame recorded in 2., with its marker replaced) for each
//! line written to its stdin. The same client code measures 1. to 3. against it, then against
//! a second such peer whose connections read into a 4 KiB buffer instead of tungstenite's
//! default 128 KiB (axum's `WebSocketUpgrade` keeps the default): what that buffer costs.
//!
//! 4. **Three hosts on one PostgreSQL** (when `TESSERA_TEST_POSTGRES_URL` is set): three
//!    `tessera serve` processes on a fresh database, the subscribers spread evenly over them,
//!    the events published round-robin on the three: fan-out latency p50/p99, for subscribers
//!    on the publishing host and on the other two (`LISTEN/NOTIFY` wakes them).
//!
//! `TESSERA_BENCH_PERF_DIR=<dir>` records the sustained rounds of each target with `perf record`.
//!
//! Host, database, peer and clients share the machine's cores: the clients' reading is part of
//! every figure, the same for host and peer. Progress goes to stderr, Markdown tables for
//! BENCHMARKS.md to stdout. `cargo bench -p tessera-host --bench realtime` (about three minutes
//! with PostgreSQL).

#[path = "../../tests/it/components.rs"]
mod components;
#[path = "support/mod.rs"]
mod support;

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use futures_util::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use tessera_host::tenancy::Role;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::task::JoinSet;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::protocol::frame::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{Message, Utf8Bytes};
use tokio_util::sync::CancellationToken;

use support::{
    Backend, BenchDatabase, BenchUser, Server, Serving, count, percentile, provisioned_tenant,
    verdict,
};

/// The `tessera` binary's allocator, so the benchmark (and its peer) run on what the binary
/// runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Set in the environment of the peer process: serve the broadcast ceiling instead.
const PEER_SWITCH: &str = "TESSERA_BENCH_REALTIME_PEER";
/// Set in the environment of the peer process: its connections' read buffer (bytes), instead
/// of tungstenite's default (128 KiB, as axum's `WebSocketUpgrade` has it).
const PEER_READ_BUFFER: &str = "TESSERA_BENCH_REALTIME_PEER_READ_BUFFER";
/// The second peer's read buffer.
const SMALL_READ_BUFFER: usize = 4 * 1024;
/// The topic every connection subscribes to: the one conversation's (`<id>` replaced).
const TOPIC: &str = "chat.conversation.<id>";
/// Members of the tenant the connections are spread over.
const USERS: usize = 10;
/// Connections opened before the memory of the rest is measured (at most half of them).
const WARM_CONNECTIONS: usize = 1_000;
/// Handshakes in flight while connections open.
const OPENING: usize = 64;
/// How long the idle connections are held (the host's CPU meanwhile is measured).
const HOLD: Duration = Duration::from_secs(5);
/// Concurrent publishers of the sustained measurement on the host.
const HOST_PUBLISHERS: usize = 8;
/// How far (in events) publishers may run ahead of the slowest subscriber: below the host's
/// send queue (256), which then never fills.
const WINDOW: u64 = 200;
/// The peer's broadcast channel: as deep as the host's send queue.
const PEER_QUEUE: usize = 256;
/// Events published before the measured ones, after the idle connections closed.
const WARM_UP_EVENTS: usize = 5;
/// The longest wait for every subscriber to have a published event.
const DELIVERY_TIMEOUT: Duration = Duration::from_secs(30);

const GOAL_CONNECTIONS: usize = 10_000;
const GOAL_BYTES_PER_CONNECTION: f64 = 16.0 * 1024.0;
const GOAL_P99: Duration = Duration::from_millis(50);
const GOAL_CLUSTER_P99: Duration = Duration::from_millis(250);

/// The run's sizes, from the environment.
#[derive(Debug, Clone)]
struct Settings {
    connections: usize,
    subscribers: usize,
    events: usize,
    rounds: usize,
    round: Duration,
}

impl Settings {
    fn from_env() -> Self {
        let number = |name: &str, default: usize| {
            std::env::var(name)
                .ok()
                .and_then(|value| value.parse().ok())
                .filter(|&value: &usize| value > 0)
                .unwrap_or(default)
        };
        let subscribers = number("TESSERA_BENCH_REALTIME_SUBSCRIBERS", 1_000);
        Self {
            connections: number("TESSERA_BENCH_REALTIME_CONNECTIONS", GOAL_CONNECTIONS)
                .max(subscribers),
            subscribers,
            events: number("TESSERA_BENCH_REALTIME_EVENTS", 50),
            rounds: support::rounds_or(3),
            round: Duration::from_secs(number("TESSERA_BENCH_REALTIME_SECONDS", 3) as u64),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Processes under test: `tessera serve`, and the broadcast peer.

/// A child process under test, killed when dropped (its own data dir removed, if it has one).
struct Process {
    child: Child,
    address: String,
    own_data_dir: Option<PathBuf>,
}

impl Process {
    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }

    fn realtime_url(&self) -> String {
        format!("ws://{}/core/api/v1/realtime", self.address)
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(data_dir) = &self.own_data_dir {
            let _ = std::fs::remove_dir_all(data_dir);
        }
    }
}

/// `tessera serve` on `data_dir` (and `database_url`, else the data dir's SQLite), its
/// realtime limits raised above what the benchmark opens; answers once it serves.
fn start_host(
    data_dir: &Path,
    database_url: Option<&str>,
    own_data_dir: bool,
    label: &str,
) -> anyhow::Result<Process> {
    let Serving {
        child,
        address,
        log,
    } = support::spawn_serving(
        support::serve_command(data_dir, database_url)
            .env("TESSERA_REALTIME_MAX_CONNECTIONS_PER_USER", "1000000")
            .env("TESSERA_REALTIME_MAX_CONNECTIONS_PER_TENANT", "1000000"),
    )?;
    // Its warnings and errors show on the benchmark's stderr (a few: a failing host is loud).
    let label = label.to_owned();
    std::thread::spawn(move || {
        let mut shown = 0;
        for line in log.map_while(Result::ok) {
            let level = serde_json::from_str::<Value>(&line)
                .map(|entry| entry["level"].as_str().unwrap_or("").to_owned())
                .unwrap_or_default();
            if shown < 20 && matches!(level.as_str(), "WARN" | "ERROR") {
                eprintln!("[{label}] {line}");
                shown += 1;
            }
        }
    });
    Ok(Process {
        child,
        address,
        own_data_dir: own_data_dir.then(|| data_dir.to_path_buf()),
    })
}

/// This benchmark's binary again, as the broadcast peer (with `read_buffer` bytes of read
/// buffer per connection, else tungstenite's default); answers once it listens.
async fn start_peer(
    read_buffer: Option<usize>,
) -> anyhow::Result<(Process, tokio::process::ChildStdin)> {
    let mut command = Command::new(std::env::current_exe()?);
    if let Some(bytes) = read_buffer {
        command.env(PEER_READ_BUFFER, bytes.to_string());
    }
    let mut child = command
        .env(PEER_SWITCH, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .context("starting the broadcast peer")?;
    let stdout = child.stdout.take().context("the peer's stdout")?;
    let stdin = child.stdin.take().context("the peer's stdin")?;
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line)?;
    let address = line.trim().to_owned();
    anyhow::ensure!(!address.is_empty(), "the peer exited before listening");
    Ok((
        Process {
            child,
            address,
            own_data_dir: None,
        },
        tokio::process::ChildStdin::from_std(stdin)?,
    ))
}

/// The peer: a tokio-tungstenite server sending every line of its stdin, through a broadcast
/// channel, to every accepted connection (answering `subscribe` with `subscribed`).
fn peer_main() -> anyhow::Result<()> {
    let config = std::env::var(PEER_READ_BUFFER)
        .ok()
        .and_then(|bytes| bytes.parse().ok())
        .map(|bytes| WebSocketConfig::default().read_buffer_size(bytes));
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
            println!("{}", listener.local_addr()?);
            std::io::Write::flush(&mut std::io::stdout())?;
            let (frames, _) = tokio::sync::broadcast::channel::<Utf8Bytes>(PEER_QUEUE);
            let accepting = {
                let frames = frames.clone();
                tokio::spawn(async move {
                    loop {
                        let Ok((stream, _)) = listener.accept().await else {
                            tokio::time::sleep(Duration::from_millis(10)).await;
                            continue;
                        };
                        let _ = stream.set_nodelay(true);
                        tokio::spawn(peer_connection(stream, frames.subscribe(), config));
                    }
                })
            };
            let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
            while let Some(line) = lines.next_line().await? {
                let _ = frames.send(Utf8Bytes::from(line));
            }
            accepting.abort();
            Ok(())
        })
}

async fn peer_connection(
    stream: TcpStream,
    mut frames: tokio::sync::broadcast::Receiver<Utf8Bytes>,
    config: Option<WebSocketConfig>,
) {
    use tokio::sync::broadcast::error::RecvError;
    let Ok(mut socket) = tokio_tungstenite::accept_async_with_config(stream, config).await else {
        return;
    };
    loop {
        tokio::select! {
            message = socket.next() => match message {
                Some(Ok(Message::Text(text))) => {
                    let frame: Value = serde_json::from_str(text.as_str()).unwrap_or_default();
                    if frame["op"] == "subscribe" {
                        let answer = json!({"op": "subscribed", "topic": frame["topic"]});
                        if socket.send(Message::text(answer.to_string())).await.is_err() {
                            return;
                        }
                    }
                }
                Some(Ok(Message::Close(_)) | Err(_)) | None => return,
                Some(Ok(_)) => {}
            },
            frame = frames.recv() => match frame {
                Ok(frame) => {
                    if socket.send(Message::Text(frame)).await.is_err() {
                        return;
                    }
                }
                Err(RecvError::Lagged(_)) => {
                    let close = CloseFrame { code: CloseCode::from(4008), reason: "too slow".into() };
                    let _ = socket.close(Some(close)).await;
                    return;
                }
                Err(RecvError::Closed) => return,
            },
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Publishing and receiving.

/// The marker that names publication `k` in its frame.
fn marker(k: u64) -> String {
    format!("rtbench-{k}-")
}

/// The publication a frame carries: the highest marker in it (a host frame carries the
/// field's old value too, the previous marker).
fn marker_of(text: &str) -> Option<u64> {
    let mut highest = None;
    let mut rest = text;
    while let Some(at) = rest.find("rtbench-") {
        rest = &rest[at + "rtbench-".len()..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if let Ok(k) = rest[..digits].parse::<u64>() {
            highest = highest.max(Some(k));
        }
    }
    highest
}

/// A frame's text with each marker replaced by `k`'s.
fn with_marker(pieces: &[String], k: u64) -> String {
    pieces.join(&marker(k))
}

/// A host frame cut at its markers.
fn pieces_of(frame: &str) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut rest = frame;
    while let Some(at) = rest.find("rtbench-") {
        pieces.push(rest[..at].to_owned());
        let after = &rest[at + "rtbench-".len()..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        rest = &after[(digits + 1).min(after.len())..];
    }
    pieces.push(rest.to_owned());
    pieces
}

/// How events are published to what is measured.
enum Publisher {
    /// Chat messages posted to the one conversation, publication `k` on host `k % hosts`,
    /// publisher `slot` as member `slot % members`.
    Hosts {
        client: reqwest::Client,
        /// `POST /chat/api/v1/conversations/{id}/messages` of each host.
        message_urls: Vec<String>,
        tokens: Vec<String>,
    },
    /// A line of the host's frame size to the peer's stdin.
    Peer {
        stdin: tokio::sync::Mutex<tokio::process::ChildStdin>,
        pieces: Vec<String>,
    },
}

impl Publisher {
    async fn publish(&self, k: u64, slot: usize) -> anyhow::Result<()> {
        match self {
            Self::Hosts {
                client,
                message_urls,
                tokens,
            } => {
                let url = &message_urls[k as usize % message_urls.len()];
                let body = json!({ "body": marker(k) });
                let response = client
                    .post(url)
                    .bearer_auth(&tokens[slot % tokens.len()])
                    .json(&body)
                    .send()
                    .await?;
                let status = response.status();
                anyhow::ensure!(
                    status.is_success(),
                    "publishing answered {status}: {}",
                    response.text().await.unwrap_or_default()
                );
            }
            Self::Peer { stdin, pieces } => {
                let mut line = with_marker(pieces, k);
                line.push('\n');
                let mut stdin = stdin.lock().await;
                stdin.write_all(line.as_bytes()).await?;
                stdin.flush().await?;
            }
        }
        Ok(())
    }
}

/// What the subscribers received.
struct Deliveries {
    /// Event frames received, per connection.
    received: Vec<AtomicU64>,
    /// The host each connection is on.
    host_of: Vec<usize>,
    /// When publication `k` was sent, for the ones whose latency is measured.
    sent: Vec<OnceLock<Instant>>,
    /// (latency, the subscriber's host, the publication).
    latencies: Mutex<Vec<(Duration, usize, u64)>>,
    /// The last event frame connection 0 received.
    sample: Mutex<String>,
}

impl Deliveries {
    fn new(connections: usize, hosts: usize, events: usize) -> Self {
        Self {
            received: (0..connections).map(|_| AtomicU64::new(0)).collect(),
            host_of: (0..connections).map(|index| index % hosts).collect(),
            sent: (0..WARM_UP_EVENTS + events)
                .map(|_| OnceLock::new())
                .collect(),
            latencies: Mutex::new(Vec::new()),
            sample: Mutex::new(String::new()),
        }
    }

    fn on_text(&self, index: usize, text: &str) {
        if !text.contains(r#""op":"event""#) {
            return;
        }
        let Some(k) = marker_of(text) else {
            return;
        };
        let now = Instant::now();
        self.received[index].fetch_add(1, Ordering::Relaxed);
        if let Some(sent) = self.sent.get(k as usize).and_then(OnceLock::get) {
            self.latencies
                .lock()
                .expect("latencies")
                .push((now - *sent, self.host_of[index], k));
        }
        if index == 0 {
            text.clone_into(&mut self.sample.lock().expect("sample"));
        }
    }

    /// The fewest frames any of the first `subscribers` received.
    fn slowest(&self, subscribers: usize) -> u64 {
        self.received[..subscribers]
            .iter()
            .map(|count| count.load(Ordering::Relaxed))
            .min()
            .unwrap_or(0)
    }

    /// Frames the first `subscribers` received in all.
    fn total(&self, subscribers: usize) -> u64 {
        self.received[..subscribers]
            .iter()
            .map(|count| count.load(Ordering::Relaxed))
            .sum()
    }

    /// Waits until each of the first `subscribers` has `count` frames: false on the timeout.
    async fn wait_for(&self, subscribers: usize, count: u64) -> bool {
        let started = Instant::now();
        while self.slowest(subscribers) < count {
            if started.elapsed() > DELIVERY_TIMEOUT {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        true
    }
}

/// How a connection's reading ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    /// The benchmark closed it.
    Stopped,
    /// The server closed it (with this code).
    Closed(Option<u16>),
    /// It broke or ended without a close frame.
    Lost,
}

type Socket = WebSocketStream<TcpStream>;

/// Opens a WebSocket on `url` with `token` and subscribes to `topic`: the socket once
/// `subscribed` arrived.
async fn connect(url: &str, token: &str, topic: &str) -> anyhow::Result<Socket> {
    let mut request = url.into_client_request()?;
    request
        .headers_mut()
        .insert("authorization", format!("Bearer {token}").parse()?);
    let address = url
        .strip_prefix("ws://")
        .and_then(|rest| rest.split('/').next())
        .context("a ws:// URL")?;
    let stream = TcpStream::connect(address).await?;
    stream.set_nodelay(true)?;
    // A small read buffer: the client's own memory, not the server's, is what it sets.
    let config = WebSocketConfig::default().read_buffer_size(8 * 1024);
    let (mut socket, _) =
        tokio_tungstenite::client_async_with_config(request, stream, Some(config)).await?;
    socket
        .send(Message::text(
            json!({"op": "subscribe", "topic": topic}).to_string(),
        ))
        .await?;
    loop {
        match socket.next().await {
            Some(Ok(Message::Text(text))) if text.as_str().contains(r#""op":"subscribed""#) => {
                return Ok(socket);
            }
            Some(Ok(Message::Text(text))) if text.as_str().contains(r#""op":"error""#) => {
                anyhow::bail!("subscribing failed: {}", text.as_str());
            }
            Some(Ok(Message::Close(frame))) => {
                anyhow::bail!(
                    "closed before subscribing: {:?}",
                    frame.map(|frame| u16::from(frame.code))
                );
            }
            Some(Ok(_)) => {}
            Some(Err(error)) => return Err(error.into()),
            None => anyhow::bail!("ended before subscribing"),
        }
    }
}

/// Reads a connection's frames into `deliveries` until `stop`.
async fn read(
    mut socket: Socket,
    index: usize,
    deliveries: Arc<Deliveries>,
    stop: CancellationToken,
) -> Ended {
    loop {
        tokio::select! {
            () = stop.cancelled() => return Ended::Stopped,
            message = socket.next() => match message {
                Some(Ok(Message::Text(text))) => deliveries.on_text(index, text.as_str()),
                Some(Ok(Message::Close(frame))) => {
                    return Ended::Closed(frame.map(|frame| u16::from(frame.code)));
                }
                Some(Ok(_)) => {}
                Some(Err(_)) | None => return Ended::Lost,
            },
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Measuring.

/// `VmRSS` of a process, in bytes.
fn rss(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status
        .lines()
        .find(|line| line.starts_with("VmRSS:"))
        .context("VmRSS in /proc/<pid>/status")?;
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .context("VmRSS's value")?
        .parse()?;
    Ok(kib * 1024)
}

/// CPU readings: the machine's total and busy ticks and each process's.
struct CpuReading {
    machine: u64,
    busy: u64,
    processes: Vec<u64>,
}

/// Reads the CPU of `pids` (`None`: this process).
fn cpu_reading(pids: &[Option<u32>]) -> CpuReading {
    let (busy, machine) = support::cpu_ticks().map_or((0, 0), |ticks| (ticks.0, ticks.1));
    let processes = pids
        .iter()
        .map(|pid| {
            let name = pid.map_or_else(|| "self".to_owned(), |pid| pid.to_string());
            support::ticks_of_process(&name).unwrap_or(0)
        })
        .collect();
    CpuReading {
        machine,
        busy,
        processes,
    }
}

/// Cores each process used between two readings, then the cores everything else on the
/// machine used.
fn cores_between(before: &CpuReading, after: &CpuReading) -> Vec<f64> {
    let cores = std::thread::available_parallelism().map_or(1, usize::from) as f64;
    let total = after.machine.saturating_sub(before.machine).max(1) as f64;
    let mut used: Vec<f64> = before
        .processes
        .iter()
        .zip(&after.processes)
        .map(|(before, after)| after.saturating_sub(*before) as f64 / total * cores)
        .collect();
    let busy = after.busy.saturating_sub(before.busy) as f64 / total * cores;
    used.push((busy - used.iter().sum::<f64>()).max(0.0));
    used
}

/// What was measured against one target.
#[derive(Default)]
struct Run {
    connections_asked: usize,
    connections_held: usize,
    refusals: Vec<String>,
    opening: Duration,
    /// Connections held when `rss_before` was read (the first [`WARM_CONNECTIONS`]).
    connections_warm: usize,
    /// Before the first connection.
    rss_start: u64,
    rss_before: u64,
    rss_after: u64,
    idle_cores: f64,
    /// (latency, the subscriber's host, the publication).
    latencies: Vec<(Duration, usize, u64)>,
    missing: u64,
    /// Per round: frames/s to all subscribers, events/s, the target's cores, the clients',
    /// everything else's on the machine.
    rounds: Vec<(f64, f64, f64, f64, f64)>,
    ended_early: Vec<Ended>,
    sample: String,
}

impl Run {
    fn bytes_per_connection(&self) -> f64 {
        let added = self.connections_held.saturating_sub(self.connections_warm);
        self.rss_after.saturating_sub(self.rss_before) as f64 / added.max(1) as f64
    }

    fn latency(&self, fraction: f64, filter: impl Fn(usize, u64) -> bool) -> Option<Duration> {
        let mut samples: Vec<Duration> = self
            .latencies
            .iter()
            .filter(|(_, host, k)| filter(*host, *k))
            .map(|(latency, _, _)| *latency)
            .collect();
        (!samples.is_empty()).then(|| percentile(&mut samples, fraction))
    }

    fn median_round(&self) -> (f64, f64, f64, f64, f64) {
        let mut rounds = self.rounds.clone();
        rounds.sort_by(|a, b| a.0.total_cmp(&b.0));
        rounds
            .get(rounds.len() / 2)
            .copied()
            .unwrap_or((0.0, 0.0, 0.0, 0.0, 0.0))
    }
}

/// What one measurement does.
struct Plan<'a> {
    label: &'a str,
    /// The realtime URL of each host (connection `i` goes to host `i % hosts`).
    urls: Vec<String>,
    tokens: &'a [String],
    /// The topic every connection subscribes to.
    topic: String,
    pids: Vec<u32>,
    /// Connections opened and held idle first (at least `subscribers`).
    connections: usize,
    subscribers: usize,
    events: usize,
    /// Sustained rounds (0: none).
    rounds: usize,
    round: Duration,
    publishers: usize,
}

async fn measure(plan: Plan<'_>, publisher: Arc<Publisher>) -> anyhow::Result<Run> {
    let label = plan.label;
    let mut run = Run {
        connections_asked: plan.connections,
        ..Run::default()
    };
    let deliveries = Arc::new(Deliveries::new(
        plan.connections,
        plan.urls.len(),
        plan.events,
    ));
    let rss_of = |pids: &[u32]| -> anyhow::Result<u64> {
        pids.iter()
            .map(|pid| rss(*pid))
            .sum::<anyhow::Result<u64>>()
    };

    // 1. Open and hold the idle connections: the first ones warm the target (its caches, the
    // engine instances that authorize subscriptions, the allocator's pools), then the memory
    // the rest add is what an idle connection costs.
    let keep = CancellationToken::new();
    let rest = CancellationToken::new();
    let mut kept: JoinSet<Ended> = JoinSet::new();
    let mut closing: JoinSet<Ended> = JoinSet::new();
    let started = Instant::now();
    let warm = WARM_CONNECTIONS.min(plan.connections / 2);
    run.rss_start = rss_of(&plan.pids)?;
    for range in [0..warm, warm..plan.connections] {
        if range.start == warm {
            tokio::time::sleep(Duration::from_secs(2)).await;
            run.connections_warm = run.connections_held;
            run.rss_before = rss_of(&plan.pids)?;
        }
        let mut opened = futures_util::stream::iter(range)
            .map(|index| {
                let url = plan.urls[index % plan.urls.len()].clone();
                let token = plan.tokens[index % plan.tokens.len()].clone();
                let topic = plan.topic.clone();
                async move {
                    let socket = tokio::time::timeout(
                        Duration::from_secs(60),
                        connect(&url, &token, &topic),
                    )
                    .await;
                    (index, socket)
                }
            })
            .buffer_unordered(OPENING);
        while let Some((index, socket)) = opened.next().await {
            match socket {
                Ok(Ok(socket)) => {
                    run.connections_held += 1;
                    let deliveries = deliveries.clone();
                    if index < plan.subscribers {
                        kept.spawn(read(socket, index, deliveries, keep.clone()));
                    } else {
                        closing.spawn(read(socket, index, deliveries, rest.clone()));
                    }
                }
                Ok(Err(error)) => run.refusals.push(format!("{error:#}")),
                Err(_) => run.refusals.push("no answer within 60 s".to_owned()),
            }
            if (index + 1) % 2_000 == 0 {
                eprintln!("{label}: {} connections open", run.connections_held);
            }
        }
    }
    run.opening = started.elapsed();
    anyhow::ensure!(
        run.refusals.len() < plan.connections.div_ceil(10),
        "{label}: {} of {} connections failed, e.g. {}",
        run.refusals.len(),
        plan.connections,
        run.refusals[0]
    );
    anyhow::ensure!(
        run.connections_held >= plan.subscribers,
        "{label}: fewer connections than subscribers"
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    run.rss_after = rss_of(&plan.pids)?;
    let pids: Vec<Option<u32>> = plan.pids.iter().map(|pid| Some(*pid)).collect();
    let before = cpu_reading(&pids);
    tokio::time::sleep(HOLD).await;
    let after = cpu_reading(&pids);
    let idle = cores_between(&before, &after);
    run.idle_cores = idle[..idle.len() - 1].iter().sum();
    // Any connection the target closed during the hold ends its reader.
    let mut lost_while_idle = 0;
    while let Some(ended) = closing.try_join_next() {
        run.ended_early.push(ended?);
        lost_while_idle += 1;
    }
    while let Some(ended) = kept.try_join_next() {
        run.ended_early.push(ended?);
        lost_while_idle += 1;
    }
    run.connections_held -= lost_while_idle;
    eprintln!(
        "{label}: {} of {} connections held in {:.1} s; RSS {:.0} → {:.0} MiB ({:.1} KiB each); {:.2} cores idle",
        run.connections_held,
        plan.connections,
        run.opening.as_secs_f64(),
        run.rss_before as f64 / 1048576.0,
        run.rss_after as f64 / 1048576.0,
        run.bytes_per_connection() / 1024.0,
        run.idle_cores
    );

    // 2. Keep the subscribers; one event at a time.
    rest.cancel();
    while let Some(ended) = closing.join_next().await {
        let ended = ended?;
        if ended != Ended::Stopped {
            run.ended_early.push(ended);
        }
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let subscribers = plan.subscribers;
    let mut published: u64 = 0;
    // A few warm-up events, then the measured ones.
    for k in 0..(WARM_UP_EVENTS + plan.events) as u64 {
        if k as usize >= WARM_UP_EVENTS {
            let _ = deliveries.sent[k as usize].set(Instant::now());
        }
        publisher.publish(k, 0).await?;
        published += 1;
        if !deliveries.wait_for(subscribers, published).await {
            run.missing += published * subscribers as u64 - deliveries.total(subscribers);
            anyhow::bail!(
                "{label}: event {k} did not reach every subscriber within {DELIVERY_TIMEOUT:?}"
            );
        }
    }
    run.latencies = std::mem::take(&mut *deliveries.latencies.lock().expect("latencies"));
    run.sample = deliveries.sample.lock().expect("sample").clone();
    if let (Some(p50), Some(p99)) = (
        run.latency(0.5, |_, _| true),
        run.latency(0.99, |_, _| true),
    ) {
        let mut slowest = vec![Duration::ZERO; WARM_UP_EVENTS + plan.events];
        for (latency, _, k) in &run.latencies {
            slowest[*k as usize] = slowest[*k as usize].max(*latency);
        }
        let slowest: Vec<u128> = slowest[WARM_UP_EVENTS..]
            .iter()
            .map(Duration::as_millis)
            .collect();
        eprintln!(
            "{label}: fan-out of {} events to {subscribers}: p50 {p50:?}, p99 {p99:?}; each event's slowest delivery (ms): {slowest:?}",
            plan.events
        );
    }

    // 3. Sustained delivery.
    let published = Arc::new(AtomicU64::new(published));
    let profiler = match std::env::var_os("TESSERA_BENCH_PERF_DIR") {
        Some(dir) if plan.rounds > 0 => Some(start_profiler(
            plan.pids[0],
            &Path::new(&dir).join(format!("realtime-{}.perf.data", label.replace(' ', "-"))),
        )?),
        _ => None,
    };
    for round in 0..plan.rounds {
        let frames_before = deliveries.total(subscribers);
        let published_before = published.load(Ordering::Relaxed);
        let pids: Vec<Option<u32>> = plan
            .pids
            .iter()
            .map(|pid| Some(*pid))
            .chain([None])
            .collect();
        let cpu_before = cpu_reading(&pids);
        let started = Instant::now();
        let deadline = started + plan.round;
        let mut publishing = JoinSet::new();
        for slot in 0..plan.publishers {
            let (publisher, deliveries, published) =
                (publisher.clone(), deliveries.clone(), published.clone());
            publishing.spawn(async move {
                while Instant::now() < deadline {
                    if published.load(Ordering::Relaxed) >= deliveries.slowest(subscribers) + WINDOW
                    {
                        tokio::time::sleep(Duration::from_millis(1)).await;
                        continue;
                    }
                    let k = published.fetch_add(1, Ordering::Relaxed);
                    publisher.publish(k, slot).await?;
                }
                anyhow::Ok(())
            });
        }
        tokio::time::sleep_until(deadline.into()).await;
        let frames = deliveries.total(subscribers) - frames_before;
        let elapsed = started.elapsed().as_secs_f64();
        let cpu_after = cpu_reading(&pids);
        while let Some(result) = publishing.join_next().await {
            result??;
        }
        let events = published.load(Ordering::Relaxed) - published_before;
        // The target's processes, the clients (this process), everything else.
        let cores = cores_between(&cpu_before, &cpu_after);
        let others = cores[cores.len() - 1];
        let clients = cores[cores.len() - 2];
        let target: f64 = cores[..cores.len() - 2].iter().sum();
        let rate = frames as f64 / elapsed;
        eprintln!(
            "{label}: round {}: {rate:.0} frames/s ({:.0} events/s published); cores: {target:.2} the target, {clients:.2} the clients, {others:.2} everything else",
            round + 1,
            events as f64 / elapsed
        );
        run.rounds
            .push((rate, rate / subscribers as f64, target, clients, others));
        let all = published.load(Ordering::Relaxed);
        if !deliveries.wait_for(subscribers, all).await {
            run.missing += all * subscribers as u64 - deliveries.total(subscribers);
            eprintln!("{label}: not every subscriber received every event of the round");
        }
    }

    if let Some(profiler) = profiler {
        stop_profiler(profiler)?;
    }
    keep.cancel();
    while let Some(ended) = kept.join_next().await {
        let ended = ended?;
        if ended != Ended::Stopped {
            run.ended_early.push(ended);
        }
    }
    Ok(run)
}

/// `TESSERA_BENCH_PERF_DIR=<dir>`: the sustained rounds' target process is recorded by `perf
/// record` (call graphs) into `<dir>/realtime-<target>.perf.data`; nothing else changes.
fn start_profiler(pid: u32, output: &Path) -> anyhow::Result<Child> {
    Command::new("perf")
        .args(["record", "-F", "999", "-g", "-q", "-p"])
        .arg(pid.to_string())
        .arg("-o")
        .arg(output)
        .stdout(Stdio::null())
        .spawn()
        .context("starting perf record (TESSERA_BENCH_PERF_DIR)")
}

fn stop_profiler(mut profiler: Child) -> anyhow::Result<()> {
    let pid = libc::pid_t::try_from(profiler.id()).context("perf's process id")?;
    // SAFETY: `kill` on the pid of a child this process spawned and has not reaped yet.
    unsafe { libc::kill(pid, libc::SIGINT) };
    profiler.wait().context("waiting for perf record")?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Setting up.

/// A tenant with [`USERS`] editors, made by an in-process host on `database` that then stops.
async fn set_up_tenant(database: &BenchDatabase) -> anyhow::Result<Vec<BenchUser>> {
    let setup = Server::start(database, |_| {}).await?;
    let (_, users) = provisioned_tenant(&setup.state, "bench-realtime", &[Role::Editor; USERS])
        .await
        .context("provisioning the tenant")?;
    setup.shutdown().await?;
    Ok(users)
}

/// One conversation with every user of the tenant as a member, created through `host` by the
/// first: its id.
async fn create_conversation(
    client: &reqwest::Client,
    host: &Process,
    users: &[BenchUser],
) -> anyhow::Result<String> {
    let created = support::data_of(
        client
            .post(host.url("/chat/api/v1/conversations"))
            .bearer_auth(&users[0].token)
            .json(&json!({
                "title": "Realtime benchmark",
                "member_ids": users[1..].iter().map(|user| &user.user_id).collect::<Vec<_>>(),
            })),
        201,
    )
    .await?;
    Ok(created["id"]
        .as_str()
        .context("the conversation's id")?
        .to_owned())
}

/// The realtime topic of a conversation, and where its messages are posted on `hosts`.
fn conversation_paths(conversation_id: &str, hosts: &[&Process]) -> (String, Vec<String>) {
    let topic = TOPIC.replace("<id>", conversation_id);
    let urls = hosts
        .iter()
        .map(|host| {
            host.url(&format!(
                "/chat/api/v1/conversations/{conversation_id}/messages"
            ))
        })
        .collect();
    (topic, urls)
}

/// Raises this process's open-file limit to its hard limit (children inherit it).
fn raise_open_files_limit() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit with a valid pointer to an rlimit of this process.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return 0;
        }
        limit.rlim_cur = limit.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
    }
    limit.rlim_cur
}

/// Three hosts on one fresh PostgreSQL database: the fan-out latency across them.
async fn cluster(admin_url: &str, settings: &Settings) -> anyhow::Result<Run> {
    let shared = BenchDatabase::create(Backend::Postgres, Some(admin_url), "realtime").await?;
    let result = async {
        let url = shared.url.clone().context("a PostgreSQL URL")?;
        components::install_engines(&shared.plugins_dir(), &components::ENGINES);
        let users = set_up_tenant(&shared).await?;
        let tokens: Vec<String> = users.iter().map(|user| user.token.clone()).collect();
        let mut hosts = Vec::new();
        for number in 0..3 {
            let data_dir = std::env::temp_dir().join(format!(
                "tessera-bench-realtime-host-{}",
                uuid::Uuid::new_v4()
            ));
            std::fs::create_dir_all(data_dir.join("plugins"))?;
            std::fs::copy(
                shared.data_dir.join("service_secret"),
                data_dir.join("service_secret"),
            )?;
            for entry in std::fs::read_dir(shared.plugins_dir())? {
                let path = entry?.path();
                std::fs::copy(
                    &path,
                    data_dir.join("plugins").join(path.file_name().unwrap()),
                )?;
            }
            hosts.push(start_host(
                &data_dir,
                Some(&url),
                true,
                &format!("host {}", number + 1),
            )?);
        }
        let client = reqwest::Client::new();
        let conversation_id = create_conversation(&client, &hosts[0], &users).await?;
        let (topic, message_urls) =
            conversation_paths(&conversation_id, &hosts.iter().collect::<Vec<_>>());
        let publisher = Arc::new(Publisher::Hosts {
            client,
            message_urls,
            tokens: tokens.clone(),
        });
        let plan = Plan {
            label: "three hosts on PostgreSQL",
            urls: hosts.iter().map(Process::realtime_url).collect(),
            tokens: &tokens,
            topic,
            pids: hosts.iter().map(Process::pid).collect(),
            connections: settings.subscribers,
            subscribers: settings.subscribers,
            events: settings.events,
            rounds: 0,
            round: settings.round,
            publishers: 1,
        };
        let run = measure(plan, publisher).await;
        drop(hosts);
        run
    }
    .await;
    shared.destroy().await;
    result
}

// ---------------------------------------------------------------------------------------------
// The report.

fn millis(duration: Duration) -> String {
    let ms = duration.as_secs_f64() * 1e3;
    if ms < 10.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{ms:.0} ms")
    }
}

fn ended_summary(run: &Run) -> String {
    if run.ended_early.is_empty() {
        return "none".to_owned();
    }
    let mut codes: Vec<String> = run
        .ended_early
        .iter()
        .map(|ended| match ended {
            Ended::Closed(Some(code)) => format!("closed {code}"),
            Ended::Closed(None) => "closed".to_owned(),
            Ended::Lost => "lost".to_owned(),
            Ended::Stopped => "stopped".to_owned(),
        })
        .collect();
    codes.sort();
    codes.dedup();
    format!("{} ({})", run.ended_early.len(), codes.join(", "))
}

/// One cell per target, the host's figure in bold.
fn cells(runs: &[&Run], cell: impl Fn(&Run) -> String) -> String {
    runs.iter()
        .enumerate()
        .map(|(index, run)| {
            let text = cell(run);
            if index == 0 {
                format!("**{text}**")
            } else {
                text
            }
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

fn report(runs: &[&Run], cluster: Option<&Run>, settings: &Settings) {
    let host = runs[0];
    let p = |run: &Run, fraction| {
        run.latency(fraction, |_, _| true)
            .map_or("—".to_owned(), millis)
    };
    println!(
        "\nRealtime: `tessera serve` (SQLite, seven engines) against plain tokio-tungstenite broadcast servers, same clients, same run; {} subscribers on `{TOPIC}`, {} events one at a time, {} rounds of {:?}; frames of {} bytes.\n",
        settings.subscribers,
        settings.events,
        settings.rounds,
        settings.round,
        host.sample.len()
    );
    println!(
        "| measured | `tessera serve` | broadcast peer (128 KiB read buffer, the default) | broadcast peer, {} KiB read buffer | goal |",
        SMALL_READ_BUFFER / 1024
    );
    println!("|---|---|---|---|---|");
    println!(
        "| idle connections held (of {}), opened in | {} | {} per host: {} |",
        host.connections_asked,
        cells(runs, |run| format!(
            "{}, {:.1} s",
            count(run.connections_held as f64),
            run.opening.as_secs_f64()
        )),
        count(GOAL_CONNECTIONS as f64),
        verdict(host.connections_held >= GOAL_CONNECTIONS)
    );
    println!(
        "| memory per idle connection, what the connections past the first {} added (RSS at none → at {} → at all) | {} | < 16 KiB: {} |",
        count(WARM_CONNECTIONS as f64),
        count(WARM_CONNECTIONS as f64),
        cells(runs, |run| format!(
            "{:.1} KiB ({:.0} → {:.0} → {:.0} MiB)",
            run.bytes_per_connection() / 1024.0,
            run.rss_start as f64 / 1048576.0,
            run.rss_before as f64 / 1048576.0,
            run.rss_after as f64 / 1048576.0
        )),
        verdict(host.bytes_per_connection() < GOAL_BYTES_PER_CONNECTION)
    );
    println!(
        "| CPU while they idle | {} | |",
        cells(runs, |run| format!("{:.2} cores", run.idle_cores))
    );
    println!(
        "| fan-out, publish → each subscriber, p50 / p99 | {} | p99 < 50 ms: {} |",
        cells(runs, |run| format!("{} / {}", p(run, 0.5), p(run, 0.99))),
        verdict(host.latency(0.99, |_, _| true).unwrap_or(Duration::MAX) < GOAL_P99)
    );
    println!(
        "| sustained frames/s to all subscribers (events/s), median | {} | |",
        cells(runs, |run| {
            let (rate, events, ..) = run.median_round();
            format!("{} ({})", count(rate), count(events))
        })
    );
    println!(
        "| … per CPU-second of the target | {} | |",
        cells(runs, |run| {
            let (rate, _, target, ..) = run.median_round();
            count(rate / target.max(0.01))
        })
    );
    println!(
        "| cores meanwhile: target; clients; everything else on the machine | {} | |",
        cells(runs, |run| {
            let (_, _, target, clients, others) = run.median_round();
            format!("{target:.2}; {clients:.2}; {others:.2}")
        })
    );
    println!(
        "| connections ended by the server; events missed | {} | none |",
        cells(runs, |run| format!(
            "{}; {}",
            ended_summary(run),
            run.missing
        ))
    );
    if let Some(cluster) = cluster {
        let hosts = 3;
        let local = |fraction| {
            cluster
                .latency(fraction, |host, k| host == k as usize % hosts)
                .map_or("—".to_owned(), millis)
        };
        let remote = |fraction| {
            cluster
                .latency(fraction, |host, k| host != k as usize % hosts)
                .map_or("—".to_owned(), millis)
        };
        let p99 = cluster.latency(0.99, |_, _| true).unwrap_or(Duration::MAX);
        println!(
            "| fan-out over three hosts on PostgreSQL, p50 / p99 | **{} / {}** (publishing host {} / {}; the others {} / {}); ended {}; missed {} | | | p99 < 250 ms: {} |",
            p(cluster, 0.5),
            p(cluster, 0.99),
            local(0.5),
            local(0.99),
            remote(0.5),
            remote(0.99),
            ended_summary(cluster),
            cluster.missing,
            verdict(p99 < GOAL_CLUSTER_P99)
        );
    } else {
        println!(
            "| fan-out over three hosts on PostgreSQL | not measured: set `TESSERA_TEST_POSTGRES_URL` | | | p99 < 250 ms |"
        );
    }
}

async fn run() -> anyhow::Result<()> {
    let settings = Settings::from_env();
    let limit = raise_open_files_limit();
    eprintln!("open files limit: {limit}; {settings:?}");
    anyhow::ensure!(
        limit == 0 || limit as usize > settings.connections + 512,
        "the open-file limit ({limit}) is too low for {} connections: raise `ulimit -Hn`",
        settings.connections
    );

    // `tessera serve` on SQLite.
    let database = BenchDatabase::create(Backend::Sqlite, None, "realtime").await?;
    components::install_engines(&database.plugins_dir(), &components::ENGINES);
    let users = set_up_tenant(&database).await?;
    let tokens: Vec<String> = users.iter().map(|user| user.token.clone()).collect();
    let host = start_host(&database.data_dir, None, false, "host")?;
    let client = reqwest::Client::new();
    let conversation_id = create_conversation(&client, &host, &users).await?;
    let (topic, message_urls) = conversation_paths(&conversation_id, &[&host]);
    let publisher = Arc::new(Publisher::Hosts {
        client,
        message_urls,
        tokens: tokens.clone(),
    });
    let host_run = measure(
        Plan {
            label: "tessera serve",
            urls: vec![host.realtime_url()],
            tokens: &tokens,
            topic: topic.clone(),
            pids: vec![host.pid()],
            connections: settings.connections,
            subscribers: settings.subscribers,
            events: settings.events,
            rounds: settings.rounds,
            round: settings.round,
            publishers: HOST_PUBLISHERS,
        },
        publisher,
    )
    .await;
    drop(host);
    database.destroy().await;
    let host_run = host_run?;

    // The broadcast peers, with frames of the host's size.
    let pieces = pieces_of(&host_run.sample);
    let mut peer_runs = Vec::new();
    for read_buffer in [None, Some(SMALL_READ_BUFFER)] {
        let (peer, stdin) = start_peer(read_buffer).await?;
        let label = match read_buffer {
            None => "broadcast peer".to_owned(),
            Some(bytes) => format!("broadcast peer, {} KiB read buffer", bytes / 1024),
        };
        let publisher = Arc::new(Publisher::Peer {
            stdin: tokio::sync::Mutex::new(stdin),
            pieces: pieces.clone(),
        });
        peer_runs.push(
            measure(
                Plan {
                    label: &label,
                    urls: vec![peer.realtime_url()],
                    tokens: &tokens,
                    topic: topic.clone(),
                    pids: vec![peer.pid()],
                    connections: settings.connections,
                    subscribers: settings.subscribers,
                    events: settings.events,
                    rounds: settings.rounds,
                    round: settings.round,
                    publishers: 1,
                },
                publisher,
            )
            .await?,
        );
    }

    let cluster_run = match std::env::var("TESSERA_TEST_POSTGRES_URL") {
        Ok(admin_url) => Some(cluster(&admin_url, &settings).await?),
        Err(_) => {
            eprintln!("TESSERA_TEST_POSTGRES_URL is not set: no three-host measurement");
            None
        }
    };
    report(
        &[&host_run, &peer_runs[0], &peer_runs[1]],
        cluster_run.as_ref(),
        &settings,
    );
    Ok(())
}

fn main() -> anyhow::Result<()> {
    if std::env::var_os(PEER_SWITCH).is_some() {
        return peer_main();
    }
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(run())
}
