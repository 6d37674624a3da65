//! Benchmark of SQLite's write-ahead log under a steady read+write soak
//! (`cargo bench -p tessera-host --bench wal_soak`): a host on a fresh SQLite data dir, over
//! HTTP on loopback, rate limits off, with the default WAL bound (64 MiB; set
//! `TESSERA_SQLITE_WAL_MAX_BYTES` to try another).
//!
//! For 60 s (`TESSERA_BENCH_SOAK_SECONDS`), 16 keep-alive clients post `entity.create`
//! intentions (a contact with five fields) to `POST /core/api/v1/intentions` while 16 others
//! read (`GET /core/api/v1/entities`, `GET /core/api/v1/timeline`, `GET /core/api/v1/search`
//! in turn), so some read is open at every moment, the case in which passive checkpoints alone
//! let the log grow without bound. The size of `tessera.db-wal` is sampled every 100 ms.
//! Printed as Markdown for BENCHMARKS.md: the largest WAL and its size per 10 s of the soak,
//! its size when the load stopped and how long until it was truncated, the database size,
//! writes/s with their p50/p99 and reads/s beside it, and the CPU the run and everything else
//! on the machine used. Every answer must be 200.

#[path = "support/mod.rs"]
mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use tessera_host::tenancy::Role;

use support::{
    Backend, BenchDatabase, Server, cpu_share, cpu_ticks, mebibytes, millis, percentile,
};

/// The `tessera` binary's allocator, so the benchmark measures what the binary runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const WRITERS: usize = 16;
const READERS: usize = 16;
const SAMPLE_EVERY: Duration = Duration::from_millis(100);
/// The longest wait for the idle WAL to be truncated before the run fails.
const IDLE_DEADLINE: Duration = Duration::from_secs(120);

fn file_size(path: &std::path::Path) -> u64 {
    std::fs::metadata(path).map_or(0, |metadata| metadata.len())
}

/// What one client did.
#[derive(Default)]
struct ClientResult {
    latencies: Vec<Duration>,
}

/// Posts intentions until `stop`.
async fn writer(
    client: reqwest::Client,
    url: String,
    token: String,
    index: usize,
    stop: Arc<AtomicBool>,
) -> anyhow::Result<ClientResult> {
    let mut result = ClientResult::default();
    let mut sequence = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let city = ["London", "Paris", "Berlin", "Madrid"][sequence as usize % 4];
        let body = json!({
            "type": "entity.create",
            "payload": {
                "family": "contact",
                "fields": {
                    "first_name": format!("Writer{index}"),
                    "last_name": format!("Soak{sequence}"),
                    "email": format!("w{index}.{sequence}@soak.example.com"),
                    "city": city,
                    "notes": format!("contact {sequence} of writer {index}, written during the WAL soak"),
                },
            },
        });
        let started = Instant::now();
        support::data_of(client.post(&url).bearer_auth(&token).json(&body), 200).await?;
        result.latencies.push(started.elapsed());
        sequence += 1;
    }
    Ok(result)
}

