//! The engine runtime's settings from the host's configuration: engines' outbound HTTP
//! ([`OutboundConfig`]), the webhook retry schedule ([`WebhookConfig`]), the SMTP relay, the scan
//! bounds, engines' own declared settings, and [`RuntimeSetup`], the view of all of them (and the
//! service secret) the runtime starts from.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tessera_http::config::Secret;

use crate::RuntimeConfig;

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
