//! The seven engines' rows of the runtime benchmark: for each engine one representative read
//! and one representative write request, run by 16 concurrent clients (each its own
//! connection) against a host serving all seven engines, beside the native axum handler at
//! the same concurrency as the ceiling.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde_json::{Value, json};
use tessera_host::state::AppState;
use tessera_host::tenancy::Role;

use super::{BenchUser, data_of, provisioned_tenant};

/// Concurrent clients of every row.
pub const CLIENTS: usize = 16;
const WARM_UP: Duration = Duration::from_secs(1);
const WINDOW: Duration = Duration::from_secs(4);

/// Builds request `n` of a row (`n` makes names unique where the engine wants them so).
type MakeRequest = Arc<dyn Fn(&reqwest::Client, u64) -> reqwest::RequestBuilder + Send + Sync>;

/// One measured request kind.
pub struct Probe {
    pub engine: &'static str,
    pub what: String,
    make: MakeRequest,
    expected_status: u16,
}

/// What 16 clients achieved in the window.
pub struct Measured {
    pub requests_per_second: f64,
    pub p50: Duration,
    pub p99: Duration,
    /// Answers other than the expected status (none in a valid run).
    pub unexpected: u64,
}

impl Probe {
    /// A row: `make` builds request `n`, which must answer `expected_status`.
    pub fn new(
        engine: &'static str,
        what: impl Into<String>,
        expected_status: u16,
        make: impl Fn(&reqwest::Client, u64) -> reqwest::RequestBuilder + Send + Sync + 'static,
    ) -> Self {
        Self {
            engine,
            what: what.into(),
            make: Arc::new(make),
            expected_status,
        }
    }

    /// `GET url` with `token`, answering 204: the native handler's row.
    pub fn native(url: String, token: String) -> Self {
        Self::new(
            "native axum handler",
            "GET (token check, 204)",
            204,
            move |client, _| client.get(&url).bearer_auth(&token),
        )
    }

    /// Runs the probe with [`CLIENTS`] clients: a warm-up, then the window.
    pub async fn measure(&self) -> anyhow::Result<Measured> {
        let counter = Arc::new(AtomicU64::new(0));
        let unexpected = Arc::new(AtomicU64::new(0));
        let started = Instant::now();
        let measuring_from = started + WARM_UP;
        let deadline = measuring_from + WINDOW;
        let clients: Vec<_> = (0..CLIENTS)
            .map(|_| {
                let (make, counter, unexpected) =
                    (self.make.clone(), counter.clone(), unexpected.clone());
                let expected = self.expected_status;
                tokio::spawn(async move {
                    let client = reqwest::Client::new();
                    let mut latencies = Vec::new();
                    while Instant::now() < deadline {
                        let n = counter.fetch_add(1, Ordering::Relaxed);
                        let sent = Instant::now();
                        let status = make(&client, n).send().await.map(|r| r.status());
                        let took = sent.elapsed();
                        if sent >= measuring_from && Instant::now() < deadline {
                            match status {
                                Ok(status) if status.as_u16() == expected => latencies.push(took),
                                _ => {
                                    unexpected.fetch_add(1, Ordering::Relaxed);
                                }
                            }
                        }
                    }
                    latencies
                })
            })
            .collect();
        let mut latencies = Vec::new();
        for client in clients {
            latencies.extend(client.await?);
        }
        anyhow::ensure!(
            !latencies.is_empty(),
            "{} {}: no request answered {} in the window",
            self.engine,
            self.what,
            self.expected_status
        );
        latencies.sort_unstable();
        let at = |fraction: f64| latencies[((latencies.len() - 1) as f64 * fraction) as usize];
        Ok(Measured {
            requests_per_second: latencies.len() as f64 / WINDOW.as_secs_f64(),
            p50: at(0.5),
            p99: at(0.99),
            unexpected: unexpected.load(Ordering::Relaxed),
        })
    }
}

/// Waits until the host has no engine work due or running (event deliveries a write row
/// caused, e.g. the activity feed's), so that each row measures its own requests only.
pub async fn wait_for_idle_work(state: &AppState) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let now = tessera_host::storage::time::now();
        let busy: i64 = tessera_host::on_pool!(state.database, pool => sqlx::query_scalar(
            "SELECT COUNT(*) FROM engine_work WHERE status = 'running' OR (status = 'pending' AND due_at <= $1)",
        )
        .bind(&now)
        .fetch_one(pool)
        .await)?;
        if busy == 0 {
            return Ok(());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "{busy} items of engine work still due after 300 s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn id_of(data: &Value) -> anyhow::Result<String> {
    data["id"]
        .as_str()
        .map(str::to_owned)
        .with_context(|| format!("no id in {data}"))
}

