//! The SQL of `realtime_events`: what engines' calls published to their topics (and the ends
//! of subscriptions they asked for), written in the transaction of the call's unit of work,
//! and the host's own entries of `core.audit` (written with the audit entry they carry),
//! read by the realtime hub in commit order, and `realtime_pruned`: per topic, the last
//! position the retention deleted (a cursor at or before it cannot be resumed).
//!
//! The reading order is `(transaction_id, position)`, as the event log's: on SQLite writers
//! are serialized, so `position` alone is commit order (`transaction_id` is 0); on PostgreSQL
//! `transaction_id` is the writing transaction's id and only rows of transactions below the
//! horizon (`pg_snapshot_xmin`) are read, so a transaction still in flight, whose rows will
//! sort before later ones, is never overtaken.

use crate::{Database, Pool, Tx, on_pool, on_tx};
use anyhow::Context as _;

/// A position in the feed's reading order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FeedPosition {
    pub transaction_id: i64,
    pub position: i64,
}

/// What a row carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PublishedKind {
    /// An event for the topic's subscribers.
    Event { event_type: String, data: String },
    /// The end of the user's subscriptions to the topic.
    End,
}

/// One row to write.
#[derive(Debug, Clone)]
pub struct NewPublished<'a> {
    pub tenant_id: &'a str,
    pub engine_code: &'a str,
    /// The full topic name, `<engine_code>.<name>`.
    pub topic: String,
    pub user_id: Option<&'a str>,
    pub kind: &'a PublishedKind,
    pub occurred_at: &'a str,
}

/// One row read.
#[derive(Debug, Clone)]
pub struct PublishedRow {
    pub position: FeedPosition,
    pub tenant_id: String,
    /// The full topic name.
    pub topic: String,
    pub user_id: Option<String>,
    pub kind: PublishedKind,
    pub occurred_at: String,
}

#[derive(sqlx::FromRow)]
struct Row {
    transaction_id: i64,
    position: i64,
    tenant_id: String,
    topic: String,
    user_id: Option<String>,
    kind: String,
    event_type: String,
    data: String,
    occurred_at: String,
}

impl Row {
    fn into_published(self) -> PublishedRow {
        PublishedRow {
            position: FeedPosition {
                transaction_id: self.transaction_id,
                position: self.position,
            },
            tenant_id: self.tenant_id,
            topic: self.topic,
            user_id: self.user_id,
            kind: if self.kind == "end" {
                PublishedKind::End
            } else {
                PublishedKind::Event {
                    event_type: self.event_type,
                    data: self.data,
                }
            },
            occurred_at: self.occurred_at,
        }
    }
}

const COLUMNS: &str =
    "transaction_id, position, tenant_id, topic, user_id, kind, event_type, data, occurred_at";

/// Writes `rows` in `tx`, in order.
pub async fn insert_in(tx: &mut Tx, rows: &[NewPublished<'_>]) -> anyhow::Result<()> {
    for row in rows {
        let (kind, event_type, data) = match row.kind {
            PublishedKind::Event { event_type, data } => {
                ("event", event_type.as_str(), data.as_str())
            }
            PublishedKind::End => ("end", "", ""),
        };
        on_tx!(tx, conn => sqlx::query(
            "INSERT INTO realtime_events
                 (tenant_id, engine_code, topic, user_id, kind, event_type, data, occurred_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(row.tenant_id)
        .bind(row.engine_code)
        .bind(&row.topic)
        .bind(row.user_id)
        .bind(kind)
        .bind(event_type)
        .bind(data)
        .bind(row.occurred_at)
        .execute(&mut **conn)
        .await
        .map(drop))
        .context("storing a realtime publication")?;
    }
    Ok(())
}

/// The last position no later commit can precede (the default before any row).
pub async fn head(database: &Database) -> anyhow::Result<FeedPosition> {
    let row: Option<(i64, i64)> = match database.pool() {
        Pool::Sqlite(pool) => {
            sqlx::query_as("SELECT 0, position FROM realtime_events ORDER BY position DESC LIMIT 1")
                .fetch_optional(pool)
                .await
        }
        Pool::Postgres(pool) => {
            sqlx::query_as(
                "SELECT transaction_id, position FROM realtime_events
                 WHERE transaction_id < pg_snapshot_xmin(pg_current_snapshot())::text::bigint
                 ORDER BY transaction_id DESC, position DESC LIMIT 1",
            )
            .fetch_optional(pool)
            .await
        }
    }
    .context("reading the head of the realtime feed")?;
    Ok(
        row.map_or(FeedPosition::default(), |(transaction_id, position)| {
            FeedPosition {
                transaction_id,
                position,
            }
        }),
    )
}

/// Up to `limit` rows after `after`, in reading order, that every later commit follows.
pub async fn after(
    database: &Database,
    after: FeedPosition,
    limit: u32,
) -> anyhow::Result<Vec<PublishedRow>> {
    let rows: Vec<Row> = match database.pool() {
        Pool::Sqlite(pool) => {
            let sql = format!(
                "SELECT {COLUMNS} FROM realtime_events WHERE position > $1
                 ORDER BY position LIMIT $2"
            );
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(after.position)
                .bind(i64::from(limit))
                .fetch_all(pool)
                .await
        }
        Pool::Postgres(pool) => {
            let sql = format!(
                "SELECT {COLUMNS} FROM realtime_events
                 WHERE (transaction_id, position) > ($1, $2)
                   AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())::text::bigint
                 ORDER BY transaction_id, position LIMIT $3"
            );
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(after.transaction_id)
                .bind(after.position)
                .bind(i64::from(limit))
                .fetch_all(pool)
                .await
        }
    }
    .context("reading the realtime feed")?;
    Ok(rows.into_iter().map(Row::into_published).collect())
}

/// Up to `limit` rows of `topic` in `tenant_id` for `user_id` (its own and everyone's) after
/// `after` and not after `until`, in reading order.
pub async fn of_topic_between(
    database: &Database,
    tenant_id: &str,
    topic: &str,
    user_id: &str,
    after: FeedPosition,
    until: FeedPosition,
    limit: u32,
) -> anyhow::Result<Vec<PublishedRow>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM realtime_events
         WHERE tenant_id = $1 AND topic = $2 AND (user_id IS NULL OR user_id = $3)
           AND (transaction_id, position) > ($4, $5)
           AND (transaction_id, position) <= ($6, $7)
         ORDER BY transaction_id, position LIMIT $8"
    );
    let rows: Vec<Row> = on_pool!(database, pool => sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(tenant_id)
        .bind(topic)
        .bind(user_id)
        .bind(after.transaction_id)
        .bind(after.position)
        .bind(until.transaction_id)
        .bind(until.position)
        .bind(i64::from(limit))
        .fetch_all(pool)
        .await)
    .context("replaying a realtime topic")?;
    Ok(rows.into_iter().map(Row::into_published).collect())
}

