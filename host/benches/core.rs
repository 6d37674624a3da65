//! Benchmark of the core service (`cargo bench -p tessera-host --bench core`), on SQLite (a temp
//! data dir) and on PostgreSQL (a fresh database created on the server named by
//! `TESSERA_TEST_POSTGRES_URL` and dropped afterwards; skipped with a message when unset):
//!
//! 1. **Intentions per second over HTTP**: 16 keep-alive clients posting `entity.create`
//!    intentions (a contact with five varied fields) to `POST /core/api/v1/intentions` for a
//!    1 s warm-up and a 10 s window; every answer must be 200. Intentions/s and the request
//!    latency p50/p99.
//! 2. **Ceiling**: the same rows written straight through sqlx by the library functions the
//!    intention writer uses (`entities::upsert_many`, `events::append_groups`), in
//!    transactions of the writer's largest batch (128 intentions), on a host without projection
//!    workers: what the server writes, without HTTP, JSON, auth, deciding or the projections
//!    competing. HTTP / ceiling ratio. Also the same rows one intention per transaction from
//!    16 writers (what group commit saves), and the batched ceiling on a host whose projection
//!    workers run (woken after each commit, as the server does): the projections' share of the
//!    database.
//! 3. **Projection lag under that load**: the mean append → apply delay of the projector and
//!    of the search projection over the run (`projection_stats`), and how long each took to
//!    catch up with the log after the last intention. (The timeline is read from the log
//!    itself, so it has no lag of its own.)
//! 4. **Search latency over 100,000 entities**: a fresh database with 100,000 contacts of one
//!    tenant and 5,000 of another, fully indexed; then `GET /core/api/v1/search` with a mix of
//!    queries (last-name prefix, first name, `city:` prefix, first name + last-name prefix, each
//!    with and without `&family=contact`), sequentially and from 8 concurrent clients.
//! 5. **Workflow runs**: the HTTP load of 1 on a tenant with 10 active workflows (each contact
//!    matches one; its action an `update_field` with a template): runs/s during the window,
//!    trigger → run completed p50/p99, and how long after the last intention the runner had
//!    caught up; then the runs/s of a fresh host draining a backlog of 20,000 intentions,
//!    compared with the intentions/s of 1 (the runs keep up when they are at least as many).
//!
//! Server and load generators share one multi-thread tokio runtime (one worker per core) on
//! loopback, as the other host benchmarks do; rate limits are off. The result is printed as
//! Markdown tables for BENCHMARKS.md, with the targets beside the numbers and the CPU the run
//! and everything else on the machine used, and what the hypervisor stole (progress goes to
//! stderr). Run with
//! `TESSERA_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test cargo bench -p tessera-host --bench core`
//! on a quiet machine; it takes about 5 minutes with both databases, most of it seeding and
//! indexing the 105,000 search entities.

#[path = "support/mod.rs"]
mod support;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use tessera_host::auth::password::{PasswordHasher, PasswordPolicy};
use tessera_host::auth::sessions::TokenScope;
use tessera_host::core::entities::{self, Entity};
use tessera_host::core::events::{self, DomainEvent, EventContext, NewEvent};
use tessera_host::core::intention_writer::MAX_BATCH;
use tessera_host::core::projections::signal::EventSignal;
use tessera_host::core::workflows;
use tessera_host::state::AppState;
use tessera_host::storage::{Database, time};
use tessera_host::tenancy::{NewUser, Role, TenancyService, UserType};

use support::{Backend, BenchDatabase, Server, count, cpu_share, cpu_ticks, percentile, verdict};

/// The `tessera` binary's allocator, so the benchmark measures what the binary runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Concurrent writers, over HTTP and for the ceiling.
const WRITERS: usize = 16;
/// Distinct request bodies each HTTP client cycles through.
const BODIES_PER_CLIENT: usize = 1_024;
const WARM_UP: Duration = Duration::from_secs(1);
const WINDOW: Duration = Duration::from_secs(10);
/// Contacts of the searched tenant, and of the other one.
const SEARCH_ENTITIES: usize = 100_000;
const OTHER_TENANT_ENTITIES: usize = 5_000;
/// Entities per seeding transaction.
const SEED_BATCH: usize = 100;
const SEED_TASKS: usize = 2;
const SEARCH_WARM_UP: usize = 200;
const SEARCH_QUERIES: usize = 2_000;
const SEARCH_CLIENTS: usize = 8;
/// The longest wait for projections to catch up before the run fails.
const CATCH_UP_TIMEOUT: Duration = Duration::from_secs(600);

const TARGET_SQLITE_INTENTIONS: f64 = 3_000.0;
const TARGET_MEAN_LAG: Duration = Duration::from_secs(1);
const TARGET_SEARCH_P99: Duration = Duration::from_millis(20);

const PASSWORD: &str = "Correct1horse";

const FIRST_NAMES: &str = concat!(
    "James,Mary,Robert,Patricia,John,Jennifer,Michael,Linda,David,Elizabeth,William,",
    "Barbara,Richard,Susan,Joseph,Jessica,Thomas,Sarah,Charles,Karen,Christopher,",
    "Lisa,Daniel,Nancy,Matthew,Betty,Anthony,Margaret,Mark,Sandra,Donald,Ashley,",
    "Steven,Kimberly,Paul,Emily,Andrew,Donna,Joshua,Michelle,Kenneth,Carol,Kevin,",
    "Amanda,Brian,Dorothy,George,Melissa,Timothy,Deborah,Ronald,Stephanie,Edward,",
    "Rebecca,Jason,Sharon,Jeffrey,Laura,Ryan,Cynthia,Jacob,Kathleen,Gary,Amy,",
    "Nicholas,Angela,Eric,Shirley,Jonathan,Anna,Stephen,Brenda,Larry,Pamela,Justin,",
    "Emma,Scott,Nicole,Brandon,Helen,Ada,Grace,Alan,Linus,Sofia,Lucas,Mateo,Chloe,",
    "Hugo,Ines,Yuki,Wei,Priya,Arjun,Fatima,Omar",
);

const LAST_NAMES: &str = concat!(
    "Smith,Johnson,Williams,Brown,Jones,Garcia,Miller,Davis,Rodriguez,Martinez,",
    "Hernandez,Lopez,Gonzalez,Wilson,Anderson,Thomas,Taylor,Moore,Jackson,Martin,Lee,",
    "Perez,Thompson,White,Harris,Sanchez,Clark,Ramirez,Lewis,Robinson,Walker,Young,",
    "Allen,King,Wright,Scott,Torres,Nguyen,Hill,Flores,Green,Adams,Nelson,Baker,Hall,",
    "Rivera,Campbell,Mitchell,Carter,Roberts,Gomez,Phillips,Evans,Turner,Diaz,Parker,",
    "Cruz,Edwards,Collins,Reyes,Stewart,Morris,Morales,Murphy,Cook,Rogers,Gutierrez,",
    "Ortiz,Morgan,Cooper,Peterson,Bailey,Reed,Kelly,Howard,Ramos,Kim,Cox,Ward,",
    "Richardson,Watson,Brooks,Chavez,Wood,James,Bennett,Gray,Mendoza,Ruiz,Hughes,",
    "Price,Alvarez,Castillo,Sanders,Patel,Myers,Long,Ross,Foster,Jimenez,Lovelace,",
    "Hopper,Turing,Torvalds,Dubois,Lefebvre,Moreau,Schmidt,Schneider,Fischer,Weber,",
    "Becker,Rossi,Russo,Ferrari,Esposito,Tanaka,Suzuki,Watanabe,Sato,Kowalski,Novak,",
    "Jensen,Larsen,Silva,Santos,Oliveira",
);

