//! Search over a million contacts, the second part of the throughput benchmark
//! (`throughput.rs` includes this file as its module `search_scale`):
//! a host with the seven engines loaded, one tenant holding `CONTACTS` contacts, and
//! `GET /core/api/v1/search` over real HTTP for a rare word (in 10 contacts) and a common one
//! (in 10 % of them), from 1 and from 16 clients: p50 and p99 of each, and the bytes the
//! search tables hold per contact.
//!
//! The contacts are written into the index by the search projection's own code
//! (`SearchProjection::apply`, in batches of `SEED_BATCH`) from the events their intentions
//! would have produced, without going through the log: seeding a million entities through
//! intentions and every projection and engine delivery would take over a quarter of an hour
//! per database, and the first part of the benchmark already measures that path (and the
//! bytes per entity of every table). On PostgreSQL the table is analyzed after the seed, as
//! autovacuum would be within a minute of such a load.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde_json::{Value, json};
use tessera_host::core::events::StoredEvent;
use tessera_host::core::projections::Projection as _;
use tessera_host::core::search::SearchProjection;
use tessera_host::tenancy::Role;

use crate::components;
use crate::support::{Backend, BenchDatabase, Server, percentile, provisioned_tenant};

/// Contacts of the searched tenant.
pub const CONTACTS: u64 = 1_000_000;
/// Contacts per seeding transaction.
const SEED_BATCH: u64 = 5_000;
/// Queries per client at each concurrency (after a warm-up of as many).
const QUERIES_PER_CLIENT: [(usize, usize); 2] = [(1, 1_000), (16, 200)];
/// The rare word (every 100,000th contact's last name) and the common one (every tenth
/// contact's city).
pub const RARE_WORD: &str = "zanzibar";
pub const COMMON_WORD: &str = "london";

const FIRST_NAMES: [&str; 20] = [
    "James",
    "Mary",
    "Robert",
    "Patricia",
    "John",
    "Jennifer",
    "Michael",
    "Linda",
    "David",
    "Elizabeth",
    "William",
    "Barbara",
    "Richard",
    "Susan",
    "Joseph",
    "Jessica",
    "Ada",
    "Grace",
    "Alan",
    "Sofia",
];
const LAST_NAMES: [&str; 20] = [
    "Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis", "Lovelace",
    "Hopper", "Turing", "Dubois", "Moreau", "Schmidt", "Rossi", "Tanaka", "Kowalski", "Novak",
    "Jensen", "Silva",
];
/// Cities other than the common word.
const CITIES: [&str; 18] = [
    "Paris", "Berlin", "Madrid", "Lisbon", "Rome", "Vienna", "Zurich", "Oslo", "Tokyo", "Osaka",
    "Sydney", "Toronto", "Boston", "Denver", "Austin", "Seattle", "Dublin", "Prague",
];
const COMPANIES: [&str; 8] = [
    "Acme Corp",
    "Globex",
    "Initech",
    "Hooli",
    "Contoso",
    "Fabrikam",
    "Northwind",
    "Litware",
];

/// The fields of contact `n`.
fn contact(n: u64) -> Value {
    let pick = |list: &[&'static str], salt: u64| {
        let mixed = n
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(salt as u32)
            ^ salt;
        list[(mixed % list.len() as u64) as usize]
    };
    let first = pick(&FIRST_NAMES, 7);
    let last = if n % 100_000 == 7 {
        "Zanzibar"
    } else {
        pick(&LAST_NAMES, 19)
    };
    let city = if n.is_multiple_of(10) {
        "London"
    } else {
        pick(&CITIES, 31)
    };
    json!({
        "name": format!("{first} {last}"),
        "email": format!("{}.{}{n}@example.com", first.to_lowercase(), last.to_lowercase()),
        "phone": format!("+1 (415) 555-{:04}", n % 10_000),
        "company": pick(&COMPANIES, 43),
        "city": city,
    })
}

/// The events an `entity.create` intention of contact `n` produces.
fn contact_events(tenant_id: &str, n: u64, position: &mut i64, events: &mut Vec<StoredEvent>) {
    let entity_id = uuid::Uuid::new_v4().to_string();
    let mut push = |event_type: &str, data: Value| {
        *position += 1;
        events.push(StoredEvent {
            position: *position,
            transaction_id: 0,
            id: uuid::Uuid::new_v4().to_string(),
            tenant_id: tenant_id.to_owned(),
            sequence: *position,
            event_type: event_type.to_owned(),
            entity_id: Some(entity_id.clone()),
            intention_id: None,
            actor_id: None,
            correlation_id: None,
            depth: 0,
            data: data.to_string(),
            occurred_at: "2026-11-26T10:00:00.000000Z".to_owned(),
            entity_state: None,
            traceparent: None,
            group_offset: 0,
        });
    };
    push("entity.created", json!({"family": "contact"}));
    if let Value::Object(fields) = contact(n) {
        for (field, value) in fields {
            push("entity.field_set", json!({"field": field, "value": value}));
        }
    }
}

