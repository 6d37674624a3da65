//! Test harness: fresh databases, `spawn_app`, the `TestApp` client, and the real binary.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use axum::Router;
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};
use tessera_host::config::{Config, ServeArgs, StorageArgs};
use tessera_host::http::extract::ApiJson;
use tessera_host::http::{ApiResult, ValidationErrors, envelope};
use tessera_host::server::Application;
use tessera_host::state::AppState;
use tessera_host::storage::{Database, DatabaseConfig};
use tokio_util::sync::CancellationToken;

/// The two databases every storage-touching test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// Declares a test that runs once on SQLite and once on PostgreSQL:
/// `database_test!(name, |backend| async move { … })` makes `name::sqlite` and
/// `name::postgres`. Without `TESSERA_TEST_POSTGRES_URL` the PostgreSQL half says so and
/// returns, except under CI (`CI` set), where a missing server is a failure.
#[macro_export]
macro_rules! database_test {
    ($name:ident, |$backend:ident| $body:expr) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                let $backend = $crate::helpers::Backend::Sqlite;
                $body.await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                if !$crate::helpers::postgres_available() {
                    return;
                }
                let $backend = $crate::helpers::Backend::Postgres;
                $body.await
            }
        }
    };
}

pub fn postgres_url() -> Option<String> {
    std::env::var("TESSERA_TEST_POSTGRES_URL")
        .ok()
        .filter(|url| !url.is_empty())
}

pub fn postgres_available() -> bool {
    if postgres_url().is_some() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "TESSERA_TEST_POSTGRES_URL must be set in CI: the PostgreSQL half of the suite cannot be skipped there"
    );
    eprintln!("TESSERA_TEST_POSTGRES_URL is not set: skipping the PostgreSQL half of this test");
    false
}

/// A fresh, empty database (and data dir) for one test, removed when dropped.
pub struct TestDatabase {
    pub data_dir: PathBuf,
    pub url: String,
    postgres_name: Option<String>,
}

