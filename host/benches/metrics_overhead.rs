//! What metrics and traces cost, measured as deployed: `tessera serve` (this
//! package's release binary) as child processes, each on its own SQLite data dir with the seven
//! engines and `echo` loaded, logging JSON lines at info to a pipe the benchmark drains (as
//! journald or a container runtime would). The hosts differ only in their environment:
//!
//! - logs only: the default, no metrics recorder, no OpenTelemetry;
//! - logs and metrics: `TESSERA_METRICS_TOKEN` set, `/metrics` scraped once a second;
//! - logs, metrics and traces: `OTEL_EXPORTER_OTLP_ENDPOINT` pointing at a collector stand-in on
//!   loopback that reads and drops each batch, every trace sampled (the SDK's default);
//! - the same with one trace in ten (`OTEL_TRACES_SAMPLER=parentbased_traceidratio`,
//!   `OTEL_TRACES_SAMPLER_ARG=0.1`), and with one in a hundred (`0.01`).
//!
//! All run at once and are measured in turn, round by round (one round of each host, then the
//! next, each round starting with the next host), so a machine that slows down slows every host
//! alike; after each round the benchmark
//! waits until that host is idle again, so the work its writes left behind (projections,
//! deliveries to engines) neither slows the next host's round nor goes uncounted in its own CPU
//! time: requests per second from 16
//! clients over real HTTP through an engine route (`echo`'s `GET /api/v1/noop`) and core writes
//! (`POST /core/api/v1/intentions`, a five-field contact), the median of the rounds compared with
//! the logs-only host's.
//!
//! `cargo bench -p tessera-host --bench metrics_overhead` (about six minutes;
//! `TESSERA_BENCH_ROUNDS=N` measures N rounds instead of 7, for a noisy machine).
//! `TESSERA_BENCH_CALLGRIND=1` counts instructions per request instead (valgrind's callgrind,
//! about ten minutes): the figure this machine's noise moves least. Under valgrind SHA-256 runs
//! its portable code (no SHA extensions), so the counted base is larger than the native one;
//! and the work writes cause is batched more on a slower host, so the write row counts speed as
//! much as work: its count says little about tracing's share, the engine route's does.
//! `TESSERA_BENCH_BINARY=path` serves with another `tessera` binary (an earlier build, to
//! compare two in one sitting); with `TESSERA_BENCH_LOGS_ONLY=1` only the logs-only host is
//! measured (what two builds' defaults cost).

#[path = "../../tests/it/components.rs"]
mod components;
#[path = "support/mod.rs"]
mod support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use tessera_host::tenancy::Role;

use support::{
    Backend, BenchDatabase, Server, Serving, engine_probes, median, provisioned_tenant,
    ticks_of_process, user_and_system_ticks,
};

/// The `tessera` binary's allocator, so the benchmark measures what the binary runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const CLIENTS: usize = 16;
const ROUND: Duration = Duration::from_secs(2);
/// Rounds of each host and workload, after a warm-up round (`TESSERA_BENCH_ROUNDS`, default 7).
fn rounds() -> usize {
    support::rounds_or(7)
}
const METRICS_TOKEN: &str = "benchmark-metrics-token-0123456789";

#[derive(Clone, Copy)]
enum Workload {
    EngineRoute,
    CoreWrite,
}

impl Workload {
    const ALL: [Self; 2] = [Self::EngineRoute, Self::CoreWrite];

    fn name(self) -> &'static str {
        match self {
            Self::EngineRoute => "engine route (`GET /echo/api/v1/noop`)",
            Self::CoreWrite => "core write (`POST /core/api/v1/intentions`)",
        }
    }
}

/// What a host has on beside its logs.
#[derive(Clone, Copy, PartialEq)]
enum Telemetry {
    LogsOnly,
    Metrics,
    TracesEvery,
    TracesOneInTen,
    TracesOneInAHundred,
}

impl Telemetry {
    const ALL: [Self; 5] = [
        Self::LogsOnly,
        Self::Metrics,
        Self::TracesEvery,
        Self::TracesOneInTen,
        Self::TracesOneInAHundred,
    ];

