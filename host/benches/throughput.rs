//! Accepted versus processed: intentions accepted per second by 16 clients over
//! real HTTP against a host serving the seven engines, and entities fully processed per
//! second: from the first request until every projection applied every event and every engine
//! delivery and job those events caused completed. On SQLite, and on PostgreSQL when
//! `TESSERA_TEST_POSTGRES_URL` is set.
//!
//! Then search at scale (`support/search_scale.rs`): a million contacts, a rare and a common
//! word, p50/p99 at 1 and 16 clients.
//!
//! `cargo bench -p tessera-host --bench throughput` (about a minute per database, twice: the 16
//! clients in one tenant, then each in its own; then a few minutes per database for the search
//! part). `TESSERA_BENCH_SEARCH_ONLY=1` runs the search part alone,
//! `TESSERA_BENCH_THROUGHPUT_ONLY=1` the first part alone, `TESSERA_BENCH_TENANTS=1` or `=16`
//! the first part's runs with that many tenants alone; `TESSERA_BENCH_CONTACTS=1000000` makes the
//! first part's clients write that many contacts instead of writing for ten seconds (the bytes
//! per entity of a database that size, its write-ahead log at its largest included).

#[allow(dead_code)]
#[path = "../../tests/it/components.rs"]
mod components;
#[path = "support/search_scale.rs"]
mod search_scale;
#[path = "support/mod.rs"]
mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use tessera_host::state::AppState;
use tessera_host::tenancy::Role;

use support::{Backend, BenchDatabase, Server, engine_probes, provisioned_tenant};

/// The `tessera` binary's allocator, so the benchmark measures what the binary runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Concurrent clients.
const CLIENTS: usize = 16;
/// The tenants the clients write in: all in one, then each in its own (client `n` writes in
/// tenant `n % tenants`).
const TENANT_COUNTS: [usize; 2] = [1, CLIENTS];
/// How long the clients write.
const WINDOW: Duration = Duration::from_secs(10);

/// How long the clients write and how many intentions they send at most: [`WINDOW`], or with
/// `TESSERA_BENCH_CONTACTS=N` (a footprint run at scale: the bytes per entity of a million
/// contacts, the write-ahead log at its largest included) until `N` were sent.
fn writing_bounds() -> (Duration, u64) {
    match std::env::var("TESSERA_BENCH_CONTACTS")
        .ok()
        .and_then(|contacts| contacts.parse().ok())
    {
        Some(contacts) => (Duration::from_secs(24 * 3600), contacts),
        None => (WINDOW, u64::MAX),
    }
}
/// The longest the platform may take to finish the window's work before the run fails.
const DRAIN_LIMIT: Duration = Duration::from_secs(600);

struct Run {
    backend: Backend,
    tenants: usize,
    accepted: u64,
    refused: u64,
    other: u64,
    /// Accepted per second over the window.
    accepted_rate: f64,
    /// From the first request until everything accepted was processed.
    processed_after: Duration,
    /// The largest backlog sampled (items).
    peak_backlog: u64,
    /// From the first request until the projections had applied every event.
    projected_after: Duration,
    /// From the first request until every engine delivery and job had run.
    delivered_after: Duration,
    /// Bytes per table (its indexes included), largest first, once everything was processed.
    tables: Vec<(String, u64)>,
    /// SQLite: the write-ahead log's largest size sampled.
    wal_bytes: u64,
    /// Bytes this process caused to be written to storage (`/proc/self/io` `write_bytes`) from
    /// the first request until everything was processed: the database and its log.
    written_bytes: u64,
    /// Events each projection had still to apply when the clients stopped.
    behind_at_window_end: Vec<(String, i64)>,
}

