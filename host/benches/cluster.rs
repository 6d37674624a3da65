//! A cluster on one PostgreSQL, measured as deployed: `tessera serve` (this
//! package's release binary) as child processes on one fresh PostgreSQL database, each host
//! with its own data dir and the seven engines, 32 clients over real HTTP spread evenly over
//! the hosts running. With one host, then two, then three (started in turn, all in one run):
//! contacts written through intentions per second (`POST /core/api/v1/intentions`, five
//! fields) and notes created per second (`POST /notes/api/v1/notes`), the median of the rounds;
//! between rounds the benchmark waits until no engine work is due (projections and deliveries
//! caught up enough to start level). Then, with three hosts, the time a published engine takes
//! to reach every host: from `tessera admin engine publish` returning (the version committed)
//! until `GET /core/api/v1/engines` on every host names its digest, for five publications.
//!
//! The PostgreSQL server runs on the same machine as the hosts and the clients: with two cores
//! this measures contention (hosts, clients and database share them), not how a cluster of
//! separate machines scales.
//!
//! `cargo bench -p tessera-host --bench cluster` with `TESSERA_TEST_POSTGRES_URL` set (about
//! three minutes; `TESSERA_BENCH_ROUNDS=N` measures N rounds of each instead of 5).

#[path = "../../tests/it/components.rs"]
mod components;
#[path = "support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde_json::{Value, json};
use tessera_host::tenancy::Role;

use support::{Backend, BenchDatabase, Server, Serving, engine_probes, median, provisioned_tenant};

/// The `tessera` binary's allocator, so the benchmark measures what the binary runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const CLIENTS: usize = 32;
const ROUND: Duration = Duration::from_secs(3);
const PUBLICATIONS: usize = 5;

/// A `tessera serve` child process, killed when dropped.
struct Host {
    child: Child,
    address: String,
    data_dir: PathBuf,
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
        let _ = std::fs::remove_dir_all(&self.data_dir);
    }
}

