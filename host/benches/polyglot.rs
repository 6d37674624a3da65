//! Engines in Rust, Python and JavaScript side by side: the Rust `notes` engine and
//! the kits' examples `pynotes` (componentize-py) and `jsnotes` (componentize-js), built as the
//! project builds them, in one host serving all nine engines over real HTTP on loopback
//! (SQLite). For each: its size, the instance memory it starts with, the host's first load
//! (compiling into the AOT cache) and a load from the AOT cache, then two rows at 16 clients: a
//! call (a route the engine does not have: its router's 404, no storage) and a storage read
//! (`GET …/notes/{id}`), first as deployed (instances kept warm between a tenant's calls, with
//! how many were kept and the resident memory each added), then with a fresh instance for every
//! call (instantiate + call). Medians of one run, for BENCHMARKS.md.
//!
//! `cargo bench -p tessera-host --bench polyglot` (a few minutes; the first run installs the
//! Python and JavaScript toolchains and builds the examples).

#[path = "../../tests/it/components.rs"]
mod components;
#[path = "support/mod.rs"]
mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde_json::json;
use tessera_host::runtime::component_limits::ComponentFigures;
use tessera_host::tenancy::Role;

use support::engine_probes::{CLIENTS, Probe, wait_for_idle_work};
use support::{Backend, BenchDatabase, Server, data_of, mebibytes, provisioned_tenant};

/// The allocator of the `tessera` binary (`host/src/main.rs`), so the host runs as deployed.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The engines compared, and the language each is written in.
const COMPARED: [(&str, &str); 3] = [
    ("notes", "Rust"),
    ("pynotes", "Python"),
    ("jsnotes", "JavaScript"),
];
const COLD_LOADS: usize = 3;
const WARM_LOADS: usize = 7;

fn median(values: &mut [Duration]) -> Duration {
    values.sort_unstable();
    values[values.len() / 2]
}

fn seconds(duration: Duration) -> String {
    format!("{:.2} s", duration.as_secs_f64())
}

fn millis(duration: Duration) -> String {
    format!("{:.2} ms", duration.as_secs_f64() * 1e3)
}

/// What loading a component costs the host: a first load (compiling it into an empty AOT
/// cache) and a load from the cache, each through the registry as the plugins watcher loads.
struct LoadTimes {
    cold: Duration,
    warm: Duration,
}

async fn load_times(file: &Path, code: &str) -> anyhow::Result<LoadTimes> {
    let database = BenchDatabase::create(Backend::Sqlite, None, "polyglot-load").await?;
    let cache = database.data_dir.join("aot-cache");
    let server = Server::start(&database, |config| {
        config.runtime.cache_dir = cache.clone();
    })
    .await?;
    let registry = &server.state.engines;
    let mut cold = Vec::new();
    for _ in 0..COLD_LOADS {
        let _ = std::fs::remove_dir_all(&cache);
        let started = Instant::now();
        registry.load_file(file).await.context("a first load")?;
        cold.push(started.elapsed());
        registry.unload(code).await?;
    }
    // Once more into the cache, then loads from it.
    registry.load_file(file).await?;
    registry.unload(code).await?;
    let mut warm = Vec::new();
    for _ in 0..WARM_LOADS {
        let started = Instant::now();
        registry
            .load_file(file)
            .await
            .context("a load from the cache")?;
        warm.push(started.elapsed());
        registry.unload(code).await?;
    }
    server.shutdown().await?;
    database.destroy().await;
    Ok(LoadTimes {
        cold: median(&mut cold),
        warm: median(&mut warm),
    })
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let database = BenchDatabase::create(Backend::Sqlite, None, "polyglot").await?;
    let plugins = database.plugins_dir();
    components::install_engines(&plugins, &components::ENGINES);
    components::install_polyglot_engines(&plugins, &components::POLYGLOT_ENGINES);

    println!("### The engine, as the host loads it\n");
    println!(
        "| engine | language | size | core instances | initial linear memory per instance | first load (compile into the AOT cache) | load from the AOT cache |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (code, language) in COMPARED {
        let file = plugins.join(format!("{code}.wasm"));
        let bytes = std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
        let figures = ComponentFigures::of(&bytes)?;
        let loads = load_times(&file, code).await?;
        println!(
            "| {code} | {language} | {} | {} | {} | {} | {} |",
            mebibytes(bytes.len() as u64),
            figures.core_instances,
            mebibytes(figures.initial_memory_bytes),
            seconds(loads.cold),
            millis(loads.warm),
        );
    }

    // As deployed (instances kept warm between the calls of a tenant), then with a fresh
    // instance for every call: what instantiating costs each language.
    for (setting, warm_instances) in [
        ("warm instances (the default)", None),
        (
            "a fresh instance per call (`TESSERA_ENGINE_WARM_INSTANCES=0`)",
            Some(0),
        ),
    ] {
        requests(&database, setting, warm_instances).await?;
    }
    database.destroy().await;
    Ok(())
}

