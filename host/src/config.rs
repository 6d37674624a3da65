//! Configuration: every setting of CONTRACT §2 and §8 (flag, else environment variable, else
//! config file, else default; the registry is `settings.rs`), parsed once at start into a
//! [`Config`] that the rest of the host reads.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use anyhow::Context as _;

use crate::core::projections::worker::ProjectionConfig;
use crate::runtime::RuntimeConfig;
use crate::runtime::component_limits::Limit;
use crate::storage::DatabaseConfig;
pub use tessera_auth::config::AuthConfig;
pub use tessera_auth::passkeys::RelyingPartyConfig;
pub use tessera_auth::sign_in_mail::SignInMailConfig;
pub use tessera_http::config::{HttpConfig, RateLimitConfig, Secret, env_var, env_var_or_alias};
pub use tessera_runtime::config::{EngineScanConfig, OutboundConfig, SmtpConfig, WebhookConfig};

/// Where the host keeps its data: shared by `serve` and every `admin` command.
#[derive(Debug, Clone)]
pub struct StorageArgs {
    /// Folder for the SQLite file, blobs and generated keys (`TESSERA_DATA_DIR`).
    pub data_dir: PathBuf,
    /// `sqlite://…` (default `sqlite://<data-dir>/tessera.db`) or `postgres://…`
    /// (`TESSERA_DATABASE_URL`).
    pub database_url: Option<String>,
    /// Folder of engine components, `*.wasm` (`TESSERA_PLUGINS_DIR`).
    pub plugins_dir: PathBuf,
}

impl StorageArgs {
    /// From the settings: flag, else environment, else config file, else default.
    pub fn from_settings() -> anyhow::Result<Self> {
        Ok(Self {
            data_dir: env_var("TESSERA_DATA_DIR")?.unwrap_or_else(|| PathBuf::from("./data")),
            database_url: env_var("TESSERA_DATABASE_URL")?,
            plugins_dir: env_var("TESSERA_PLUGINS_DIR")?
                .unwrap_or_else(|| PathBuf::from("./plugins")),
        })
    }

    pub fn database_config(&self) -> DatabaseConfig {
        DatabaseConfig {
            url: self
                .database_url
                .clone()
                .unwrap_or_else(|| DatabaseConfig::default_url(&self.data_dir)),
            data_dir: self.data_dir.clone(),
            max_connections: 16,
            sqlite_wal_max_bytes: crate::storage::DEFAULT_SQLITE_WAL_MAX_BYTES,
        }
    }
}

/// What `tessera serve` is told besides the settings every part reads for itself.
#[derive(Debug, Clone)]
pub struct ServeArgs {
    pub storage: StorageArgs,
    /// Address to listen on (`TESSERA_LISTEN`).
    pub listen: SocketAddr,
    /// Public base URL, default `http://<listen>` (`TESSERA_PUBLIC_URL`).
    pub public_url: Option<String>,
    /// Largest request body accepted, in bytes, 413 beyond (`TESSERA_MAX_BODY_BYTES`).
    pub max_body_bytes: usize,
}

impl ServeArgs {
    /// From the settings: flag, else environment, else config file, else default.
    pub fn from_settings() -> anyhow::Result<Self> {
        Ok(Self {
            storage: StorageArgs::from_settings()?,
            listen: env_var("TESSERA_LISTEN")?
                .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 8080))),
            public_url: env_var::<String>("TESSERA_PUBLIC_URL")?
                .filter(|url| !url.trim().is_empty()),
            max_body_bytes: env_var("TESSERA_MAX_BODY_BYTES")?.unwrap_or(1024 * 1024),
        })
    }
}

