//! Benchmark of a `wasi:http` component as an engine beside the same component under
//! `wasmtime serve` (`cargo bench -p tessera-host --bench wasi_http`): the test component
//! `noop204` (answers 204, no body) served by the `tessera` binary with the seven engines
//! loaded, every request carrying a bearer token the host verifies, and by `wasmtime serve`
//! (the peer, no authentication) with the pooling allocator sized alike. For 1, 16 and 64
//! connections, alternating servers in rounds of one-second windows: requests per second and
//! server CPU per request (the server process's user and system time over the window), medians.
//! The peer is the `wasmtime` CLI of the wasmtime version the host embeds:
//! `cargo install wasmtime-cli@48.0.8 --locked`, found on `PATH` or at
//! `TESSERA_BENCH_WASMTIME`. Printed as a Markdown table for BENCHMARKS.md.

#[path = "../../tests/it/components.rs"]
mod components;
#[path = "support/mod.rs"]
mod support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::Context as _;

use support::{count, median, rounds_or, serve_command, spawn_serving, verdict};

/// The `tessera` binary's allocator, so the benchmark measures what the binary runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const WINDOW: Duration = Duration::from_secs(1);
const CONNECTIONS: [usize; 3] = [1, 16, 64];
/// Both servers' pools: Tessera's default `TESSERA_ENGINE_MAX_INSTANCES`.
const POOL_SLOTS: u32 = 200;

/// Requests answered 204 by `connections` clients in one [`WINDOW`], and the server's CPU
/// time (clock ticks) meanwhile.
async fn window(url: &str, token: Option<&str>, connections: usize, pid: u32) -> (u64, u64) {
    let before = support::ticks_of_process(&pid.to_string()).unwrap_or(0);
    let completed = support::answered_no_content(url, token, connections, WINDOW).await;
    let after = support::ticks_of_process(&pid.to_string()).unwrap_or(0);
    (completed, after.saturating_sub(before))
}

/// Microseconds of server CPU per request.
fn cpu_per_request(ticks: u64, requests: u64) -> f64 {
    let ticks_per_second = 100.0; // Linux's USER_HZ.
    ticks as f64 / ticks_per_second * 1e6 / requests.max(1) as f64
}

/// `wasmtime serve` of `component` on a free loopback port, its pooling allocator sized like
/// the host's; the child and its address.
fn wasmtime_serve(component: &Path) -> anyhow::Result<(Child, String)> {
    let wasmtime = std::env::var_os("TESSERA_BENCH_WASMTIME").unwrap_or_else(|| "wasmtime".into());
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let address = format!("127.0.0.1:{port}");
    let child = Command::new(&wasmtime)
        .arg("serve")
        .arg("--addr")
        .arg(&address)
        // wasi:cli as the host links it (an empty environment), for std's imports.
        .args(["-S", "cli=y"])
        .args(["-O", "pooling-allocator=y"])
        .arg("-O")
        .arg(format!("pooling-total-component-instances={POOL_SLOTS}"))
        .arg("-O")
        .arg(format!("pooling-total-core-instances={}", POOL_SLOTS * 20))
        .arg("-O")
        .arg(format!("pooling-total-memories={}", POOL_SLOTS * 2))
        .arg("-O")
        .arg(format!("pooling-total-tables={}", POOL_SLOTS * 4))
        .arg("-O")
        .arg(format!("pooling-total-stacks={POOL_SLOTS}"))
        .args(["-O", "pooling-max-memory-size=67108864"])
        .args(["-O", "pooling-table-elements=20000"])
        .args(["-O", "pooling-max-memories-per-module=2"])
        .args(["-O", "pooling-max-tables-per-module=4"])
        // Memories reset in place, as the host resets them (engine.rs).
        .args(["-O", "pooling-pagemap-scan=auto"])
        .args(["-O", "pooling-memory-keep-resident=4194304"])
        .args(["-O", "pooling-table-keep-resident=65536"])
        .args(["-O", "pooling-decommit-batch-size=16"])
        .arg(component)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| {
            format!(
                "starting {} serve: install the peer with `cargo install wasmtime-cli@48.0.8 --locked` (or set TESSERA_BENCH_WASMTIME)",
                wasmtime.to_string_lossy()
            )
        })?;
    Ok((child, address))
}

