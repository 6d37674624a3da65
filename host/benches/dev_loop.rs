//! The engine author's dev loop: change-to-served latency of `cargo xtask dev`. A
//! standalone engine crate (`new-engine --path`) is built by the loop into a running host's
//! plugins dir; then, several times, its source changes and the clock runs until the host
//! answers the route with the change. Reported: the median, fastest and slowest
//! change-to-served time, and the loop's own build time.
//!
//! `cargo bench -p tessera-host --bench dev_loop` (about two minutes, most of it the first
//! build of the SDK for the loop's profile).

#[path = "support/mod.rs"]
mod support;

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::Context as _;

use support::{Backend, BenchDatabase, Server, median, provisioned_tenant};

/// The `tessera` binary's allocator, so the benchmark measures what the binary runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Changes measured.
const ROUNDS: usize = 7;

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// A target dir of the nested cargo runs (the bench's own is locked by `cargo bench`).
fn nested_target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repository().join("target"))
        .join("dev-loop-bench")
}

fn xtask(arguments: &[&str]) -> Command {
    let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    command
        .args(["run", "--quiet", "--manifest-path"])
        .arg(repository().join("xtask/Cargo.toml"))
        .arg("--target-dir")
        .arg(nested_target_dir().join("xtask"))
        .arg("--")
        .args(arguments)
        .env("CARGO_TARGET_DIR", nested_target_dir());
    command
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let database = BenchDatabase::create(Backend::Sqlite, None, "dev-loop").await?;
    std::fs::create_dir_all(database.plugins_dir())?;
    let server = Server::start(&database, |_| {}).await?;
    let (_, users) = provisioned_tenant(
        &server.state,
        "bench-dev-loop",
        &[tessera_host::tenancy::Role::Viewer],
    )
    .await?;
    let token = users[0].token.clone();

    let crate_dir = database.data_dir.join("outside/dev-bench");
    let created = xtask(&[
        "new-engine",
        "dev-bench",
        "--path",
        crate_dir.to_str().unwrap(),
    ])
    .output()?;
    anyhow::ensure!(created.status.success(), "new-engine failed: {created:?}");
    std::fs::copy(
        repository().join("engines/Cargo.lock"),
        crate_dir.join("Cargo.lock"),
    )?;

    let mut dev = xtask(&[
        "dev",
        "--path",
        crate_dir.to_str().unwrap(),
        "--plugins-dir",
        database.plugins_dir().to_str().unwrap(),
        "--no-serve",
    ])
    .stderr(Stdio::piped())
    .stdout(Stdio::null())
    .spawn()
    .context("starting cargo xtask dev")?;
    let stderr = dev.stderr.take().context("the loop's stderr")?;
    let (sender, lines) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    let wait_for_line = |text: &str| -> anyhow::Result<String> {
        loop {
            let line = lines
                .recv_timeout(Duration::from_secs(900))
                .with_context(|| format!("the loop never printed {text:?}"))?;
            if line.contains(text) {
                return Ok(line);
            }
        }
    };
    wait_for_line("dev: watching")?;

    let client = reqwest::Client::new();
    let url = server.url("/dev-bench/api/v1/hello");
    let served = |word: String| {
        let (client, url, token) = (client.clone(), url.clone(), token.clone());
        async move {
            loop {
                if let Ok(answer) = client.get(&url).bearer_auth(&token).send().await
                    && answer.status().is_success()
                    && let Ok(body) = answer.json::<serde_json::Value>().await
                    && body["data"]["greeting"]
                        .as_str()
                        .is_some_and(|greeting| greeting.starts_with(&word))
                {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(120), served("hello".into()))
        .await
        .context("the first build is never served")?;

    let source = crate_dir.join("src/lib.rs");
    let mut previous = "\"hello\"".to_owned();
    let (mut to_served, mut builds) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        let word = format!("v{round}x");
        let code = std::fs::read_to_string(&source)?;
        let changed_at = Instant::now();
        std::fs::write(&source, code.replace(&previous, &format!("\"{word}\"")))?;
        previous = format!("\"{word}\"");
        let built = wait_for_line("dev: built dev-bench")?;
        tokio::time::timeout(Duration::from_secs(120), served(word))
            .await
            .context("a change is never served")?;
        to_served.push(changed_at.elapsed().as_secs_f64());
        let seconds: f64 = built
            .split(" in ")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .and_then(|seconds| seconds.parse().ok())
            .unwrap_or(f64::NAN);
        builds.push(seconds);
        // The host's watcher settles before the next change.
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let _ = dev.kill();
    let _ = dev.wait();

    let (fastest, slowest) = (
        to_served.iter().copied().fold(f64::INFINITY, f64::min),
        to_served.iter().copied().fold(0.0, f64::max),
    );
    println!(
        "dev loop, Rust engine ({ROUNDS} changes): change to served median {:.2} s \
         (fastest {fastest:.2} s, slowest {slowest:.2} s); the loop's build median {:.2} s",
        median(to_served),
        median(builds)
    );
    server.shutdown().await?;
    database.destroy().await;
    Ok(())
}
