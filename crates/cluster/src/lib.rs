//! Cluster membership: every `tessera serve` registers itself in the shared database
//! under a fresh id when it starts, heartbeats with the engines it has loaded while it serves,
//! and marks itself stopped when it shuts down cleanly. Operators list the hosts
//! (`tessera admin hosts`, `GET /core/api/operator/hosts`): live, stopped, or gone (no heartbeat
//! for `TESSERA_CLUSTER_HOST_TIMEOUT`: killed, frozen or cut off), so a rollout can be watched
//! converging. A gone host's claims (jobs, deliveries, projection batches) need nothing from
//! here: they return to the others when their leases run out.
//!
//! The statuses are judged on the hosts' clocks (each heartbeat is stamped by its host), so the
//! hosts of a cluster keep their clocks in sync (NTP), as their leases already require.

pub mod routes;
mod store;

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use serde::{Deserialize, Serialize};
use tessera_storage::{Database, time};
use tokio_util::sync::CancellationToken;
use utoipa::ToSchema;

/// How long the rows of hosts stopped or gone stay listed before the live hosts delete them.
pub const DEPARTED_HOST_RETENTION: Duration = Duration::from_secs(24 * 60 * 60);

/// The membership settings (`TESSERA_CLUSTER_HEARTBEAT_INTERVAL`,
/// `TESSERA_CLUSTER_HOST_TIMEOUT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClusterConfig {
    /// How often a host writes its heartbeat (default 5 s).
    pub heartbeat_interval: Duration,
    /// A host whose last heartbeat is older is reported gone (default 30 s; more than twice
    /// the interval, so one late heartbeat does not make a host gone).
    pub host_timeout: Duration,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        Self {
            heartbeat_interval: Duration::from_secs(5),
            host_timeout: Duration::from_secs(30),
        }
    }
}

impl ClusterConfig {
    /// Refuses an interval of zero and a timeout not above twice the interval, naming the
    /// settings.
    pub fn validate(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            !self.heartbeat_interval.is_zero(),
            "TESSERA_CLUSTER_HEARTBEAT_INTERVAL must be above zero"
        );
        anyhow::ensure!(
            self.host_timeout > self.heartbeat_interval * 2,
            "TESSERA_CLUSTER_HOST_TIMEOUT ({:?}) must be more than twice TESSERA_CLUSTER_HEARTBEAT_INTERVAL ({:?})",
            self.host_timeout,
            self.heartbeat_interval
        );
        Ok(())
    }
}

/// What a host runs, for its heartbeats: owned by this crate, given by the app (the engine
/// registry).
pub trait EngineInventory: Send + Sync + 'static {
    /// The engines loaded now.
    fn running(&self) -> Vec<RunningEngine>;
}

/// Told how many hosts are live, when the host joins and at every heartbeat: owned by this
/// crate, given by the app (the engine-call share divided among the live hosts).
pub trait LiveHostsListener: Send + Sync + 'static {
    /// `count` hosts are live now, this one included (at least 1).
    fn live_hosts(&self, count: usize);
}

/// One engine a host has loaded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct RunningEngine {
    pub code: String,
    /// The version its descriptor declares.
    pub version: String,
    /// The SHA-256 of its component's bytes (hex).
    pub sha256: String,
}

/// What a host says about itself when it joins.
#[derive(Debug, Clone)]
pub struct HostIdentity {
    /// The address it listens on (the real port when port 0 was asked).
    pub listen_address: String,
    pub public_url: String,
    /// The `tessera` version.
    pub version: String,
}

/// A host's state as the cluster sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum HostStatus {
    /// Heartbeating within `TESSERA_CLUSTER_HOST_TIMEOUT`.
    Live,
    /// Shut down cleanly.
    Stopped,
    /// No heartbeat within `TESSERA_CLUSTER_HOST_TIMEOUT` and never stopped: killed, frozen or
    /// cut off from the database.
    Gone,
}

/// One host of the cluster.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct HostRecord {
    /// A UUID, new at every start of the host.
    pub id: String,
    pub status: HostStatus,
    /// The address it listens on.
    pub listen_address: String,
    pub public_url: String,
    /// The `tessera` version it runs.
    pub version: String,
    pub started_at: String,
    pub heartbeat_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped_at: Option<String>,
    /// The engines it had loaded at its last heartbeat.
    pub engines: Vec<RunningEngine>,
}

/// This host's membership: joined at start, heartbeating while it serves, left at a clean stop.
#[derive(Clone)]
pub struct Membership {
    inner: Arc<MembershipInner>,
}

struct MembershipInner {
    database: Database,
    host_id: String,
    config: ClusterConfig,
    inventory: Arc<dyn EngineInventory>,
    live_hosts: Option<Arc<dyn LiveHostsListener>>,
}