/// Reads until `stop`, cycling through three read paths.
async fn reader(
    client: reqwest::Client,
    base: String,
    token: String,
    index: usize,
    stop: Arc<AtomicBool>,
) -> anyhow::Result<ClientResult> {
    let paths = [
        "/core/api/v1/entities?family=contact&per_page=50",
        "/core/api/v1/timeline?limit=50",
        "/core/api/v1/search?q=Soak",
    ];
    let mut result = ClientResult::default();
    let mut turn = index;
    while !stop.load(Ordering::Relaxed) {
        let url = format!("{base}{}", paths[turn % paths.len()]);
        let started = Instant::now();
        support::data_of(client.get(&url).bearer_auth(&token), 200).await?;
        result.latencies.push(started.elapsed());
        turn += 1;
    }
    Ok(result)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let soak = Duration::from_secs(
        std::env::var("TESSERA_BENCH_SOAK_SECONDS")
            .ok()
            .and_then(|seconds| seconds.parse().ok())
            .unwrap_or(60),
    );
    let database = BenchDatabase::create(Backend::Sqlite, None, "wal-soak").await?;
    let server = Server::start(&database, |_| {}).await?;
    let bound = server.state.config.database.sqlite_wal_max_bytes;
    let wal_path = database.data_dir.join("tessera.db-wal");
    let database_path = database.data_dir.join("tessera.db");
    let (_, users) = support::provisioned_tenant(&server.state, "soak", &[Role::Owner]).await?;
    let token = users[0].token.clone();
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(WRITERS + READERS)
        .build()?;

    eprintln!("soaking for {} s", soak.as_secs());
    let stop = Arc::new(AtomicBool::new(false));
    let ticks_before = cpu_ticks();
    let started = Instant::now();
    let writers: Vec<_> = (0..WRITERS)
        .map(|index| {
            tokio::spawn(writer(
                client.clone(),
                server.url("/core/api/v1/intentions"),
                token.clone(),
                index,
                stop.clone(),
            ))
        })
        .collect();
    let readers: Vec<_> = (0..READERS)
        .map(|index| {
            tokio::spawn(reader(
                client.clone(),
                server.url(""),
                token.clone(),
                index,
                stop.clone(),
            ))
        })
        .collect();

    // The largest WAL in each 10 s of the soak.
    let mut per_stretch = vec![0u64; soak.as_secs().div_ceil(10).max(1) as usize];
    let mut samples = 0usize;
    while started.elapsed() < soak {
        let size = file_size(&wal_path);
        let stretch = ((started.elapsed().as_secs() / 10) as usize).min(per_stretch.len() - 1);
        per_stretch[stretch] = per_stretch[stretch].max(size);
        samples += 1;
        tokio::time::sleep(SAMPLE_EVERY).await;
    }
    stop.store(true, Ordering::Relaxed);
    let mut write_latencies = Vec::new();
    for task in writers {
        write_latencies.extend(task.await??.latencies);
    }
    let mut reads = 0usize;
    for task in readers {
        reads += task.await??.latencies.len();
    }
    let elapsed = started.elapsed();
    let ticks_after = cpu_ticks();
    let at_stop = file_size(&wal_path);
    let stopped = Instant::now();
    let mut largest_after = at_stop;
    let truncated_after = loop {
        let size = file_size(&wal_path);
        largest_after = largest_after.max(size);
        if size == 0 {
            break stopped.elapsed();
        }
        anyhow::ensure!(
            stopped.elapsed() < IDLE_DEADLINE,
            "the idle WAL was not truncated within {} s (still {size} bytes)",
            IDLE_DEADLINE.as_secs()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let largest = per_stretch
        .iter()
        .copied()
        .max()
        .unwrap_or(0)
        .max(largest_after);
    let database_size = file_size(&database_path);
    let writes = write_latencies.len();
    let p50 = percentile(&mut write_latencies, 0.50);
    let p99 = percentile(&mut write_latencies, 0.99);

    println!(
        "WAL soak on SQLite: {WRITERS} writers (`entity.create` intentions) and {READERS} readers \
         (entities, timeline, search) over HTTP for {} s, WAL bound {} \
         (`TESSERA_SQLITE_WAL_MAX_BYTES`), sampled every {} ms ({samples} samples); {cores} \
         cores, server and clients in one process.",
        soak.as_secs(),
        mebibytes(bound),
        SAMPLE_EVERY.as_millis(),
    );
    println!();
    println!("| measure | value | target |");
    println!("|---|---|---|");
    println!(
        "| largest WAL during the soak | {} | under {} |",
        mebibytes(largest),
        mebibytes(bound)
    );
    println!(
        "| largest WAL per 10 s | {} | |",
        per_stretch
            .iter()
            .map(|size| mebibytes(*size))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!("| WAL when the load stopped | {} | |", mebibytes(at_stop));
    println!(
        "| WAL truncated to 0 bytes after | {} idle | truncated when idle |",
        millis(truncated_after)
    );
    println!(
        "| database file at the end | {} | |",
        mebibytes(database_size)
    );
    println!(
        "| writes (intentions) | {writes} ({:.0}/s), p50 {}, p99 {} | |",
        writes as f64 / elapsed.as_secs_f64(),
        millis(p50),
        millis(p99)
    );
    println!(
        "| reads | {reads} ({:.0}/s) | |",
        reads as f64 / elapsed.as_secs_f64()
    );
    if let Some((own, other, _)) = cpu_share(ticks_before, ticks_after) {
        println!("| CPU, average cores | this benchmark {own:.2}, other processes {other:.2} | |");
    }

    server.shutdown().await?;
    database.destroy().await;
    anyhow::ensure!(
        largest < bound,
        "the WAL reached {largest} bytes, over its bound of {bound}"
    );
    Ok(())
}
