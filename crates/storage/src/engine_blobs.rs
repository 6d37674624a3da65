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

/// Stores `content` under `key` in `tx` (replacing what was there) and updates the scope's
/// usage. The unit of work checks quotas with [`usage_in`] once all its blob writes are in.
pub async fn put_in(
    tx: &mut Tx,
    scope: &KvScope<'_>,
    key: &str,
    content: &[u8],
) -> anyhow::Result<()> {
    lock_usage(tx, scope).await?;
    let replaced: Option<i64> = on_tx!(tx, conn => sqlx::query_scalar(
        "SELECT size_bytes FROM engine_blobs WHERE engine_code = $1 AND tenant_id = $2 AND key = $3",
    )
    .bind(scope.engine_code)
    .bind(scope.tenant_id)
    .bind(key)
    .fetch_optional(&mut **conn)
    .await)
    .context("reading the size of the blob being replaced")?;
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
    add_usage(tx, scope, size_of(content) - replaced.unwrap_or(0)).await
}

/// The bytes the scope's blobs take, in `tx` (after its own writes), with the usage row locked.
pub async fn usage_in(tx: &mut Tx, scope: &KvScope<'_>) -> anyhow::Result<u64> {
    let bytes = lock_usage(tx, scope).await?;
    Ok(u64::try_from(bytes).unwrap_or(0))
}

/// The sizes of the blobs `keys` (`None`: absent), in the order of `keys`.
pub async fn sizes(
    database: &Database,
    scope: &KvScope<'_>,
    keys: &[String],
) -> anyhow::Result<Vec<Option<u64>>> {
    let mut sizes = Vec::with_capacity(keys.len());
    for key in keys {
        let size: Option<i64> = on_pool!(database, pool => sqlx::query_scalar(
            "SELECT size_bytes FROM engine_blobs WHERE engine_code = $1 AND tenant_id = $2 AND key = $3",
        )
        .bind(scope.engine_code)
        .bind(scope.tenant_id)
        .bind(key)
        .fetch_optional(pool)
        .await)
        .context("reading the size of a blob")?;
        sizes.push(size.map(|size| u64::try_from(size).unwrap_or(0)));
    }
    Ok(sizes)
}

/// How many blobs have keys starting with `prefix`, and their bytes.
pub async fn count_prefix(
    database: &Database,
    scope: &KvScope<'_>,
    prefix: &str,
) -> anyhow::Result<(u64, u64)> {
    let (count, bytes): (i64, i64) = on_pool!(database, pool => sqlx::query_as(
        "SELECT COUNT(*), CAST(COALESCE(SUM(size_bytes), 0) AS BIGINT) FROM engine_blobs
         WHERE engine_code = $1 AND tenant_id = $2 AND key >= $3 AND key < $4",
    )
    .bind(scope.engine_code)
    .bind(scope.tenant_id)
    .bind(prefix)
    .bind(engine_kv::prefix_upper_bound(prefix))
    .fetch_one(pool)
    .await)
    .context("counting a prefix of blobs")?;
    let positive = |value: i64| u64::try_from(value).unwrap_or(0);
    Ok((positive(count), positive(bytes)))
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

/// Removes the blobs `keys` in `tx` and updates the scope's usage.
pub async fn delete_in(tx: &mut Tx, scope: &KvScope<'_>, keys: &[String]) -> anyhow::Result<()> {
    lock_usage(tx, scope).await?;
    let mut freed = 0_i64;
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
        freed += size.unwrap_or(0);
    }
    add_usage(tx, scope, -freed).await
}

/// Removes every blob whose key starts with `prefix` in `tx` and updates the scope's usage.
pub async fn delete_prefix_in(
    tx: &mut Tx,
    scope: &KvScope<'_>,
    prefix: &str,
) -> anyhow::Result<()> {
    lock_usage(tx, scope).await?;
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
    add_usage(tx, scope, -sizes.iter().sum::<i64>()).await
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
