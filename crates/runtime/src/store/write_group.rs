//! The SQL of the batch writer's PostgreSQL path: a whole group of engine storage batches, the
//! jobs they schedule and the work completions riding along, written by one call of
//! `engine_storage_write_group` (migrations 12 and 17), so one round trip and one commit.

use anyhow::Context as _;

use super::work::{LeaseLost, WorkRow};
use tessera_storage::engine_kv::KvWrite;
use tessera_storage::time;

/// One field of every item, as an array parameter.
fn column<'a, T, U>(items: &'a [T], field: impl Fn(&'a T) -> U) -> Vec<U> {
    items.iter().map(field).collect()
}

/// The engine work items (`(id, attempt)`) a group deletes.
#[derive(Clone, Copy)]
pub struct Completions<'a> {
    /// Runs without effects: an item claimed again since (a newer attempt) stays.
    pub bare: &'a [(String, u32)],
    /// The items the group's units hold the effects of: unless every one is still held by the
    /// attempt named, the statement fails and nothing of the group is written.
    pub fenced: &'a [(String, u32)],
}

/// The SQLSTATE `engine_storage_write_group` raises when a fenced item is no longer held;
/// its message is the number still held.
const LEASE_LOST: &str = "TE001";

/// Writes `sets` and `deletes` (each in key order), inserts `jobs` under `job_ids` and deletes
/// the work items of `completions`, in one statement.
pub async fn write_group_postgres(
    pool: &sqlx::PgPool,
    sets: &[&KvWrite<'_>],
    deletes: &[&KvWrite<'_>],
    jobs: &[WorkRow<'_>],
    completions: Completions<'_>,
) -> anyhow::Result<()> {
    let written = sqlx::query(
        "SELECT sets FROM engine_storage_write_group(
             $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18,
             $19)",
    )
    .bind(column(sets, |write| write.engine_code))
    .bind(column(sets, |write| write.tenant_id))
    .bind(column(sets, |write| write.key))
    .bind(column(sets, |write| write.value.unwrap_or_default()))
    .bind(column(deletes, |write| write.engine_code))
    .bind(column(deletes, |write| write.tenant_id))
    .bind(column(deletes, |write| write.key))
    .bind(column(jobs, |job| job.id))
    .bind(column(jobs, |job| job.engine_code))
    .bind(column(jobs, |job| job.tenant_id))
    .bind(column(jobs, |job| job.kind))
    .bind(column(jobs, |job| job.payload))
    .bind(column(jobs, |job| job.due_at.as_str()))
    .bind(column(jobs, |job| job.traceparent))
    .bind(column(completions.bare, |(id, _)| id.as_str()))
    .bind(column(completions.bare, |(_, attempt)| i64::from(*attempt)))
    .bind(column(completions.fenced, |(id, _)| id.as_str()))
    .bind(column(completions.fenced, |(_, attempt)| {
        i64::from(*attempt)
    }))
    .bind(time::now())
    .execute(pool)
    .await;
    match written {
        Ok(_) => Ok(()),
        Err(sqlx::Error::Database(error)) if error.code().as_deref() == Some(LEASE_LOST) => {
            Err(LeaseLost {
                held: completions.fenced.len(),
                still_held: error.message().parse().unwrap_or_default(),
            }
            .into())
        }
        Err(error) => Err(error).context("writing a group of storage batches"),
    }
}
