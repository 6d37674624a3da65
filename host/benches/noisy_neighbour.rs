//! Benchmark of engine fairness (`cargo bench -p tessera-host --bench noisy_neighbour`): a
//! release host with the seven engines (built from `engines/`, release) on SQLite, clients over
//! real HTTP on loopback. A quiet tenant reads its notes at a steady rate, first alone (idle),
//! then while a noisy tenant keeps [`FLOODERS`] slow requests in flight: notes lists with a tag
//! nothing has, over [`NOISY_NOTES`] notes, so every one reads all of them. Printed: the quiet
//! tenant's success rate and p50/p99 in both phases, and what the noisy tenant got (200s, 503s
//! with `Retry-After`, anything else), as Markdown for BENCHMARKS.md.

#[allow(dead_code)]
#[path = "../../tests/it/components.rs"]
mod components;
#[path = "support/mod.rs"]
mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use support::{Backend, BenchDatabase, Server, data_of, millis, percentile, provisioned_tenant};
use tessera_host::tenancy::Role;
use tokio_util::sync::CancellationToken;

/// The `tessera` binary's allocator, so the benchmark measures what the binary runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Concurrent slow requests the noisy tenant keeps in flight.
const FLOODERS: usize = 256;
/// Notes of the noisy user, all read by each of its lists.
const NOISY_NOTES: usize = 3000;
/// Notes of the quiet user.
const QUIET_NOTES: usize = 20;
/// The quiet tenant's steady request rate: one request every this long, whatever the answers.
const QUIET_INTERVAL: Duration = Duration::from_millis(20);
/// Length of each measured phase.
const PHASE: Duration = Duration::from_secs(15);
/// How long a refused noisy client waits before sending again.
const NOISY_RETRY: Duration = Duration::from_millis(50);

/// The quiet tenant's requests of one phase: latencies of the successes, and how many failed.
struct Phase {
    latencies: Vec<Duration>,
    sent: usize,
    failed: Vec<u16>,
}

impl Phase {
    fn success_rate(&self) -> f64 {
        (self.sent - self.failed.len()) as f64 / self.sent as f64 * 100.0
    }
}

/// Sends the quiet tenant's request every [`QUIET_INTERVAL`] for [`PHASE`] (open loop: a slow
/// answer does not delay the next request).
async fn quiet_phase(url: &str, token: &str) -> anyhow::Result<Phase> {
    let client = reqwest::Client::new();
    let mut ticker = tokio::time::interval(QUIET_INTERVAL);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let started = Instant::now();
    let mut requests = Vec::new();
    while started.elapsed() < PHASE {
        ticker.tick().await;
        let request = client.get(url).bearer_auth(token);
        requests.push(tokio::spawn(async move {
            let sent = Instant::now();
            let status = match request.send().await {
                Ok(response) => {
                    let status = response.status().as_u16();
                    let _ = response.bytes().await;
                    status
                }
                Err(_) => 0,
            };
            (status, sent.elapsed())
        }));
    }
    let mut phase = Phase {
        latencies: Vec::new(),
        sent: requests.len(),
        failed: Vec::new(),
    };
    for request in requests {
        let (status, latency) = request.await?;
        if status == 200 {
            phase.latencies.push(latency);
        } else {
            phase.failed.push(status);
        }
    }
    Ok(phase)
}

/// What the noisy tenant's clients got.
#[derive(Default)]
struct Noise {
    ok: AtomicU64,
    refused: AtomicU64,
    other: AtomicU64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let database = BenchDatabase::create(Backend::Sqlite, None, "noisy-neighbour").await?;
    components::install_engines(&database.plugins_dir(), &components::ENGINES);
    let server = Server::start(&database, |_| {}).await?;
    let limits = server.state.engines.runtime().admission().limits();
    let client = reqwest::Client::new();

    let (_, noisy) = provisioned_tenant(&server.state, "noisy", &[Role::Editor]).await?;
    let (_, quiet) = provisioned_tenant(&server.state, "quiet", &[Role::Editor]).await?;
    let (noisy, quiet) = (&noisy[0], &quiet[0]);