const CITIES: &str = concat!(
    "New York,Los Angeles,Chicago,Houston,Phoenix,Philadelphia,San Antonio,San Diego,",
    "Dallas,Austin,Seattle,Denver,Boston,Portland,Atlanta,Miami,Minneapolis,Detroit,",
    "Nashville,Baltimore,London,Manchester,Paris,Lyon,Berlin,Munich,Hamburg,Madrid,",
    "Barcelona,Lisbon,Rome,Milan,Amsterdam,Rotterdam,Brussels,Vienna,Zurich,",
    "Stockholm,Oslo,Copenhagen,Toronto,Montreal,Sydney,Melbourne,Tokyo,Osaka,",
    "Singapore",
);

const COMPANIES: &str = concat!(
    "Acme Corp,Globex,Initech,Umbrella Health,Stark Industries,Wayne Enterprises,",
    "Hooli,Pied Piper,Soylent,Tyrell,Cyberdyne Systems,Wonka Foods,",
    "Vandelay Industries,Dunder Mifflin,Massive Dynamic,Oscorp,Aperture Science,",
    "Black Mesa,Gringotts,Monarch Solutions,Northwind Traders,Contoso,Fabrikam,",
    "Adventure Works,Tailspin Toys,Blue Yonder Airlines,Litware,Proseware,",
    "Wide World Importers,Alpine Ski House,Coho Winery,Fourth Coffee,",
    "Lucerne Publishing,Margie's Travel,Trey Research,Woodgrove Bank,",
    "Bluebird Logistics,Redwood Analytics,Silverline Media,Evergreen Labs",
);

/// The word lists above, split once.
struct Words {
    first_names: Vec<&'static str>,
    last_names: Vec<&'static str>,
    cities: Vec<&'static str>,
    companies: Vec<&'static str>,
}

static WORDS: LazyLock<Words> = LazyLock::new(|| Words {
    first_names: FIRST_NAMES.split(',').collect(),
    last_names: LAST_NAMES.split(',').collect(),
    cities: CITIES.split(',').collect(),
    companies: COMPANIES.split(',').collect(),
});

// ---------------------------------------------------------------------------------------------
// Small helpers: statistics, formatting, a deterministic random source, the test data.

fn millis(duration: Duration) -> String {
    let ms = duration.as_secs_f64() * 1e3;
    if ms < 10.0 {
        format!("{ms:.2} ms")
    } else if ms < 10_000.0 {
        format!("{ms:.0} ms")
    } else {
        format!("{:.1} s", duration.as_secs_f64())
    }
}

/// splitmix64: deterministic, cheap, good enough for test data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// A contact's five fields: name, email, phone, city, company.
fn contact(rng: &mut Rng) -> Map<String, Value> {
    let first = rng.pick(&WORDS.first_names);
    let last = rng.pick(&WORDS.last_names);
    let company = rng.pick(&WORDS.companies);
    let domain: String = company
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect::<String>()
        .to_lowercase();
    let mut fields = Map::new();
    fields.insert("name".into(), json!(format!("{first} {last}")));
    fields.insert(
        "email".into(),
        json!(format!(
            "{}.{}{}@{domain}.com",
            first.to_lowercase(),
            last.to_lowercase(),
            rng.below(100)
        )),
    );
    fields.insert(
        "phone".into(),
        json!(format!(
            "+1 ({}) 555-{:04}",
            200 + rng.below(800),
            rng.below(10_000)
        )),
    );
    fields.insert("city".into(), json!(rng.pick(&WORDS.cities)));
    fields.insert("company".into(), json!(company));
    fields
}

fn prefix(word: &str, chars: usize) -> String {
    word.chars().take(chars).collect()
}

// ---------------------------------------------------------------------------------------------
// Databases and hosts.

/// A tenant with one editor and a bearer token of theirs.
struct BenchTenant {
    tenant_id: String,
    user_id: String,
    token: String,
}

async fn create_tenant(state: &AppState, slug: &str) -> anyhow::Result<BenchTenant> {
    let tenancy = TenancyService::new(
        state.database.clone(),
        PasswordPolicy::default(),
        PasswordHasher::new(1),
        state.orchestrator.clone(),
    );
    let tenant = tenancy.create_tenant(slug, slug).await?;
    let user = tenancy
        .create_user(NewUser {
            tenant_slug: slug.into(),
            email: format!("editor@{slug}.example.com"),
            password: PASSWORD.into(),
            role: Role::Editor,
            user_type: UserType::User,
            first_name: "Bench".into(),
            last_name: "Editor".into(),
        })
        .await?;
    let (_, token_set) = state
        .auth
        .sessions
        .open(
            &TokenScope {
                user_id: user.user_id.clone(),
                tenant_id: tenant.tenant_id.clone(),
                workspace_id: None,
                role: "editor".into(),
                user_type: "user".into(),
            },
            &Default::default(),
        )
        .await?;
    Ok(BenchTenant {
        tenant_id: tenant.tenant_id,
        user_id: user.user_id,
        token: token_set.access_token,
    })
}

// ---------------------------------------------------------------------------------------------
// The log and the projections' checkpoints.

type LogPosition = (i64, i64);

/// The last event in reading order `(transaction_id, position)` (on SQLite the transaction id
/// is always 0, so this is the highest position).
async fn log_head(database: &Database) -> anyhow::Result<LogPosition> {
    let head: Option<LogPosition> = tessera_host::on_pool!(database, pool => sqlx::query_as(
        "SELECT transaction_id, position FROM events
         ORDER BY transaction_id DESC, position DESC LIMIT 1",
    )
    .fetch_optional(pool)
    .await)?;
    Ok(head.unwrap_or_default())
}

async fn checkpoints(database: &Database) -> anyhow::Result<BTreeMap<String, LogPosition>> {
    let rows: Vec<(String, i64, i64)> = tessera_host::on_pool!(database, pool => sqlx::query_as(
        "SELECT projection, transaction_id, position FROM projection_checkpoints",
    )
    .fetch_all(pool)
    .await)?;
    Ok(rows
        .into_iter()
        .map(|(name, transaction_id, position)| (name, (transaction_id, position)))
        .collect())
}

