//! SQL of the engines' key-value storage. Every function takes the engine code and tenant id
//! of the call as set by the host; keys sort byte-wise on both databases.

use anyhow::Context as _;

use crate::storage::{Database, Tx, time};
use crate::{on_pool, on_tx, on_writer};

/// The scope every engine storage operation runs in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KvScope<'a> {
    pub engine_code: &'a str,
    pub tenant_id: &'a str,
}

/// The exclusive upper bound of keys starting with `prefix`.
pub(crate) fn prefix_upper_bound(prefix: &str) -> String {
    format!("{prefix}{}", char::MAX)
}

pub async fn get(
    database: &Database,
    scope: &KvScope<'_>,
    key: &str,
) -> anyhow::Result<Option<Vec<u8>>> {
    on_pool!(database, pool => sqlx::query_scalar(
        "SELECT value FROM engine_kv WHERE engine_code = $1 AND tenant_id = $2 AND key = $3",
    )
    .bind(scope.engine_code)
    .bind(scope.tenant_id)
    .bind(key)
    .fetch_optional(pool)
    .await)
    .context("reading engine storage")
}

pub async fn set(
    database: &Database,
    scope: &KvScope<'_>,
    key: &str,
    value: &[u8],
) -> anyhow::Result<()> {
    on_writer!(database, pool => sqlx::query(
        "INSERT INTO engine_kv (engine_code, tenant_id, key, value, updated_at) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (engine_code, tenant_id, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
    )
    .bind(scope.engine_code)
    .bind(scope.tenant_id)
    .bind(key)
    .bind(value)
    .bind(time::now())
    .execute(pool)
    .await
    .map(drop))
    .context("writing engine storage")
}

pub async fn delete(database: &Database, scope: &KvScope<'_>, key: &str) -> anyhow::Result<bool> {
    let deleted = on_writer!(database, pool => sqlx::query(
        "DELETE FROM engine_kv WHERE engine_code = $1 AND tenant_id = $2 AND key = $3",
    )
    .bind(scope.engine_code)
    .bind(scope.tenant_id)
    .bind(key)
    .execute(pool)
    .await
    .map(|result| result.rows_affected()))
    .context("deleting from engine storage")?;
    Ok(deleted > 0)
}

/// Entries under `prefix` in key order (descending when `reverse`), strictly after (before,
/// when `reverse`) `after`, at most `limit`.
pub async fn list(
    database: &Database,
    scope: &KvScope<'_>,
    prefix: &str,
    after: Option<&str>,
    limit: u32,
    reverse: bool,
) -> anyhow::Result<Vec<(String, Vec<u8>)>> {
    let upper = prefix_upper_bound(prefix);
    // (lower bound, whether it is inclusive, exclusive upper bound, order)
    let (lower, lower_inclusive, upper, order) = match (after, reverse) {
        (Some(after), false) if after >= prefix => (after.to_owned(), false, upper, "ASC"),
        (Some(after), true) if after < upper.as_str() => {
            (prefix.to_owned(), true, after.to_owned(), "DESC")
        }
        (_, false) => (prefix.to_owned(), true, upper, "ASC"),
        (_, true) => (prefix.to_owned(), true, upper, "DESC"),
    };
    let lower_operator = if lower_inclusive { ">=" } else { ">" };
    let sql = format!(
        "SELECT key, value FROM engine_kv
         WHERE engine_code = $1 AND tenant_id = $2 AND key {lower_operator} $3 AND key < $4
         ORDER BY key {order} LIMIT $5"
    );
    on_pool!(database, pool => sqlx::query_as::<_, (String, Vec<u8>)>(sqlx::AssertSqlSafe(sql.clone()))
        .bind(scope.engine_code)
        .bind(scope.tenant_id)
        .bind(&lower)
        .bind(&upper)
        .bind(i64::from(limit))
        .fetch_all(pool)
        .await)
    .context("listing engine storage")
}

pub async fn delete_prefix(
    database: &Database,
    scope: &KvScope<'_>,
    prefix: &str,
) -> anyhow::Result<u64> {
    on_writer!(database, pool => sqlx::query(
        "DELETE FROM engine_kv WHERE engine_code = $1 AND tenant_id = $2 AND key >= $3 AND key < $4",
    )
    .bind(scope.engine_code)
    .bind(scope.tenant_id)
    .bind(prefix)
    .bind(prefix_upper_bound(prefix))
    .execute(pool)
    .await
    .map(|result| result.rows_affected()))
    .context("deleting a prefix of engine storage")
}

