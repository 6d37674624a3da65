//! Benchmark of the engine runtime (`cargo bench -p tessera-host --bench engine_routing`):
//! instantiate + call with the pooling allocator, the latency a request pays for going through
//! an engine instead of a native axum handler doing the same work (verify the bearer token,
//! answer 204), and requests per second at 1, 8 and 64 concurrent connections; then the seven
//! engines (built from `engines/`, release), one representative read and one write request
//! each at 16 concurrent clients beside the native handler at 16 (`support/engine_probes.rs`;
//! each row starts once the engine work earlier rows caused, such as activity's event
//! deliveries, is done).
//! One run, on loopback (SQLite), medians and p99 printed as Markdown tables for BENCHMARKS.md.

#[path = "../../tests/it/components.rs"]
mod components;
#[path = "support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use axum::Router;
use axum::http::StatusCode;
use axum::routing::get;
use tessera_host::auth::caller::Caller;
use tessera_host::config::{Config, ServeArgs, StorageArgs};
use tessera_host::server::Application;
use tessera_host::state::AppState;
use tessera_host::tenancy::Role;

use support::{micros, percentile};

/// The `tessera` binary's allocator, so the benchmark measures what the binary runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const LATENCY_SAMPLES: usize = 3000;
const THROUGHPUT_WINDOW: Duration = Duration::from_secs(1);
const THROUGHPUT_ROUNDS: usize = 5;

/// Requests per second completed by `connections` clients, each its own connection, for
/// [`THROUGHPUT_WINDOW`].
async fn requests_per_second(url: &str, token: &str, connections: usize) -> anyhow::Result<f64> {
    let completed =
        support::answered_no_content(url, Some(token), connections, THROUGHPUT_WINDOW).await;
    Ok(completed as f64 / THROUGHPUT_WINDOW.as_secs_f64())
}