/// The whole configuration of a running host.
#[derive(Debug, Clone)]
pub struct Config {
    pub listen: SocketAddr,
    pub data_dir: PathBuf,
    pub database: DatabaseConfig,
    pub plugins_dir: PathBuf,
    /// Without a trailing slash.
    pub public_url: String,
    /// `None`: generated on first start and kept in the data dir (see `secrets`).
    pub service_secret: Option<Secret>,
    pub http: HttpConfig,
    pub webhook: WebhookConfig,
    pub outbound: OutboundConfig,
    pub rate_limits: RateLimitConfig,
    /// Where the rate limits' buckets live (`TESSERA_RATE_LIMIT_SCOPE`).
    pub rate_limit_scope: RateLimitScope,
    pub auth: AuthConfig,
    pub runtime: RuntimeConfig,
    pub projections: ProjectionConfig,
    /// The operator's outbound allow-lists (`TESSERA_ENGINE_OUTBOUND_HOSTS`): engine code →
    /// host patterns, replacing what that engine declares. An empty list forbids outbound
    /// HTTP to the engine.
    pub engine_outbound_hosts: BTreeMap<String, Vec<String>>,
    /// The operators' values of engines' declared settings (`TESSERA_ENGINES__<CODE>__<NAME>`).
    pub engine_settings: crate::runtime::engine_settings::OperatorSettings,
    pub smtp: SmtpConfig,
    /// Sign-in mails through the relay of `smtp` (`TESSERA_MAIL_FROM`, `TESSERA_MAIL_TEMPLATES`,
    /// `TESSERA_SIGN_IN_MAIL_INTERVAL`, `TESSERA_SIGN_IN_MAILS_PER_ADDRESS`,
    /// `TESSERA_MAGIC_LINK_REDIRECT_ORIGINS`).
    pub sign_in_mail: SignInMailConfig,
    /// Passkeys' relying party (`TESSERA_WEBAUTHN_RP_ID`, `TESSERA_WEBAUTHN_ORIGINS`,
    /// `TESSERA_WEBAUTHN_RP_NAME`, `TESSERA_WEBAUTHN_MAX_CREDENTIALS`).
    pub webauthn: RelyingPartyConfig,
    /// The engine work worker (`TESSERA_ENGINE_WORK_CONCURRENCY`; its drain deadline is
    /// `TESSERA_SHUTDOWN_TIMEOUT`).
    pub work: crate::runtime::work::WorkerConfig,
    /// `TESSERA_SHUTDOWN_TIMEOUT` (default 30 s): after SIGTERM or SIGINT, how long in-flight
    /// requests and engine work may take to finish before the host exits anyway.
    pub shutdown_timeout: Duration,
    /// Bounds of engines' storage scans (`TESSERA_ENGINE_SCAN_PAGE`, `TESSERA_ENGINE_SCAN_BUDGET`).
    pub engine_scans: EngineScanConfig,
    /// Workflow limits (`TESSERA_WORKFLOW_MAX_ACTIVE_PER_TENANT`,
    /// `TESSERA_WORKFLOW_CHAIN_WRITE_BUDGET`).
    pub workflows: crate::core::workflows::WorkflowLimits,
    /// Search limits (`TESSERA_SEARCH_MAX_CANDIDATES`).
    pub search: crate::core::search::SearchLimits,
    /// Realtime limits (`TESSERA_REALTIME_MAX_CONNECTIONS_PER_USER`,
    /// `TESSERA_REALTIME_MAX_CONNECTIONS_PER_TENANT`, `TESSERA_REALTIME_MAX_SUBSCRIPTIONS`,
    /// `TESSERA_REALTIME_SEND_QUEUE`, `TESSERA_REALTIME_MAX_FRAME_BYTES`).
    pub realtime: crate::core::realtime::RealtimeConfig,
    /// The bound on the backlog of accepted work past which writes are refused
    /// (`TESSERA_BACKLOG_MAX_ITEMS`, `TESSERA_BACKLOG_MAX_AGE`).
    pub backlog: crate::http::backpressure::BacklogBound,
    /// Who may read `/metrics` (`TESSERA_METRICS_TOKEN`, `TESSERA_METRICS_LISTEN`).
    pub metrics: MetricsConfig,
    /// Cluster membership (`TESSERA_CLUSTER_HEARTBEAT_INTERVAL`, `TESSERA_CLUSTER_HOST_TIMEOUT`).
    pub cluster: crate::cluster::ClusterConfig,
    /// Per-tenant usage metering (`TESSERA_USAGE_FLUSH_INTERVAL`,
    /// `TESSERA_USAGE_RETENTION_DAYS`).
    pub usage: crate::http::usage::UsageConfig,
}

/// Where the rate limits' buckets live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateLimitScope {
    /// In each host's memory: behind a load balancer over N hosts a client gets N times each
    /// limit.
    Host,
    /// In the database every host shares (PostgreSQL): a limit holds for the cluster.
    Cluster,
}

/// `TESSERA_RATE_LIMIT_SCOPE`: `cluster` by default on PostgreSQL, `host` on SQLite (which no
/// two hosts share); `cluster` on SQLite stops the start.
fn rate_limit_scope(database: &DatabaseConfig) -> anyhow::Result<RateLimitScope> {
    let on_postgres = database.kind() == crate::storage::DatabaseKind::Postgres;
    match env_var::<String>("TESSERA_RATE_LIMIT_SCOPE")?.as_deref() {
        None | Some("") => Ok(if on_postgres {
            RateLimitScope::Cluster
        } else {
            RateLimitScope::Host
        }),
        Some("host") => Ok(RateLimitScope::Host),
        Some("cluster") if on_postgres => Ok(RateLimitScope::Cluster),
        Some("cluster") => anyhow::bail!(
            "TESSERA_RATE_LIMIT_SCOPE=cluster needs a PostgreSQL database (hosts share no SQLite file)"
        ),
        Some(other) => {
            anyhow::bail!("TESSERA_RATE_LIMIT_SCOPE must be `host` or `cluster`, not {other:?}")
        }
    }
}

