//! The SQL of `cluster_hosts`: registration, heartbeats, clean stops, the deletion of departed
//! hosts' rows, and the list.

use anyhow::Context as _;
use tessera_storage::{Database, on_pool, on_writer};

use crate::HostIdentity;

/// One row of `cluster_hosts`.
#[derive(Debug, sqlx::FromRow)]
pub struct HostRow {
    pub id: String,
    pub listen_address: String,
    pub public_url: String,
    pub version: String,
    pub started_at: String,
    pub heartbeat_at: String,
    pub expires_at: String,
    pub stopped_at: Option<String>,
    pub engines: String,
}

pub async fn insert_host(
    database: &Database,
    host_id: &str,
    identity: &HostIdentity,
    beat: &Beat<'_>,
) -> anyhow::Result<()> {
    on_writer!(database, pool => sqlx::query(
        "INSERT INTO cluster_hosts (id, listen_address, public_url, version, started_at, heartbeat_at, expires_at, engines)
         VALUES ($1, $2, $3, $4, $5, $5, $6, $7)",
    )
    .bind(host_id)
    .bind(&identity.listen_address)
    .bind(&identity.public_url)
    .bind(&identity.version)
    .bind(beat.at)
    .bind(beat.expires_at)
    .bind(beat.engines)
    .execute(pool)
    .await
    .map(drop))
    .context("inserting the host's row")
}

/// One heartbeat: its time, the deadline of the next, the engines run.
pub struct Beat<'a> {
    pub at: &'a str,
    pub expires_at: &'a str,
    pub engines: &'a str,
}

/// `false` when the host's row is gone or marked stopped.
pub async fn heartbeat(
    database: &Database,
    host_id: &str,
    beat: &Beat<'_>,
) -> anyhow::Result<bool> {
    on_writer!(database, pool => sqlx::query(
        "UPDATE cluster_hosts SET heartbeat_at = $2, expires_at = $3, engines = $4
         WHERE id = $1 AND stopped_at IS NULL",
    )
    .bind(host_id)
    .bind(beat.at)
    .bind(beat.expires_at)
    .bind(beat.engines)
    .execute(pool)
    .await
    .map(|done| done.rows_affected() == 1))
    .context("updating the host's heartbeat")
}

pub async fn mark_stopped(database: &Database, host_id: &str, now: &str) -> anyhow::Result<()> {
    on_writer!(database, pool => sqlx::query(
        "UPDATE cluster_hosts SET stopped_at = $2 WHERE id = $1",
    )
    .bind(host_id)
    .bind(now)
    .execute(pool)
    .await
    .map(drop))
    .context("marking the host stopped")
}

/// Deletes the rows of hosts whose last heartbeat is before `before` (stopped or gone since).
pub async fn delete_departed(database: &Database, before: &str) -> anyhow::Result<()> {
    on_writer!(database, pool => sqlx::query("DELETE FROM cluster_hosts WHERE heartbeat_at < $1")
        .bind(before)
        .execute(pool)
        .await
        .map(drop))
    .context("deleting departed hosts")
}

pub async fn list(database: &Database) -> anyhow::Result<Vec<HostRow>> {
    on_pool!(database, pool => sqlx::query_as::<_, HostRow>(
        "SELECT id, listen_address, public_url, version, started_at, heartbeat_at, expires_at, stopped_at, engines
         FROM cluster_hosts ORDER BY started_at, id",
    )
    .fetch_all(pool)
    .await)
    .context("listing the cluster's hosts")
}

/// The hosts live at `now`: not stopped, their deadline not passed.
pub async fn count_live(database: &Database, now: &str) -> anyhow::Result<i64> {
    on_pool!(database, pool => sqlx::query_scalar::<_, i64>(
        "SELECT COUNT(*) FROM cluster_hosts WHERE stopped_at IS NULL AND expires_at >= $1",
    )
    .bind(now)
    .fetch_one(pool)
    .await)
    .context("counting the cluster's live hosts")
}