    /// The hosts this run measures: every one, or the logs-only host alone
    /// (`TESSERA_BENCH_LOGS_ONLY=1`).
    fn measured() -> &'static [Self] {
        if std::env::var("TESSERA_BENCH_LOGS_ONLY").is_ok_and(|value| value == "1") {
            &Self::ALL[..1]
        } else {
            &Self::ALL
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::LogsOnly => "logs only",
            Self::Metrics => "logs and metrics",
            Self::TracesEvery => "logs, metrics and traces (every trace)",
            Self::TracesOneInTen => "logs, metrics and traces (one in ten)",
            Self::TracesOneInAHundred => "logs, metrics and traces (one in a hundred)",
        }
    }

    fn metrics(self) -> bool {
        self != Self::LogsOnly
    }

    fn traces(self) -> bool {
        matches!(
            self,
            Self::TracesEvery | Self::TracesOneInTen | Self::TracesOneInAHundred
        )
    }
}

/// A `tessera serve` child process, killed when dropped.
struct Host {
    telemetry: Telemetry,
    child: Child,
    address: String,
    token: String,
    /// Bytes of OTLP requests its collector received.
    exported: Arc<AtomicU64>,
    database: Option<BenchDatabase>,
}

impl Host {
    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(database) = self.database.take() {
            let _ = std::fs::remove_dir_all(&database.data_dir);
        }
    }
}

/// A stand-in for an OpenTelemetry collector: `POST /v1/traces` read whole and dropped; the
/// bytes it was sent are counted.
async fn collector() -> anyhow::Result<(String, Arc<AtomicU64>)> {
    let received = Arc::new(AtomicU64::new(0));
    let counted = received.clone();
    let routes = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |body: axum::body::Bytes| {
            counted.fetch_add(body.len() as u64, Ordering::Relaxed);
            async { "" }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, routes).await });
    Ok((format!("http://{address}"), received))
}

/// A data dir with the engines, a tenant and an editor's token (made by an in-process host that
/// then stops), and `tessera serve` started on it with `telemetry`'s environment.
async fn start_host(telemetry: Telemetry, callgrind: Option<&Path>) -> anyhow::Result<Host> {
    let database = BenchDatabase::create(Backend::Sqlite, None, "metrics-overhead").await?;
    components::install(&database.plugins_dir(), &["echo"]);
    components::install_engines(&database.plugins_dir(), &components::ENGINES);
    let setup = Server::start(&database, |_| {}).await?;
    let (_, users) = provisioned_tenant(&setup.state, "bench-metrics", &[Role::Editor]).await?;
    setup.shutdown().await?;
    let (endpoint, exported) = collector().await?;

    let binary = support::tessera_binary();
    let mut command = match callgrind {
        // Instructions are counted only between `callgrind_control -i on` and the dump.
        Some(directory) => {
            let mut command = Command::new("valgrind");
            command
                .arg("--tool=callgrind")
                .arg("--instr-atstart=no")
                .arg(format!(
                    "--callgrind-out-file={}/callgrind.%p",
                    directory.display()
                ))
                .arg(binary);
            command
        }
        None => Command::new(binary),
    };
    command
        .arg("serve")
        .arg("--listen")
        .arg("127.0.0.1:0")
        .arg("--data-dir")
        .arg(&database.data_dir)
        .arg("--plugins-dir")
        .arg(database.plugins_dir())
        .env("TESSERA_LOG", "info")
        .env("TESSERA_LOG_FORMAT", "json")
        .env("TESSERA_RATE_LIMIT_READ", "0")
        .env("TESSERA_RATE_LIMIT_WRITE", "0")
        .env_remove("TESSERA_DATABASE_URL")
        .env_remove("TESSERA_METRICS_TOKEN")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env_remove("OTEL_TRACES_SAMPLER")
        .env_remove("OTEL_TRACES_SAMPLER_ARG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if telemetry.metrics() {
        command.env("TESSERA_METRICS_TOKEN", METRICS_TOKEN);
    }
    if telemetry.traces() {
        command.env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint);
    }
    let ratio = match telemetry {
        Telemetry::TracesOneInTen => Some("0.1"),
        Telemetry::TracesOneInAHundred => Some("0.01"),
        _ => None,
    };
    if let Some(ratio) = ratio {
        command
            .env("OTEL_TRACES_SAMPLER", "parentbased_traceidratio")
            .env("OTEL_TRACES_SAMPLER_ARG", ratio);
    }
    let Serving {
        child,
        address,
        log,
    } = support::spawn_serving(&mut command)?;
    // The log lines keep coming; read them as a log collector would.
    std::thread::spawn(move || for _ in log {});
    Ok(Host {
        telemetry,
        child,
        address,
        token: users[0].token.clone(),
        exported,
        database: Some(database),
    })
}

