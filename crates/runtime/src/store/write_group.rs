//! The SQL of the batch writer's PostgreSQL path: a whole group of engine storage batches, the
//! jobs they schedule and the work completions riding along, written by one call of
//! `engine_storage_write_group` (migration 12), so one round trip and one commit.

use anyhow::Context as _;

use crate::work::NewWork;
use tessera_storage::engine_kv::KvWrite;
use tessera_storage::time;

/// One field of every item, as an array parameter.
fn column<'a, T, U>(items: &'a [T], field: impl Fn(&'a T) -> U) -> Vec<U> {
    items.iter().map(field).collect()
}

/// Writes `sets` and `deletes` (each in key order), inserts `jobs` under `job_ids` and deletes
/// the work items of `completions` (`(id, attempt)`), in one statement.
pub async fn write_group_postgres(
    pool: &sqlx::PgPool,
    sets: &[&KvWrite<'_>],
    deletes: &[&KvWrite<'_>],
    job_ids: &[String],
    jobs: &[&NewWork],
    completions: &[(String, u32)],
) -> anyhow::Result<()> {
    sqlx::query(
        "SELECT sets FROM engine_storage_write_group(
             $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)",
    )
    .bind(column(sets, |write| write.engine_code))
    .bind(column(sets, |write| write.tenant_id))
    .bind(column(sets, |write| write.key))
    .bind(column(sets, |write| write.value.unwrap_or_default()))
    .bind(column(deletes, |write| write.engine_code))
    .bind(column(deletes, |write| write.tenant_id))
    .bind(column(deletes, |write| write.key))
    .bind(job_ids)
    .bind(column(jobs, |job| job.engine_code.as_str()))
    .bind(column(jobs, |job| job.tenant_id.as_str()))
    .bind(column(jobs, |job| job.kind.as_str()))
    .bind(column(jobs, |job| job.payload.as_slice()))
    .bind(column(jobs, |job| time::format(job.due_at)))
    .bind(column(completions, |(id, _)| id.as_str()))
    .bind(column(completions, |(_, attempt)| i64::from(*attempt)))
    .bind(time::now())
    .execute(pool)
    .await
    .map(drop)
    .context("writing a group of storage batches")
}
