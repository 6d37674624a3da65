//! What the host benchmarks share: the database under test (a temp data dir, and on
//! PostgreSQL a fresh database created and dropped), and an in-process host on loopback with
//! rate limits off, `tessera serve` started as a child process, and the percentiles, CPU
//! readings and number formats of the reports. Each benchmark uses the parts it needs.

#![allow(dead_code)]

pub mod engine_probes;

use std::ffi::OsString;
use std::io::{BufRead as _, BufReader, Lines};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, Command, Stdio};
use std::time::Duration;

use anyhow::Context as _;

use tessera_host::config::{Config, ServeArgs, StorageArgs};
use tessera_host::server::Application;
use tessera_host::state::AppState;
use tessera_host::storage::Database;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Self::Sqlite => "SQLite",
            Self::Postgres => "PostgreSQL",
        }
    }
}

/// A fresh data dir, and on PostgreSQL a fresh database; removed by [`BenchDatabase::destroy`].
pub struct BenchDatabase {
    pub data_dir: PathBuf,
    /// `None`: the embedded default in the data dir.
    pub url: Option<String>,
    /// The PostgreSQL server's URL and the database created on it.
    postgres: Option<(String, String)>,
}

impl BenchDatabase {
    /// `label` names the temp data dir (`tessera-bench-<label>-…`).
    pub async fn create(
        backend: Backend,
        admin_url: Option<&str>,
        label: &str,
    ) -> anyhow::Result<Self> {
        let data_dir =
            std::env::temp_dir().join(format!("tessera-bench-{label}-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&data_dir)?;
        match backend {
            Backend::Sqlite => Ok(Self {
                data_dir,
                url: None,
                postgres: None,
            }),
            Backend::Postgres => {
                let admin_url = admin_url.expect("a PostgreSQL URL").to_owned();
                let name = format!("tessera_bench_{}", uuid::Uuid::new_v4().simple());
                admin_execute(&admin_url, &format!("CREATE DATABASE {name}")).await?;
                let (server, _) = admin_url
                    .rsplit_once('/')
                    .ok_or_else(|| anyhow::anyhow!("a PostgreSQL URL ends with a database"))?;
                Ok(Self {
                    data_dir,
                    url: Some(format!("{server}/{name}")),
                    postgres: Some((admin_url, name)),
                })
            }
        }
    }

    pub fn plugins_dir(&self) -> PathBuf {
        self.data_dir.join("plugins")
    }

    pub async fn destroy(self) {
        let _ = std::fs::remove_dir_all(&self.data_dir);
        if let Some((admin_url, name)) = self.postgres
            && let Err(error) = admin_execute(
                &admin_url,
                &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
            )
            .await
        {
            eprintln!("could not drop the benchmark database {name}: {error:#}");
        }
    }
}

async fn admin_execute(admin_url: &str, sql: &str) -> anyhow::Result<()> {
    use sqlx::Connection as _;
    let mut admin = sqlx::PgConnection::connect(admin_url).await?;
    sqlx::Executor::execute(&mut admin, sqlx::AssertSqlSafe(sql.to_owned())).await?;
    admin.close().await?;
    Ok(())
}

/// A running host.
pub struct Server {
    pub address: std::net::SocketAddr,
    pub state: AppState,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl Server {
    /// A host on `database` (plugins from its data dir), rate limits off (the benchmarks
    /// measure the service, not the limiter), then `configure`d.
    pub async fn start(
        database: &BenchDatabase,
        configure: impl FnOnce(&mut Config),
    ) -> anyhow::Result<Self> {
        // Silent unless asked for, as the tests are (`TEST_LOG=warn`, or any other level).
        if let Some(level) = std::env::var_os("TEST_LOG") {
            static TRACING: std::sync::Once = std::sync::Once::new();
            TRACING.call_once(|| tessera_host::telemetry::init(&level.to_string_lossy()));
        }
        let args = ServeArgs {
            storage: StorageArgs {
                data_dir: database.data_dir.clone(),
                database_url: database.url.clone(),
                plugins_dir: database.plugins_dir(),
            },
            listen: "127.0.0.1:0".parse()?,
            public_url: None,
            max_body_bytes: 1024 * 1024,
        };
        let mut config = Config::from_serve_args(args)?;
        config.rate_limits.auth_per_minute = 0;
        config.rate_limits.read_per_minute = 0;
        config.rate_limits.write_per_minute = 0;
        configure(&mut config);
        let application = Application::build(config).await?;
        let address = application.local_addr();
        let state = application.state().clone();
        let stop = CancellationToken::new();
        let stopped = stop.clone();
        let task = tokio::spawn(application.run_until(async move { stopped.cancelled().await }));
        Ok(Self {
            address,
            state,
            stop,
            task,
        })
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }

    pub fn database(&self) -> &Database {
        &self.state.database
    }

    pub async fn shutdown(self) -> anyhow::Result<()> {
        self.stop.cancel();
        self.task.await?
    }
}

/// The `tessera` binary the benchmarks start as a child process: `TESSERA_BENCH_BINARY`, else
/// this package's.
pub fn tessera_binary() -> OsString {
    std::env::var_os("TESSERA_BENCH_BINARY").unwrap_or_else(|| env!("CARGO_BIN_EXE_tessera").into())
}

/// `tessera serve` on loopback (a free port) with `data_dir` and its `plugins` dir, on
/// `database_url` (else the data dir's SQLite): its log JSON at info on stderr (piped, for
/// [`spawn_serving`]), rate limits off, no metrics token and no OTLP export. The caller may add
/// to its environment.
pub fn serve_command(data_dir: &Path, database_url: Option<&str>) -> Command {
    let mut command = Command::new(tessera_binary());
    command
        .arg("serve")
        .arg("--listen")
        .arg("127.0.0.1:0")
        .arg("--data-dir")
        .arg(data_dir)
        .arg("--plugins-dir")
        .arg(data_dir.join("plugins"));
    if let Some(url) = database_url {
        command.arg("--database-url").arg(url);
    }
    command
        .env("TESSERA_LOG", "info")
        .env("TESSERA_LOG_FORMAT", "json")
        .env("TESSERA_RATE_LIMIT_AUTH", "0")
        .env("TESSERA_RATE_LIMIT_READ", "0")
        .env("TESSERA_RATE_LIMIT_WRITE", "0")
        .env_remove("TESSERA_METRICS_TOKEN")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    command
}

/// A `tessera serve` child process that serves.
pub struct Serving {
    pub child: Child,
    /// Where it listens (`127.0.0.1:<port>`).
    pub address: String,
    /// The rest of its log (JSON lines): keep reading it, or the host blocks once the pipe is
    /// full.
    pub log: Lines<BufReader<ChildStderr>>,
}

/// Spawns `command` (a `tessera serve` logging JSON at info to a piped stderr, as
/// [`serve_command`] makes it) and reads its log until it serves.
pub fn spawn_serving(command: &mut Command) -> anyhow::Result<Serving> {
    let mut child = command.spawn().context("starting tessera serve")?;
    let mut log = BufReader::new(child.stderr.take().context("its stderr")?).lines();
    let address = loop {
        let line = log
            .next()
            .context("tessera serve exited before serving")??;
        let Ok(entry) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        if entry["fields"]["message"] == "tessera is serving" {
            break entry["fields"]["address"]
                .as_str()
                .context("the address it serves on")?
                .to_owned();
        }
    };
    Ok(Serving {
        child,
        address,
        log,
    })
}

/// Sends `request` and returns the answer's `data`, or an error (with the body) unless it
/// answered `expected`.
pub async fn data_of(
    request: reqwest::RequestBuilder,
    expected: u16,
) -> anyhow::Result<serde_json::Value> {
    let response = request.send().await?;
    let status = response.status().as_u16();
    let text = response.text().await?;
    anyhow::ensure!(
        status == expected,
        "answered {status} (expected {expected}): {text}"
    );
    let answer: serde_json::Value =
        serde_json::from_str(&text).map_err(|error| anyhow::anyhow!("answered {text}: {error}"))?;
    Ok(answer["data"].clone())
}

/// A user of a [`provisioned_tenant`] with a session token of theirs.
pub struct BenchUser {
    pub user_id: String,
    pub email: String,
    pub token: String,
}

/// A tenant created through `TenancyService` (the orchestrator provisions it on every loaded
/// engine, which must all succeed) with one user per entry of `roles`, each provisioned the
/// same way and given a session token, as a login would.
pub async fn provisioned_tenant(
    state: &AppState,
    slug: &str,
    roles: &[tessera_host::tenancy::Role],
) -> anyhow::Result<(String, Vec<BenchUser>)> {
    use tessera_host::auth::password::{PasswordHasher, PasswordPolicy};
    use tessera_host::auth::sessions::TokenScope;
    use tessera_host::orchestrator::ProvisioningStatus;
    use tessera_host::tenancy::{NewUser, TenancyService, UserType};

    let tenancy = TenancyService::new(
        state.database.clone(),
        PasswordPolicy::default(),
        PasswordHasher::new(1),
        state.orchestrator.clone(),
    );
    let tenant = tenancy.create_tenant(slug, slug).await?;
    anyhow::ensure!(
        tenant.provisioning.status == ProvisioningStatus::Completed,
        "provisioning the tenant on the engines did not complete: {}",
        serde_json::to_string(&tenant.provisioning)?
    );
    let mut users = Vec::with_capacity(roles.len());
    for (index, role) in roles.iter().enumerate() {
        let email = format!("user{index}@{slug}.example.com");
        let user = tenancy
            .create_user(NewUser {
                tenant_slug: slug.into(),
                email: email.clone(),
                password: "Correct1horse".into(),
                role: *role,
                user_type: UserType::User,
                first_name: "Bench".into(),
                last_name: format!("User{index}"),
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
                    role: role.as_str().into(),
                    user_type: "user".into(),
                },
                &Default::default(),
            )
            .await?;
        users.push(BenchUser {
            user_id: user.user_id,
            email,
            token: token_set.access_token,
        });
    }
    Ok((tenant.tenant_id, users))
}

/// The `fraction` percentile (0.5, 0.99) of `samples`, which it sorts.
pub fn percentile(samples: &mut [Duration], fraction: f64) -> Duration {
    assert!(!samples.is_empty(), "a percentile of no samples");
    samples.sort_unstable();
    samples[((samples.len() - 1) as f64 * fraction).round() as usize]
}

/// A [`cpu_ticks`] reading.
pub type Ticks = Option<(u64, u64, u64, u64)>;

/// CPU time so far (Linux, in clock ticks): of the whole machine (busy, total), of this
/// process, and stolen by the hypervisor, to tell how much of the machine other work took
/// during the run.
pub fn cpu_ticks() -> Ticks {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let machine: Vec<u64> = stat
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .filter_map(|field| field.parse().ok())
        .collect();
    let total: u64 = machine.iter().take(8).sum();
    let steal = *machine.get(7)?;
    // idle and iowait are not busy; steal is time this machine did not get.
    let busy = total - machine.get(3)? - machine.get(4)? - steal;
    let process = ticks_of_process("self")?;
    Some((busy, total, process, steal))
}

/// CPU time (user and system, in clock ticks) of the process `/proc/<process>` names: `self`
/// or a pid.
pub fn ticks_of_process(process: &str) -> Option<u64> {
    let (user, system) = user_and_system_ticks(process)?;
    Some(user + system)
}

/// User and system CPU time (clock ticks) of the process `/proc/<process>` names, apart.
pub fn user_and_system_ticks(process: &str) -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{process}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    Some((fields.get(11)?.parse().ok()?, fields.get(12)?.parse().ok()?))
}

/// Average cores between two [`cpu_ticks`] readings: (this process, everything else, stolen
/// by the hypervisor).
pub fn cpu_share(before: Ticks, after: Ticks) -> Option<(f64, f64, f64)> {
    let (before, after) = (before?, after?);
    let cores = std::thread::available_parallelism().map_or(1, usize::from) as f64;
    let total = (after.1 - before.1).max(1) as f64;
    let own = after.2 - before.2;
    let other = (after.0 - before.0).saturating_sub(own);
    let steal = after.3 - before.3;
    Some((
        own as f64 / total * cores,
        other as f64 / total * cores,
        steal as f64 / total * cores,
    ))
}

/// `TESSERA_BENCH_ROUNDS` (a positive number), else `default`.
pub fn rounds_or(default: usize) -> usize {
    std::env::var("TESSERA_BENCH_ROUNDS")
        .ok()
        .and_then(|rounds| rounds.parse().ok())
        .filter(|&rounds: &usize| rounds > 0)
        .unwrap_or(default)
}

/// The median of `values` (the upper one of an even count).
pub fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// A number with thousands separators, e.g. `12,345` (rounded, negatives as 0).
pub fn count(value: f64) -> String {
    let digits = format!("{:.0}", value.max(0.0));
    let mut out = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// Whether a target was met, for the reports' tables.
pub fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "**missed**" }
}

/// `duration` in milliseconds, one decimal.
pub fn millis(duration: Duration) -> String {
    format!("{:.1} ms", duration.as_secs_f64() * 1e3)
}

/// `duration` in microseconds, one decimal.
pub fn micros(duration: Duration) -> String {
    format!("{:.1} µs", duration.as_secs_f64() * 1e6)
}

/// `bytes` in MiB, one decimal.
pub fn mebibytes(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// GET requests to `url` answered 204 by `connections` clients (each its own keep-alive
/// connection, with `token` as a bearer token when given) until `window` is over.
pub async fn answered_no_content(
    url: &str,
    token: Option<&str>,
    connections: usize,
    window: Duration,
) -> u64 {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    let completed = Arc::new(AtomicU64::new(0));
    let deadline = std::time::Instant::now() + window;
    let workers: Vec<_> = (0..connections)
        .map(|_| {
            let client = reqwest::Client::new();
            let (url, token, completed) =
                (url.to_owned(), token.map(str::to_owned), completed.clone());
            tokio::spawn(async move {
                while std::time::Instant::now() < deadline {
                    let mut request = client.get(&url);
                    if let Some(token) = &token {
                        request = request.bearer_auth(token);
                    }
                    if request
                        .send()
                        .await
                        .is_ok_and(|response| response.status() == 204)
                    {
                        completed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    for worker in workers {
        let _ = worker.await;
    }
    completed.load(Ordering::Relaxed)
}