/// What a client sends to one host: its URLs and token.
struct Target {
    token: String,
    noop: String,
    intentions: String,
}

impl Target {
    fn of(host: &Host) -> Self {
        Self {
            token: host.token.clone(),
            noop: host.url("/echo/api/v1/noop"),
            intentions: host.url("/core/api/v1/intentions"),
        }
    }

    /// One request of `workload` (a new contact per write, numbered by `counter`).
    fn request(
        &self,
        client: &reqwest::Client,
        workload: Workload,
        counter: &AtomicU64,
    ) -> reqwest::RequestBuilder {
        let request = match workload {
            Workload::EngineRoute => client.get(&self.noop),
            Workload::CoreWrite => {
                client
                    .post(&self.intentions)
                    .json(&engine_probes::contact_intention(
                        counter.fetch_add(1, Ordering::Relaxed),
                    ))
            }
        };
        request.bearer_auth(&self.token)
    }
}

/// The clock ticks of `/proc` per second.
const TICKS_PER_SECOND: f64 = 100.0;

/// How long [`settle`] watches the host's CPU at a time, and how many clock ticks it may use
/// in that time and still count as idle (8 % of a core: its pollers and a scrape).
const SETTLE_WINDOW: Duration = Duration::from_millis(250);
const IDLE_TICKS: u64 = 2;

/// Waits until the host has been idle for a [`SETTLE_WINDOW`] (at most a minute) and returns
/// its CPU ticks then.
async fn settle(host: &Host) -> anyhow::Result<u64> {
    let process = host.child.id().to_string();
    let mut ticks = ticks_of_process(&process).context("the host's CPU time")?;
    let give_up = Instant::now() + Duration::from_secs(60);
    loop {
        tokio::time::sleep(SETTLE_WINDOW).await;
        let now = ticks_of_process(&process).context("the host's CPU time")?;
        if now - ticks <= IDLE_TICKS || Instant::now() > give_up {
            return Ok(now);
        }
        ticks = now;
    }
}

/// One round of a host: requests answered 2xx per second, and the host process's CPU time per
/// request (µs) from the round's start until the host is idle again (the work a request leaves
/// behind included): less disturbed than throughput by whatever else the machine runs.
struct Measured {
    rate: f64,
    cpu_per_request: f64,
    /// Of which in the kernel (system time), µs per request.
    system_per_request: f64,
    /// Context switches of all the host's threads per request.
    switches_per_request: f64,
}

/// The host's system time in clock ticks.
fn system_ticks(process: &str) -> anyhow::Result<u64> {
    user_and_system_ticks(process)
        .map(|(_, system)| system)
        .context("the host's system time")
}

/// Context switches of every thread of the host, voluntary and not
/// (`/proc/<pid>/task/*/status`; threads that ended since are not counted).
fn context_switches(process: &str) -> anyhow::Result<u64> {
    let mut switches = 0;
    for task in std::fs::read_dir(format!("/proc/{process}/task"))? {
        let Ok(status) = std::fs::read_to_string(task?.path().join("status")) else {
            continue;
        };
        for line in status.lines() {
            if let Some(count) = line
                .strip_prefix("voluntary_ctxt_switches:")
                .or_else(|| line.strip_prefix("nonvoluntary_ctxt_switches:"))
            {
                switches += count.trim().parse::<u64>()?;
            }
        }
    }
    Ok(switches)
}

