//! SQL of the engines' blobs (the `blobs` import): whole binary values beside `engine_kv`,
//! scoped the same way, with a running total per (engine, tenant) for quotas.
//!
//! Every write first updates the scope's usage row (creating it when missing): on PostgreSQL
//! that row lock serialises concurrent writers of one tenant, so two uploads cannot both pass a
//! quota that only one fits; SQLite has one writer anyway.

use anyhow::Context as _;

use crate::engine_kv::{self, KvScope};
use crate::{Database, Tx, time};
use crate::{on_pool, on_tx};

/// What [`put`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PutOutcome {
    Stored,
    /// The quota would have been exceeded; nothing was written.
    OverQuota,
}

/// Locks the scope's usage row (creating it at 0) and returns its total.
async fn lock_usage(tx: &mut Tx, scope: &KvScope<'_>) -> anyhow::Result<i64> {
    on_tx!(tx, conn => sqlx::query(
        "INSERT INTO engine_blob_usage (engine_code, tenant_id, bytes) VALUES ($1, $2, 0)
         ON CONFLICT (engine_code, tenant_id) DO NOTHING",
    )
    .bind(scope.engine_code)
    .bind(scope.tenant_id)
    .execute(&mut **conn)
    .await
    .map(drop))
    .context("creating the blob usage row")?;
    on_tx!(tx, conn => sqlx::query_scalar(
        "UPDATE engine_blob_usage SET bytes = bytes WHERE engine_code = $1 AND tenant_id = $2
         RETURNING bytes",
    )
    .bind(scope.engine_code)
    .bind(scope.tenant_id)
    .fetch_one(&mut **conn)
    .await)
    .context("locking the blob usage row")
}

async fn add_usage(tx: &mut Tx, scope: &KvScope<'_>, delta: i64) -> anyhow::Result<()> {
    on_tx!(tx, conn => sqlx::query(
        "UPDATE engine_blob_usage SET bytes = bytes + $3 WHERE engine_code = $1 AND tenant_id = $2",
    )
    .bind(scope.engine_code)
    .bind(scope.tenant_id)
    .bind(delta)
    .execute(&mut **conn)
    .await
    .map(drop))
    .context("updating the blob usage")
}

fn size_of(content: &[u8]) -> i64 {
    i64::try_from(content.len()).unwrap_or(i64::MAX)
}

/// Stores `content` under `key` and writes `sets` to engine storage in one transaction, unless
/// the scope's total would exceed `quota_bytes`.
pub async fn put(
    database: &Database,
    scope: &KvScope<'_>,
    key: &str,
    content: &[u8],
    quota_bytes: Option<u64>,
    sets: &[(String, Vec<u8>)],
) -> anyhow::Result<PutOutcome> {
    let mut tx = database.begin().await?;
    let usage = lock_usage(&mut tx, scope).await?;
    let replaced: Option<i64> = on_tx!(tx, conn => sqlx::query_scalar(
        "SELECT size_bytes FROM engine_blobs WHERE engine_code = $1 AND tenant_id = $2 AND key = $3",
    )
    .bind(scope.engine_code)
    .bind(scope.tenant_id)
    .bind(key)
    .fetch_optional(&mut **conn)
    .await)
    .context("reading the size of the blob being replaced")?;
    let delta = size_of(content) - replaced.unwrap_or(0);
    let within_quota = quota_bytes
        .is_none_or(|quota| u64::try_from(usage + delta).is_ok_and(|total| total <= quota));
    if !within_quota {
        return Ok(PutOutcome::OverQuota);
    }
    on_tx!(tx, conn => sqlx::query(
        "INSERT INTO engine_blobs (engine_code, tenant_id, key, content, size_bytes, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (engine_code, tenant_id, key) DO UPDATE
         SET content = excluded.content, size_bytes = excluded.size_bytes, updated_at = excluded.updated_at",
    )
    .bind(scope.engine_code)
    .bind(scope.tenant_id)
    .bind(key)
    .bind(content)
    .bind(size_of(content))
    .bind(time::now())
    .execute(&mut **conn)
    .await
    .map(drop))
    .context("writing a blob")?;
    add_usage(&mut tx, scope, delta).await?;
    engine_kv::write_batch_in(&mut tx, scope, sets, &[]).await?;
    tx.commit().await.context("committing a blob")?;
    Ok(PutOutcome::Stored)
}