/// Cluster membership's settings, checked together (the timeout must outlast two heartbeats).
fn cluster_config() -> anyhow::Result<crate::cluster::ClusterConfig> {
    let defaults = crate::cluster::ClusterConfig::default();
    let config = crate::cluster::ClusterConfig {
        heartbeat_interval: env_var::<humantime::Duration>("TESSERA_CLUSTER_HEARTBEAT_INTERVAL")?
            .map_or(defaults.heartbeat_interval, Duration::from),
        host_timeout: env_var::<humantime::Duration>("TESSERA_CLUSTER_HOST_TIMEOUT")?
            .map_or(defaults.host_timeout, Duration::from),
    };
    config.validate()?;
    Ok(config)
}

/// Access to the Prometheus metrics: neither set, metrics are off and `/metrics` answers 404.
#[derive(Debug, Clone, Default)]
pub struct MetricsConfig {
    /// `TESSERA_METRICS_TOKEN`: `/metrics` on the main listener answers a bearer of it.
    pub token: Option<Secret>,
    /// `TESSERA_METRICS_LISTEN`: an address of its own serving `/metrics` without a token
    /// (port 0 picks a free one).
    pub listen: Option<SocketAddr>,
}

impl MetricsConfig {
    /// Whether metrics are recorded and served at all (a token or a listener is set).
    pub fn enabled(&self) -> bool {
        self.token.is_some() || self.listen.is_some()
    }

    fn from_env() -> anyhow::Result<Self> {
        Ok(Self {
            token: env_var::<String>("TESSERA_METRICS_TOKEN")?
                .filter(|token| !token.is_empty())
                .map(|token| {
                    anyhow::ensure!(
                        token.len() >= 16,
                        "TESSERA_METRICS_TOKEN must be at least 16 characters"
                    );
                    Ok(Secret::new(token))
                })
                .transpose()?,
            listen: env_var::<SocketAddr>("TESSERA_METRICS_LISTEN")?,
        })
    }
}

