//! The engine runtime's settings from the host's configuration: the sandbox's limits
//! ([`RuntimeConfig`], with the warm instances' [`WarmInstanceConfig`]), the work worker
//! ([`WorkerConfig`]), engines' outbound HTTP ([`OutboundConfig`]), the webhook retry schedule
//! ([`WebhookConfig`]), the SMTP relay, the scan bounds, engines' own declared settings, and
//! [`RuntimeSetup`], the view of all of them (and the service secret) the runtime starts from.
//! Plain settings only: every module of the runtime may read them, and this one imports none
//! above it.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use tessera_distribution::signature::TrustedKeys;
use tessera_http::config::Secret;

use crate::admission::AdmissionLimits;
use crate::component_limits::{self, ComponentFigures, EngineLimits, LimitExceeded, SandboxLimits};

/// The webhook retry schedule engines read (`settings.get("webhook.retry-schedule-ms")`).
#[derive(Debug, Clone)]
pub struct WebhookConfig {
    /// `TESSERA_WEBHOOK_RETRY_SCHEDULE`: delays before attempts 2..5.
    pub retry_schedule: Vec<Duration>,
}

/// The outbound HTTP policy of every engine (`outbound-http`): where requests may go and how
/// names resolve. Each setting is `TESSERA_OUTBOUND_<NAME>`; the CONTRACT's
/// `TESSERA_WEBHOOK_<NAME>` is still read when the new name is unset.
#[derive(Debug, Clone)]
pub struct OutboundConfig {
    /// `TESSERA_OUTBOUND_ALLOW_PRIVATE_TARGETS` (default false): whether engines may reach
    /// loopback, private, link-local and other non-public addresses.
    pub allow_private_targets: bool,
    /// `TESSERA_OUTBOUND_EXTRA_CA`: a PEM file trusted besides the system roots.
    pub extra_ca: Option<PathBuf>,
    /// `TESSERA_OUTBOUND_DNS_SERVERS` (default: none, the system resolver): name servers
    /// (`ip` or `ip:port`, comma-separated) that engines' outbound names resolve through.
    pub dns_servers: Vec<std::net::SocketAddr>,
    /// `TESSERA_OUTBOUND_CHECK_DNS_TIMEOUT` (default 2 s): the longest `check-target` (e.g. a
    /// webhook's creation) waits for a name to resolve; a name not resolved by then passes.
    pub check_dns_timeout: Duration,
}

/// How much of a tenant's engine storage one engine call may read through `storage.scan`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineScanConfig {
    /// `TESSERA_ENGINE_SCAN_PAGE`: most entries one scan returns, whatever it asks (default 1000).
    pub page: u32,
    /// `TESSERA_ENGINE_SCAN_BUDGET`: most entries all the scans of one engine call return
    /// together (default 10,000); a scan past it fails with `scan budget exhausted`.
    pub budget: u64,
}

impl Default for EngineScanConfig {
    fn default() -> Self {
        Self {
            page: 1000,
            budget: 10_000,
        }
    }
}

/// The SMTP relay behind the `mail-transport` import.
#[derive(Debug, Clone)]
pub struct SmtpConfig {
    /// `TESSERA_SMTP_URL`, e.g. `smtps://user:password@relay.example.com` or
    /// `smtp://relay.internal:25?tls=required` (it may hold credentials: a [`Secret`]).
    /// `None`: no relay; external mail stays queued.
    pub url: Option<Secret>,
    /// `TESSERA_SMTP_ENGINES`: the engine codes allowed to send; `None` (unset): the engines
    /// that ask for the `send-mail` permission.
    pub engines: Option<Vec<String>>,
}

/// What the runtime reads of the host's configuration when it starts.
#[derive(Clone, Copy)]
pub struct RuntimeSetup<'a> {
    pub runtime: &'a RuntimeConfig,
    pub webhook: &'a WebhookConfig,
    pub outbound: &'a OutboundConfig,
    pub smtp: &'a SmtpConfig,
    pub engine_scans: EngineScanConfig,
    /// `TESSERA_ENGINES__<CODE>__<NAME>`: the operator's values of engines' declared settings.
    pub engine_settings: &'a crate::engine_settings::OperatorSettings,
    /// `TESSERA_ENGINE_OUTBOUND_HOSTS`: engine code → the hosts it may call.
    pub engine_outbound_hosts: &'a std::collections::BTreeMap<String, Vec<String>>,
    pub work: &'a WorkerConfig,
    pub plugins_dir: &'a Path,
    /// Seals engines' secrets (`vault`).
    pub service_secret: &'a Secret,
    /// Where the limits engines hit are counted for their tenants (a serving host's meter;
    /// none for the admin CLI).
    pub usage: Option<&'a tessera_http::usage::UsageMeter>,
}