/// Replaces the value under `key` when it is currently `expected` (`None`: absent); `value`
/// `None` deletes. True when it did. Each case is one conditional statement, so two callers
/// racing on the same key cannot both win (PostgreSQL re-checks the condition on the row
/// version it waited for; SQLite has one writer).
pub async fn compare_and_swap(
    database: &Database,
    scope: &KvScope<'_>,
    key: &str,
    expected: Option<&[u8]>,
    value: Option<&[u8]>,
) -> anyhow::Result<bool> {
    let swapped = match (expected, value) {
        (None, None) => return Ok(get(database, scope, key).await?.is_none()),
        (None, Some(value)) => on_writer!(database, pool => sqlx::query(
            "INSERT INTO engine_kv (engine_code, tenant_id, key, value, updated_at) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (engine_code, tenant_id, key) DO NOTHING",
        )
        .bind(scope.engine_code)
        .bind(scope.tenant_id)
        .bind(key)
        .bind(value)
        .bind(time::now())
        .execute(pool)
        .await
        .map(|result| result.rows_affected())),
        (Some(expected), Some(value)) => on_writer!(database, pool => sqlx::query(
            "UPDATE engine_kv SET value = $4, updated_at = $5
             WHERE engine_code = $1 AND tenant_id = $2 AND key = $3 AND value = $6",
        )
        .bind(scope.engine_code)
        .bind(scope.tenant_id)
        .bind(key)
        .bind(value)
        .bind(time::now())
        .bind(expected)
        .execute(pool)
        .await
        .map(|result| result.rows_affected())),
        (Some(expected), None) => on_writer!(database, pool => sqlx::query(
            "DELETE FROM engine_kv WHERE engine_code = $1 AND tenant_id = $2 AND key = $3 AND value = $4",
        )
        .bind(scope.engine_code)
        .bind(scope.tenant_id)
        .bind(key)
        .bind(expected)
        .execute(pool)
        .await
        .map(|result| result.rows_affected())),
    }
    .context("compare-and-swap in engine storage")?;
    Ok(swapped > 0)
}

/// Writes `sets` and removes `deletes` (after the sets) of one scope in `tx`.
pub async fn write_batch_in(
    tx: &mut Tx,
    scope: &KvScope<'_>,
    sets: &[(String, Vec<u8>)],
    deletes: &[String],
) -> anyhow::Result<()> {
    apply_in(tx, &net_writes([(scope.clone(), sets, deletes)])).await
}

/// The net effect of write batches applied in order, each its `sets` then its `deletes`: one
/// write per (engine, tenant, key), the last one of that key (what [`apply_in`] needs).
pub fn net_writes<'a>(
    batches: impl IntoIterator<Item = (KvScope<'a>, &'a [(String, Vec<u8>)], &'a [String])>,
) -> Vec<KvWrite<'a>> {
    let mut position: std::collections::HashMap<(&str, &str, &str), usize> = Default::default();
    let mut writes: Vec<KvWrite<'a>> = Vec::new();
    for (scope, sets, deletes) in batches {
        let sets = sets
            .iter()
            .map(|(key, value)| (key, Some(value.as_slice())));
        let deletes = deletes.iter().map(|key| (key, None));
        for (key, value) in sets.chain(deletes) {
            let write = KvWrite {
                engine_code: scope.engine_code,
                tenant_id: scope.tenant_id,
                key,
                value,
            };
            match position.entry((scope.engine_code, scope.tenant_id, key)) {
                std::collections::hash_map::Entry::Occupied(entry) => writes[*entry.get()] = write,
                std::collections::hash_map::Entry::Vacant(entry) => {
                    entry.insert(writes.len());
                    writes.push(write);
                }
            }
        }
    }
    writes
}

/// One key's new value (`None`: removed) in its engine and tenant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KvWrite<'a> {
    pub engine_code: &'a str,
    pub tenant_id: &'a str,
    pub key: &'a str,
    pub value: Option<&'a [u8]>,
}

/// Rows per multi-row statement (five parameters each).
const WRITE_CHUNK: usize = 200;

/// Applies `writes` in `tx` with multi-row statements; every (engine, tenant, key) appears at
/// most once (PostgreSQL refuses an upsert touching one row twice).
pub async fn apply_in(tx: &mut Tx, writes: &[KvWrite<'_>]) -> anyhow::Result<()> {
    let now = time::now();
    let (sets, deletes): (Vec<&KvWrite<'_>>, Vec<&KvWrite<'_>>) =
        writes.iter().partition(|write| write.value.is_some());
    for chunk in sets.chunks(WRITE_CHUNK) {
        on_tx!(tx, conn => {
            let mut upsert = sqlx::QueryBuilder::new(
                "INSERT INTO engine_kv (engine_code, tenant_id, key, value, updated_at) ",
            );
            upsert.push_values(chunk, |mut row, write| {
                row.push_bind(write.engine_code)
                    .push_bind(write.tenant_id)
                    .push_bind(write.key)
                    .push_bind(write.value)
                    .push_bind(&now);
            });
            upsert.push(
                " ON CONFLICT (engine_code, tenant_id, key)
                  DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
            );
            upsert.build().execute(&mut **conn).await.map(drop)
        })
        .context("writing engine storage in a batch")?;
    }
    for chunk in deletes.chunks(WRITE_CHUNK) {
        on_tx!(tx, conn => {
            let mut delete = sqlx::QueryBuilder::new(
                "DELETE FROM engine_kv WHERE (engine_code, tenant_id, key) IN (VALUES ",
            );
            let mut rows = delete.separated(", ");
            for write in chunk {
                rows.push("(");
                rows.push_bind_unseparated(write.engine_code);
                rows.push_unseparated(", ");
                rows.push_bind_unseparated(write.tenant_id);
                rows.push_unseparated(", ");
                rows.push_bind_unseparated(write.key);
                rows.push_unseparated(")");
            }
            delete.push(")");
            delete.build().execute(&mut **conn).await.map(drop)
        })
        .context("deleting from engine storage in a batch")?;
    }
    Ok(())
}