/// `tessera serve` on `url`, with its own data dir holding `shared`'s service secret and
/// plugins.
fn start_host(shared: &BenchDatabase, url: &str) -> anyhow::Result<Host> {
    let data_dir = std::env::temp_dir().join(format!(
        "tessera-bench-cluster-host-{}",
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
    let Serving {
        child,
        address,
        log,
    } = support::spawn_serving(&mut support::serve_command(&data_dir, Some(url)))?;
    std::thread::spawn(move || for _ in log {});
    Ok(Host {
        child,
        address,
        data_dir,
    })
}

#[derive(Debug, Clone, Copy)]
enum Workload {
    Intentions,
    Notes,
}

impl Workload {
    const ALL: [Self; 2] = [Self::Intentions, Self::Notes];

    fn name(self) -> &'static str {
        match self {
            Self::Intentions => "contacts through intentions (`POST /core/api/v1/intentions`)",
            Self::Notes => "notes (`POST /notes/api/v1/notes`)",
        }
    }
}

/// Requests per second of `workload` over `hosts` for one round.
async fn round(hosts: &[Host], token: &str, workload: Workload, counter: &Arc<AtomicU64>) -> f64 {
    let client = reqwest::Client::new();
    let done = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + ROUND;
    let mut clients = tokio::task::JoinSet::new();
    for index in 0..CLIENTS {
        let url = match workload {
            Workload::Intentions => hosts[index % hosts.len()].url("/core/api/v1/intentions"),
            Workload::Notes => hosts[index % hosts.len()].url("/notes/api/v1/notes"),
        };
        let (client, token, done, counter) = (
            client.clone(),
            token.to_owned(),
            done.clone(),
            counter.clone(),
        );
        clients.spawn(async move {
            while Instant::now() < deadline {
                let n = counter.fetch_add(1, Ordering::Relaxed);
                let body = match workload {
                    Workload::Intentions => engine_probes::contact_intention(n),
                    Workload::Notes => {
                        json!({ "title": format!("Note {n}"), "body": "# Plan\n\n- one\n- two" })
                    }
                };
                let answer = client
                    .post(&url)
                    .bearer_auth(&token)
                    .json(&body)
                    .send()
                    .await;
                if answer.is_ok_and(|answer| answer.status().is_success()) {
                    done.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
    }
    clients.join_all().await;
    done.load(Ordering::Relaxed) as f64 / ROUND.as_secs_f64()
}

/// Waits (at most a minute) until no engine work is due: what the writes left behind has been
/// taken up.
async fn settle(pool: &sqlx::PgPool) -> anyhow::Result<()> {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(60) {
        let due: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM engine_work WHERE status = 'pending' AND due_at <= $1",
        )
        .bind(tessera_host::storage::time::now())
        .fetch_one(pool)
        .await?;
        if due == 0 {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

/// How long after `admin engine publish` returned every host's engine list names `digest`.
async fn publication(
    shared: &BenchDatabase,
    url: &str,
    hosts: &[Host],
    token: &str,
    file: &Path,
    digest: &str,
) -> anyhow::Result<(Duration, Duration)> {
    let started = Instant::now();
    let output = Command::new(support::tessera_binary())
        .args(["admin", "engine", "publish"])
        .arg(file)
        .arg("--data-dir")
        .arg(&shared.data_dir)
        .arg("--database-url")
        .arg(url)
        .arg("--plugins-dir")
        .arg(shared.plugins_dir())
        .env_remove("TESSERA_LOG")
        .output()?;
    anyhow::ensure!(
        output.status.success(),
        "publishing failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let published = started.elapsed();
    let committed = Instant::now();
    let client = reqwest::Client::new();
    loop {
        let mut everywhere = true;
        for host in hosts {
            let engines: Value = client
                .get(host.url("/core/api/v1/engines"))
                .bearer_auth(token)
                .send()
                .await?
                .json()
                .await?;
            let runs = engines["data"]
                .as_array()
                .is_some_and(|engines| engines.iter().any(|engine| engine["sha256"] == digest));
            everywhere &= runs;
        }
        if everywhere {
            return Ok((published, committed.elapsed()));
        }
        anyhow::ensure!(
            committed.elapsed() < Duration::from_secs(60),
            "the publication did not reach every host within a minute"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let admin_url = std::env::var("TESSERA_TEST_POSTGRES_URL")
        .context("the cluster benchmark needs TESSERA_TEST_POSTGRES_URL")?;
    let shared = BenchDatabase::create(Backend::Postgres, Some(&admin_url), "cluster").await?;
    let url = shared.url.clone().context("a PostgreSQL URL")?;
    components::install(&shared.plugins_dir(), &["echo"]);
    components::install_engines(&shared.plugins_dir(), &components::ENGINES);
    // The tenant, its users and the service secret, made by an in-process host that then stops.
    let setup = Server::start(&shared, |_| {}).await?;
    let (_, users) =
        provisioned_tenant(&setup.state, "bench-cluster", &[Role::Owner, Role::Editor]).await?;
    setup.shutdown().await?;
    // The benchmark's own look at the database (the setup host closed its pool).
    let pool = sqlx::PgPool::connect(&url).await?;
    let (owner, editor) = (users[0].token.clone(), users[1].token.clone());

    let rounds = support::rounds_or(5);
    let counter = Arc::new(AtomicU64::new(0));
    let mut hosts: Vec<Host> = Vec::new();
    let mut rates: Vec<Vec<f64>> = Vec::new();
    for count in 1..=3 {
        hosts.push(start_host(&shared, &url)?);
        let mut per_workload = Vec::new();
        for workload in Workload::ALL {
            // A warm-up round, then the measured ones.
            round(&hosts, &editor, workload, &counter).await;
            settle(&pool).await?;
            let mut measured = Vec::with_capacity(rounds);
            for _ in 0..rounds {
                measured.push(round(&hosts, &editor, workload, &counter).await);
                settle(&pool).await?;
            }
            println!("{count} host(s), {}: {measured:?}", workload.name());
            per_workload.push(median(measured));
        }
        rates.push(per_workload);
    }

    let echo = std::fs::read(components::component("echo"))?;
    let mut published = Vec::new();
    let mut reached = Vec::new();
    for number in 0..PUBLICATIONS {
        let build = components::another_build_of(&echo, &number.to_string());
        let digest = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&build));
        let file = shared.data_dir.join(format!("echo-{number}.wasm"));
        std::fs::write(&file, &build)?;
        let (cli, propagation) = publication(&shared, &url, &hosts, &owner, &file, &digest).await?;
        published.push(cli.as_secs_f64() * 1000.0);
        reached.push(propagation.as_secs_f64() * 1000.0);
    }
    println!("publications: CLI {published:?} ms, then every host {reached:?} ms");

    println!(
        "\nWrites per second ({CLIENTS} clients spread over the hosts, median of {rounds} rounds of {ROUND:?}):\n"
    );
    println!("| workload | 1 host | 2 hosts | 3 hosts |");
    println!("|---|---|---|---|");
    for (slot, workload) in Workload::ALL.into_iter().enumerate() {
        println!(
            "| {} | {:.0} | {:.0} | {:.0} |",
            workload.name(),
            rates[0][slot],
            rates[1][slot],
            rates[2][slot]
        );
    }
    println!(
        "\nA published engine on every host of three: `admin engine publish` {:.0} ms (median of {PUBLICATIONS}: checking, compiling and storing the component), then {:.0} ms (median; slowest {:.0} ms) until every host's engine list names its digest.",
        median(published.clone()),
        median(reached.clone()),
        reached.iter().cloned().fold(0.0, f64::max)
    );
    drop(hosts);
    shared.destroy().await;
    Ok(())
}