/// How the worker runs.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// Runs at once on this host (default 64: most runs wait on the network or the database,
    /// e.g. a webhook delivery waiting for its receiver, so a slow receiver does not hold up
    /// the others, and 32 left two cores a quarter idle under a backlog). A run is one job or
    /// a batch of events for one engine and tenant (at most `MAX_DELIVERY_BATCH`,
    /// `work_queue.rs`). Each run
    /// also needs an engine slot within its tenant's share (`admission.rs`), so work and HTTP
    /// requests share the pool fairly. As many claimed runs may wait for a slot.
    pub concurrency: usize,
    /// How often the worker looks for due items when nothing woke it.
    pub poll_interval: Duration,
    /// How long runs already started may take to finish once the host stops
    /// (`TESSERA_SHUTDOWN_TIMEOUT`); those still running then are handed back to the queue,
    /// their effects uncommitted, for the next host to run.
    pub drain_timeout: Duration,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        Self {
            concurrency: 64,
            poll_interval: Duration::from_millis(500),
            drain_timeout: Duration::from_secs(30),
        }
    }
}

/// Limits of the sandbox.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// Deadline of a `handle` call (`TESSERA_ENGINE_HANDLE_TIMEOUT`, default 5 s).
    pub handle_timeout: Duration,
    /// Deadline of lifecycle, event and job calls (`TESSERA_ENGINE_LIFECYCLE_TIMEOUT`, default
    /// 30 s).
    pub lifecycle_timeout: Duration,
    /// Linear memory cap per memory of an instance (`TESSERA_ENGINE_MEMORY_LIMIT_BYTES`, default
    /// 64 MiB): at start and when it grows.
    pub memory_limit_bytes: usize,
    /// Core module instances one component may create (`TESSERA_ENGINE_MAX_CORE_INSTANCES`).
    pub max_core_instances: u32,
    /// Linear memories one component may define (`TESSERA_ENGINE_MAX_MEMORIES`).
    pub max_memories: u32,
    /// Tables one component may define (`TESSERA_ENGINE_MAX_TABLES`).
    pub max_tables: u32,
    /// Elements of one table, at start and when it grows (`TESSERA_ENGINE_MAX_TABLE_ELEMENTS`).
    pub max_table_elements: u32,
    /// Each engine's own limits (`TESSERA_ENGINE_LIMITS__<CODE>__<LIMIT>`), by engine code.
    pub engine_limits: BTreeMap<String, EngineLimits>,
    /// Largest request body an engine route accepts (413 beyond).
    pub max_request_bytes: usize,
    /// Largest response body an engine may return (502 beyond).
    pub max_response_bytes: usize,
    /// How many instances may be alive at once (pooling allocator slots), and so how many
    /// engine calls run at once on this host (`TESSERA_ENGINE_MAX_INSTANCES`, default 200).
    pub max_instances: u32,
    /// Engine calls one tenant may run at once (`TESSERA_ENGINE_TENANT_CONCURRENCY`); `None`:
    /// a quarter of `max_instances`.
    pub tenant_concurrency: Option<u32>,
    /// HTTP requests of one tenant that may wait beyond its share
    /// (`TESSERA_ENGINE_TENANT_QUEUE`, default 100); more get 503 at once.
    pub tenant_queue: u32,
    /// How long such a request waits for a slot before its 503
    /// (`TESSERA_ENGINE_TENANT_QUEUE_TIMEOUT`, default 5 s).
    pub tenant_queue_timeout: Duration,
    /// Compiled components, keyed by the file's SHA-256.
    pub cache_dir: PathBuf,
    /// Instances kept warm between calls of one engine in one tenant (`warm_instances.rs`).
    pub warm_instances: WarmInstanceConfig,
    /// Realtime events one engine may publish per second in one tenant, on one host
    /// (`TESSERA_REALTIME_MAX_PUBLISH_PER_SECOND`, default 1,000; as many at once).
    pub realtime_publish_per_second: u32,
    /// Largest component that may be published to the cluster
    /// (`TESSERA_ENGINE_MAX_COMPONENT_BYTES`, default 64 MiB; 413 beyond).
    pub max_component_bytes: usize,
    /// How often a host checks the published engines besides being told
    /// (`TESSERA_ENGINE_RECONCILE_INTERVAL`, default 5 s).
    pub reconcile_interval: Duration,
    /// The publishers whose signature a published component must carry
    /// (`TESSERA_ENGINE_TRUSTED_KEYS`); none listed: no signature is required.
    pub trusted_keys: TrustedKeys,
}

/// The default of `TESSERA_ENGINE_MAX_CORE_INSTANCES`: a componentize-py component creates 14.
pub const DEFAULT_MAX_CORE_INSTANCES: u32 = 20;
/// The default of `TESSERA_ENGINE_MAX_MEMORIES`: componentize-py and componentize-js components
/// define one, and each memory slot reserves 4 GiB of address space (see `create_engine`).
pub const DEFAULT_MAX_MEMORIES: u32 = 2;
/// The default of `TESSERA_ENGINE_MAX_TABLES`: componentize-py and componentize-js define two.
pub const DEFAULT_MAX_TABLES: u32 = 4;
/// The default of `TESSERA_ENGINE_MAX_TABLE_ELEMENTS` (wasmtime's pooling default).
pub const DEFAULT_MAX_TABLE_ELEMENTS: u32 = 20_000;