/// The process's resident memory.
fn resident_bytes() -> anyhow::Result<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").context("reading /proc/self/statm")?;
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .context("statm's resident pages")?
        .parse()?;
    Ok(pages * 4096)
}

/// The request rows of one host configuration: `warm_instances` replaces the default
/// `TESSERA_ENGINE_WARM_INSTANCES`.
async fn requests(
    database: &BenchDatabase,
    setting: &str,
    warm_instances: Option<u32>,
) -> anyhow::Result<()> {
    let server = Server::start(database, |config| {
        if let Some(capacity) = warm_instances {
            config.runtime.warm_instances.capacity = capacity;
        }
    })
    .await?;
    let (tenant_id, users) = provisioned_tenant(
        &server.state,
        if warm_instances.is_some() {
            "bench-polyglot-fresh"
        } else {
            "bench-polyglot-warm"
        },
        &[Role::Owner],
    )
    .await
    .context("a tenant on the nine engines")?;
    let token = users[0].token.clone();
    let client = reqwest::Client::new();
    let mut probes = Vec::new();
    for (code, language) in COMPARED {
        let note = data_of(
            client
                .post(server.url(&format!("/{code}/api/v1/notes")))
                .bearer_auth(&token)
                .json(&json!({ "title": "Plan", "body": "Ship it." })),
            201,
        )
        .await
        .with_context(|| format!("a note of {code}"))?;
        let note_id = note["id"].as_str().context("the note's id")?.to_owned();
        let (missing_url, note_url) = (
            server.url(&format!("/{code}/api/v1/no-such-route")),
            server.url(&format!("/{code}/api/v1/notes/{note_id}")),
        );
        let (first, second) = (token.clone(), token.clone());
        let call = if warm_instances == Some(0) {
            "instantiate + call (router 404)"
        } else {
            "call (router 404), warm instance"
        };
        probes.push((
            language,
            Probe::new(code, call, 404, move |client, _| {
                client.get(&missing_url).bearer_auth(&first)
            }),
        ));
        probes.push((
            language,
            Probe::new(code, "storage read (GET note)", 200, move |client, _| {
                client.get(&note_url).bearer_auth(&second)
            }),
        ));
    }
    // The notes' word-count jobs and event deliveries run before the rows start.
    wait_for_idle_work(&server.state).await?;

    let runtime = server.state.engines.runtime().clone();
    println!("\n### Requests at {CLIENTS} clients, {setting} (one host, nine engines, SQLite)\n");
    println!(
        "| engine | language | request | requests/s | p50 | p99 | p50 ÷ Rust's | instances kept warm after | resident memory they add, each |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut rust_p50 = std::collections::HashMap::new();
    for (language, probe) in &probes {
        // Each row starts with none of the tenant's instances warm.
        runtime.retire_warm_tenant(&tenant_id);
        let resident_before = resident_bytes()?;
        let measured = probe.measure().await?;
        anyhow::ensure!(
            measured.unexpected == 0,
            "{} {}: {} unexpected answers",
            probe.engine,
            probe.what,
            measured.unexpected
        );
        let warm = runtime.warm_instance_count();
        let added = resident_bytes()?.saturating_sub(resident_before);
        let per_instance = if warm == 0 {
            "–".to_owned()
        } else {
            mebibytes(added / warm as u64)
        };
        if *language == "Rust" {
            rust_p50.insert(probe.what.clone(), measured.p50);
        }
        let ratio = rust_p50
            .get(&probe.what)
            .map(|rust| format!("{:.1}×", measured.p50.as_secs_f64() / rust.as_secs_f64()))
            .unwrap_or_default();
        println!(
            "| {} | {language} | {} | {:.0} | {} | {} | {ratio} | {warm} | {per_instance} |",
            probe.engine,
            probe.what,
            measured.requests_per_second,
            millis(measured.p50),
            millis(measured.p99),
        );
    }
    server.shutdown().await?;
    Ok(())
}