/// Bytes this process has caused to be written to storage so far (Linux task I/O accounting).
fn storage_writes() -> u64 {
    std::fs::read_to_string("/proc/self/io")
        .ok()
        .and_then(|io| {
            io.lines()
                .find_map(|line| line.strip_prefix("write_bytes:"))
                .and_then(|value| value.trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Events each projection has still to apply (by log position).
async fn behind_per_projection(state: &AppState) -> anyhow::Result<Vec<(String, i64)>> {
    Ok(
        tessera_host::on_pool!(state.database, pool => sqlx::query_as(
        "SELECT c.projection, (SELECT COUNT(*) FROM events AS e WHERE e.position > c.position)
         FROM projection_checkpoints AS c ORDER BY c.projection",
    )
    .fetch_all(pool)
    .await)?,
    )
}

/// Bytes each table takes with its indexes, largest first.
async fn table_sizes(state: &AppState) -> anyhow::Result<Vec<(String, u64)>> {
    let mut sizes: Vec<(String, i64)> = tessera_host::on_pool!(state.database, pool => {
        let sql = match state.database.kind() {
            tessera_host::storage::DatabaseKind::Sqlite => {
                "SELECT COALESCE(m.tbl_name, d.name), CAST(SUM(d.pgsize) AS BIGINT)
                 FROM dbstat AS d LEFT JOIN sqlite_master AS m ON m.name = d.name
                 GROUP BY 1"
            }
            tessera_host::storage::DatabaseKind::Postgres => {
                "SELECT c.relname::text, pg_total_relation_size(c.oid)::bigint FROM pg_class AS c
                 WHERE c.relkind = 'r' AND c.relnamespace = 'public'::regnamespace"
            }
        };
        sqlx::query_as(sql).fetch_all(pool).await
    })
    .context("reading the tables' sizes")?;
    sizes.sort_by_key(|(_, bytes)| std::cmp::Reverse(*bytes));
    Ok(sizes
        .into_iter()
        .map(|(table, bytes)| (table, u64::try_from(bytes).unwrap_or(0)))
        .collect())
}

/// Items still to do: engine work due or running, and events the slowest projection has not
/// applied.
#[derive(Clone, Copy)]
struct Unfinished {
    work: u64,
    events: u64,
}

impl Unfinished {
    fn total(self) -> u64 {
        self.work + self.events
    }
}

async fn unfinished(state: &AppState) -> anyhow::Result<Unfinished> {
    let cap = u64::MAX / 4;
    let queue = &state.engines.runtime().services().queue;
    let work = queue.backlog(&state.engines.codes(), cap).await?;
    let events = tessera_host::core::projections::backlog(&state.database, cap).await?;
    let running: i64 = tessera_host::on_pool!(state.database, pool => sqlx::query_scalar(
        "SELECT COUNT(*) FROM engine_work WHERE status = 'running'",
    )
    .fetch_one(pool)
    .await)?;
    Ok(Unfinished {
        work: work.items + u64::try_from(running).unwrap_or(0),
        events: events.items,
    })
}

async fn run_backend(
    backend: Backend,
    admin_url: Option<&str>,
    tenants: usize,
) -> anyhow::Result<Run> {
    let database = BenchDatabase::create(backend, admin_url, "throughput").await?;
    components::install_engines(&database.plugins_dir(), &components::ENGINES);
    let server = Server::start(&database, |_| {}).await?;
    let mut tokens = Vec::with_capacity(tenants);
    for tenant in 0..tenants {
        let (_, users) = provisioned_tenant(
            &server.state,
            &format!("bench-throughput-{tenant}"),
            &[Role::Editor],
        )
        .await
        .context("a tenant on the seven engines")?;
        tokens.push(users[0].token.clone());
    }
    let url = server.url("/core/api/v1/intentions");

    let counter = Arc::new(AtomicU64::new(0));
    let (accepted, refused, other) = (
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
    );
    let written_before = storage_writes();
    let started = Instant::now();
    let (window, most) = writing_bounds();
    let deadline = started + window;
    let clients: Vec<_> = (0..CLIENTS)
        .map(|client| {
            let token = tokens[client % tokens.len()].clone();
            let (url, counter) = (url.clone(), counter.clone());
            let (accepted, refused, other) = (accepted.clone(), refused.clone(), other.clone());
            tokio::spawn(async move {
                let client = reqwest::Client::new();
                while Instant::now() < deadline {
                    let n = counter.fetch_add(1, Ordering::Relaxed);
                    if n >= most {
                        break;
                    }
                    let answer = client
                        .post(&url)
                        .bearer_auth(&token)
                        .json(&engine_probes::contact_intention(n))
                        .send()
                        .await;
                    let tally = match answer.map(|answer| answer.status().as_u16()) {
                        Ok(200) => &accepted,
                        Ok(503) => &refused,
                        _ => &other,
                    };
                    tally.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let wal = database.data_dir.join("tessera.db-wal");
    let wal_size = || std::fs::metadata(&wal).map_or(0, |metadata| metadata.len());
    let (mut peak_backlog, mut wal_bytes) = (0, 0);
    while Instant::now() < deadline && !clients.iter().all(tokio::task::JoinHandle::is_finished) {
        peak_backlog = peak_backlog.max(unfinished(&server.state).await?.total());
        wal_bytes = wal_bytes.max(wal_size());
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    for client in clients {
        client.await?;
    }
    let window = started.elapsed();
    let behind_at_window_end = behind_per_projection(&server.state).await?;
    let (mut projected_after, mut delivered_after) = (None, None);
    loop {
        let left = unfinished(&server.state).await?;
        peak_backlog = peak_backlog.max(left.total());
        wal_bytes = wal_bytes.max(wal_size());
        if left.events == 0 {
            projected_after.get_or_insert(started.elapsed());
        }
        if left.work == 0 {
            delivered_after.get_or_insert(started.elapsed());
        }
        if left.total() == 0 {
            break;
        }
        anyhow::ensure!(
            started.elapsed() < DRAIN_LIMIT,
            "{} engine work items and {} events still unfinished after {DRAIN_LIMIT:?}",
            left.work,
            left.events
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let processed_after = started.elapsed();
    let written_bytes = storage_writes().saturating_sub(written_before);
    let accepted = accepted.load(Ordering::Relaxed);
    let tables = table_sizes(&server.state).await?;
    let run = Run {
        backend,
        tenants,
        accepted,
        refused: refused.load(Ordering::Relaxed),
        other: other.load(Ordering::Relaxed),
        accepted_rate: accepted as f64 / window.as_secs_f64(),
        processed_after,
        projected_after: projected_after.unwrap_or(processed_after),
        delivered_after: delivered_after.unwrap_or(processed_after),
        peak_backlog,
        tables,
        wal_bytes,
        written_bytes,
        behind_at_window_end,
    };
    server.shutdown().await?;
    database.destroy().await;
    Ok(run)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let admin_url = std::env::var("TESSERA_TEST_POSTGRES_URL")
        .ok()
        .filter(|url| !url.is_empty());
    let search_only = std::env::var("TESSERA_BENCH_SEARCH_ONLY").is_ok_and(|value| value == "1");
    let mut runs = Vec::new();
    // `TESSERA_BENCH_TENANTS=16` runs one of the tenant counts alone (to profile it).
    let only_tenants: Option<usize> = std::env::var("TESSERA_BENCH_TENANTS")
        .ok()
        .and_then(|value| value.parse().ok());
    for tenants in TENANT_COUNTS
        .iter()
        .copied()
        .filter(|tenants| !search_only && only_tenants.is_none_or(|only| only == *tenants))
    {
        runs.push(run_backend(Backend::Sqlite, None, tenants).await?);
        match &admin_url {
            Some(url) => runs.push(run_backend(Backend::Postgres, Some(url), tenants).await?),
            None => eprintln!("TESSERA_TEST_POSTGRES_URL is not set: skipping PostgreSQL"),
        }
    }
    println!(
        "| database | tenants | accepted (200) | refused (503) | other | accepted/s | projected after | delivered after | processed after | processed/s | processed / accepted rate | peak backlog (items) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for run in &runs {
        let processed_rate = run.accepted as f64 / run.processed_after.as_secs_f64();
        println!(
            "| {} | {} | {} | {} | {} | {:.0} | {:.1} s | {:.1} s | {:.1} s | {:.0} | {:.0} % | {} |",
            run.backend.name(),
            run.tenants,
            run.accepted,
            run.refused,
            run.other,
            run.accepted_rate,
            run.projected_after.as_secs_f64(),
            run.delivered_after.as_secs_f64(),
            run.processed_after.as_secs_f64(),
            processed_rate,
            processed_rate / run.accepted_rate * 100.0,
            run.peak_backlog,
        );
    }
    println!();
    for run in &runs {
        let behind: Vec<String> = run
            .behind_at_window_end
            .iter()
            .map(|(projection, events)| format!("{projection} {events}"))
            .collect();
        println!(
            "{}, {} tenant(s): events still to apply per projection when the clients stopped: {}",
            run.backend.name(),
            run.tenants,
            behind.join(", ")
        );
    }
    for run in &runs {
        let per_entity = |bytes: u64| bytes as f64 / run.accepted.max(1) as f64;
        let total: u64 = run.tables.iter().map(|(_, bytes)| bytes).sum();
        println!();
        println!(
            "{}, {} tenant(s): {} entities; {:.0} bytes per entity in all tables, {:.0} with the write-ahead log at its largest ({} bytes); {:.0} bytes written to storage per entity",
            run.backend.name(),
            run.tenants,
            run.accepted,
            per_entity(total),
            per_entity(total + run.wal_bytes),
            run.wal_bytes,
            per_entity(run.written_bytes),
        );
        println!("| table (with its indexes) | bytes | per entity |");
        println!("|---|---|---|");
        for (table, bytes) in run.tables.iter().take(12) {
            println!("| {table} | {bytes} | {:.0} |", per_entity(*bytes));
        }
    }
    if std::env::var("TESSERA_BENCH_THROUGHPUT_ONLY").is_ok_and(|value| value == "1") {
        return Ok(());
    }
    let mut searches = vec![search_scale::run(Backend::Sqlite, None).await?];
    if let Some(url) = &admin_url {
        searches.push(search_scale::run(Backend::Postgres, Some(url)).await?);
    }
    println!();
    println!(
        "Search over {} contacts of one tenant (`{}` in 10 of them, `{}` in 10 %):",
        search_scale::CONTACTS,
        search_scale::RARE_WORD,
        search_scale::COMMON_WORD
    );
    println!("| database | word | clients | meta.total | p50 | p99 |");
    println!("|---|---|---|---|---|---|");
    for search in &searches {
        for latency in &search.latencies {
            println!(
                "| {} | `{}` | {} | {} | {:.2} ms | {:.2} ms |",
                search.backend.name(),
                latency.word,
                latency.clients,
                latency.matches,
                latency.p50.as_secs_f64() * 1e3,
                latency.p99.as_secs_f64() * 1e3,
            );
        }
    }
    for search in &searches {
        println!(
            "{}: seeded in {:.0} s; the search tables hold {:.0} bytes per contact",
            search.backend.name(),
            search.seeding.as_secs_f64(),
            search.index_bytes_per_contact,
        );
    }
    Ok(())
}