impl Membership {
    /// Registers this host under a fresh id, with the engines it runs now; `live_hosts`, when
    /// given, hears the count of live hosts now and at every heartbeat.
    pub async fn join(
        database: Database,
        identity: &HostIdentity,
        config: ClusterConfig,
        inventory: Arc<dyn EngineInventory>,
        live_hosts: Option<Arc<dyn LiveHostsListener>>,
    ) -> anyhow::Result<Self> {
        let host_id = uuid::Uuid::new_v4().to_string();
        let engines = engines_json(inventory.as_ref())?;
        let (at, expires_at) = beat_times(&config)?;
        let beat = store::Beat {
            at: &at,
            expires_at: &expires_at,
            engines: &engines,
        };
        store::insert_host(&database, &host_id, identity, &beat)
            .await
            .context("registering this host in the cluster")?;
        tracing::info!(
            host_id,
            listen_address = identity.listen_address,
            "joined the cluster"
        );
        let membership = Self {
            inner: Arc::new(MembershipInner {
                database,
                host_id,
                config,
                inventory,
                live_hosts,
            }),
        };
        membership.tell_live_hosts().await?;
        Ok(membership)
    }

    /// Counts the live hosts and tells the listener, if there is one.
    async fn tell_live_hosts(&self) -> anyhow::Result<()> {
        let Some(listener) = &self.inner.live_hosts else {
            return Ok(());
        };
        let live = store::count_live(&self.inner.database, &time::now()).await?;
        // This host is live whatever a lagging clock says.
        listener.live_hosts(usize::try_from(live).unwrap_or(1).max(1));
        Ok(())
    }

    /// This host's id in the cluster.
    pub fn host_id(&self) -> &str {
        &self.inner.host_id
    }

    /// Writes one heartbeat with the engines loaded now, deletes the rows of hosts departed
    /// longer than [`DEPARTED_HOST_RETENTION`], and tells the listener how many hosts are live.
    pub async fn heartbeat(&self) -> anyhow::Result<()> {
        let inner = &self.inner;
        let engines = engines_json(inner.inventory.as_ref())?;
        let (at, expires_at) = beat_times(&inner.config)?;
        let beat = store::Beat {
            at: &at,
            expires_at: &expires_at,
            engines: &engines,
        };
        let beaten = store::heartbeat(&inner.database, &inner.host_id, &beat)
            .await
            .context("writing this host's heartbeat")?;
        if !beaten {
            // Another host deleted this row after a long pause (e.g. cut off for a day):
            // nothing to resume, so say so loudly; the next start registers again.
            tracing::warn!(
                host_id = inner.host_id,
                "this host's cluster registration is gone or stopped; it is no longer listed"
            );
        }
        let retention = chrono::Duration::from_std(DEPARTED_HOST_RETENTION)?;
        let departed_before = time::format(chrono::Utc::now() - retention);
        store::delete_departed(&inner.database, &departed_before)
            .await
            .context("deleting the rows of departed hosts")?;
        self.tell_live_hosts().await
    }

    /// Heartbeats every `heartbeat_interval` until `shutdown`; a failed heartbeat is logged and
    /// retried at the next.
    pub async fn run(self, shutdown: CancellationToken) {
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep(self.inner.config.heartbeat_interval) => {}
            }
            if let Err(error) = self.heartbeat().await {
                tracing::warn!(error = format!("{error:#}"), "the cluster heartbeat failed");
            }
        }
    }

    /// Marks this host stopped (a clean shutdown).
    pub async fn leave(&self) -> anyhow::Result<()> {
        store::mark_stopped(&self.inner.database, &self.inner.host_id, &time::now())
            .await
            .context("marking this host stopped")
    }
}

/// A heartbeat's time and the deadline of the next (`host_timeout` later).
fn beat_times(config: &ClusterConfig) -> anyhow::Result<(String, String)> {
    let now = chrono::Utc::now();
    let expires = now + chrono::Duration::from_std(config.host_timeout)?;
    Ok((time::format(now), time::format(expires)))
}

fn engines_json(inventory: &dyn EngineInventory) -> anyhow::Result<String> {
    let mut engines = inventory.running();
    engines.sort_by(|a, b| a.code.cmp(&b.code));
    serde_json::to_string(&engines).context("writing the engine list")
}

/// The hosts of the cluster, as the operator endpoint and the admin CLI read them: each judged
/// by the deadline it wrote itself, so every reader agrees whatever its own settings.
#[derive(Clone)]
pub struct ClusterHosts {
    pub database: Database,
}

impl ClusterHosts {
    /// Every host registered (departed ones for [`DEPARTED_HOST_RETENTION`]), oldest first.
    pub async fn list(&self) -> anyhow::Result<Vec<HostRecord>> {
        let rows = store::list(&self.database).await?;
        let now = time::now();
        rows.into_iter()
            .map(|row| {
                let status = if row.stopped_at.is_some() {
                    HostStatus::Stopped
                } else if row.expires_at < now {
                    HostStatus::Gone
                } else {
                    HostStatus::Live
                };
                let engines = serde_json::from_str(&row.engines)
                    .with_context(|| format!("reading the engines of host {}", row.id))?;
                Ok(HostRecord {
                    id: row.id,
                    status,
                    listen_address: row.listen_address,
                    public_url: row.public_url,
                    version: row.version,
                    started_at: row.started_at,
                    heartbeat_at: row.heartbeat_at,
                    stopped_at: row.stopped_at,
                    engines,
                })
            })
            .collect()
    }
}