impl TestDatabase {
    pub async fn new(backend: Backend) -> Self {
        let data_dir = std::env::temp_dir().join(format!("tessera-test-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&data_dir).unwrap();
        match backend {
            Backend::Sqlite => Self {
                url: DatabaseConfig::default_url(&data_dir),
                data_dir,
                postgres_name: None,
            },
            Backend::Postgres => {
                let admin_url = postgres_url().expect("TESSERA_TEST_POSTGRES_URL");
                let name = format!("tessera_test_{}", uuid::Uuid::new_v4().simple());
                let mut admin = connect_postgres(&admin_url).await;
                sqlx::Executor::execute(
                    &mut admin,
                    sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")),
                )
                .await
                .expect("creating a test database");
                let (prefix, _) = admin_url
                    .rsplit_once('/')
                    .expect("a PostgreSQL URL with a database");
                Self {
                    url: format!("{prefix}/{name}"),
                    data_dir,
                    postgres_name: Some(name),
                }
            }
        }
    }

    /// The same database for another host: its own (fresh) data dir, and owning nothing, so
    /// dropping it leaves the database to `self`.
    pub fn for_another_host(&self) -> Self {
        let data_dir = std::env::temp_dir().join(format!("tessera-test-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&data_dir).unwrap();
        // Hosts sharing a database share the service secret (it seals the signing keys).
        if let Ok(secret) = std::fs::read(self.data_dir.join("service_secret")) {
            std::fs::write(data_dir.join("service_secret"), secret).unwrap();
        }
        Self {
            data_dir,
            url: self.url.clone(),
            postgres_name: None,
        }
    }

    /// An empty stand-in that owns nothing (used when moving a database out of a `TestApp`).
    fn placeholder() -> Self {
        Self {
            data_dir: PathBuf::from("/nonexistent/tessera-placeholder"),
            url: String::new(),
            postgres_name: None,
        }
    }

    pub fn database_config(&self) -> DatabaseConfig {
        DatabaseConfig {
            url: self.url.clone(),
            data_dir: self.data_dir.clone(),
            max_connections: 8,
            sqlite_wal_max_bytes: tessera_host::storage::DEFAULT_SQLITE_WAL_MAX_BYTES,
        }
    }

    /// A direct handle on the test database, for assertions on what was stored.
    pub async fn connect(&self) -> Database {
        Database::connect(&self.database_config())
            .await
            .expect("connecting to the test database")
    }
}

async fn connect_postgres(url: &str) -> sqlx::PgConnection {
    <sqlx::PgConnection as sqlx::Connection>::connect(url)
        .await
        .expect("connecting to PostgreSQL")
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.data_dir);
        if let (Some(name), Some(admin_url)) = (self.postgres_name.take(), postgres_url()) {
            // Drop runs outside async context: use a short-lived runtime on its own thread.
            let _ = std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                runtime.block_on(async {
                    let mut admin = connect_postgres(&admin_url).await;
                    let _ = sqlx::Executor::execute(
                        &mut admin,
                        sqlx::AssertSqlSafe(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")),
                    )
                    .await;
                });
            })
            .join();
        }
    }
}

/// The largest body the test server accepts, small so the 413 test sends little.
pub const TEST_BODY_LIMIT: usize = 64 * 1024;

/// A running host on a free port, with one helper per endpoint.
pub struct TestApp {
    pub address: SocketAddr,
    pub client: reqwest::Client,
    pub database: TestDatabase,
    state: AppState,
    stop: CancellationToken,
    server: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
}

pub async fn spawn_app(backend: Backend) -> TestApp {
    spawn_app_with(backend, AppOptions::default()).await
}

/// A host with the named test components in its plugins dir.
pub async fn spawn_app_with_plugins(backend: Backend, plugins: &[&'static str]) -> TestApp {
    spawn_app_with(
        backend,
        AppOptions {
            plugins: plugins.to_vec(),
            ..AppOptions::default()
        },
    )
    .await
}

/// What a test may change about the host it starts.
#[derive(Default)]
pub struct AppOptions {
    /// Test components (crate names under `tests/components/`) installed in the plugins dir.
    pub plugins: Vec<&'static str>,
    /// Deadline of engine `handle` calls (default 5 s).
    pub handle_timeout: Option<std::time::Duration>,
    /// Reuse this data dir and database instead of a fresh one.
    pub database: Option<TestDatabase>,
    /// Keep compiled components in the data dir, as in production. Otherwise tests share one
    /// artifact cache, so each component is compiled once per machine rather than per test.
    pub private_artifact_cache: bool,
    /// Changes the configuration last, before the host is built (e.g. the settings a test
    /// would otherwise pass through environment variables, which are shared by all tests).
    #[allow(clippy::type_complexity)]
    pub configure: Option<Box<dyn FnOnce(&mut Config) + Send>>,
}

impl AppOptions {
    /// A host without rate limits, for tests that write a lot.
    pub fn unlimited() -> Self {
        Self {
            configure: Some(Box::new(without_rate_limits)),
            ..Self::default()
        }
    }

    /// A host without rate limits, with `configure` changing the configuration after that.
    pub fn unlimited_and(configure: impl FnOnce(&mut Config) + Send + 'static) -> Self {
        Self {
            configure: Some(Box::new(|config| {
                without_rate_limits(config);
                configure(config);
            })),
            ..Self::default()
        }
    }
}

/// A host with the first-party engines `engines` (built from `engines/`) in its plugins dir,
/// no rate limits, and `configure` changing the configuration after that.
pub async fn spawn_app_with_engines(
    backend: Backend,
    engines: &[&str],
    configure: impl FnOnce(&mut Config) + Send + 'static,
) -> TestApp {
    let database = TestDatabase::new(backend).await;
    crate::components::install_engines(&database.data_dir.join("plugins"), engines);
    spawn_app_with(
        backend,
        AppOptions {
            database: Some(database),
            ..AppOptions::unlimited_and(configure)
        },
    )
    .await
}

/// Bounds engine storage scans: at most `page` entries per scan and `budget` per engine call
/// (`TESSERA_ENGINE_SCAN_PAGE`, `TESSERA_ENGINE_SCAN_BUDGET`).
pub fn limit_engine_scans(config: &mut Config, page: u32, budget: u64) {
    config.engine_scans.page = page;
    config.engine_scans.budget = budget;
}

/// Turns the read and write rate limits off.
pub fn without_rate_limits(config: &mut Config) {
    config.rate_limits.read_per_minute = 0;
    config.rate_limits.write_per_minute = 0;
}

/// A host without rate limits that serves HTTP only: its projection workers do not run, so
/// the events it logs wait for another host (or a child `tessera serve`) to apply them.
pub async fn spawn_http_only(backend: Backend) -> TestApp {
    spawn_app_with(
        backend,
        AppOptions::unlimited_and(|config| config.projections.run_workers = false),
    )
    .await
}

pub async fn spawn_app_with(backend: Backend, options: AppOptions) -> TestApp {
    if std::env::var_os("TEST_LOG").is_some() {
        tessera_host::telemetry::init("debug");
    }
    let database = match options.database {
        Some(database) => database,
        None => TestDatabase::new(backend).await,
    };
    crate::components::install(&database.data_dir.join("plugins"), &options.plugins);
    let args = ServeArgs {
        storage: StorageArgs {
            data_dir: database.data_dir.clone(),
            database_url: Some(database.url.clone()),
            plugins_dir: database.data_dir.join("plugins"),
        },
        listen: "127.0.0.1:0".parse().unwrap(),
        public_url: None,
        max_body_bytes: TEST_BODY_LIMIT,
    };
    let mut config = Config::from_serve_args(args).expect("test configuration");
    if !options.private_artifact_cache {
        config.runtime.cache_dir = std::env::temp_dir().join("tessera-test-artifact-cache");
    }
    if let Some(timeout) = options.handle_timeout {
        config.runtime.handle_timeout = timeout;
    }
    if let Some(configure) = options.configure {
        configure(&mut config);
    }
    let application = Application::build_with_routes(config, test_routes())
        .await
        .expect("building the application");
    let address = application.local_addr();
    let state = application.state().clone();
    let stop = CancellationToken::new();
    let stopped = stop.clone();
    let server = tokio::spawn(application.run_until(async move { stopped.cancelled().await }));
    TestApp {
        address,
        client: reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap(),
        database,
        state,
        stop,
        server: Some(server),
    }
}

/// Routes only the tests mount, to exercise the conventions layer with a JSON body and a panic.
fn test_routes() -> Router<AppState> {
    #[derive(Deserialize)]
    struct Echo {
        name: Option<String>,
        count: Option<u32>,
    }
    async fn echo(ApiJson(body): ApiJson<Echo>) -> ApiResult<axum::response::Response> {
        let mut errors = ValidationErrors::new();
        let name = body.name.unwrap_or_default();
        if name.is_empty() {
            errors.add("name", "required");
        } else if name.len() > 10 {
            errors.add("name", "max:10");
        }
        errors.into_result()?;
        Ok(envelope::ok(json!({ "name": name, "count": body.count })))
    }
    async fn panics() -> &'static str {
        panic!("a deliberate test panic")
    }
    Router::new()
        .route("/test/echo", post(echo))
        .route("/test/panic", get(panics))
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.address, path)
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.client.get(self.url(path)).send().await.expect("GET")
    }

    pub async fn post_json(&self, path: &str, body: &Value) -> reqwest::Response {
        self.client
            .post(self.url(path))
            .json(body)
            .send()
            .await
            .expect("POST")
    }

    pub async fn post_raw(
        &self,
        path: &str,
        content_type: &str,
        body: impl Into<reqwest::Body>,
    ) -> reqwest::Response {
        self.client
            .post(self.url(path))
            .header("content-type", content_type)
            .body(body)
            .send()
            .await
            .expect("POST")
    }

    pub async fn auth_health(&self) -> reqwest::Response {
        self.get("/auth/api/health").await
    }

    pub async fn core_health(&self) -> reqwest::Response {
        self.get("/core/api/health").await
    }

    pub async fn extended_health(&self) -> reqwest::Response {
        self.get("/core/api/health/extended").await
    }

    /// The extended health report's body, its status code checked against it: 503 exactly
    /// when the overall status is `down` (as before the workers' first report), else 200.
    pub async fn extended_health_report(&self) -> Value {
        let response = self.extended_health().await;
        let code = response.status().as_u16();
        let body: Value = response.json().await.expect("extended health JSON");
        let expected = if body["status"] == "down" { 503 } else { 200 };
        assert_eq!(code, expected, "{body}");
        body
    }

    /// `GET /livez`.
    pub async fn liveness(&self) -> reqwest::Response {
        self.get("/livez").await
    }

    /// `GET /readyz`.
    pub async fn readiness(&self) -> reqwest::Response {
        self.get("/readyz").await
    }

    pub async fn openapi(&self) -> Value {
        self.get("/api/openapi.json")
            .await
            .json()
            .await
            .expect("OpenAPI JSON")
    }

    /// Runs `tessera admin …` against this app's database.
    pub fn admin(&self, arguments: &[&str]) -> CliOutput {
        run_admin(&self.database, arguments)
    }

    /// The running host's shared state (its database handle, worker registry, …).
    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// An access token for a user in a tenant with a role, from a real session (as a login
    /// would open), so the bearer extractor accepts it until the session ends. The bearer
    /// check also reads the member's current role, so the user is made a member with `role`
    /// first (tenant and user rows included, for made-up ids); an existing membership stays.
    pub async fn token(&self, tenant_id: &str, user_id: &str, role: &str) -> String {
        self.token_of(tenant_id, user_id, role, "user").await
    }

    /// [`Self::token`] with a token type (`user`, `guest` or `agent`).
    pub async fn token_of(
        &self,
        tenant_id: &str,
        user_id: &str,
        role: &str,
        user_type: &str,
    ) -> String {
        self.ensure_member(tenant_id, user_id, role).await;
        let scope = tessera_host::auth::sessions::TokenScope {
            user_id: user_id.into(),
            tenant_id: tenant_id.into(),
            workspace_id: None,
            role: role.into(),
            user_type: user_type.into(),
        };
        let (_, token_set) = self
            .state
            .auth
            .sessions
            .open(&scope, &Default::default())
            .await
            .expect("opening a session");
        token_set.access_token
    }

    async fn ensure_member(&self, tenant_id: &str, user_id: &str, role: &str) {
        let database = &self.state.database;
        let now = tessera_host::storage::time::now();
        let statements: [(&'static str, [String; 3]); 3] = [
            (
                "INSERT INTO tenants (id, slug, name, created_at) VALUES ($1, $2, $3, $4)
                 ON CONFLICT DO NOTHING",
                [
                    tenant_id.into(),
                    format!("member-test-{tenant_id}"),
                    tenant_id.into(),
                ],
            ),
            (
                "INSERT INTO users (id, email, password_hash, user_type, created_at, updated_at)
                 VALUES ($1, $2, $3, 'user', $4, $4) ON CONFLICT DO NOTHING",
                [user_id.into(), format!("{user_id}@member.test"), "!".into()],
            ),
            (
                "INSERT INTO memberships (user_id, tenant_id, role, created_at)
                 VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
                // A made-up role (the token keeps it) needs a real one in the membership.
                [
                    user_id.into(),
                    tenant_id.into(),
                    match role {
                        "owner" | "editor" => role.into(),
                        _ => "viewer".into(),
                    },
                ],
            ),
        ];
        for (sql, [first, second, third]) in statements {
            tessera_host::on_pool!(database, pool => sqlx::query(sql)
                .bind(&first)
                .bind(&second)
                .bind(&third)
                .bind(&now)
                .execute(pool)
                .await
                .map(drop))
            .expect("making a test member");
        }
    }

    pub async fn get_as(&self, path: &str, token: &str) -> reqwest::Response {
        self.client
            .get(self.url(path))
            .bearer_auth(token)
            .send()
            .await
            .expect("GET")
    }

    pub async fn put_as(&self, path: &str, token: &str, body: &'static str) -> reqwest::Response {
        self.client
            .put(self.url(path))
            .bearer_auth(token)
            .body(body)
            .send()
            .await
            .expect("PUT")
    }

    /// The `X-Service-Signature` of an internal call (CONTRACT §5), made now with the service
    /// secret: `method` and `path` (with its query string) are the request's.
    pub fn internal_signature(&self, method: &str, path: &str, body: &[u8]) -> String {
        tessera_host::http::signature::sign_request(
            self.state.service_secret.expose().as_bytes(),
            chrono::Utc::now().timestamp(),
            method,
            path,
            body,
        )
    }

    /// POSTs `body` to an internal endpoint, signed now with the service secret (CONTRACT §5).
    pub async fn post_signed(&self, path: &str, body: &Value) -> reqwest::Response {
        let body = body.to_string();
        let signature = self.internal_signature("POST", path, body.as_bytes());
        self.client
            .post(self.url(path))
            .header("content-type", "application/json")
            .header("x-service-signature", signature)
            .body(body)
            .send()
            .await
            .expect("POST")
    }

    /// POSTs `body` as JSON with a bearer token.
    pub async fn post_as(&self, path: &str, token: &str, body: &Value) -> reqwest::Response {
        self.client
            .post(self.url(path))
            .bearer_auth(token)
            .json(body)
            .send()
            .await
            .expect("POST")
    }

    /// PATCHes `body` as JSON with a bearer token.
    pub async fn patch_as(&self, path: &str, token: &str, body: &Value) -> reqwest::Response {
        self.client
            .patch(self.url(path))
            .bearer_auth(token)
            .json(body)
            .send()
            .await
            .expect("PATCH")
    }

    /// DELETEs with a bearer token.
    pub async fn delete_as(&self, path: &str, token: &str) -> reqwest::Response {
        self.client
            .delete(self.url(path))
            .bearer_auth(token)
            .send()
            .await
            .expect("DELETE")
    }

    /// GETs an internal endpoint, signed now over an empty body (CONTRACT §5).
    pub async fn get_signed(&self, path: &str) -> reqwest::Response {
        let signature = self.internal_signature("GET", path, b"");
        self.client
            .get(self.url(path))
            .header("x-service-signature", signature)
            .send()
            .await
            .expect("GET")
    }

    /// Creates a tenant (with its default families) through the CLI; returns its id.
    pub fn create_tenant(&self, slug: &str) -> String {
        let tenant = self
            .admin(&["create-tenant", "--slug", slug, "--name", slug])
            .json();
        tenant["tenant_id"].as_str().unwrap().to_owned()
    }

    /// `POST /core/api/v1/intentions` with `{type, payload}`.
    pub async fn intention(&self, token: &str, kind: &str, payload: Value) -> reqwest::Response {
        self.post_as(
            "/core/api/v1/intentions",
            token,
            &json!({ "type": kind, "payload": payload }),
        )
        .await
    }

    /// Creates an entity; returns the processed intention's `data`.
    pub async fn create_entity(&self, token: &str, family: &str, fields: Value) -> Value {
        let body = json_with_status(
            self.intention(
                token,
                "entity.create",
                json!({ "family": family, "fields": fields }),
            )
            .await,
            200,
        )
        .await;
        body["data"].clone()
    }

    /// The single integer a query answers (`COUNT(*)` and the like), straight from the
    /// database.
    pub async fn scalar(&self, sql: &'static str) -> i64 {
        let database = &self.state().database;
        tessera_host::on_pool!(database, pool => sqlx::query_scalar(sql).fetch_one(pool).await.unwrap())
    }

    /// Runs one statement straight on the database (moving a stored time into the past, say);
    /// returns the rows it changed.
    pub async fn execute(&self, sql: &'static str) -> u64 {
        let database = &self.state().database;
        tessera_host::on_pool!(database, pool => sqlx::query(sql).execute(pool).await.unwrap().rows_affected())
    }

    /// Stops the server and hands back its database (to start another host on it).
    pub async fn stop_keeping_database(mut self) -> TestDatabase {
        self.stop.cancel();
        if let Some(server) = self.server.take() {
            server
                .await
                .expect("server task")
                .expect("server stopped cleanly");
        }
        let placeholder = TestDatabase::placeholder();
        std::mem::replace(&mut self.database, placeholder)
    }

    pub async fn stop(mut self) {
        self.stop.cancel();
        if let Some(server) = self.server.take() {
            server
                .await
                .expect("server task")
                .expect("server stopped cleanly");
        }
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Polls `check` every 20 ms until it returns `Some`, for at most `seconds`; panics with
/// `what` otherwise. For results of asynchronous work (projections, jobs).
pub async fn eventually<T, F, Fut>(seconds: u64, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(seconds);
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {seconds} s waiting for {what}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// The body of a response as JSON, asserting its status first.
pub async fn json_with_status(response: reqwest::Response, status: u16) -> Value {
    let actual = response.status().as_u16();
    let text = response.text().await.expect("response body");
    assert_eq!(actual, status, "unexpected status; body: {text}");
    serde_json::from_str(&text).unwrap_or_else(|error| panic!("body is not JSON ({error}): {text}"))
}

/// The result of one run of the real binary.
pub struct CliOutput {
    pub success: bool,
    pub stdout: String,
    pub stderr: String,
}

impl CliOutput {
    pub fn json(&self) -> Value {
        assert!(self.success, "the command failed: {}", self.stderr);
        serde_json::from_str(self.stdout.trim()).unwrap_or_else(|error| {
            panic!("stdout is not one JSON object ({error}): {}", self.stdout)
        })
    }
}

pub fn tessera_binary() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_tessera"))
}

/// Adds `--data-dir … --database-url … --plugins-dir …` of `database` to a `tessera` command.
pub fn on_database<'c>(command: &'c mut Command, database: &TestDatabase) -> &'c mut Command {
    command
        .arg("--data-dir")
        .arg(&database.data_dir)
        .arg("--database-url")
        .arg(&database.url)
        .arg("--plugins-dir")
        .arg(database.data_dir.join("plugins"))
}

