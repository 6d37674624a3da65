//! What metrics and traces cost (issue 28): requests per second through an engine route
//! (`echo`'s `GET /api/v1/noop`) and core writes (`POST /core/api/v1/intentions`, a five-field
//! contact), 16 clients over real HTTP on loopback (SQLite, the seven engines and `echo`
//! loaded), first on a host with metrics and traces off (no recorder, no subscriber: every
//! recording call and span is a no-op), then with metrics on (`TESSERA_METRICS_TOKEN` set,
//! scraped once a second as Prometheus would), then with traces on as well (the binary's
//! subscriber with `OTEL_EXPORTER_OTLP_ENDPOINT` set, every span exported in batches over
//! OTLP/HTTP to a collector stand-in on loopback that reads and drops them; log lines off;
//! the SDK's sampler from `OTEL_TRACES_SAMPLER` as in production, every trace when unset).
//! The recorder and the subscriber are process-wide and cannot be removed once installed, so
//! the hosts run in that order, each after a warm-up round; the medians of its rounds are
//! compared.
//!
//! `cargo bench -p tessera-host --bench metrics_overhead` (about a minute).

#[path = "../../tests/it/components.rs"]
mod components;
#[path = "support/mod.rs"]
mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tessera_host::config::Secret;
use tessera_host::tenancy::Role;

use support::{Backend, BenchDatabase, Server, engine_probes, provisioned_tenant};

const CLIENTS: usize = 16;
const ROUND: Duration = Duration::from_secs(2);
const ROUNDS: usize = 5;
const METRICS_TOKEN: &str = "benchmark-metrics-token-0123456789";

#[derive(Clone, Copy)]
enum Workload {
    EngineRoute,
    CoreWrite,
}

impl Workload {
    fn name(self) -> &'static str {
        match self {
            Self::EngineRoute => "engine route (`GET /echo/api/v1/noop`)",
            Self::CoreWrite => "core write (`POST /core/api/v1/intentions`)",
        }
    }
}

/// Requests answered 2xx per second by [`CLIENTS`] clients over one round.
async fn round(server: &Server, token: &str, workload: Workload) -> anyhow::Result<f64> {
    let answered = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let counter = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let deadline = started + ROUND;
    let clients: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (answered, failed, counter) = (answered.clone(), failed.clone(), counter.clone());
            let token = token.to_owned();
            let noop = server.url("/echo/api/v1/noop");
            let intentions = server.url("/core/api/v1/intentions");
            tokio::spawn(async move {
                let client = reqwest::Client::new();
                while Instant::now() < deadline {
                    let request = match workload {
                        Workload::EngineRoute => client.get(&noop),
                        Workload::CoreWrite => {
                            client
                                .post(&intentions)
                                .json(&engine_probes::contact_intention(
                                    counter.fetch_add(1, Ordering::Relaxed),
                                ))
                        }
                    };
                    match request.bearer_auth(&token).send().await {
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
    let failed = failed.load(Ordering::Relaxed);
    anyhow::ensure!(failed == 0, "{failed} requests failed");
    Ok(answered.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64())
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Medians of [`ROUNDS`] rounds of each workload on a host with metrics `on` or off.
async fn measure(on: bool) -> anyhow::Result<[f64; 2]> {
    let database = BenchDatabase::create(Backend::Sqlite, None, "metrics-overhead").await?;
    components::install(&database.plugins_dir(), &["echo"]);
    components::install_engines(&database.plugins_dir(), &components::ENGINES);
    let server = Server::start(&database, |config| {
        if on {
            config.metrics.token = Some(Secret::new(METRICS_TOKEN.into()));
        }
    })
    .await?;
    let (_, users) = provisioned_tenant(&server.state, "bench-metrics", &[Role::Editor]).await?;
    let token = users[0].token.clone();
    // A scraper, as Prometheus would be, once a second while the host is measured.
    let scraper = on.then(|| {
        let url = server.url("/metrics");
        tokio::spawn(async move {
            let client = reqwest::Client::new();
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                let scrape = client.get(&url).bearer_auth(METRICS_TOKEN).send().await;
                assert!(scrape.is_ok_and(|answer| answer.status() == 200));
            }
        })
    });
    let mut medians = [0.0; 2];
    for (slot, workload) in [Workload::EngineRoute, Workload::CoreWrite]
        .into_iter()
        .enumerate()
    {
        round(&server, &token, workload).await?;
        let mut rates = Vec::with_capacity(ROUNDS);
        for _ in 0..ROUNDS {
            rates.push(round(&server, &token, workload).await?);
        }
        medians[slot] = median(rates);
    }
    if let Some(scraper) = scraper {
        scraper.abort();
    }
    server.shutdown().await?;
    database.destroy().await;
    Ok(medians)
}

/// A stand-in for an OpenTelemetry collector: `POST /v1/traces` read whole and dropped; the
/// spans it was sent, counted from the request bodies' sizes (bytes).
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

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let off = measure(false).await?;
    let metrics = measure(true).await?;
    let (endpoint, exported) = collector().await?;
    // SAFETY: set before the subscriber starts, while no other thread reads the environment.
    unsafe {
        std::env::set_var("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint);
        std::env::set_var("TESSERA_LOG", "off");
    }
    let telemetry = tessera_host::telemetry::init_serving("off", tokio::runtime::Handle::current());
    anyhow::ensure!(telemetry.exports_traces(), "traces are not exported");
    let traced = measure(true).await?;
    // The last batch goes out on this runtime: flush from a thread outside it.
    tokio::task::spawn_blocking(move || telemetry.shutdown()).await?;
    anyhow::ensure!(
        exported.load(Ordering::Relaxed) > 0,
        "the collector received no spans"
    );
    // The sampler is the SDK's, from the environment as in production (`OTEL_TRACES_SAMPLER`,
    // `OTEL_TRACES_SAMPLER_ARG`; every trace when unset).
    let sampler = match (
        std::env::var("OTEL_TRACES_SAMPLER"),
        std::env::var("OTEL_TRACES_SAMPLER_ARG"),
    ) {
        (Ok(sampler), Ok(argument)) => format!("{sampler} {argument}"),
        (Ok(sampler), Err(_)) => sampler,
        _ => "every trace sampled".to_owned(),
    };
    println!(
        "\n| workload ({CLIENTS} clients, median of {ROUNDS} × {ROUND:?}) | off (req/s) | metrics on (req/s) | cost | metrics and traces on ({sampler}) (req/s) | cost |"
    );
    println!("|---|---|---|---|---|---|");
    for (slot, workload) in [Workload::EngineRoute, Workload::CoreWrite]
        .into_iter()
        .enumerate()
    {
        println!(
            "| {} | {:.0} | {:.0} | {:+.1} % | {:.0} | {:+.1} % |",
            workload.name(),
            off[slot],
            metrics[slot],
            (off[slot] - metrics[slot]) / off[slot] * 100.0,
            traced[slot],
            (off[slot] - traced[slot]) / off[slot] * 100.0
        );
    }
    Ok(())
}