impl RuntimeConfig {
    pub fn with_defaults(cache_dir: PathBuf) -> Self {
        Self {
            handle_timeout: Duration::from_secs(5),
            lifecycle_timeout: Duration::from_secs(30),
            memory_limit_bytes: 64 * 1024 * 1024,
            max_core_instances: DEFAULT_MAX_CORE_INSTANCES,
            max_memories: DEFAULT_MAX_MEMORIES,
            max_tables: DEFAULT_MAX_TABLES,
            max_table_elements: DEFAULT_MAX_TABLE_ELEMENTS,
            engine_limits: BTreeMap::new(),
            max_request_bytes: 8 * 1024 * 1024,
            max_response_bytes: 8 * 1024 * 1024,
            max_instances: 200,
            tenant_concurrency: None,
            tenant_queue: 100,
            tenant_queue_timeout: Duration::from_secs(5),
            cache_dir,
            warm_instances: WarmInstanceConfig::default(),
            realtime_publish_per_second: 1_000,
            max_component_bytes: 64 * 1024 * 1024,
            reconcile_interval: Duration::from_secs(5),
            trusted_keys: TrustedKeys::default(),
        }
    }

    /// The admission limits these settings give: the pool's size in all, the tenant share
    /// (a quarter of the pool unless set, at least 1, at most the pool).
    pub fn admission_limits(&self) -> AdmissionLimits {
        let capacity = usize::try_from(self.max_instances.max(1)).unwrap_or(usize::MAX);
        let share = self.tenant_concurrency.map_or(capacity / 4, |share| {
            usize::try_from(share).unwrap_or(capacity)
        });
        AdmissionLimits {
            capacity,
            tenant_share: share.clamp(1, capacity),
            tenant_queue: usize::try_from(self.tenant_queue).unwrap_or(usize::MAX),
        }
    }

    /// The global limits (`TESSERA_ENGINE_<LIMIT>`), those of an engine without its own.
    pub fn global_limits(&self) -> SandboxLimits {
        SandboxLimits {
            max_core_instances: self.max_core_instances,
            max_memories: self.max_memories,
            max_tables: self.max_tables,
            max_table_elements: self.max_table_elements,
            memory_limit_bytes: self.memory_limit_bytes,
            handle_timeout: self.handle_timeout,
            lifecycle_timeout: self.lifecycle_timeout,
            max_instances: None,
        }
    }

    /// The limits of the engine `code`: its own values, else the global ones.
    pub fn limits_of(&self, code: &str) -> SandboxLimits {
        match self.engine_limits.get(code) {
            Some(own) => self.global_limits().with(own),
            None => self.global_limits(),
        }
    }

    /// The largest value of each limit any engine may use: what the pool is sized for, and
    /// what a call outside any engine (`describe`, before the code is known) runs under.
    pub fn loosest_limits(&self) -> SandboxLimits {
        self.global_limits().loosest(self.engine_limits.values())
    }

    /// Checks the `figures` of the component `file` against the limits of the engine `code`,
    /// or, before the engine is known, against the loosest limits (what the pool admits).
    pub fn check_component(
        &self,
        file: &str,
        figures: &ComponentFigures,
        code: Option<&str>,
    ) -> Result<(), LimitExceeded> {
        let limits = match code {
            Some(code) => self.limits_of(code),
            None => self.loosest_limits(),
        };
        component_limits::check(file, figures, &limits, code, &self.global_limits())
    }

    /// The engines with a cap of their own on their calls alive at once.
    pub(crate) fn engine_caps(&self) -> HashMap<String, usize> {
        self.engine_limits
            .iter()
            .filter_map(|(code, limits)| {
                let cap = usize::try_from(limits.max_instances?).ok()?;
                Some((code.clone(), cap))
            })
            .collect()
    }
}

/// How instances are kept warm between calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WarmInstanceConfig {
    /// Idle instances kept on the whole host (`TESSERA_ENGINE_WARM_INSTANCES`, default 32); 0:
    /// every call runs on a fresh instance.
    pub capacity: u32,
    /// Calls one instance serves before it is retired (`TESSERA_ENGINE_INSTANCE_MAX_CALLS`,
    /// default 1000); 1: every call runs on a fresh instance.
    pub max_calls: u32,
    /// How long an instance waits idle before it is retired
    /// (`TESSERA_ENGINE_WARM_IDLE_TIMEOUT`, default 30 s).
    pub idle_timeout: Duration,
}

impl Default for WarmInstanceConfig {
    fn default() -> Self {
        Self {
            capacity: 32,
            max_calls: 1000,
            idle_timeout: Duration::from_secs(30),
        }
    }
}

impl WarmInstanceConfig {
    /// Whether instances are kept at all.
    pub fn enabled(&self) -> bool {
        self.capacity > 0 && self.max_calls > 1
    }

    /// Pool slots the idle instances may hold beyond the calls alive.
    pub fn pool_slots(&self) -> u32 {
        if self.enabled() { self.capacity } else { 0 }
    }
}