/// Runs `tessera admin <arguments> --data-dir … --database-url …`.
pub fn run_admin(database: &TestDatabase, arguments: &[&str]) -> CliOutput {
    run_admin_with(database, arguments, &[], None)
}

/// [`run_admin`] with more environment variables, and `stdin` written to its standard input.
pub fn run_admin_with(
    database: &TestDatabase,
    arguments: &[&str],
    environment: &[(&str, &str)],
    stdin: Option<&str>,
) -> CliOutput {
    use std::io::Write as _;
    let mut command = Command::new(tessera_binary());
    command.arg("admin").args(arguments);
    let mut child = on_database(&mut command, database)
        .env_remove("TESSERA_LOG")
        .envs(environment.iter().copied())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("running tessera admin");
    let mut input = child.stdin.take().expect("its standard input");
    if let Some(text) = stdin {
        input
            .write_all(text.as_bytes())
            .expect("writing its standard input");
    }
    drop(input);
    let output: Output = child.wait_with_output().expect("running tessera admin");
    CliOutput {
        success: output.status.success(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Creates, through the CLI, an owner of the tenant `slug` who signs in with `email` and
/// `password`; returns `{user_id, tenant_id, email}`.
pub fn create_owner(database: &TestDatabase, slug: &str, email: &str, password: &str) -> Value {
    run_admin(
        database,
        &[
            "create-user",
            "--tenant",
            slug,
            "--email",
            email,
            "--password",
            password,
            "--role",
            "owner",
        ],
    )
    .json()
}

/// `tessera serve` as a child process on the test's database, with extra environment; killed
/// when the guard drops, so a failing test leaves no host behind.
pub fn serve(app_database: &TestDatabase, environment: &[(&str, &str)]) -> ServedHost {
    let mut command = std::process::Command::new(tessera_binary());
    command
        .env("TESSERA_RATE_LIMIT_READ", "0")
        .env("TESSERA_RATE_LIMIT_WRITE", "0")
        .arg("serve")
        .arg("--listen")
        .arg("127.0.0.1:0");
    on_database(&mut command, app_database)
        .env_remove("TESSERA_LOG")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    for (name, value) in environment {
        command.env(name, value);
    }
    ServedHost(command.spawn().expect("starting tessera serve"))
}

/// A `tessera serve` child process, SIGKILLed and reaped on drop.
pub struct ServedHost(std::process::Child);

impl ServedHost {
    /// SIGKILL, and wait for the process to end.
    pub fn kill(&mut self) {
        self.0.kill().ok();
        self.0.wait().ok();
    }
}

impl Drop for ServedHost {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A `tessera serve` child process on a free loopback port, logging JSON at info; killed and
/// reaped when dropped.
pub struct ServeProcess {
    child: std::process::Child,
    address: SocketAddr,
    /// The `TESSERA_METRICS_LISTEN` address, when the host serves one.
    metrics_address: Option<SocketAddr>,
}

impl ServeProcess {
    /// Starts `tessera serve --listen 127.0.0.1:0` with the flags and environment `configure`
    /// adds, and waits for its "tessera is serving" log line to learn the address.
    pub fn start(configure: impl FnOnce(&mut Command) -> &mut Command) -> Self {
        use std::io::{BufRead as _, BufReader};
        use std::process::Stdio;

        let mut command = Command::new(tessera_binary());
        command
            .arg("serve")
            .arg("--listen")
            .arg("127.0.0.1:0")
            .env("TESSERA_LOG", "info")
            .env("TESSERA_LOG_FORMAT", "json");
        // Its log filter must keep the host's info lines, which say where it serves.
        configure(&mut command);
        let mut child = command
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting tessera serve");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut metrics_address = None;
        let address = loop {
            let line = lines
                .next()
                .expect("tessera serve exited before serving")
                .unwrap();
            let Ok(entry) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if entry["fields"]["message"] == "serving /metrics" {
                metrics_address = entry["fields"]["address"]
                    .as_str()
                    .and_then(|address| address.parse().ok());
            }
            if entry["fields"]["message"] == "tessera is serving" {
                break entry["fields"]["address"]
                    .as_str()
                    .unwrap()
                    .parse()
                    .unwrap();
            }
        };
        // Keep draining stderr so the child never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Self {
            child,
            address,
            metrics_address,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.address, path)
    }

    /// A URL on the `TESSERA_METRICS_LISTEN` address (the host must serve one).
    pub fn metrics_url(&self, path: &str) -> String {
        let address = self
            .metrics_address
            .expect("the host serves a metrics listener");
        format!("http://{address}{path}")
    }

    /// SIGKILL (no shutdown of any kind), and wait for the process to end.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The address it serves on.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// SIGTERM, then the exit status.
    pub fn terminate(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill -TERM");
        let started = std::time::Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                started.elapsed() < std::time::Duration::from_secs(20),
                "tessera did not stop on SIGTERM"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A bound loopback listener on a free port (non-blocking, for tokio), and the port.
pub fn loopback_listener() -> (std::net::TcpListener, u16) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    (listener, port)
}

/// Serves `routes` over HTTPS on a free loopback port with a new self-signed certificate for
/// `localhost` and `127.0.0.1`; returns the port and the certificate's PEM file (to trust
/// through `TESSERA_WEBHOOK_EXTRA_CA`).
pub fn serve_https(routes: Router) -> (u16, CertificateFile) {
    let certified =
        rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .unwrap();
    let certificate = CertificateFile::write(&certified.cert.pem());
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(rustls::pki_types::PrivatePkcs8KeyDer::from(
        certified.signing_key.serialize_der(),
    ));
    let tls = rustls::ServerConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![certified.cert.der().clone()], key)
    .unwrap();
    let (listener, port) = loopback_listener();
    let server = axum_server::from_tcp_rustls(
        listener,
        axum_server::tls_rustls::RustlsConfig::from_config(std::sync::Arc::new(tls)),
    )
    .unwrap();
    tokio::spawn(async move { server.serve(routes.into_make_service()).await });
    (port, certificate)
}

/// A PEM file in the temp dir, removed when dropped.
pub struct CertificateFile(pub PathBuf);

impl CertificateFile {
    pub fn write(pem: &str) -> Self {
        let path =
            std::env::temp_dir().join(format!("tessera-test-ca-{}.pem", uuid::Uuid::new_v4()));
        std::fs::write(&path, pem).unwrap();
        Self(path)
    }
}

impl Drop for CertificateFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Subscribes `observer` (an engine code nothing loads) to `patterns` on the host's bus, so the
/// deliveries of the matching events stay in `engine_work` for [`observed_events`] to read.
pub fn observe_events(app: &TestApp, observer: &str, patterns: &[&str]) {
    app.state()
        .engines
        .runtime()
        .services()
        .bus
        .subscriptions()
        .set(
            observer,
            patterns.iter().map(|pattern| pattern.to_string()).collect(),
        );
}

/// The events delivered to `observer` (in `tenant_id` when given), oldest first:
/// `(event_type, payload)`.
pub async fn observed_events(
    app: &TestApp,
    observer: &str,
    tenant_id: Option<&str>,
) -> Vec<(String, Value)> {
    let database = &app.state().database;
    let stored: Vec<Vec<u8>> = tessera_host::on_pool!(database, pool => sqlx::query_scalar(
        "SELECT payload FROM engine_work WHERE engine_code = $1 AND ($2 IS NULL OR tenant_id = $2)",
    )
    .bind(observer)
    .bind(tenant_id)
    .fetch_all(pool)
    .await
    .unwrap());
    let mut events: Vec<Value> = stored
        .iter()
        .map(|bytes| serde_json::from_slice(bytes).unwrap())
        .collect();
    events.sort_by(|a, b| a["occurred_at"].as_str().cmp(&b["occurred_at"].as_str()));
    events
        .into_iter()
        .map(|event| {
            (
                event["event_type"].as_str().unwrap().to_owned(),
                event["payload"].clone(),
            )
        })
        .collect()
}

/// Asserts that the OpenAPI `document` declares the tag `tag` and documents each
/// `(method, path)` of `routes` under that one tag with bearer security, and each schema of
/// `schemas`.
pub fn assert_engine_documented(
    document: &Value,
    tag: &str,
    routes: &[(&str, &str)],
    schemas: &[&str],
) {
    for (method, path) in routes {
        let operation = &document["paths"][path][method];
        assert!(operation.is_object(), "{method} {path} is documented");
        assert_eq!(
            operation["tags"],
            json!([tag]),
            "{method} {path} is tagged {tag}"
        );
        assert!(
            operation["security"][0]["bearer"].is_array(),
            "{method} {path} requires a bearer token"
        );
    }
    for schema in schemas {
        assert!(
            document["components"]["schemas"][schema].is_object(),
            "the schema {schema} is documented"
        );
    }
    assert!(
        document["tags"]
            .as_array()
            .unwrap()
            .iter()
            .any(|declared| declared["name"] == tag),
        "the {tag} tag is declared"
    );
}
