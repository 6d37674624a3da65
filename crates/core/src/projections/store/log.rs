//! The SQL of the projection worker's reads of the event log, in its reading order
//! `(transaction_id, position)` (see `projections/worker.rs`), through the `event_log` view
//! (`store/events.rs` describes the layout), and of the `NOTIFY` that announces appends to the
//! other hosts on PostgreSQL.

use anyhow::Context as _;
use sqlx::PgPool;

use crate::store::events::StoredEvent;
use tessera_storage::{Database, Tx};
use tessera_storage::{on_pool, on_tx};

/// The columns of [`StoredEvent`], for `SELECT`s.
pub(crate) const STORED_EVENT_COLUMNS: &str =
    "position, transaction_id, id, tenant_id, sequence, event_type, entity_id,
     intention_id, actor_id, correlation_id, depth, data, occurred_at, entity_state, traceparent,
     group_offset";

/// A position in the log's reading order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct LogPosition {
    pub transaction_id: i64,
    pub position: i64,
}

impl LogPosition {
    pub fn of(event: &StoredEvent) -> Self {
        Self {
            transaction_id: event.transaction_id,
            position: event.position,
        }
    }
}

/// PostgreSQL: the occurrence time of the first event after `after` in reading order,
/// committed or not yet safe to read.
pub(crate) async fn first_pending(
    database: &Database,
    after: LogPosition,
) -> anyhow::Result<Option<String>> {
    on_pool!(database, pool => sqlx::query_scalar(
        "SELECT occurred_at FROM event_log WHERE (transaction_id, position) > ($1, $2)
         ORDER BY transaction_id, position LIMIT 1",
    )
    .bind(after.transaction_id)
    .bind(after.position)
    .fetch_optional(pool)
    .await)
    .context("looking for pending events")
}

/// The events after `after` in reading order, counted up to `cap`, and the occurrence time of
/// the first of them.
pub(crate) async fn behind(
    database: &Database,
    after: LogPosition,
    cap: u64,
) -> anyhow::Result<(i64, Option<String>)> {
    let cap = i64::try_from(cap).unwrap_or(i64::MAX);
    match database.pool() {
        tessera_storage::Pool::Sqlite(pool) => {
            sqlx::query_as(
                "SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM events WHERE position > $1 LIMIT $2)),
                        (SELECT occurred_at FROM event_log WHERE position > $1
                         ORDER BY position LIMIT 1)",
            )
            .bind(after.position)
            .bind(cap)
            .fetch_one(pool)
            .await
        }
        tessera_storage::Pool::Postgres(pool) => {
            sqlx::query_as(
                "SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM events
                         WHERE (transaction_id, position) > ($1, $2) LIMIT $3) AS behind),
                        (SELECT occurred_at FROM event_log WHERE (transaction_id, position) > ($1, $2)
                         ORDER BY transaction_id, position LIMIT 1)",
            )
            .bind(after.transaction_id)
            .bind(after.position)
            .bind(cap)
            .fetch_one(pool)
            .await
        }
    }
    .context("measuring the events not yet projected")
}

/// The tenants with the most events after `after` among the first `cap` of them: at most
/// `limit` `(tenant id, events)`.
pub(crate) async fn behind_by_tenant(
    database: &Database,
    after: LogPosition,
    cap: u64,
    limit: u64,
) -> anyhow::Result<Vec<(String, i64)>> {
    let cap = i64::try_from(cap).unwrap_or(i64::MAX);
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    match database.pool() {
        tessera_storage::Pool::Sqlite(pool) => {
            sqlx::query_as(
                "SELECT tenant_id, COUNT(*) FROM (SELECT tenant_id FROM event_log
                 WHERE position > $1 ORDER BY position LIMIT $2)
                 GROUP BY tenant_id ORDER BY 2 DESC LIMIT $3",
            )
            .bind(after.position)
            .bind(cap)
            .bind(limit)
            .fetch_all(pool)
            .await
        }
        tessera_storage::Pool::Postgres(pool) => {
            sqlx::query_as(
                "SELECT tenant_id, COUNT(*) FROM (SELECT tenant_id FROM event_log
                 WHERE (transaction_id, position) > ($1, $2)
                 ORDER BY transaction_id, position LIMIT $3) AS behind
                 GROUP BY tenant_id ORDER BY 2 DESC LIMIT $4",
            )
            .bind(after.transaction_id)
            .bind(after.position)
            .bind(cap)
            .bind(limit)
            .fetch_all(pool)
            .await
        }
    }
    .context("measuring the events not yet projected per tenant")
}

/// SQLite: up to `batch_size` events after `after`, in position order (commit order there).
pub(crate) async fn sqlite_events_after(
    database: &Database,
    after: LogPosition,
    batch_size: u32,
) -> anyhow::Result<Vec<StoredEvent>> {
    let sql = format!(
        "SELECT {STORED_EVENT_COLUMNS} FROM event_log WHERE position > $1 ORDER BY position LIMIT $2"
    );
    on_pool!(database, pool => sqlx::query_as::<_, StoredEvent>(sqlx::AssertSqlSafe(sql.clone()))
        .bind(after.position)
        .bind(i64::from(batch_size))
        .fetch_all(pool)
        .await)
    .context("reading the event log")
}

/// PostgreSQL: the horizon below which every transaction has ended (the oldest transaction
/// still in flight). Read first in a transaction, before it has an id of its own.
pub(crate) async fn transaction_horizon(tx: &mut Tx) -> anyhow::Result<i64> {
    on_tx!(tx, conn => sqlx::query_scalar(
        "SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint",
    )
    .fetch_one(&mut **conn)
    .await)
    .context("reading the transaction horizon")
}

/// PostgreSQL: up to `limit` events after `after` in reading order, of transactions below
/// `horizon` only.
pub(crate) async fn postgres_events_after(
    tx: &mut Tx,
    after: LogPosition,
    horizon: i64,
    limit: i64,
) -> anyhow::Result<Vec<StoredEvent>> {
    let sql = format!(
        "SELECT {STORED_EVENT_COLUMNS} FROM event_log
         WHERE (transaction_id, position) > ($1, $2) AND transaction_id < $3
         ORDER BY transaction_id, position LIMIT $4"
    );
    on_tx!(tx, conn => sqlx::query_as::<_, StoredEvent>(sqlx::AssertSqlSafe(sql.clone()))
        .bind(after.transaction_id)
        .bind(after.position)
        .bind(horizon)
        .bind(limit)
        .fetch_all(&mut **conn)
        .await)
    .context("reading the event log")
}

/// PostgreSQL: `NOTIFY`s the other hosts listening on `channel` of appends.
pub(crate) async fn notify(pool: &PgPool, channel: &str) -> Result<(), sqlx::Error> {
    sqlx::query("SELECT pg_notify($1, '')")
        .bind(channel)
        .execute(pool)
        .await
        .map(drop)
}