/// One round of [`CLIENTS`] clients.
async fn round(
    host: &Host,
    workload: Workload,
    counter: &Arc<AtomicU64>,
) -> anyhow::Result<Measured> {
    let process = host.child.id().to_string();
    let ticks_before = ticks_of_process(&process).context("the host's CPU time")?;
    let (system_before, switches_before) = (system_ticks(&process)?, context_switches(&process)?);
    let answered = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let deadline = started + ROUND;
    let clients: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (answered, failed, counter) = (answered.clone(), failed.clone(), counter.clone());
            let target = Target::of(host);
            tokio::spawn(async move {
                let client = reqwest::Client::new();
                while Instant::now() < deadline {
                    match target.request(&client, workload, &counter).send().await {
                        Ok(answer) if answer.status().is_success() => {
                            answered.fetch_add(1, Ordering::Relaxed);
                        }
                        _ => {
                            failed.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            })
        })
        .collect();
    for client in clients {
        client.await?;
    }
    let elapsed = started.elapsed();
    // A write leaves work behind (projections, deliveries to engines): wait until the host is
    // idle again, so it neither slows the next host's round nor goes uncounted in its own CPU.
    let ticks = settle(host).await? - ticks_before;
    let system = system_ticks(&process)? - system_before;
    let switches = context_switches(&process)?.saturating_sub(switches_before);
    let failed = failed.load(Ordering::Relaxed);
    anyhow::ensure!(failed == 0, "{failed} requests failed");
    let answered = answered.load(Ordering::Relaxed) as f64;
    Ok(Measured {
        rate: answered / elapsed.as_secs_f64(),
        cpu_per_request: ticks as f64 / TICKS_PER_SECOND * 1e6 / answered.max(1.0),
        system_per_request: system as f64 / TICKS_PER_SECOND * 1e6 / answered.max(1.0),
        switches_per_request: switches as f64 / answered.max(1.0),
    })
}

/// Sends `total` requests of `workload` from [`CLIENTS`] clients.
async fn fixed_requests(
    host: &Host,
    workload: Workload,
    total: u64,
    counter: &Arc<AtomicU64>,
) -> anyhow::Result<()> {
    let sent = Arc::new(AtomicU64::new(0));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (sent, counter) = (sent.clone(), counter.clone());
            let target = Target::of(host);
            tokio::spawn(async move {
                let client = reqwest::Client::new();
                while sent.fetch_add(1, Ordering::Relaxed) < total {
                    let answer = target.request(&client, workload, &counter).send().await?;
                    anyhow::ensure!(answer.status().is_success(), "answered {}", answer.status());
                }
                Ok(())
            })
        })
        .collect();
    for client in clients {
        client.await??;
    }
    Ok(())
}

/// `callgrind_control <arguments> <pid>`.
fn callgrind_control(arguments: &[&str], pid: u32) -> anyhow::Result<()> {
    let status = Command::new("callgrind_control")
        .args(arguments)
        .arg(pid.to_string())
        .stdout(Stdio::null())
        .status()
        .context("running callgrind_control")?;
    anyhow::ensure!(status.success(), "callgrind_control {arguments:?} failed");
    Ok(())
}

/// The instructions of the callgrind dumps of `pid` in `directory` so far, summed: each dump's
/// `summary:` holds what was counted since the one before (its `totals:` runs on from the
/// first). The dumps are kept for `callgrind_annotate`.
fn dumped_instructions(directory: &Path, pid: u32) -> anyhow::Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(directory)? {
        let path = entry?.path();
        let name = path
            .file_name()
            .and_then(|name| name.to_str())
            .unwrap_or("");
        if !name.starts_with(&format!("callgrind.{pid}.")) {
            continue;
        }
        let text = std::fs::read_to_string(&path)?;
        let summary = text
            .lines()
            .find_map(|line| line.strip_prefix("summary:"))
            .with_context(|| format!("no summary in {}", path.display()))?;
        total += summary
            .split_whitespace()
            .next()
            .context("an instruction count")?
            .parse::<u64>()?;
    }
    Ok(total)
}

/// The longest a host under callgrind may take to finish the work requests caused.
const SETTLE_LIMIT: Duration = Duration::from_secs(300);

/// Requests per workload in the instruction count: the engine route, then core writes.
const COUNTED_REQUESTS: [u64; 2] = [2_000, 300];