/// A tenant on the host at `base` (all seven engines loaded) with an owner and an editor, the
/// objects the reads need, and the two requests of each engine, in the order of the table.
pub async fn seven_engines(state: &AppState, base: &str) -> anyhow::Result<Vec<Probe>> {
    let (_, users) = provisioned_tenant(state, "bench-engines", &[Role::Owner, Role::Editor])
        .await
        .context("a tenant on the seven engines")?;
    let [owner, editor]: [BenchUser; 2] =
        users.try_into().map_err(|_| anyhow::anyhow!("two users"))?;
    let client = reqwest::Client::new();
    let url = {
        let base = base.to_owned();
        move |path: &str| format!("{base}{path}")
    };
    let token = owner.token.clone();

    // The objects the reads read.
    let conversations = data_of(
        client
            .get(url("/chat/api/v1/conversations"))
            .bearer_auth(&token),
        200,
    )
    .await?;
    let conversation = id_of(&conversations[0]).context("the default conversation")?;
    let note = id_of(
        &data_of(
            client
                .post(url("/notes/api/v1/notes"))
                .bearer_auth(&token)
                .json(&json!({ "title": "Plan", "body": "# Plan\n\nShip it.", "tags": ["work"] })),
            201,
        )
        .await?,
    )?;
    let file_bytes = vec![0x5a_u8; 4096];
    let file = id_of(
        &data_of(
            client
                .post(url("/drive/api/v1/folders/root/files?name=seed.bin"))
                .bearer_auth(&token)
                .header("content-type", "application/octet-stream")
                .body(file_bytes.clone()),
            201,
        )
        .await?,
    )?;
    data_of(
        client
            .post(url("/mail/api/v1/messages"))
            .bearer_auth(&editor.token)
            .json(&json!({ "to": [owner.email], "subject": "Hello", "body": "A first mail." })),
        201,
    )
    .await?;

    let get = |path: String| {
        let token = token.clone();
        move |client: &reqwest::Client, _: u64| client.get(&path).bearer_auth(&token)
    };
    let post_json = |path: String, body: Value| {
        let token = token.clone();
        move |client: &reqwest::Client, _: u64| client.post(&path).bearer_auth(&token).json(&body)
    };
    let mut probes = vec![
        Probe::new(
            "chat",
            "GET 20 messages",
            200,
            get(url(&format!(
                "/chat/api/v1/conversations/{conversation}/messages?limit=20"
            ))),
        ),
        Probe::new(
            "chat",
            "POST a message",
            201,
            post_json(
                url(&format!(
                    "/chat/api/v1/conversations/{conversation}/messages"
                )),
                json!({ "body": "Hello, team." }),
            ),
        ),
        Probe::new(
            "notes",
            "GET a note",
            200,
            get(url(&format!("/notes/api/v1/notes/{note}"))),
        ),
        Probe::new(
            "notes",
            "POST a note",
            201,
            post_json(
                url("/notes/api/v1/notes"),
                json!({ "title": "Idea", "body": "Write it down.", "tags": ["ideas"] }),
            ),
        ),
        Probe::new(
            "drive",
            "GET a 4 KiB file's content",
            200,
            get(url(&format!("/drive/api/v1/files/{file}/content"))),
        ),
    ];
    {
        let (path, token) = (url("/drive/api/v1/folders/root/files"), token.clone());
        probes.push(Probe::new(
            "drive",
            "POST a 4 KiB file",
            201,
            move |client, n| {
                client
                    .post(format!("{path}?name=upload-{n}.bin"))
                    .bearer_auth(&token)
                    .header("content-type", "application/octet-stream")
                    .body(file_bytes.clone())
            },
        ));
    }
    probes.extend([
        Probe::new(
            "mail",
            "GET the inbox (20)",
            200,
            get(url("/mail/api/v1/folders/inbox/messages?limit=20")),
        ),
        Probe::new(
            "mail",
            "POST a mail to a tenant user",
            201,
            post_json(
                url("/mail/api/v1/messages"),
                json!({ "to": [editor.email], "subject": "Status", "body": "All good." }),
            ),
        ),
        Probe::new(
            "activity",
            "GET the feed (20)",
            200,
            get(url("/activity/api/v1/feed?limit=20")),
        ),
        Probe::new(
            "activity",
            "POST seen",
            200,
            post_json(url("/activity/api/v1/feed/seen"), json!({})),
        ),
        Probe::new(
            "usermanager",
            "GET the directory (20)",
            200,
            get(url("/usermanager/api/v1/users?limit=20")),
        ),
    ]);
    {
        let (path, token) = (
            url(&format!("/usermanager/api/v1/users/{}", owner.user_id)),
            token.clone(),
        );
        probes.push(Probe::new(
            "usermanager",
            "PATCH a profile",
            200,
            move |client, n| {
                client
                    .patch(&path)
                    .bearer_auth(&token)
                    .json(&json!({ "title": format!("Engineer {n}") }))
            },
        ));
    }
    probes.extend([
        Probe::new(
            "voip",
            "GET call history (20)",
            200,
            get(url("/voip/api/v1/calls?limit=20")),
        ),
        Probe::new(
            "voip",
            "POST a call",
            201,
            post_json(
                url("/voip/api/v1/calls"),
                json!({ "participant_ids": [editor.user_id] }),
            ),
        ),
    ]);
    Ok(probes)
}

/// The core's write at the same concurrency, in the same run: `POST /core/api/v1/intentions`
/// (`entity.create` of a contact with five fields, as the core benchmark writes), the rate an
/// engine write is compared with.
pub async fn core_write(state: &AppState, base: &str) -> anyhow::Result<Probe> {
    let (_, users) = provisioned_tenant(state, "bench-core", &[Role::Editor])
        .await
        .context("a tenant for the core's writes")?;
    let (url, token) = (
        format!("{base}/core/api/v1/intentions"),
        users[0].token.clone(),
    );
    Ok(Probe::new(
        "core",
        "POST an intention (entity.create, 5 fields)",
        200,
        move |client, n| {
            client
                .post(&url)
                .bearer_auth(&token)
                .json(&contact_intention(n))
        },
    ))
}

/// The body of the `n`th contact the core benchmarks write: an `entity.create` intention of a
/// contact with five fields.
pub fn contact_intention(n: u64) -> Value {
    json!({
        "type": "entity.create",
        "payload": { "family": "contact", "fields": {
            "name": format!("Ada Lovelace {n}"),
            "email": format!("ada{n}@example.com"),
            "phone": "+1 (415) 555-0100",
            "company": "Analytical Engines",
            "city": "London",
        } },
    })
}