impl Config {
    /// What the engine runtime reads of this configuration, with the service secret.
    pub fn runtime_setup<'a>(
        &'a self,
        service_secret: &'a Secret,
    ) -> crate::runtime::RuntimeSetup<'a> {
        crate::runtime::RuntimeSetup {
            runtime: &self.runtime,
            webhook: &self.webhook,
            outbound: &self.outbound,
            engine_settings: &self.engine_settings,
            smtp: &self.smtp,
            engine_scans: self.engine_scans,
            engine_outbound_hosts: &self.engine_outbound_hosts,
            work: &self.work,
            plugins_dir: &self.plugins_dir,
            service_secret,
            usage: None,
        }
    }

    /// Reads the flags of `serve` and the environment-only variables.
    pub fn from_serve_args(args: ServeArgs) -> anyhow::Result<Self> {
        let public_url = args
            .public_url
            .clone()
            .unwrap_or_else(|| format!("http://{}", args.listen))
            .trim_end_matches('/')
            .to_owned();
        let shutdown_timeout = env_var::<humantime::Duration>("TESSERA_SHUTDOWN_TIMEOUT")?
            .map_or(Duration::from_secs(30), Duration::from);
        anyhow::ensure!(
            !shutdown_timeout.is_zero(),
            "TESSERA_SHUTDOWN_TIMEOUT must be above zero"
        );
        let sign_in_mail = sign_in_mail_config(&public_url)?;
        let rate_limit_scope = rate_limit_scope(&args.storage.database_config())?;
        Ok(Self {
            sign_in_mail,
            webauthn: webauthn_config()?,
            listen: args.listen,
            data_dir: args.storage.data_dir.clone(),
            database: {
                let mut database = args.storage.database_config();
                if let Some(bytes) = env_var::<u64>("TESSERA_SQLITE_WAL_MAX_BYTES")? {
                    anyhow::ensure!(
                        bytes >= 1024 * 1024,
                        "TESSERA_SQLITE_WAL_MAX_BYTES must be at least 1048576 (1 MiB)"
                    );
                    database.sqlite_wal_max_bytes = bytes;
                }
                database
            },
            plugins_dir: args.storage.plugins_dir.clone(),
            public_url,
            service_secret: env_var("TESSERA_SERVICE_SECRET")?
                .filter(|value: &String| !value.is_empty())
                .map(Secret::new),
            http: HttpConfig::from_env(args.max_body_bytes)?,
            webhook: WebhookConfig {
                retry_schedule: match env_var::<String>("TESSERA_WEBHOOK_RETRY_SCHEDULE")? {
                    Some(text) => {
                        parse_retry_schedule(&text).context("TESSERA_WEBHOOK_RETRY_SCHEDULE")?
                    }
                    None => parse_retry_schedule("30s,2m,10m,30m")?,
                },
            },
            outbound: OutboundConfig {
                allow_private_targets: env_var_or_alias(
                    "TESSERA_OUTBOUND_ALLOW_PRIVATE_TARGETS",
                    "TESSERA_WEBHOOK_ALLOW_PRIVATE_TARGETS",
                )?
                .unwrap_or(false),
                extra_ca: env_var_or_alias::<PathBuf>(
                    "TESSERA_OUTBOUND_EXTRA_CA",
                    "TESSERA_WEBHOOK_EXTRA_CA",
                )?,
                dns_servers: match env_var_or_alias::<String>(
                    "TESSERA_OUTBOUND_DNS_SERVERS",
                    "TESSERA_WEBHOOK_DNS_SERVERS",
                )? {
                    Some(text) => crate::runtime::outbound::parse_dns_servers(&text)
                        .map_err(anyhow::Error::msg)
                        .context("TESSERA_OUTBOUND_DNS_SERVERS")?,
                    None => Vec::new(),
                },
                check_dns_timeout: env_var_or_alias::<humantime::Duration>(
                    "TESSERA_OUTBOUND_CHECK_DNS_TIMEOUT",
                    "TESSERA_WEBHOOK_CHECK_DNS_TIMEOUT",
                )?
                .map_or(crate::runtime::outbound::CHECK_DNS_TIMEOUT, Into::into),
            },
            rate_limits: RateLimitConfig {
                auth_per_minute: env_var("TESSERA_RATE_LIMIT_AUTH")?.unwrap_or(60),
                read_per_minute: env_var("TESSERA_RATE_LIMIT_READ")?.unwrap_or(600),
                write_per_minute: env_var("TESSERA_RATE_LIMIT_WRITE")?.unwrap_or(120),
            },
            rate_limit_scope,
            auth: auth_config()?,
            runtime: {
                let mut runtime = RuntimeConfig::with_defaults(
                    args.storage.data_dir.join("cache").join("components"),
                );
                // The sandbox's limits, global (`TESSERA_ENGINE_<LIMIT>`) and per engine
                // (`TESSERA_ENGINE_LIMITS__<CODE>__<LIMIT>`, read below): runtime/component_limits.rs.
                let deadline = |limit: Limit| -> anyhow::Result<Option<Duration>> {
                    let variable = limit.global_variable();
                    env_var::<humantime::Duration>(&variable)?
                        .map(|value| Limit::check_duration(&variable, value.into()))
                        .transpose()
                        .map_err(anyhow::Error::msg)
                };
                let count = |limit: Limit| -> anyhow::Result<Option<u64>> {
                    let variable = limit.global_variable();
                    env_var::<u64>(&variable)?
                        .map(|value| limit.check_count(&variable, value))
                        .transpose()
                        .map_err(anyhow::Error::msg)
                };
                let narrow = |value: u64| u32::try_from(value).unwrap_or(u32::MAX);
                if let Some(timeout) = deadline(Limit::HandleTimeout)? {
                    runtime.handle_timeout = timeout;
                }
                if let Some(timeout) = deadline(Limit::LifecycleTimeout)? {
                    runtime.lifecycle_timeout = timeout;
                }
                if let Some(bytes) = count(Limit::MemoryLimitBytes)? {
                    runtime.memory_limit_bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
                }
                if let Some(instances) = count(Limit::MaxCoreInstances)? {
                    runtime.max_core_instances = narrow(instances);
                }
                if let Some(memories) = count(Limit::MaxMemories)? {
                    runtime.max_memories = narrow(memories);
                }
                if let Some(tables) = count(Limit::MaxTables)? {
                    runtime.max_tables = narrow(tables);
                }
                if let Some(elements) = count(Limit::MaxTableElements)? {
                    runtime.max_table_elements = narrow(elements);
                }
                if let Some(bytes) = env_var::<usize>("TESSERA_ENGINE_MAX_COMPONENT_BYTES")? {
                    anyhow::ensure!(
                        bytes >= 1024,
                        "TESSERA_ENGINE_MAX_COMPONENT_BYTES must be at least 1024"
                    );
                    runtime.max_component_bytes = bytes;
                }
                if let Some(files) = env_var::<String>("TESSERA_ENGINE_TRUSTED_KEYS")? {
                    let files: Vec<PathBuf> = comma_separated(&files)
                        .into_iter()
                        .map(PathBuf::from)
                        .collect();
                    runtime.trusted_keys =
                        crate::distribution::signature::TrustedKeys::read(&files)
                            .context("TESSERA_ENGINE_TRUSTED_KEYS")?;
                }
                if let Some(interval) =
                    env_var::<humantime::Duration>("TESSERA_ENGINE_RECONCILE_INTERVAL")?
                {
                    anyhow::ensure!(
                        !interval.is_zero(),
                        "TESSERA_ENGINE_RECONCILE_INTERVAL must be above zero"
                    );
                    runtime.reconcile_interval = interval.into();
                }
                if let Some(bytes) = env_var::<usize>("TESSERA_ENGINE_MAX_BODY_BYTES")? {
                    runtime.max_request_bytes = bytes;
                    runtime.max_response_bytes = bytes;
                }
                // Engine capacity and each tenant's share of it (runtime/admission.rs).
                if let Some(instances) = env_var::<u32>("TESSERA_ENGINE_MAX_INSTANCES")? {
                    anyhow::ensure!(
                        (1..=10_000).contains(&instances),
                        "TESSERA_ENGINE_MAX_INSTANCES must be between 1 and 10000"
                    );
                    runtime.max_instances = instances;
                }
                runtime.engine_limits = crate::runtime::component_limits::engine_limits(
                    crate::settings::family_variables(),
                    runtime.max_instances,
                )
                .map_err(anyhow::Error::msg)?;
                if let Some(share) = env_var::<u32>("TESSERA_ENGINE_TENANT_CONCURRENCY")? {
                    // A cluster's total may pass one host's pool; each host's part is clamped
                    // to its own pool.
                    let most = match rate_limit_scope {
                        RateLimitScope::Host => runtime.max_instances,
                        RateLimitScope::Cluster => u32::MAX,
                    };
                    anyhow::ensure!(
                        (1..=most).contains(&share),
                        "TESSERA_ENGINE_TENANT_CONCURRENCY must be between 1 and TESSERA_ENGINE_MAX_INSTANCES (any number above zero with TESSERA_RATE_LIMIT_SCOPE=cluster: the cluster's total)"
                    );
                    runtime.tenant_concurrency = Some(share);
                }
                if let Some(queue) = env_var::<u32>("TESSERA_ENGINE_TENANT_QUEUE")? {
                    runtime.tenant_queue = queue;
                }
                if let Some(wait) =
                    env_var::<humantime::Duration>("TESSERA_ENGINE_TENANT_QUEUE_TIMEOUT")?
                {
                    runtime.tenant_queue_timeout = wait.into();
                }
                if let Some(rate) = env_var::<u32>("TESSERA_REALTIME_MAX_PUBLISH_PER_SECOND")? {
                    anyhow::ensure!(
                        rate >= 1,
                        "TESSERA_REALTIME_MAX_PUBLISH_PER_SECOND must be at least 1"
                    );
                    runtime.realtime_publish_per_second = rate;
                }
                if let Some(capacity) = env_var::<u32>("TESSERA_ENGINE_WARM_INSTANCES")? {
                    anyhow::ensure!(
                        capacity <= 10_000,
                        "TESSERA_ENGINE_WARM_INSTANCES must be between 0 and 10000"
                    );
                    runtime.warm_instances.capacity = capacity;
                }
                if let Some(max_calls) = env_var::<u32>("TESSERA_ENGINE_INSTANCE_MAX_CALLS")? {
                    anyhow::ensure!(
                        max_calls >= 1,
                        "TESSERA_ENGINE_INSTANCE_MAX_CALLS must be at least 1"
                    );
                    runtime.warm_instances.max_calls = max_calls;
                }
                if let Some(idle) =
                    env_var::<humantime::Duration>("TESSERA_ENGINE_WARM_IDLE_TIMEOUT")?
                {
                    runtime.warm_instances.idle_timeout = idle.into();
                }
                runtime
            },
            projections: {
                let mut projections = ProjectionConfig::default();
                if let Some(run_workers) = env_var::<bool>("TESSERA_PROJECTION_WORKERS")? {
                    projections.run_workers = run_workers;
                }
                if let Some(batch_size) = env_var::<u32>("TESSERA_PROJECTION_BATCH_SIZE")? {
                    anyhow::ensure!(
                        (1..=10_000).contains(&batch_size),
                        "TESSERA_PROJECTION_BATCH_SIZE must be between 1 and 10000"
                    );
                    projections.batch_size = batch_size;
                }
                projections
            },
            engine_outbound_hosts: env_var::<EngineOutboundHosts>("TESSERA_ENGINE_OUTBOUND_HOSTS")?
                .map(|hosts| hosts.0)
                .unwrap_or_default(),
            engine_settings: crate::runtime::engine_settings::operator_settings(
                crate::settings::family_variables(),
            ),
            backlog: {
                let mut backlog = crate::http::backpressure::BacklogBound::default();
                if let Some(items) = env_var::<u64>("TESSERA_BACKLOG_MAX_ITEMS")? {
                    backlog.max_items = items;
                }
                if let Some(age) = env_var::<humantime::Duration>("TESSERA_BACKLOG_MAX_AGE")? {
                    backlog.max_age = age.into();
                }
                backlog
            },
            metrics: MetricsConfig::from_env()?,
            cluster: cluster_config()?,
            usage: {
                let mut usage = crate::http::usage::UsageConfig::default();
                if let Some(interval) =
                    env_var::<humantime::Duration>("TESSERA_USAGE_FLUSH_INTERVAL")?
                {
                    let interval = Duration::from(interval);
                    anyhow::ensure!(
                        interval >= Duration::from_millis(100)
                            && interval <= Duration::from_secs(3600),
                        "TESSERA_USAGE_FLUSH_INTERVAL must be between 100ms and 1h"
                    );
                    usage.flush_interval = interval;
                }
                if let Some(days) = env_var::<u32>("TESSERA_USAGE_RETENTION_DAYS")? {
                    anyhow::ensure!(
                        (1..=3660).contains(&days),
                        "TESSERA_USAGE_RETENTION_DAYS must be between 1 and 3660"
                    );
                    usage.retention_days = days;
                }
                usage
            },
            work: {
                let mut work = crate::runtime::work::WorkerConfig::default();
                if let Some(concurrency) = env_var::<usize>("TESSERA_ENGINE_WORK_CONCURRENCY")? {
                    anyhow::ensure!(
                        (1..=100).contains(&concurrency),
                        "TESSERA_ENGINE_WORK_CONCURRENCY must be between 1 and 100"
                    );
                    work.concurrency = concurrency;
                }
                work.drain_timeout = shutdown_timeout;
                work
            },
            shutdown_timeout,
            workflows: {
                let mut limits = crate::core::workflows::WorkflowLimits::default();
                if let Some(max) = env_var::<u32>("TESSERA_WORKFLOW_MAX_ACTIVE_PER_TENANT")? {
                    anyhow::ensure!(
                        max >= 1,
                        "TESSERA_WORKFLOW_MAX_ACTIVE_PER_TENANT must be at least 1"
                    );
                    limits.max_active_per_tenant = max;
                }
                if let Some(budget) = env_var::<u32>("TESSERA_WORKFLOW_CHAIN_WRITE_BUDGET")? {
                    anyhow::ensure!(
                        budget >= 1,
                        "TESSERA_WORKFLOW_CHAIN_WRITE_BUDGET must be at least 1"
                    );
                    limits.chain_write_budget = budget;
                }
                limits
            },
            realtime: {
                let mut realtime = crate::core::realtime::RealtimeConfig::default();
                let at_least_one = |variable: &str| -> anyhow::Result<Option<u32>> {
                    let value = env_var::<u32>(variable)?;
                    anyhow::ensure!(
                        value.is_none_or(|value| value >= 1),
                        "{variable} must be at least 1"
                    );
                    Ok(value)
                };
                if let Some(max) = at_least_one("TESSERA_REALTIME_MAX_CONNECTIONS_PER_USER")? {
                    realtime.max_connections_per_user = max;
                }
                if let Some(max) = at_least_one("TESSERA_REALTIME_MAX_CONNECTIONS_PER_TENANT")? {
                    realtime.max_connections_per_tenant = max;
                }
                if let Some(max) = at_least_one("TESSERA_REALTIME_MAX_SUBSCRIPTIONS")? {
                    realtime.max_subscriptions = max;
                }
                if let Some(frames) = at_least_one("TESSERA_REALTIME_SEND_QUEUE")? {
                    realtime.send_queue = frames as usize;
                }
                if let Some(bytes) = env_var::<u32>("TESSERA_REALTIME_MAX_FRAME_BYTES")? {
                    anyhow::ensure!(
                        (64..=16 * 1024 * 1024).contains(&bytes),
                        "TESSERA_REALTIME_MAX_FRAME_BYTES must be between 64 and 16777216"
                    );
                    realtime.max_frame_bytes = bytes as usize;
                }
                realtime
            },
            search: {
                let mut limits = crate::core::search::SearchLimits::default();
                if let Some(max) = env_var::<u32>("TESSERA_SEARCH_MAX_CANDIDATES")? {
                    anyhow::ensure!(
                        (1..=100_000).contains(&max),
                        "TESSERA_SEARCH_MAX_CANDIDATES must be between 1 and 100000"
                    );
                    limits.max_candidates = max;
                }
                limits
            },
            engine_scans: {
                let mut scans = EngineScanConfig::default();
                if let Some(page) = env_var::<u32>("TESSERA_ENGINE_SCAN_PAGE")? {
                    anyhow::ensure!(
                        (1..=100_000).contains(&page),
                        "TESSERA_ENGINE_SCAN_PAGE must be between 1 and 100000"
                    );
                    scans.page = page;
                }
                if let Some(budget) = env_var::<u64>("TESSERA_ENGINE_SCAN_BUDGET")? {
                    anyhow::ensure!(budget >= 1, "TESSERA_ENGINE_SCAN_BUDGET must be at least 1");
                    scans.budget = budget;
                }
                scans
            },
            smtp: SmtpConfig {
                url: env_var::<String>("TESSERA_SMTP_URL")?
                    .filter(|url| !url.is_empty())
                    .map(Secret::new),
                engines: env_var::<String>("TESSERA_SMTP_ENGINES")?
                    .map(|codes| comma_separated(&codes)),
            },
        })
    }
}