/// The warm-up before each counted window, in counted windows.
const WARM_UP_TIMES: u64 = 4;

/// Waits until `host` has finished the work its requests caused (the core's projections and
/// the engines' deliveries: no event behind the slowest projection, no engine work due or
/// running), read from its database on the side, read-only; then a second more, for what
/// follows a last commit (wakers, metrics).
async fn settled(host: &Host) -> anyhow::Result<()> {
    use sqlx::Connection as _;
    let database = host.database.as_ref().context("the host's database")?;
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(database.data_dir.join("tessera.db"))
        .read_only(true);
    let mut connection = sqlx::SqliteConnection::connect_with(&options).await?;
    let started = Instant::now();
    loop {
        let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
        let unfinished: i64 = sqlx::query_scalar(
            "SELECT (SELECT COUNT(*) FROM engine_work
                     WHERE status = 'running' OR (status = 'pending' AND due_at <= $1))
                  + (SELECT COUNT(*) FROM events
                     WHERE position > (SELECT MIN(position) FROM projection_checkpoints))",
        )
        .bind(now)
        .fetch_one(&mut connection)
        .await?;
        if unfinished == 0 {
            break;
        }
        anyhow::ensure!(
            started.elapsed() < SETTLE_LIMIT,
            "{unfinished} items still unfinished after {SETTLE_LIMIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    connection.close().await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    Ok(())
}

/// `TESSERA_BENCH_CALLGRIND=1`: each host in turn under `valgrind --tool=callgrind`, the
/// instructions it executes for a fixed number of requests of each workload (after four times as many
/// to warm up), the work they cause included: a count that does not depend on what else the
/// machine runs. The dumps stay in a temp dir the run names.
async fn count_instructions() -> anyhow::Result<()> {
    let directory =
        std::env::temp_dir().join(format!("tessera-callgrind-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&directory)?;
    let counter = Arc::new(AtomicU64::new(0));
    let mut per_request = Vec::new();
    for &telemetry in Telemetry::measured() {
        let host = start_host(telemetry, Some(&directory)).await?;
        let pid = host.child.id();
        let mut counts = [0.0; 2];
        for (slot, workload) in Workload::ALL.into_iter().enumerate() {
            let total = COUNTED_REQUESTS[slot];
            // The work the warm-up left (the core's projections and deliveries) is done before
            // counting starts, and the counted requests' own before it ends. The warm-up is
            // long enough for each pool connection to have prepared the statements it runs
            // (a first preparation costs up to 330,000 instructions, and with a warm-up only as
            // long as the window 34 of them fell in a counted window).
            fixed_requests(&host, workload, total * WARM_UP_TIMES, &counter).await?;
            settled(&host).await?;
            let before = dumped_instructions(&directory, pid)?;
            callgrind_control(&["-i", "on"], pid)?;
            fixed_requests(&host, workload, total, &counter).await?;
            settled(&host).await?;
            callgrind_control(&["-d"], pid)?;
            callgrind_control(&["-i", "off"], pid)?;
            let counted = dumped_instructions(&directory, pid)? - before;
            counts[slot] = counted as f64 / total as f64;
        }
        eprintln!("{}: {counts:?} instructions per request", telemetry.name());
        per_request.push(counts);
        drop(host);
    }
    eprintln!(
        "the dumps (callgrind_annotate reads them): {}",
        directory.display()
    );
    print!("\nInstructions per request (callgrind; the cost against logs only):\n\n| workload |");
    for telemetry in Telemetry::measured() {
        print!(" {} |", telemetry.name());
    }
    println!();
    println!("|---|{}", "---|".repeat(Telemetry::measured().len()));
    for (slot, workload) in Workload::ALL.into_iter().enumerate() {
        print!(
            "| {} ({} requests) |",
            workload.name(),
            COUNTED_REQUESTS[slot]
        );
        let base = per_request[0][slot];
        for (index, counts) in per_request.iter().enumerate() {
            if index == 0 {
                print!(" {base:.0} |");
            } else {
                let cost = (counts[slot] - base) / base * 100.0;
                print!(" {:.0} (cost {cost:+.1} %) |", counts[slot]);
            }
        }
        println!();
    }
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    if std::env::var("TESSERA_BENCH_CALLGRIND").is_ok_and(|value| value == "1") {
        return count_instructions().await;
    }
    let mut hosts = Vec::with_capacity(Telemetry::measured().len());
    for &telemetry in Telemetry::measured() {
        hosts.push(start_host(telemetry, None).await?);
    }
    // A scraper per metrics host, as Prometheus would be, once a second throughout.
    let scrapers: Vec<_> = hosts
        .iter()
        .filter(|host| host.telemetry.metrics())
        .map(|host| {
            let url = host.url("/metrics");
            tokio::spawn(async move {
                let client = reqwest::Client::new();
                loop {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    let scrape = client.get(&url).bearer_auth(METRICS_TOKEN).send().await;
                    assert!(scrape.is_ok_and(|answer| answer.status() == 200));
                }
            })
        })
        .collect();
    let counter = Arc::new(AtomicU64::new(0));
    // rates[workload][host], cpu[workload][host]: one per round.
    let rounds = rounds();
    let mut rates = vec![vec![Vec::with_capacity(rounds); hosts.len()]; Workload::ALL.len()];
    let mut cpu = rates.clone();
    let mut system = rates.clone();
    let mut switches = rates.clone();
    for round_number in 0..=rounds {
        for (slot, workload) in Workload::ALL.into_iter().enumerate() {
            // Each round starts with the next host, so no host is always the one measured
            // first (after another workload) or right after a given other host.
            for offset in 0..hosts.len() {
                let index = (round_number + offset) % hosts.len();
                let host = &hosts[index];
                let measured = round(host, workload, &counter).await?;
                // Round 0 warms every host up.
                if round_number > 0 {
                    rates[slot][index].push(measured.rate);
                    cpu[slot][index].push(measured.cpu_per_request);
                    system[slot][index].push(measured.system_per_request);
                    switches[slot][index].push(measured.switches_per_request);
                }
            }
        }
    }
    for scraper in scrapers {
        scraper.abort();
    }
    // Let the last batches of spans go out.
    tokio::time::sleep(Duration::from_secs(6)).await;
    for host in hosts.iter().filter(|host| host.telemetry.traces()) {
        anyhow::ensure!(
            host.exported.load(Ordering::Relaxed) > 0,
            "the collector of the host with {} received no spans",
            host.telemetry.name()
        );
    }

    for (title, unit, values, sign) in [
        ("Requests per second", "req/s", &rates, 1.0),
        (
            "The host's CPU time per request, the work it leaves behind included",
            "µs",
            &cpu,
            -1.0,
        ),
        ("Of which system time", "µs", &system, -1.0),
        (
            "Context switches of the host's threads per request",
            "switches",
            &switches,
            -1.0,
        ),
    ] {
        println!(
            "\n{title} ({CLIENTS} clients, median of {rounds} rounds of {ROUND:?}; the cost against logs only):\n"
        );
        print!("| workload |");
        for host in &hosts {
            print!(" {} ({unit}) |", host.telemetry.name());
        }
        println!();
        println!("|---|{}", "---|".repeat(hosts.len()));
        for (slot, workload) in Workload::ALL.into_iter().enumerate() {
            let medians: Vec<f64> = values[slot].iter().cloned().map(median).collect();
            print!("| {} |", workload.name());
            for (index, value) in medians.iter().enumerate() {
                if index == 0 {
                    print!(" {value:.1} |");
                } else {
                    let cost = sign * (medians[0] - value) / medians[0] * 100.0;
                    print!(" {value:.1} (cost {cost:+.1} %) |");
                }
            }
            println!();
        }
    }
    println!("\nEvery round (req/s · µs of CPU per request), round by round:");
    for (slot, workload) in Workload::ALL.into_iter().enumerate() {
        for (index, host) in hosts.iter().enumerate() {
            let values: Vec<String> = rates[slot][index]
                .iter()
                .zip(&cpu[slot][index])
                .map(|(rate, cpu)| format!("{rate:.0} · {cpu:.1}"))
                .collect();
            println!(
                "- {}, {}: {}",
                workload.name(),
                host.telemetry.name(),
                values.join(", ")
            );
        }
    }
    Ok(())
}