async fn native_noop(_caller: Caller) -> StatusCode {
    StatusCode::NO_CONTENT
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let data_dir = std::env::temp_dir().join(format!("tessera-bench-{}", uuid::Uuid::new_v4()));
    components::install(&data_dir.join("plugins"), &["echo"]);
    components::install_engines(&data_dir.join("plugins"), &components::ENGINES);
    let args = ServeArgs {
        storage: StorageArgs {
            data_dir: data_dir.clone(),
            database_url: None,
            plugins_dir: data_dir.join("plugins"),
        },
        listen: "127.0.0.1:0".parse()?,
        public_url: None,
        max_body_bytes: 1024 * 1024,
    };
    let mut config = Config::from_serve_args(args)?;
    // Tens of thousands of reads per second with one token: rate limiting off for reads (0).
    config.rate_limits.read_per_minute = 0;
    config.rate_limits.write_per_minute = 0;
    let native: Router<AppState> = Router::new().route("/native/api/v1/noop", get(native_noop));
    let application = Application::build_with_routes(config, native).await?;
    let address = application.local_addr();
    let state = application.state().clone();
    let stop = tokio_util::sync::CancellationToken::new();
    let stopped = stop.clone();
    let server = tokio::spawn(application.run_until(async move { stopped.cancelled().await }));

    // 1. Instantiate + call (`describe`) on a fresh store, as every request does.
    let engine = state.engines.get("echo").expect("echo loaded");
    let runtime = state.engines.runtime().clone();
    let mut instantiate = Vec::with_capacity(LATENCY_SAMPLES);
    for _ in 0..LATENCY_SAMPLES {
        let scope = engine.scope("t", None);
        let started = Instant::now();
        runtime
            .call(
                &engine.pre,
                scope,
                Duration::from_secs(5),
                |_| false,
                async |guest, store| guest.call_describe(store).await,
            )
            .await?;
        instantiate.push(started.elapsed());
    }

    // 2. Latency through HTTP: native handler vs engine route, same token check, same 204.
    // A real member's session, as a login opens: the bearer check includes the session and
    // the membership lookups.
    let (_, users) = support::provisioned_tenant(&state, "routing", &[Role::Editor]).await?;
    let token = users[0].token.clone();
    let native_url = format!("http://{address}/native/api/v1/noop");
    let engine_url = format!("http://{address}/echo/api/v1/noop");
    // Measured from a task on the runtime (as the throughput clients are), alternating native
    // and engine requests so that both see the same machine state.
    let latencies = {
        let (native_url, engine_url, token) =
            (native_url.clone(), engine_url.clone(), token.clone());
        tokio::spawn(async move {
            let client = reqwest::Client::new();
            let urls = [&native_url, &engine_url];
            for _ in 0..200 {
                for url in urls {
                    client.get(url).bearer_auth(&token).send().await?;
                }
            }
            let mut samples = [
                Vec::with_capacity(LATENCY_SAMPLES),
                Vec::with_capacity(LATENCY_SAMPLES),
            ];
            for _ in 0..LATENCY_SAMPLES {
                for (index, url) in urls.iter().enumerate() {
                    let started = Instant::now();
                    let response = client.get(*url).bearer_auth(&token).send().await?;
                    assert_eq!(response.status(), 204);
                    samples[index].push(started.elapsed());
                }
            }
            anyhow::Ok(samples)
        })
        .await??
    };
    let mut latencies = latencies;

    // 3. Throughput at 1, 8 and 64 connections: rounds alternating native and engine, the
    // median round of each quoted (the machine is noisy).
    let mut throughput = Vec::new();
    for connections in [1usize, 8, 64] {
        let mut rounds = [Vec::new(), Vec::new()];
        for _ in 0..THROUGHPUT_ROUNDS {
            for (index, url) in [&native_url, &engine_url].into_iter().enumerate() {
                rounds[index].push(requests_per_second(url, &token, connections).await?);
            }
        }
        let [native, engine] = rounds.map(|mut round| {
            round.sort_by(f64::total_cmp);
            round[round.len() / 2]
        });
        throughput.push((connections, [native, engine]));
    }

    let (native_p50, native_p99) = (
        percentile(&mut latencies[0], 0.5),
        percentile(&mut latencies[0], 0.99),
    );
    let (engine_p50, engine_p99) = (
        percentile(&mut latencies[1], 0.5),
        percentile(&mut latencies[1], 0.99),
    );
    println!("| measurement | p50 | p99 |");
    println!("|---|---|---|");
    println!(
        "| instantiate + call (`describe`, fresh store, pooling) | {} | {} |",
        micros(percentile(&mut instantiate, 0.5)),
        micros(percentile(&mut instantiate, 0.99))
    );
    println!(
        "| native axum handler, HTTP round trip | {} | {} |",
        micros(native_p50),
        micros(native_p99)
    );
    println!(
        "| engine route, HTTP round trip | {} | {} |",
        micros(engine_p50),
        micros(engine_p99)
    );
    println!(
        "| engine routing overhead (engine − native) | {} | {} |",
        micros(engine_p50.saturating_sub(native_p50)),
        micros(engine_p99.saturating_sub(native_p99))
    );
    println!();
    println!("| connections | native req/s | engine req/s | engine / native |");
    println!("|---|---|---|---|");
    for (connections, row) in throughput {
        println!(
            "| {connections} | {:.0} | {:.0} | {:.0}% |",
            row[0],
            row[1],
            100.0 * row[1] / row[0]
        );
    }

    // 4. The seven engines at 16 clients, beside the native handler at 16.
    let mut probes = vec![support::engine_probes::Probe::native(
        native_url.clone(),
        token.clone(),
    )];
    probes.push(support::engine_probes::core_write(&state, &format!("http://{address}")).await?);
    probes
        .extend(support::engine_probes::seven_engines(&state, &format!("http://{address}")).await?);
    println!();
    println!(
        "| engine | request | req/s at {} clients | p50 | p99 | other answers |",
        support::engine_probes::CLIENTS
    );
    println!("|---|---|---|---|---|---|");
    for probe in &probes {
        support::engine_probes::wait_for_idle_work(&state).await?;
        let measured = probe.measure().await?;
        println!(
            "| {} | {} | {:.0} | {} | {} | {} |",
            probe.engine,
            probe.what,
            measured.requests_per_second,
            micros(measured.p50),
            micros(measured.p99),
            measured.unexpected
        );
    }

    stop.cancel();
    server.await??;
    let _ = std::fs::remove_dir_all(&data_dir);
    Ok(())
}