/// `TESSERA_ENGINE_OUTBOUND_HOSTS`: `<code>=<pattern>,<pattern>;<code>=…`, e.g.
/// `chat=https://*,https://hooks.example.com:8443;mail=`. Each named engine gets exactly the
/// listed patterns (the syntax of `outbound-hosts` in `wit/engine.wit`) instead of those it
/// declares; an empty list (`mail=`) forbids it outbound HTTP. Engines not named keep their
/// own list. Spaces around items are ignored; a malformed pattern or a code named twice is an
/// error at start.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EngineOutboundHosts(pub BTreeMap<String, Vec<String>>);

impl FromStr for EngineOutboundHosts {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let mut engines = BTreeMap::new();
        for entry in text
            .split(';')
            .map(str::trim)
            .filter(|entry| !entry.is_empty())
        {
            let (code, patterns) = entry
                .split_once('=')
                .ok_or_else(|| format!("{entry:?} is not <engine code>=<patterns>"))?;
            let code = code.trim();
            if code.is_empty() {
                return Err(format!("{entry:?} names no engine"));
            }
            let patterns = comma_separated(patterns);
            crate::runtime::outbound::AllowedHosts::parse(&patterns)?;
            if engines.insert(code.to_owned(), patterns).is_some() {
                return Err(format!("the engine {code:?} is named twice"));
            }
        }
        Ok(Self(engines))
    }
}