/// Waits until `url` answers 204.
async fn answers(url: &str, token: Option<&str>) -> anyhow::Result<()> {
    let client = reqwest::Client::new();
    for _ in 0..300 {
        let mut request = client.get(url);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if request
            .send()
            .await
            .is_ok_and(|response| response.status() == 204)
        {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    anyhow::bail!("{url} never answered 204")
}

/// `tessera admin …` on `data_dir`; its JSON.
fn admin(data_dir: &Path, arguments: &[&str]) -> anyhow::Result<serde_json::Value> {
    let output = Command::new(support::tessera_binary())
        .arg("admin")
        .args(arguments)
        .arg("--data-dir")
        .arg(data_dir)
        .arg("--plugins-dir")
        .arg(data_dir.join("plugins"))
        .env_remove("TESSERA_LOG")
        .output()
        .context("running tessera admin")?;
    anyhow::ensure!(
        output.status.success(),
        "tessera admin {arguments:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(serde_json::from_slice(&output.stdout)?)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let rounds = rounds_or(5);
    let data_dir = std::env::temp_dir().join(format!("tessera-bench-{}", uuid::Uuid::new_v4()));
    let plugins = data_dir.join("plugins");
    components::install(&plugins, &["noop204"]);
    components::install_engines(&plugins, &components::ENGINES);

    // Tessera: the binary, the seven engines and the component, a signed-in owner's token.
    admin(
        &data_dir,
        &["create-tenant", "--slug", "acme", "--name", "Acme"],
    )?;
    let (email, password) = ("owner@acme.example.com", "Correct1horse");
    admin(
        &data_dir,
        &[
            "create-user",
            "--tenant",
            "acme",
            "--email",
            email,
            "--password",
            password,
            "--role",
            "owner",
        ],
    )?;
    let support::Serving {
        child: mut tessera,
        address,
        log,
    } = spawn_serving(&mut serve_command(&data_dir, None))?;
    // Its log is read to the end, or the host blocks once the pipe is full.
    std::thread::spawn(move || log.for_each(drop));
    let base = format!("http://{address}");
    let login: serde_json::Value = reqwest::Client::new()
        .post(format!("{base}/auth/api/v1/auth/login"))
        .json(&serde_json::json!({ "login": email, "password": password }))
        .send()
        .await?
        .json()
        .await?;
    let token = login["data"]["access_token"]
        .as_str()
        .context("the login's access token")?
        .to_owned();
    let tessera_url = format!("{base}/noop204/");
    answers(&tessera_url, Some(&token)).await?;
    let refused = reqwest::Client::new().get(&tessera_url).send().await?;
    anyhow::ensure!(
        refused.status() == 401,
        "Tessera answered {} without a token",
        refused.status()
    );

    // The peer.
    let (mut peer, peer_address) = wasmtime_serve(&plugins.join("noop204.wasm"))?;
    let peer_url = format!("http://{peer_address}/");
    answers(&peer_url, None).await?;

    // Warm both.
    window(&tessera_url, Some(&token), 16, tessera.id()).await;
    window(&peer_url, None, 16, peer.id()).await;

    println!("### A wasi:http no-op component: Tessera beside `wasmtime serve`\n");
    println!(
        "| connections | Tessera requests/s (bearer token checked) | `wasmtime serve` requests/s | Tessera ÷ peer | Tessera CPU per request | peer CPU per request | goal: Tessera at least the peer's rate |"
    );
    println!("|---|---|---|---|---|---|---|");
    for connections in CONNECTIONS {
        let (mut ours, mut theirs, mut our_cpu, mut their_cpu) = (vec![], vec![], vec![], vec![]);
        for _ in 0..rounds {
            let (requests, ticks) =
                window(&tessera_url, Some(&token), connections, tessera.id()).await;
            ours.push(requests as f64 / WINDOW.as_secs_f64());
            our_cpu.push(cpu_per_request(ticks, requests));
            let (requests, ticks) = window(&peer_url, None, connections, peer.id()).await;
            theirs.push(requests as f64 / WINDOW.as_secs_f64());
            their_cpu.push(cpu_per_request(ticks, requests));
        }
        let (ours, theirs) = (median(ours), median(theirs));
        println!(
            "| {connections} | {} | {} | {:.2} | {:.0} µs | {:.0} µs | {} |",
            count(ours),
            count(theirs),
            ours / theirs.max(1.0),
            median(our_cpu),
            median(their_cpu),
            verdict(ours >= theirs),
        );
    }
    println!(
        "\nMedians of {rounds} one-second windows per row, the servers alternating; the client runs in this process on the same machine."
    );

    let _ = peer.kill();
    let _ = peer.wait();
    let _ = tessera.kill();
    let _ = tessera.wait();
    let _ = std::fs::remove_dir_all(&data_dir);
    Ok(())
}