/// p50 and p99 of one word at one concurrency.
pub struct Latency {
    pub word: &'static str,
    pub clients: usize,
    pub matches: u64,
    pub p50: Duration,
    pub p99: Duration,
}

pub struct SearchScaleRun {
    pub backend: Backend,
    pub seeding: Duration,
    pub latencies: Vec<Latency>,
    /// The search tables' bytes per contact (SQLite: with the FTS5 tables).
    pub index_bytes_per_contact: f64,
}

/// Runs `queries` searches for `word` from one client; each latency and the last `meta.total`.
async fn client_searches(
    url: String,
    token: String,
    word: &'static str,
    queries: usize,
) -> anyhow::Result<(Vec<Duration>, u64)> {
    let client = reqwest::Client::new();
    let mut latencies = Vec::with_capacity(queries);
    let mut total = 0;
    for _ in 0..queries {
        let sent = Instant::now();
        let answer = client
            .get(&url)
            .bearer_auth(&token)
            .query(&[("q", word)])
            .send()
            .await?;
        let status = answer.status();
        let body: Value = answer.json().await?;
        latencies.push(sent.elapsed());
        anyhow::ensure!(status == 200, "search for {word} answered {status}: {body}");
        total = body["meta"]["total"].as_u64().unwrap_or(0);
    }
    Ok((latencies, total))
}

async fn measure(
    url: &str,
    token: &str,
    word: &'static str,
    clients: usize,
    queries: usize,
) -> anyhow::Result<Latency> {
    let mut latencies = Vec::with_capacity(clients * queries);
    let mut matches = 0;
    // A warm-up round, then the measured one.
    for measured in [false, true] {
        let tasks: Vec<_> = (0..clients)
            .map(|_| {
                tokio::spawn(client_searches(
                    url.to_owned(),
                    token.to_owned(),
                    word,
                    queries,
                ))
            })
            .collect();
        for task in tasks {
            let (client_latencies, total) = task.await??;
            if measured {
                latencies.extend(client_latencies);
                matches = total;
            }
        }
    }
    Ok(Latency {
        word,
        clients,
        matches,
        p50: percentile(&mut latencies, 0.5),
        p99: percentile(&mut latencies, 0.99),
    })
}

pub async fn run(backend: Backend, admin_url: Option<&str>) -> anyhow::Result<SearchScaleRun> {
    let database = BenchDatabase::create(backend, admin_url, "search_scale").await?;
    components::install_engines(&database.plugins_dir(), &components::ENGINES);
    let server = Server::start(&database, |_| {}).await?;
    let (tenant_id, users) = provisioned_tenant(&server.state, "bench-search", &[Role::Editor])
        .await
        .context("a tenant on the seven engines")?;
    let token = users[0].token.clone();

    eprintln!("  seeding {CONTACTS} contacts into the search index…");
    let started = Instant::now();
    let mut position = 0;
    let mut first = 0;
    while first < CONTACTS {
        let mut events = Vec::with_capacity((SEED_BATCH * 6) as usize);
        for n in first..(first + SEED_BATCH).min(CONTACTS) {
            contact_events(&tenant_id, n, &mut position, &mut events);
        }
        let mut tx = server.state.database.begin_background().await?;
        SearchProjection.apply(&mut tx, &events).await?;
        tx.commit().await?;
        first += SEED_BATCH;
    }
    let seeding = started.elapsed();
    if backend == Backend::Postgres {
        // What autovacuum's analyze does within a minute of a bulk load (past 10 % of the
        // table changed): without statistics the planner cannot tell a word in 10 % of the
        // rows, better found by a scan that stops at the window, from a rare one, and takes
        // the GIN bitmap of every match for both.
        tessera_host::on_pool!(server.state.database, pool => {
            sqlx::query("ANALYZE search_documents").execute(pool).await.map(drop)
        })?;
    }
    eprintln!("  seeded in {:.0} s; searching…", seeding.as_secs_f64());

    let url = server.url("/core/api/v1/search");
    let mut latencies = Vec::new();
    for (clients, queries) in QUERIES_PER_CLIENT {
        for word in [RARE_WORD, COMMON_WORD] {
            latencies.push(measure(&url, &token, word, clients, queries).await?);
        }
    }
    let index_bytes: i64 = tessera_host::on_pool!(server.state.database, pool => {
        let sql = match backend {
            Backend::Sqlite => {
                "SELECT CAST(SUM(pgsize) AS BIGINT) FROM dbstat
                 WHERE name LIKE 'search%' OR name LIKE 'sqlite_autoindex_search%'"
            }
            Backend::Postgres => {
                "SELECT SUM(pg_total_relation_size(c.oid))::bigint FROM pg_class AS c
                 WHERE c.relkind = 'r' AND c.relname LIKE 'search%'
                   AND c.relnamespace = 'public'::regnamespace"
            }
        };
        sqlx::query_scalar(sql).fetch_one(pool).await
    })?;
    server.shutdown().await?;
    database.destroy().await;
    Ok(SearchScaleRun {
        backend,
        seeding,
        latencies,
        index_bytes_per_contact: index_bytes as f64 / CONTACTS as f64,
    })
}