/// The items of a comma-separated list, trimmed, empty ones left out.
fn comma_separated(list: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(str::to_owned)
        .collect()
}

/// `30s,2m,10m,30m` → four delays (humantime units: `ms`, `s`, `m`, `h`).
pub fn parse_retry_schedule(text: &str) -> anyhow::Result<Vec<Duration>> {
    let delays = text
        .split(',')
        .map(|part| {
            humantime::parse_duration(part.trim())
                .with_context(|| format!("{:?} is not a duration like 30s or 2m", part.trim()))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    anyhow::ensure!(!delays.is_empty(), "the retry schedule is empty");
    Ok(delays)
}

/// A duration setting above zero, `default` when unset.
fn positive_duration(name: &str, default: Duration) -> anyhow::Result<Duration> {
    let value = env_var::<humantime::Duration>(name)?.map_or(default, Duration::from);
    anyhow::ensure!(!value.is_zero(), "{name} must be above zero");
    Ok(value)
}

/// Sign-in mail (through the relay of `TESSERA_SMTP_URL`), sent from `TESSERA_MAIL_FROM` (by
/// default `Tessera <no-reply@<the public URL's host>>`).
fn sign_in_mail_config(public_url: &str) -> anyhow::Result<SignInMailConfig> {
    let host = url::Url::parse(public_url)
        .ok()
        .and_then(|url| url.host_str().map(str::to_owned))
        .unwrap_or_else(|| "localhost".to_owned());
    let defaults = SignInMailConfig::new(
        env_var::<String>("TESSERA_MAIL_FROM")?
            .filter(|from| !from.trim().is_empty())
            .unwrap_or_else(|| format!("Tessera <no-reply@{host}>")),
    );
    Ok(SignInMailConfig {
        templates: env_var::<std::path::PathBuf>("TESSERA_MAIL_TEMPLATES")?,
        login_interval: positive_duration(
            "TESSERA_SIGN_IN_MAIL_INTERVAL",
            defaults.login_interval,
        )?,
        per_address_per_hour: positive_count(
            "TESSERA_SIGN_IN_MAILS_PER_ADDRESS",
            defaults.per_address_per_hour,
        )?,
        redirect_origins: env_var::<String>("TESSERA_MAGIC_LINK_REDIRECT_ORIGINS")?
            .map(|origins| comma_separated(&origins))
            .unwrap_or_default(),
        ..defaults
    })
}

/// Passkeys' relying party; what is unset comes from the public URL when the host starts.
fn webauthn_config() -> anyhow::Result<RelyingPartyConfig> {
    let defaults = RelyingPartyConfig::default();
    Ok(RelyingPartyConfig {
        rp_id: env_var::<String>("TESSERA_WEBAUTHN_RP_ID")?
            .map(|rp_id| rp_id.trim().to_owned())
            .filter(|rp_id| !rp_id.is_empty()),
        origins: env_var::<String>("TESSERA_WEBAUTHN_ORIGINS")?
            .map(|origins| comma_separated(&origins))
            .unwrap_or_default(),
        rp_name: env_var::<String>("TESSERA_WEBAUTHN_RP_NAME")?
            .filter(|name| !name.trim().is_empty())
            .unwrap_or(defaults.rp_name),
        max_credentials_per_user: positive_count(
            "TESSERA_WEBAUTHN_MAX_CREDENTIALS",
            defaults.max_credentials_per_user,
        )?,
    })
}

/// A count setting of at least 1, `default` when unset.
fn positive_count(name: &str, default: u32) -> anyhow::Result<u32> {
    let value = env_var::<u32>(name)?.unwrap_or(default);
    anyhow::ensure!(value >= 1, "{name} must be at least 1");
    Ok(value)
}

/// The authentication policy (`TESSERA_AUTH_*`, `TESSERA_PASSWORD_*`,
/// `TESSERA_SIGNING_KEYS_REFRESH`), the spec's sample configuration by default; what
/// `GET /auth/api/v1/auth/config` reports.
fn auth_config() -> anyhow::Result<AuthConfig> {
    let defaults = AuthConfig::default();
    let token_lifetime = positive_duration("TESSERA_AUTH_TOKEN_LIFETIME", defaults.token_lifetime)?;
    let refresh_token_lifetime = positive_duration(
        "TESSERA_AUTH_REFRESH_TOKEN_LIFETIME",
        defaults.refresh_token_lifetime,
    )?;
    anyhow::ensure!(
        refresh_token_lifetime >= token_lifetime,
        "TESSERA_AUTH_REFRESH_TOKEN_LIFETIME must be at least TESSERA_AUTH_TOKEN_LIFETIME"
    );
    let policy = defaults.password_policy.clone();
    let password_policy = crate::auth::password::PasswordPolicy {
        min_length: env_var("TESSERA_PASSWORD_MIN_LENGTH")?.unwrap_or(policy.min_length),
        require_uppercase: env_var("TESSERA_PASSWORD_REQUIRE_UPPERCASE")?
            .unwrap_or(policy.require_uppercase),
        require_lowercase: env_var("TESSERA_PASSWORD_REQUIRE_LOWERCASE")?
            .unwrap_or(policy.require_lowercase),
        require_number: env_var("TESSERA_PASSWORD_REQUIRE_NUMBER")?
            .unwrap_or(policy.require_number),
        require_special: env_var("TESSERA_PASSWORD_REQUIRE_SPECIAL")?
            .unwrap_or(policy.require_special),
    };
    let longest = crate::auth::password::MAX_PASSWORD_LENGTH;
    anyhow::ensure!(
        (1..=longest as u32).contains(&password_policy.min_length),
        "TESSERA_PASSWORD_MIN_LENGTH must be between 1 and {longest}"
    );
    Ok(AuthConfig {
        password_policy,
        token_lifetime,
        refresh_token_lifetime,
        max_active_sessions: positive_count(
            "TESSERA_AUTH_MAX_SESSIONS",
            defaults.max_active_sessions,
        )?,
        lockout_max_attempts: positive_count(
            "TESSERA_AUTH_LOCKOUT_MAX_ATTEMPTS",
            defaults.lockout_max_attempts,
        )?,
        lockout_duration: positive_duration(
            "TESSERA_AUTH_LOCKOUT_DURATION",
            defaults.lockout_duration,
        )?,
        signing_keys_refresh: positive_duration(
            "TESSERA_SIGNING_KEYS_REFRESH",
            defaults.signing_keys_refresh,
        )?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_retry_schedule_parses() {
        let delays = parse_retry_schedule("30s,2m,10m,30m").unwrap();
        assert_eq!(
            delays,
            [30, 120, 600, 1800].map(Duration::from_secs).to_vec()
        );
        assert_eq!(
            parse_retry_schedule("200ms, 1s").unwrap()[0],
            Duration::from_millis(200)
        );
        assert!(parse_retry_schedule("soon").is_err());
    }

    #[test]
    fn engine_outbound_hosts_parse() {
        let parsed: EngineOutboundHosts = "chat=https://*, https://x.example.com:8443 ;mail=;"
            .parse()
            .unwrap();
        assert_eq!(
            parsed.0,
            BTreeMap::from([
                (
                    "chat".to_owned(),
                    vec![
                        "https://*".to_owned(),
                        "https://x.example.com:8443".to_owned()
                    ]
                ),
                ("mail".to_owned(), vec![]),
            ])
        );
        assert_eq!("".parse::<EngineOutboundHosts>().unwrap().0.len(), 0);
        for bad in [
            "chat",
            "=https://*",
            "chat=ftp://x",
            "chat=https://*/path",
            "chat=https://*;chat=",
        ] {
            assert!(bad.parse::<EngineOutboundHosts>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn secrets_do_not_print() {
        assert_eq!(
            format!("{:?}", Secret::new("hunter2".into())),
            "Secret(***)"
        );
    }
}