    // The notes: the noisy user's many (16 writers at once), the quiet user's few.
    let create = |token: String, index: usize| {
        let request = client
            .post(server.url("/notes/api/v1/notes"))
            .bearer_auth(token)
            .json(&json!({ "title": format!("Note {index}"), "body": "Some text.", "tags": ["work"] }));
        data_of(request, 201)
    };
    for chunk in (0..NOISY_NOTES).collect::<Vec<_>>().chunks(16) {
        futures_util::future::try_join_all(
            chunk
                .iter()
                .map(|index| create(noisy.token.clone(), *index)),
        )
        .await?;
    }
    for index in 0..QUIET_NOTES {
        create(quiet.token.clone(), index).await?;
    }
    let slow_url = server.url("/notes/api/v1/notes?tag=nomatch");
    let quiet_url = server.url("/notes/api/v1/notes?limit=20");
    let started = Instant::now();
    data_of(client.get(&slow_url).bearer_auth(&noisy.token), 200).await?;
    let slow_call = started.elapsed();

    // Idle: the quiet tenant alone.
    let idle = quiet_phase(&quiet_url, &quiet.token).await?;

    // Noisy: FLOODERS slow requests in flight all the time, then the quiet tenant again.
    let noise = Arc::new(Noise::default());
    let stop = CancellationToken::new();
    let flooders: Vec<_> = (0..FLOODERS)
        .map(|_| {
            let (client, url, token, noise, stop) = (
                client.clone(),
                slow_url.clone(),
                noisy.token.clone(),
                noise.clone(),
                stop.clone(),
            );
            tokio::spawn(async move {
                while !stop.is_cancelled() {
                    let Ok(response) = client.get(&url).bearer_auth(&token).send().await else {
                        noise.other.fetch_add(1, Ordering::Relaxed);
                        continue;
                    };
                    let status = response.status().as_u16();
                    let retry_after = response.headers().contains_key("retry-after");
                    let _ = response.bytes().await;
                    match status {
                        200 => noise.ok.fetch_add(1, Ordering::Relaxed),
                        503 if retry_after => noise.refused.fetch_add(1, Ordering::Relaxed),
                        _ => noise.other.fetch_add(1, Ordering::Relaxed),
                    };
                    if status != 200 {
                        tokio::time::sleep(NOISY_RETRY).await;
                    }
                }
            })
        })
        .collect();
    // Let the flood fill its share and queue first.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let noisy_phase = quiet_phase(&quiet_url, &quiet.token).await?;
    stop.cancel();
    for flooder in flooders {
        flooder.await?;
    }

    let mut idle = idle;
    let mut noisy_phase = noisy_phase;
    let (idle_p50, idle_p99) = (
        percentile(&mut idle.latencies, 0.5),
        percentile(&mut idle.latencies, 0.99),
    );
    let (noisy_p50, noisy_p99) = (
        percentile(&mut noisy_phase.latencies, 0.5),
        percentile(&mut noisy_phase.latencies, 0.99),
    );
    println!(
        "Noisy neighbour (SQLite, seven engines, release): pool {} instances, tenant share {}, \
         tenant queue {}; the noisy tenant keeps {FLOODERS} `GET /notes/api/v1/notes?tag=nomatch` \
         in flight over {NOISY_NOTES} notes (one alone: {}), retrying a refusal after {:?}; the \
         quiet tenant sends `GET /notes/api/v1/notes?limit=20` ({QUIET_NOTES} notes) every {:?} \
         for {:?} per phase.",
        limits.capacity,
        limits.tenant_share,
        limits.tenant_queue,
        millis(slow_call),
        NOISY_RETRY,
        QUIET_INTERVAL,
        PHASE,
    );
    println!();
    println!("| quiet tenant | requests | success | p50 | p99 |");
    println!("|---|---|---|---|---|");
    for (name, phase, p50, p99) in [
        ("idle", &idle, idle_p50, idle_p99),
        ("beside the flood", &noisy_phase, noisy_p50, noisy_p99),
    ] {
        println!(
            "| {name} | {} | {:.2} % | {} | {} |",
            phase.sent,
            phase.success_rate(),
            millis(p50),
            millis(p99)
        );
    }
    println!();
    println!(
        "p99 beside the flood / idle p99: {:.2}x (goal: within 3x); quiet failures: {:?}",
        noisy_p99.as_secs_f64() / idle_p99.as_secs_f64(),
        noisy_phase.failed
    );
    println!(
        "noisy tenant: {} answered 200, {} refused with 503 + Retry-After, {} other",
        noise.ok.load(Ordering::Relaxed),
        noise.refused.load(Ordering::Relaxed),
        noise.other.load(Ordering::Relaxed)
    );

    server.shutdown().await?;
    database.destroy().await;
    Ok(())
}