pub async fn get(
    database: &Database,
    scope: &KvScope<'_>,
    key: &str,
) -> anyhow::Result<Option<Vec<u8>>> {
    on_pool!(database, pool => sqlx::query_scalar(
        "SELECT content FROM engine_blobs WHERE engine_code = $1 AND tenant_id = $2 AND key = $3",
    )
    .bind(scope.engine_code)
    .bind(scope.tenant_id)
    .bind(key)
    .fetch_optional(pool)
    .await)
    .context("reading a blob")
}

/// Removes the blobs `keys` and the storage entries `deletes` in one transaction; returns how
/// many of the blobs existed.
pub async fn delete(
    database: &Database,
    scope: &KvScope<'_>,
    keys: &[String],
    deletes: &[String],
) -> anyhow::Result<u64> {
    let mut tx = database.begin().await?;
    lock_usage(&mut tx, scope).await?;
    let (mut removed, mut freed) = (0_u64, 0_i64);
    for key in keys {
        let size: Option<i64> = on_tx!(tx, conn => sqlx::query_scalar(
            "DELETE FROM engine_blobs WHERE engine_code = $1 AND tenant_id = $2 AND key = $3
             RETURNING size_bytes",
        )
        .bind(scope.engine_code)
        .bind(scope.tenant_id)
        .bind(key)
        .fetch_optional(&mut **conn)
        .await)
        .context("deleting a blob")?;
        if let Some(size) = size {
            removed += 1;
            freed += size;
        }
    }
    add_usage(&mut tx, scope, -freed).await?;
    engine_kv::write_batch_in(&mut tx, scope, &[], deletes).await?;
    tx.commit().await.context("committing a blob deletion")?;
    Ok(removed)
}

/// Removes every blob whose key starts with `prefix`; returns how many.
pub async fn delete_prefix(
    database: &Database,
    scope: &KvScope<'_>,
    prefix: &str,
) -> anyhow::Result<u64> {
    let mut tx = database.begin().await?;
    lock_usage(&mut tx, scope).await?;
    let sizes: Vec<i64> = on_tx!(tx, conn => sqlx::query_scalar(
        "DELETE FROM engine_blobs WHERE engine_code = $1 AND tenant_id = $2 AND key >= $3 AND key < $4
         RETURNING size_bytes",
    )
    .bind(scope.engine_code)
    .bind(scope.tenant_id)
    .bind(prefix)
    .bind(engine_kv::prefix_upper_bound(prefix))
    .fetch_all(&mut **conn)
    .await)
    .context("deleting a prefix of blobs")?;
    add_usage(&mut tx, scope, -sizes.iter().sum::<i64>()).await?;
    tx.commit()
        .await
        .context("committing a blob prefix deletion")?;
    Ok(sizes.len() as u64)
}

/// The bytes the scope's blobs take.
pub async fn usage(database: &Database, scope: &KvScope<'_>) -> anyhow::Result<u64> {
    let bytes: Option<i64> = on_pool!(database, pool => sqlx::query_scalar(
        "SELECT bytes FROM engine_blob_usage WHERE engine_code = $1 AND tenant_id = $2",
    )
    .bind(scope.engine_code)
    .bind(scope.tenant_id)
    .fetch_optional(pool)
    .await)
    .context("reading the blob usage")?;
    Ok(bytes.map_or(0, |bytes| u64::try_from(bytes).unwrap_or(0)))
}