/// Polls until each of `projections` has applied the whole log as it is now; how long each
/// took from the call.
async fn wait_caught_up(
    database: &Database,
    projections: &[&str],
) -> anyhow::Result<BTreeMap<String, Duration>> {
    let started = Instant::now();
    let head = log_head(database).await?;
    let mut caught_up = BTreeMap::new();
    while caught_up.len() < projections.len() {
        let current = checkpoints(database).await?;
        for name in projections {
            let position = current.get(*name).copied().unwrap_or_default();
            if position >= head && !caught_up.contains_key(*name) {
                caught_up.insert((*name).to_owned(), started.elapsed());
            }
        }
        anyhow::ensure!(
            started.elapsed() < CATCH_UP_TIMEOUT,
            "projections did not catch up with the log ({head:?}) within {CATCH_UP_TIMEOUT:?}: {current:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(caught_up)
}

// ---------------------------------------------------------------------------------------------
// 1. Intentions over HTTP.

struct HttpRun {
    intentions_per_second: f64,
    latencies: Vec<Duration>,
    /// Wall-clock bounds of the measured window, in the storage format.
    window: (String, String),
    /// When the last client finished.
    finished: Instant,
}

struct ClientResult {
    latencies: Vec<Duration>,
    completed_in_window: u64,
    failures: Vec<String>,
}

/// One intention (`body`: its JSON); `Err` with what went wrong unless it was answered 200.
async fn post_intention(
    client: &reqwest::Client,
    url: &str,
    token: &str,
    body: bytes::Bytes,
) -> Result<(), String> {
    let response = client
        .post(url)
        .bearer_auth(token)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body)
        .send()
        .await
        .map_err(|error| format!("sending: {error}"))?;
    let status = response.status();
    let body = response
        .bytes()
        .await
        .map_err(|error| format!("reading the answer: {error}"))?;
    if status == 200 {
        Ok(())
    } else {
        Err(format!("{status}: {}", String::from_utf8_lossy(&body)))
    }
}

async fn http_intentions(server: &Server, token: &str) -> anyhow::Result<HttpRun> {
    let url = server.url("/core/api/v1/intentions");
    let started = Instant::now();
    let wall_started = chrono::Utc::now();
    let measure_from = started + WARM_UP;
    let measure_until = measure_from + WINDOW;
    let clients: Vec<_> = (0..WRITERS)
        .map(|client_index| {
            let (url, token) = (url.clone(), token.to_owned());
            tokio::spawn(async move {
                let client = reqwest::Client::new();
                let mut rng = Rng(0xC0FFEE + client_index as u64);
                // The bodies are made before the clock starts, so the load generator (which
                // shares the machine with the server) spends its time sending, not building JSON.
                let bodies: Vec<bytes::Bytes> = (0..BODIES_PER_CLIENT)
                    .map(|_| {
                        let body = json!({
                            "type": "entity.create",
                            "payload": { "family": "contact", "fields": contact(&mut rng) },
                        });
                        bytes::Bytes::from(body.to_string())
                    })
                    .collect();
                let mut next_body = bodies.iter().cycle();
                let mut result = ClientResult {
                    latencies: Vec::new(),
                    completed_in_window: 0,
                    failures: Vec::new(),
                };
                loop {
                    let body = next_body.next().expect("a cycle never ends").clone();
                    let sent = Instant::now();
                    if sent >= measure_until {
                        break;
                    }
                    if let Err(failure) = post_intention(&client, &url, &token, body).await {
                        result.failures.push(failure);
                        continue;
                    }
                    let done = Instant::now();
                    if sent >= measure_from {
                        result.latencies.push(done - sent);
                    }
                    if done >= measure_from && done < measure_until {
                        result.completed_in_window += 1;
                    }
                }
                result
            })
        })
        .collect();
    let mut latencies = Vec::new();
    let mut completed = 0;
    let mut failures = Vec::new();
    for client in clients {
        let result = client.await?;
        latencies.extend(result.latencies);
        completed += result.completed_in_window;
        failures.extend(result.failures);
    }
    let finished = Instant::now();
    if !failures.is_empty() {
        anyhow::bail!(
            "{} intention requests did not answer 200 (of {} measured); first: {}",
            failures.len(),
            latencies.len(),
            failures[0]
        );
    }
    let to_wall = |offset: Duration| {
        time::format(wall_started + chrono::Duration::from_std(offset).expect("short"))
    };
    Ok(HttpRun {
        intentions_per_second: completed as f64 / WINDOW.as_secs_f64(),
        latencies,
        window: (to_wall(WARM_UP), to_wall(WARM_UP + WINDOW)),
        finished,
    })
}

/// Mean delay from append to apply of a projection, from its counters (`projection_stats`).
async fn mean_projection_lag(database: &Database, projection: &str) -> anyhow::Result<Duration> {
    let (events, total_ms): (i64, f64) = tessera_host::on_pool!(database, pool => sqlx::query_as(
        "SELECT CAST(COALESCE(SUM(events_processed), 0) AS BIGINT),
                CAST(COALESCE(SUM(latency_ms_total), 0) AS DOUBLE PRECISION)
         FROM projection_stats WHERE projection = $1",
    )
    .bind(projection)
    .fetch_one(pool)
    .await)?;
    Ok(Duration::from_secs_f64(if events > 0 {
        total_ms / events as f64 / 1e3
    } else {
        0.0
    }))
}

// ---------------------------------------------------------------------------------------------
// 2. The ceiling: the server's writes, straight through the library.

/// Writes `contacts` as the intention writer writes a batch of `entity.create`s: one
/// transaction with the entity rows (multi-row upsert), their events (one sequence reservation,
/// multi-row inserts), each entity with its own intention id.
async fn write_contacts(
    database: &Database,
    tenant: &BenchTenant,
    contacts: Vec<Map<String, Value>>,
) -> anyhow::Result<()> {
    let now = time::now();
    let rows: Vec<(Entity, Vec<NewEvent>, EventContext, String)> = contacts
        .into_iter()
        .map(|fields| {
            let entity = contact_entity(fields, &now);
            let entries = entity_events(&entity, &now);
            let state = serde_json::to_string(&events::EntityState {
                family: entity.family_code.clone(),
                status: entity.status.clone(),
                fields: entity.fields.clone(),
                created_by: tenant.user_id.clone(),
                changed: entity.fields.keys().cloned().collect(),
            })
            .expect("entity states serialize");
            (entity, entries, event_context(tenant), state)
        })
        .collect();
    let entity_rows: Vec<entities::TenantEntity<'_>> = rows
        .iter()
        .map(|(entity, _, _, _)| entities::TenantEntity {
            tenant_id: &tenant.tenant_id,
            entity,
            created_by: &tenant.user_id,
        })
        .collect();
    let groups: Vec<events::AppendGroup<'_>> = rows
        .iter()
        .map(|(_, entries, context, state)| events::AppendGroup {
            context,
            events: entries,
            occurred_at: &now,
            entity_state: Some(state),
        })
        .collect();
    let mut tx = database.begin().await?;
    entities::upsert_many(&mut tx, &entity_rows).await?;
    events::append_groups(&mut tx, &groups).await?;
    tx.commit().await
}

fn contact_entity(fields: Map<String, Value>, now: &str) -> Entity {
    Entity {
        id: uuid::Uuid::now_v7().to_string(),
        family_code: "contact".into(),
        fields,
        status: "active".into(),
        created_at: now.to_owned(),
        updated_at: now.to_owned(),
    }
}

fn entity_events(entity: &Entity, now: &str) -> Vec<NewEvent> {
    let mut domain_events = Vec::with_capacity(1 + entity.fields.len());
    domain_events.push(DomainEvent::Created {
        entity_id: entity.id.clone(),
        family: entity.family_code.clone(),
        timestamp: now.to_owned(),
    });
    domain_events.extend(
        entity
            .fields
            .iter()
            .map(|(field, value)| DomainEvent::FieldSet {
                entity_id: entity.id.clone(),
                field: field.clone(),
                value: value.clone(),
                timestamp: now.to_owned(),
            }),
    );
    domain_events
        .iter()
        .map(DomainEvent::to_new_event)
        .collect()
}

fn event_context(tenant: &BenchTenant) -> EventContext {
    EventContext {
        tenant_id: tenant.tenant_id.clone(),
        actor_id: Some(tenant.user_id.clone()),
        correlation_id: Some(uuid::Uuid::new_v4().to_string()),
        intention_id: Some(uuid::Uuid::new_v4().to_string()),
        depth: 0,
        traceparent: None,
    }
}

struct CeilingRun {
    intentions_per_second: f64,
    latencies: Vec<Duration>,
}

/// `writers` tasks writing contacts for the window, `per_transaction` in each transaction.
/// With `signal`, the host's projection workers are woken after each commit, as the
/// intention writer does.
async fn raw_writes(
    database: &Database,
    tenant: &std::sync::Arc<BenchTenant>,
    signal: Option<EventSignal>,
    writers: usize,
    per_transaction: usize,
) -> anyhow::Result<CeilingRun> {
    let started = Instant::now();
    let measure_from = started + WARM_UP;
    let measure_until = measure_from + WINDOW;
    let writers: Vec<_> = (0..writers)
        .map(|writer| {
            let (database, tenant, signal) = (database.clone(), tenant.clone(), signal.clone());
            tokio::spawn(async move {
                let mut rng = Rng(0xBEEF + writer as u64);
                let mut latencies = Vec::new();
                let mut completed = 0u64;
                loop {
                    let contacts: Vec<_> =
                        (0..per_transaction).map(|_| contact(&mut rng)).collect();
                    let sent = Instant::now();
                    if sent >= measure_until {
                        break;
                    }
                    write_contacts(&database, &tenant, contacts).await?;
                    if let Some(signal) = &signal {
                        signal.appended();
                    }
                    let done = Instant::now();
                    if sent >= measure_from {
                        latencies.push(done - sent);
                    }
                    if done >= measure_from && done < measure_until {
                        completed += per_transaction as u64;
                    }
                }
                anyhow::Ok((latencies, completed))
            })
        })
        .collect();
    let mut latencies = Vec::new();
    let mut completed = 0;
    for writer in writers {
        let (writer_latencies, writer_completed) = writer.await??;
        latencies.extend(writer_latencies);
        completed += writer_completed;
    }
    Ok(CeilingRun {
        intentions_per_second: completed as f64 / WINDOW.as_secs_f64(),
        latencies,
    })
}

// ---------------------------------------------------------------------------------------------
// 4. Search.

/// Writes `total` contacts of `tenant` in transactions of [`SEED_BATCH`] (each entity with its
/// own intention id, as separate intentions would have), waking the projections after each.
async fn seed(state: AppState, tenant: BenchTenant, total: usize, seed: u64) -> anyhow::Result<()> {
    let mut rng = Rng(seed);
    let mut written = 0;
    while written < total {
        let batch = SEED_BATCH.min(total - written);
        let contacts: Vec<_> = (0..batch).map(|_| contact(&mut rng)).collect();
        write_contacts(&state.database, &tenant, contacts).await?;
        state.core.event_signal.appended();
        written += batch;
    }
    Ok(())
}

const QUERY_KINDS: [&str; 4] = [
    "last-name prefix (`gar`)",
    "first name (`jennifer`)",
    "`city:` prefix (`city:ber`)",
    "first name + last-name prefix (`jennifer gar`)",
];

/// The `i`-th query of the mix: its kind index (0..8: the four kinds, then the same with
/// `family=contact`) and its query parameters.
fn search_query(index: usize, rng: &mut Rng) -> (usize, Vec<(&'static str, String)>) {
    let kind = index % (2 * QUERY_KINDS.len());
    let q = match kind % QUERY_KINDS.len() {
        0 => prefix(rng.pick(&WORDS.last_names), 3),
        1 => rng.pick(&WORDS.first_names).to_owned(),
        2 => format!("city:{}", prefix(rng.pick(&WORDS.cities), 3)),
        _ => format!(
            "{} {}",
            rng.pick(&WORDS.first_names),
            prefix(rng.pick(&WORDS.last_names), 3)
        ),
    };
    let mut params = vec![("q", q)];
    if kind >= QUERY_KINDS.len() {
        params.push(("family", "contact".to_owned()));
    }
    (kind, params)
}

/// One search: its latency and the number of matches (`meta.total`).
async fn search_once(
    client: &reqwest::Client,
    url: &str,
    token: &str,
    params: &[(&'static str, String)],
) -> anyhow::Result<(Duration, u64)> {
    let sent = Instant::now();
    let response = client
        .get(url)
        .bearer_auth(token)
        .query(params)
        .send()
        .await?;
    let status = response.status();
    let body = response.bytes().await?;
    let latency = sent.elapsed();
    anyhow::ensure!(
        status == 200,
        "search {params:?} answered {status}: {}",
        String::from_utf8_lossy(&body)
    );
    let body: Value = serde_json::from_slice(&body)?;
    let total = body["meta"]["total"]
        .as_u64()
        .ok_or_else(|| anyhow::anyhow!("a search answer without meta.total: {body}"))?;
    Ok((latency, total))
}

/// Runs queries `first..first + count` of the mix from one client (a task on the runtime).
async fn search_client(
    url: String,
    token: String,
    first: usize,
    count: usize,
    seed: u64,
) -> anyhow::Result<Vec<(usize, Duration, u64)>> {
    tokio::spawn(async move {
        let client = reqwest::Client::new();
        let mut rng = Rng(seed);
        let mut samples = Vec::with_capacity(count);
        for index in first..first + count {
            let (kind, params) = search_query(index, &mut rng);
            let (latency, total) = search_once(&client, &url, &token, &params).await?;
            samples.push((kind, latency, total));
        }
        Ok(samples)
    })
    .await?
}

struct SearchRun {
    seeding: Duration,
    indexing: Duration,
    documents: i64,
    /// Per kind: latencies and match counts of the sequential run.
    per_kind: Vec<(Vec<Duration>, Vec<u64>)>,
    sequential: Vec<Duration>,
    concurrent: Vec<Duration>,
    concurrent_per_second: f64,
}

async fn search_benchmark(server: &Server) -> anyhow::Result<SearchRun> {
    let searched = create_tenant(&server.state, "searched").await?;
    let other = create_tenant(&server.state, "other").await?;
    let token = searched.token.clone();

    eprintln!(
        "  seeding {SEARCH_ENTITIES} + {OTHER_TENANT_ENTITIES} contacts through the library…"
    );
    let started = Instant::now();
    let mut tasks = Vec::new();
    let share = SEARCH_ENTITIES / SEED_TASKS;
    for task in 0..SEED_TASKS {
        let tenant = BenchTenant {
            tenant_id: searched.tenant_id.clone(),
            user_id: searched.user_id.clone(),
            token: String::new(),
        };
        let total = if task + 1 == SEED_TASKS {
            SEARCH_ENTITIES - share * (SEED_TASKS - 1)
        } else {
            share
        };
        tasks.push(tokio::spawn(seed(
            server.state.clone(),
            tenant,
            total,
            1_000 + task as u64,
        )));
    }
    tasks.push(tokio::spawn(seed(
        server.state.clone(),
        other,
        OTHER_TENANT_ENTITIES,
        2_000,
    )));
    for task in tasks {
        task.await??;
    }
    let seeding = started.elapsed();
    eprintln!(
        "  seeded in {:.1} s; waiting for the projections…",
        seeding.as_secs_f64()
    );
    let caught_up = wait_caught_up(server.database(), &["projector", "search"]).await?;
    let indexing = caught_up["search"];
    let documents: i64 = tessera_host::on_pool!(server.database(), pool => sqlx::query_scalar(
        "SELECT COUNT(*) FROM search_documents",
    )
    .fetch_one(pool)
    .await)?;
    eprintln!(
        "  indexed {documents} documents {:.1} s after seeding ended; querying…",
        indexing.as_secs_f64()
    );

    let url = server.url("/core/api/v1/search");
    search_client(url.clone(), token.clone(), 0, SEARCH_WARM_UP, 7).await?;
    let samples = search_client(url.clone(), token.clone(), 0, SEARCH_QUERIES, 42).await?;
    let mut per_kind = vec![(Vec::new(), Vec::new()); 2 * QUERY_KINDS.len()];
    let mut sequential = Vec::with_capacity(samples.len());
    for (kind, latency, total) in samples {
        per_kind[kind].0.push(latency);
        per_kind[kind].1.push(total);
        sequential.push(latency);
    }
    for (kind, (_, totals)) in per_kind.iter().enumerate() {
        anyhow::ensure!(
            kind % QUERY_KINDS.len() == 3 || totals.iter().any(|total| *total > 0),
            "the searches of kind {kind} found nothing: is the index complete?"
        );
    }

    let per_client = SEARCH_QUERIES / SEARCH_CLIENTS;
    let started = Instant::now();
    let clients: Vec<_> = (0..SEARCH_CLIENTS)
        .map(|client| {
            tokio::spawn(search_client(
                url.clone(),
                token.clone(),
                client * per_client,
                per_client,
                100 + client as u64,
            ))
        })
        .collect();
    let mut concurrent = Vec::new();
    for client in clients {
        concurrent.extend(client.await??.into_iter().map(|(_, latency, _)| latency));
    }
    let concurrent_per_second = concurrent.len() as f64 / started.elapsed().as_secs_f64();
    Ok(SearchRun {
        seeding,
        indexing,
        documents,
        per_kind,
        sequential,
        concurrent,
        concurrent_per_second,
    })
}

// ---------------------------------------------------------------------------------------------
// One backend.

struct BackendRun {
    backend: Backend,
    /// Average cores during the backend's run: (this process, everything else, stolen).
    cpu: Option<(f64, f64, f64)>,
    http: HttpRun,
    ceiling: CeilingRun,
    /// The same with one writer: the uncontended transaction.
    unbatched: CeilingRun,
    /// The same, on a host whose projection workers run (and are woken after each commit).
    ceiling_with_workers: CeilingRun,
    projector_caught_up: Duration,
    search_caught_up: Duration,
    projector_mean_lag: Duration,
    search_mean_lag: Duration,
    search: SearchRun,
    workflows: WorkflowPhase,
}

// ---------------------------------------------------------------------------------------------
// 5. Workflow runs.

/// The workflow phase: the HTTP load of phase 1 on a tenant with [`WORKFLOWS_PER_TENANT`]
/// active workflows, then the runner draining a backlog.
struct WorkflowPhase {
    intentions_per_second: f64,
    /// Runs completed inside the HTTP window, per second.
    runs_per_second: f64,
    /// Runs of the window's triggers, over the window's intentions (each triggers one).
    runs_per_intention: f64,
    /// `completed_at` of the run − `occurred_at` of its trigger, for triggers in the window.
    latencies: Vec<Duration>,
    /// From the last intention until the workflow worker had consumed the log.
    caught_up: Duration,
    /// Runs per second while draining [`DRAIN_INTENTIONS`] waiting intentions (the other
    /// projections draining too).
    drain_runs_per_second: f64,
}

/// Active workflows per tenant in the workflow phase.
const WORKFLOWS_PER_TENANT: usize = 10;
/// Intentions waiting when the drain measurement starts.
const DRAIN_INTENTIONS: usize = 20_000;

/// Ten active workflows on `entity.created` contacts, each for one tenth of the cities
/// (`city in […]`), setting a `segment` field from a template: every contact matches exactly
/// one, and all ten are evaluated for each.
async fn create_workflows(state: &AppState, tenant: &BenchTenant) -> anyhow::Result<()> {
    let cities = &WORDS.cities;
    let group_size = cities.len().div_ceil(WORKFLOWS_PER_TENANT);
    for (index, group) in cities.chunks(group_size).enumerate() {
        let body = json!({
            "name": format!("segment {index}"),
            "trigger_event": "entity.created",
            "family": "contact",
            "conditions": [{"field": "city", "operator": "in", "value": group}],
            "actions": [{"type": "update_field",
                         "config": {"field": "segment", "value": format!("{index}: {{{{entity.city}}}}")}}],
        });
        let definition = workflows::definition::parse_create(&body)
            .map_err(|errors| anyhow::anyhow!("invalid benchmark workflow: {errors:?}"))?;
        let workflow = workflows::service::create(
            &state.database,
            &tenant.tenant_id,
            &tenant.user_id,
            definition,
        )
        .await?;
        workflows::service::set_active(
            &state.database,
            &tenant.tenant_id,
            &workflow.id,
            true,
            state.config.workflows.max_active_per_tenant,
        )
        .await?;
    }
    Ok(())
}

/// `(trigger occurred_at, run completed_at)` of every run.
async fn run_times(database: &Database) -> anyhow::Result<Vec<(String, String)>> {
    Ok(tessera_host::on_pool!(database, pool => sqlx::query_as(
        "SELECT event_log.occurred_at, workflow_runs.completed_at
         FROM workflow_runs JOIN event_log ON event_log.id = workflow_runs.trigger_event_id",
    )
    .fetch_all(pool)
    .await)?)
}

async fn workflow_benchmark(
    backend: Backend,
    admin_url: Option<&str>,
) -> anyhow::Result<WorkflowPhase> {
    let (http, caught_up, times) =
        on_fresh_host(backend, admin_url, true, async |server: &Server| {
            let tenant = create_tenant(&server.state, "flows").await?;
            create_workflows(&server.state, &tenant).await?;
            let http = http_intentions(server, &tenant.token).await?;
            let polling_from = http.finished.elapsed();
            let caught_up = wait_caught_up(server.database(), &["workflow"]).await?["workflow"];
            let times = run_times(server.database()).await?;
            Ok((http, polling_from + caught_up, times))
        })
        .await?;
    let (from, until) = &http.window;
    let in_window = |at: &str| at >= from.as_str() && at < until.as_str();
    let mut latencies = Vec::new();
    let mut completed_in_window = 0u64;
    for (occurred_at, completed_at) in &times {
        if in_window(completed_at) {
            completed_in_window += 1;
        }
        if in_window(occurred_at) {
            let lag = time::parse(completed_at)? - time::parse(occurred_at)?;
            latencies.push(lag.to_std().unwrap_or_default());
        }
    }
    anyhow::ensure!(!latencies.is_empty(), "no workflow runs in the window");
    let intentions_in_window = http.intentions_per_second * WINDOW.as_secs_f64();

    // The drain: a backlog written by a host without workers, then a host with them.
    let database = BenchDatabase::create(backend, admin_url, "core").await?;
    let drained = async {
        let server = Server::start(&database, |config| config.projections.run_workers = false).await?;
        let tenant = create_tenant(&server.state, "backlog").await?;
        create_workflows(&server.state, &tenant).await?;
        let mut rng = Rng(0xF10);
        let mut written = 0;
        while written < DRAIN_INTENTIONS {
            let batch = MAX_BATCH.min(DRAIN_INTENTIONS - written);
            let contacts: Vec<_> = (0..batch).map(|_| contact(&mut rng)).collect();
            write_contacts(server.database(), &tenant, contacts).await?;
            written += batch;
        }
        server.shutdown().await?;
        let started = Instant::now();
        let server = Server::start(&database, |config| config.projections.run_workers = true).await?;
        let result = async {
            let mut waited = 0;
            loop {
                let runs: i64 = tessera_host::on_pool!(server.database(), pool => sqlx::query_scalar(
                    "SELECT COUNT(*) FROM workflow_runs",
                )
                .fetch_one(pool)
                .await)?;
                if runs as usize >= DRAIN_INTENTIONS {
                    break;
                }
                waited += 1;
                anyhow::ensure!(
                    started.elapsed() < CATCH_UP_TIMEOUT,
                    "the runner did not drain the backlog ({runs} runs after {waited} polls)"
                );
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            anyhow::Ok(DRAIN_INTENTIONS as f64 / started.elapsed().as_secs_f64())
        }
        .await;
        let stopped = server.shutdown().await;
        result.and_then(|rate| stopped.map(|()| rate))
    }
    .await;
    database.destroy().await;
    Ok(WorkflowPhase {
        intentions_per_second: http.intentions_per_second,
        runs_per_second: completed_in_window as f64 / WINDOW.as_secs_f64(),
        runs_per_intention: latencies.len() as f64 / intentions_in_window.max(1.0),
        latencies,
        caught_up,
        drain_runs_per_second: drained?,
    })
}

// ---------------------------------------------------------------------------------------------
// Running a backend.

/// Runs `phase` on a fresh database and host, then stops the host and removes the database
/// whatever happened.
async fn on_fresh_host<T>(
    backend: Backend,
    admin_url: Option<&str>,
    run_workers: bool,
    phase: impl AsyncFnOnce(&Server) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let database = BenchDatabase::create(backend, admin_url, "core").await?;
    let result = match Server::start(&database, |config| {
        config.projections.run_workers = run_workers
    })
    .await
    {
        Ok(server) => {
            let result = phase(&server).await;
            let stopped = server.shutdown().await;
            result.and_then(|value| stopped.map(|()| value))
        }
        Err(error) => Err(error),
    };
    database.destroy().await;
    result
}

async fn run_backend(backend: Backend, admin_url: Option<&str>) -> anyhow::Result<BackendRun> {
    let ticks_before = cpu_ticks();
    eprintln!(
        "{}: {WRITERS} HTTP clients for {WARM_UP:?} + {WINDOW:?}…",
        backend.name()
    );
    let (http, caught_up, projector_mean_lag, search_mean_lag) =
        on_fresh_host(backend, admin_url, true, async |server: &Server| {
            let tenant = create_tenant(&server.state, "http").await?;
            let http = http_intentions(server, &tenant.token).await?;
            // Measured from the last intention: add the moment between it and the first poll.
            let polling_from = http.finished.elapsed();
            let caught_up: BTreeMap<String, Duration> =
                wait_caught_up(server.database(), &["projector", "search"])
                    .await?
                    .into_iter()
                    .map(|(name, after_call)| (name, polling_from + after_call))
                    .collect();
            let projector_mean_lag = mean_projection_lag(server.database(), "projector").await?;
            let search_mean_lag = mean_projection_lag(server.database(), "search").await?;
            Ok((http, caught_up, projector_mean_lag, search_mean_lag))
        })
        .await?;
    eprintln!(
        "  {:.0} intentions/s; ceiling: {WRITERS} library writers…",
        http.intentions_per_second
    );
    let (ceiling, unbatched) = on_fresh_host(backend, admin_url, false, async |server: &Server| {
        let tenant = std::sync::Arc::new(create_tenant(&server.state, "ceiling").await?);
        let ceiling = raw_writes(server.database(), &tenant, None, 1, MAX_BATCH).await?;
        let unbatched = raw_writes(server.database(), &tenant, None, WRITERS, 1).await?;
        Ok((ceiling, unbatched))
    })
    .await?;
    eprintln!(
        "  {:.0} intentions/s ({:.0} one per transaction); the same with the projection workers running…",
        ceiling.intentions_per_second, unbatched.intentions_per_second
    );
    let ceiling_with_workers = on_fresh_host(backend, admin_url, true, async |server: &Server| {
        let tenant = std::sync::Arc::new(create_tenant(&server.state, "ceiling").await?);
        let signal = Some(server.state.core.event_signal.clone());
        raw_writes(server.database(), &tenant, signal, 1, MAX_BATCH).await
    })
    .await?;
    eprintln!(
        "  {:.0} intentions/s; search over {SEARCH_ENTITIES} entities…",
        ceiling_with_workers.intentions_per_second
    );
    let search = on_fresh_host(backend, admin_url, true, search_benchmark).await?;
    eprintln!(
        "  workflow runs: {WRITERS} HTTP clients with {WORKFLOWS_PER_TENANT} active workflows, \
         then a backlog of {DRAIN_INTENTIONS}…"
    );
    let workflows = workflow_benchmark(backend, admin_url).await?;
    eprintln!(
        "  {:.0} runs/s under load, {:.0} runs/s draining",
        workflows.runs_per_second, workflows.drain_runs_per_second
    );
    Ok(BackendRun {
        backend,
        cpu: cpu_share(ticks_before, cpu_ticks()),
        http,
        ceiling,
        unbatched,
        ceiling_with_workers,
        projector_caught_up: caught_up["projector"],
        search_caught_up: caught_up["search"],
        projector_mean_lag,
        search_mean_lag,
        search,
        workflows,
    })
}

/// `TESSERA_BENCH_HTTP_ONLY=1`: only phase 1 on SQLite, for iterating on the write path; prints
/// intentions/s, the request latency and the projection lag, and nothing for BENCHMARKS.md.
async fn http_only() -> anyhow::Result<()> {
    let ticks_before = cpu_ticks();
    let (http, projector_mean_lag) =
        on_fresh_host(Backend::Sqlite, None, true, async |server: &Server| {
            let tenant = create_tenant(&server.state, "http").await?;
            let http = http_intentions(server, &tenant.token).await?;
            wait_caught_up(server.database(), &["projector", "search"]).await?;
            let lag = mean_projection_lag(server.database(), "projector").await?;
            Ok((http, lag))
        })
        .await?;
    let mut latencies = http.latencies.clone();
    println!(
        "SQLite: {:.0} intentions/s; request p50 {} p99 {}; mean projector lag {}; {}",
        http.intentions_per_second,
        millis(percentile(&mut latencies, 0.5)),
        millis(percentile(&mut latencies, 0.99)),
        millis(projector_mean_lag),
        cpu_share(ticks_before, cpu_ticks()).map_or(String::new(), |(own, other, steal)| format!(
            "cores: this process {own:.2}, others {other:.2}, stolen {steal:.2}"
        )),
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The report.

fn report(runs: &mut [BackendRun]) -> String {
    let mut out = String::new();
    let names: Vec<&str> = runs.iter().map(|run| run.backend.name()).collect();
    let header = |out: &mut String, first: &str| {
        let _ = write!(out, "| {first} |");
        for name in &names {
            let _ = write!(out, " {name} |");
        }
        let _ = writeln!(out, " target |");
        let _ = write!(out, "|---|");
        for _ in &names {
            let _ = write!(out, "---|");
        }
        let _ = writeln!(out, "---|");
    };
    let row = |out: &mut String, name: &str, cells: Vec<String>, target: &str| {
        let _ = writeln!(out, "| {name} | {} | {target} |", cells.join(" | "));
    };

    let _ = writeln!(
        out,
        "### Writes: `POST /core/api/v1/intentions` (`entity.create`, 5 fields), {WRITERS} clients, {} s window after {} s warm-up",
        WINDOW.as_secs(),
        WARM_UP.as_secs()
    );
    let _ = writeln!(out);
    header(&mut out, "measurement");
    let sqlite_rate = runs
        .iter()
        .find(|run| run.backend == Backend::Sqlite)
        .map(|run| run.http.intentions_per_second);
    row(
        &mut out,
        "intentions/s over HTTP",
        runs.iter()
            .map(|run| count(run.http.intentions_per_second))
            .collect(),
        &match sqlite_rate {
            Some(rate) => format!(
                "≥ 3,000 on SQLite: {}",
                verdict(rate >= TARGET_SQLITE_INTENTIONS)
            ),
            None => "≥ 3,000 on SQLite".into(),
        },
    );
    row(
        &mut out,
        "request latency p50 / p99",
        runs.iter_mut()
            .map(|run| {
                format!(
                    "{} / {}",
                    millis(percentile(&mut run.http.latencies, 0.5)),
                    millis(percentile(&mut run.http.latencies, 0.99))
                )
            })
            .collect(),
        "",
    );
    row(
        &mut out,
        "ceiling: same rows via sqlx, 128 intentions per transaction (the writer's largest batch), one writer, no projection workers, intentions/s",
        runs.iter()
            .map(|run| count(run.ceiling.intentions_per_second))
            .collect(),
        "",
    );
    row(
        &mut out,
        "ceiling: transaction latency p50 / p99",
        runs.iter_mut()
            .map(|run| {
                format!(
                    "{} / {}",
                    millis(percentile(&mut run.ceiling.latencies, 0.5)),
                    millis(percentile(&mut run.ceiling.latencies, 0.99))
                )
            })
            .collect(),
        "",
    );
    row(
        &mut out,
        "same rows, one intention per transaction, 16 writers: intentions/s, transaction latency p50 / p99",
        runs.iter_mut()
            .map(|run| {
                let single = &mut run.unbatched;
                format!(
                    "{}, {} / {}",
                    count(single.intentions_per_second),
                    millis(percentile(&mut single.latencies, 0.5)),
                    millis(percentile(&mut single.latencies, 0.99))
                )
            })
            .collect(),
        "",
    );
    row(
        &mut out,
        "ceiling with the projection workers running (128 per transaction), intentions/s",
        runs.iter()
            .map(|run| count(run.ceiling_with_workers.intentions_per_second))
            .collect(),
        "",
    );
    row(
        &mut out,
        "HTTP / ceiling",
        runs.iter()
            .map(|run| {
                format!(
                    "{:.0} %",
                    100.0 * run.http.intentions_per_second / run.ceiling.intentions_per_second
                )
            })
            .collect(),
        "",
    );
    row(
        &mut out,
        "mean append → apply delay over the run, projector / search (`projection_stats`)",
        runs.iter()
            .map(|run| {
                format!(
                    "{} / {}",
                    millis(run.projector_mean_lag),
                    millis(run.search_mean_lag)
                )
            })
            .collect(),
        &format!(
            "< 1 s: {}",
            verdict(runs.iter().all(|run| {
                run.projector_mean_lag < TARGET_MEAN_LAG && run.search_mean_lag < TARGET_MEAN_LAG
            }))
        ),
    );
    row(
        &mut out,
        "projector caught up, after the last intention",
        runs.iter()
            .map(|run| millis(run.projector_caught_up))
            .collect(),
        "",
    );
    row(
        &mut out,
        "search projection caught up, after the last intention",
        runs.iter()
            .map(|run| millis(run.search_caught_up))
            .collect(),
        "",
    );
    let _ = writeln!(out);

    let _ = writeln!(
        out,
        "### Search: `GET /core/api/v1/search` over {} + {} contacts (two tenants)",
        count(SEARCH_ENTITIES as f64),
        count(OTHER_TENANT_ENTITIES as f64)
    );
    let _ = writeln!(out);
    header(&mut out, "measurement");
    row(
        &mut out,
        "seeding through the library (100 entities per transaction)",
        runs.iter()
            .map(|run| {
                format!(
                    "{:.1} s ({} entities/s)",
                    run.search.seeding.as_secs_f64(),
                    count(
                        (SEARCH_ENTITIES + OTHER_TENANT_ENTITIES) as f64
                            / run.search.seeding.as_secs_f64()
                    )
                )
            })
            .collect(),
        "",
    );
    row(
        &mut out,
        "search index caught up, after seeding ended",
        runs.iter()
            .map(|run| {
                format!(
                    "{:.1} s ({} documents)",
                    run.search.indexing.as_secs_f64(),
                    count(run.search.documents as f64)
                )
            })
            .collect(),
        "",
    );
    let sequential_p99s: Vec<Duration> = runs
        .iter_mut()
        .map(|run| percentile(&mut run.search.sequential, 0.99))
        .collect();
    row(
        &mut out,
        &format!(
            "latency p50 / p99, one client, {} queries of the mix",
            count(SEARCH_QUERIES as f64)
        ),
        runs.iter_mut()
            .zip(&sequential_p99s)
            .map(|(run, p99)| {
                format!(
                    "{} / {}",
                    millis(percentile(&mut run.search.sequential, 0.5)),
                    millis(*p99)
                )
            })
            .collect(),
        &format!(
            "p99 < 20 ms: {}",
            verdict(sequential_p99s.iter().all(|p99| *p99 < TARGET_SEARCH_P99))
        ),
    );
    row(
        &mut out,
        &format!("latency p50 / p99, {SEARCH_CLIENTS} concurrent clients"),
        runs.iter_mut()
            .map(|run| {
                format!(
                    "{} / {}",
                    millis(percentile(&mut run.search.concurrent, 0.5)),
                    millis(percentile(&mut run.search.concurrent, 0.99))
                )
            })
            .collect(),
        "",
    );
    row(
        &mut out,
        &format!("searches/s, {SEARCH_CLIENTS} concurrent clients"),
        runs.iter()
            .map(|run| count(run.search.concurrent_per_second))
            .collect(),
        "",
    );
    let _ = writeln!(out);

    let _ = writeln!(
        out,
        "Per query kind (one client; p50 / p99, median matches):"
    );
    let _ = writeln!(out);
    header(&mut out, "query");
    for kind in 0..2 * QUERY_KINDS.len() {
        let name = format!(
            "{}{}",
            QUERY_KINDS[kind % QUERY_KINDS.len()],
            if kind >= QUERY_KINDS.len() {
                " + `family=contact`"
            } else {
                ""
            }
        );
        let cells = runs
            .iter_mut()
            .map(|run| {
                let (latencies, totals) = &mut run.search.per_kind[kind];
                totals.sort_unstable();
                format!(
                    "{} / {}, {}",
                    millis(percentile(latencies, 0.5)),
                    millis(percentile(latencies, 0.99)),
                    count(totals[totals.len() / 2] as f64)
                )
            })
            .collect();
        row(&mut out, &name, cells, "");
    }
    let _ = writeln!(out);

    let _ = writeln!(
        out,
        "Workflow runs ({WORKFLOWS_PER_TENANT} active workflows on `entity.created` contacts, \
         each contact matching one; its action an `update_field` with a template): the HTTP load \
         above on that tenant, then a backlog of {DRAIN_INTENTIONS} waiting intentions drained by \
         a fresh host (the projector and search draining too):"
    );
    let _ = writeln!(out);
    header(&mut out, "");
    row(
        &mut out,
        "intentions/s over HTTP, workflows active",
        runs.iter()
            .map(|run| count(run.workflows.intentions_per_second))
            .collect(),
        "",
    );
    row(
        &mut out,
        "runs/s completed during the window (runs per intention)",
        runs.iter()
            .map(|run| {
                format!(
                    "{} ({:.2})",
                    count(run.workflows.runs_per_second),
                    run.workflows.runs_per_intention
                )
            })
            .collect(),
        "",
    );
    row(
        &mut out,
        "trigger → run completed p50 / p99",
        runs.iter_mut()
            .map(|run| {
                format!(
                    "{} / {}",
                    millis(percentile(&mut run.workflows.latencies, 0.5)),
                    millis(percentile(&mut run.workflows.latencies, 0.99))
                )
            })
            .collect(),
        "",
    );
    row(
        &mut out,
        "runner caught up after the last intention",
        runs.iter()
            .map(|run| millis(run.workflows.caught_up))
            .collect(),
        "",
    );
    row(
        &mut out,
        "runs/s draining the backlog",
        runs.iter()
            .map(|run| {
                let keeps_up =
                    run.workflows.drain_runs_per_second >= run.http.intentions_per_second;
                format!(
                    "{} ({})",
                    count(run.workflows.drain_runs_per_second),
                    verdict(keeps_up)
                )
            })
            .collect(),
        "≥ the intentions/s of the core benchmark",
    );
    let _ = writeln!(out);
    for run in runs.iter() {
        if let Some((own, other, steal)) = run.cpu {
            let _ = writeln!(
                out,
                "CPU during the {} part, average cores: this benchmark {own:.2}, other processes \
                 {other:.2}{}, stolen by the hypervisor {steal:.2}.",
                run.backend.name(),
                match run.backend {
                    Backend::Sqlite => " (anything else running on the machine)",
                    Backend::Postgres => " (the PostgreSQL server, and anything else running)",
                }
            );
        }
    }
    out
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let admin_url = std::env::var("TESSERA_TEST_POSTGRES_URL")
        .ok()
        .filter(|url| !url.is_empty());
    if std::env::var_os("TESSERA_BENCH_HTTP_ONLY").is_some() {
        return http_only().await;
    }
    let mut runs = vec![run_backend(Backend::Sqlite, None).await?];
    match &admin_url {
        Some(url) => runs.push(run_backend(Backend::Postgres, Some(url)).await?),
        None => eprintln!("TESSERA_TEST_POSTGRES_URL is not set: skipping PostgreSQL"),
    }
    println!(
        "Machine: {cores} cores (`available_parallelism`); server, projection workers and load \
         generators share one multi-thread tokio runtime ({cores} workers) on loopback; rate \
         limits off."
    );
    if admin_url.is_none() {
        println!();
        println!("PostgreSQL skipped: TESSERA_TEST_POSTGRES_URL is not set.");
    }
    println!();
    print!("{}", report(&mut runs));
    Ok(())
}
