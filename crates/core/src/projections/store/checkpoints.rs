//! The SQL of the projections' checkpoints (`projection_checkpoints`, one row a projection):
//! the worker reads, locks and moves its own; a rebuild locks and rewinds it.

use anyhow::Context as _;

use super::log::LogPosition;
use tessera_storage::{Database, Tx};
use tessera_storage::{on_pool, on_tx};

/// A checkpoint row: the position applied up to (transaction id, position) and the
/// high-water mark of the events counted in the statistics (transaction id, position).
pub(crate) type CheckpointRow = (i64, i64, i64, i64);

const CHECKPOINT: &str = "SELECT transaction_id, position, counted_transaction_id, counted_position
     FROM projection_checkpoints WHERE projection = $1";

/// The checkpoint furthest behind in reading order (position on SQLite, transaction id and
/// position on PostgreSQL), read without a transaction.
pub(crate) async fn slowest(database: &Database) -> anyhow::Result<LogPosition> {
    let sql = match database.kind() {
        tessera_storage::DatabaseKind::Sqlite => {
            "SELECT transaction_id, position FROM projection_checkpoints ORDER BY position LIMIT 1"
        }
        tessera_storage::DatabaseKind::Postgres => {
            "SELECT transaction_id, position FROM projection_checkpoints
             ORDER BY transaction_id, position LIMIT 1"
        }
    };
    let (transaction_id, position): (i64, i64) =
        on_pool!(database, pool => sqlx::query_as(sql).fetch_one(pool).await)
            .context("reading the slowest projection checkpoint")?;
    Ok(LogPosition {
        transaction_id,
        position,
    })
}

/// The projection's checkpoint, read without a transaction.
pub(crate) async fn read(database: &Database, name: &str) -> anyhow::Result<CheckpointRow> {
    on_pool!(database, pool => sqlx::query_as(
        CHECKPOINT,
    )
    .bind(name)
    .fetch_one(pool)
    .await)
    .with_context(|| format!("reading the {name} checkpoint"))
}

/// The projection's checkpoint, read inside the batch's transaction (on SQLite, which holds
/// the write lock: the row cannot move under it).
pub(crate) async fn read_in(tx: &mut Tx, name: &str) -> anyhow::Result<CheckpointRow> {
    on_tx!(tx, conn => sqlx::query_as(
        CHECKPOINT,
    )
    .bind(name)
    .fetch_one(&mut **conn)
    .await)
    .with_context(|| format!("reading the {name} checkpoint"))
}

/// PostgreSQL: locks the projection's checkpoint for the batch and reads it; `None` when
/// another host holds it (`FOR UPDATE SKIP LOCKED`).
pub(crate) async fn lock_unless_held(
    tx: &mut Tx,
    name: &str,
) -> anyhow::Result<Option<CheckpointRow>> {
    on_tx!(tx, conn => sqlx::query_as(
        "SELECT transaction_id, position, counted_transaction_id, counted_position
         FROM projection_checkpoints WHERE projection = $1 FOR UPDATE SKIP LOCKED",
    )
    .bind(name)
    .fetch_optional(&mut **conn)
    .await)
    .with_context(|| format!("locking the {name} checkpoint"))
}

/// Moves the checkpoint past a batch: applied up to `last`, counted up to `counted`.
pub(crate) async fn advance(
    tx: &mut Tx,
    name: &str,
    last: LogPosition,
    counted: LogPosition,
    updated_at: &str,
) -> anyhow::Result<()> {
    on_tx!(tx, conn => sqlx::query(
        "UPDATE projection_checkpoints SET transaction_id = $2, position = $3,
         counted_transaction_id = $4, counted_position = $5, updated_at = $6
         WHERE projection = $1",
    )
    .bind(name)
    .bind(last.transaction_id)
    .bind(last.position)
    .bind(counted.transaction_id)
    .bind(counted.position)
    .bind(updated_at)
    .execute(&mut **conn)
    .await
    .map(drop))
    .with_context(|| format!("moving the {name} checkpoint"))
}

/// Locks the checkpoint (waiting for a batch in flight) without changing it: while the
/// transaction lasts, no worker applies a batch of the projection.
pub(crate) async fn lock(tx: &mut Tx, name: &str) -> anyhow::Result<()> {
    on_tx!(tx, conn => sqlx::query(
        "UPDATE projection_checkpoints SET updated_at = updated_at WHERE projection = $1",
    )
    .bind(name)
    .execute(&mut **conn)
    .await
    .map(drop))
    .with_context(|| format!("locking the {name} checkpoint"))
}

/// Rewinds the checkpoint to the start of the log (the counted mark stays, so replayed events
/// are not counted again).
pub(crate) async fn rewind(tx: &mut Tx, name: &str, updated_at: &str) -> anyhow::Result<()> {
    on_tx!(tx, conn => sqlx::query(
        "UPDATE projection_checkpoints SET transaction_id = 0, position = 0, updated_at = $2
         WHERE projection = $1",
    )
    .bind(name)
    .bind(updated_at)
    .execute(&mut **conn)
    .await
    .map(drop))
    .with_context(|| format!("rewinding the {name} checkpoint"))
}