/// Whether the retention deleted rows of `topic` in `tenant_id` after `after`.
pub async fn pruned_after(
    database: &Database,
    tenant_id: &str,
    topic: &str,
    after: FeedPosition,
) -> anyhow::Result<bool> {
    let pruned: Option<(i64, i64)> = on_pool!(database, pool => sqlx::query_as(
        "SELECT transaction_id, position FROM realtime_pruned
         WHERE tenant_id = $1 AND topic = $2",
    )
    .bind(tenant_id)
    .bind(topic)
    .fetch_optional(pool)
    .await)
    .context("reading what the realtime retention deleted")?;
    Ok(pruned.is_some_and(|(transaction_id, position)| {
        FeedPosition {
            transaction_id,
            position,
        } > after
    }))
}

/// Deletes the rows older than `cutoff` that are not among the last `keep` of their topic,
/// recording per topic the last position deleted; how many rows. The mark is the greatest
/// transaction id and the greatest position of the deleted rows, taken apart: never below the
/// last deleted row, at worst above a kept row of the same transaction, which then answers a
/// cursor with a reset (refetch) rather than a gap.
pub async fn prune(database: &Database, cutoff: &str, keep: i64) -> anyhow::Result<u64> {
    let mut tx = database.begin_background().await?;
    // The doomed rows: older than the cutoff, and `keep` newer ones of the same topic exist.
    const DOOMED: &str = "SELECT position FROM (
             SELECT position, occurred_at, ROW_NUMBER() OVER (
                 PARTITION BY tenant_id, topic ORDER BY transaction_id DESC, position DESC
             ) AS newer
             FROM realtime_events
         ) ranked WHERE newer > $2 AND occurred_at < $1";
    let marks = format!(
        "SELECT tenant_id, topic, MAX(transaction_id), MAX(position) FROM realtime_events
         WHERE position IN ({DOOMED}) GROUP BY tenant_id, topic"
    );
    let marks: Vec<(String, String, i64, i64)> =
        on_tx!(tx, conn => sqlx::query_as(sqlx::AssertSqlSafe(marks))
            .bind(cutoff)
            .bind(keep)
            .fetch_all(&mut **conn)
            .await)
        .context("finding what the realtime retention deletes")?;
    if marks.is_empty() {
        return Ok(0);
    }
    for (tenant_id, topic, transaction_id, position) in &marks {
        on_tx!(tx, conn => sqlx::query(
            "INSERT INTO realtime_pruned (tenant_id, topic, transaction_id, position)
             VALUES ($1, $2, $3, $4)
             ON CONFLICT (tenant_id, topic) DO UPDATE
             SET transaction_id = excluded.transaction_id, position = excluded.position
             WHERE (realtime_pruned.transaction_id, realtime_pruned.position)
                 < (excluded.transaction_id, excluded.position)",
        )
        .bind(tenant_id)
        .bind(topic)
        .bind(transaction_id)
        .bind(position)
        .execute(&mut **conn)
        .await
        .map(drop))
        .context("recording what the realtime retention deleted")?;
    }
    let delete = format!("DELETE FROM realtime_events WHERE position IN ({DOOMED})");
    let deleted = on_tx!(tx, conn => sqlx::query(sqlx::AssertSqlSafe(delete))
        .bind(cutoff)
        .bind(keep)
        .execute(&mut **conn)
        .await
        .map(|done| done.rows_affected()))
    .context("deleting what the realtime retention no longer keeps")?;
    tx.commit().await?;
    Ok(deleted)
}
