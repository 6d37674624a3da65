//! SQL of the engines' key-value storage. Every function takes the engine code and tenant id
//! of the call as set by the host; keys sort byte-wise on both databases. An (engine, tenant)
//! pair is numbered once (`engine_scopes`) and an entry stored as (scope, key, value)
//! (`engine_entries`, `migrations/*/…_engine_scopes.sql`); the view `engine_kv` gives the
//! entries with their engine and tenant for reading by hand.

use anyhow::Context as _;

use crate::{Database, DatabaseKind, Tx};
use crate::{on_pool, on_tx, on_writer};

/// The scope every engine storage operation runs in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KvScope<'a> {
    pub engine_code: &'a str,
    pub tenant_id: &'a str,
}

/// The scope number of the `$1` engine and `$2` tenant, as SQL (NULL when nothing was ever
/// written in that scope, which matches no entry).
const SCOPE: &str = "(SELECT scope.scope FROM engine_scopes AS scope WHERE scope.tenant_id = $2 AND scope.engine_code = $1)";

/// The exclusive upper bound of keys starting with `prefix`.
pub(crate) fn prefix_upper_bound(prefix: &str) -> String {
    format!("{prefix}{}", char::MAX)
}

pub async fn get(
    database: &Database,
    scope: &KvScope<'_>,
    key: &str,
) -> anyhow::Result<Option<Vec<u8>>> {
    let sql = format!("SELECT value FROM engine_entries WHERE scope = {SCOPE} AND key = $3");
    on_pool!(database, pool => sqlx::query_scalar(sqlx::AssertSqlSafe(sql.clone()))
    .bind(scope.engine_code)
    .bind(scope.tenant_id)
    .bind(key)
    .fetch_optional(pool)
    .await)
    .context("reading engine storage")
}

/// Most keys one [`get_many`] reads.
pub const MAX_GET_MANY: usize = 1000;

/// The values under `keys` of one scope, in the order of `keys` (`None` where absent): see
/// [`get_across`].
pub async fn get_many(
    database: &Database,
    scope: &KvScope<'_>,
    keys: &[String],
) -> anyhow::Result<Vec<Option<Vec<u8>>>> {
    anyhow::ensure!(
        keys.len() <= MAX_GET_MANY,
        "at most {MAX_GET_MANY} keys per read"
    );
    let wanted: Vec<KvKey<'_>> = keys
        .iter()
        .map(|key| KvKey {
            engine_code: scope.engine_code,
            tenant_id: scope.tenant_id,
            key,
        })
        .collect();
    get_across(database, &wanted).await
}

/// One key in its engine and tenant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KvKey<'a> {
    pub engine_code: &'a str,
    pub tenant_id: &'a str,
    pub key: &'a str,
}

/// Most keys one statement of [`get_across`] reads (three parameters each).
const READ_CHUNK: usize = 256;

/// The statements of [`get_across`], one per power of two up to [`READ_CHUNK`] keys, made once.
static READ_STATEMENTS: std::sync::LazyLock<Vec<String>> = std::sync::LazyLock::new(|| {
    (0..=READ_CHUNK.trailing_zeros())
        .map(|power| read_statement(1 << power))
        .collect()
});

/// The statement of [`get_across`] for `rows` keys, `$1…$3·rows` (engine, tenant, key each).
fn read_statement(rows: usize) -> String {
    use std::fmt::Write as _;
    let mut sql = String::from("WITH wanted (position, engine_code, tenant_id, key) AS (VALUES ");
    for row in 0..rows {
        let first = 3 * row + 1;
        let separator = if row == 0 { "" } else { ", " };
        let _ = write!(
            sql,
            "{separator}({row}, ${first}, ${}, ${})",
            first + 1,
            first + 2
        );
    }
    sql.push_str(
        ") SELECT (SELECT entry.value FROM engine_entries AS entry
                   WHERE entry.scope = (SELECT scope.scope FROM engine_scopes AS scope
                                        WHERE scope.tenant_id = wanted.tenant_id
                                          AND scope.engine_code = wanted.engine_code)
                     AND entry.key = wanted.key)
           FROM wanted ORDER BY wanted.position",
    );
    sql
}

/// The values under `wanted` (keys of any engines and tenants), in the order of `wanted`
/// (`None` where absent), one statement per [`READ_CHUNK`] keys.
///
/// Each key is looked up by a scalar subquery on the whole primary key, which both databases
/// plan as one index search per key whatever their statistics say (PostgreSQL planned
/// `key = ANY($3)` on a never-analyzed table as a read of every entry of the engine and tenant;
/// SQLite reads a row-value `IN (VALUES …)` by scanning the table). The keys are a `VALUES`
/// list, padded to a power of two by repeating the last one, so the statement has few shapes:
/// each connection prepares each shape once, and PostgreSQL's plan cache keeps one generic
/// plan per shape (an array parameter would be planned again on every call).
pub async fn get_across(
    database: &Database,
    wanted: &[KvKey<'_>],
) -> anyhow::Result<Vec<Option<Vec<u8>>>> {
    let mut values = Vec::with_capacity(wanted.len());
    for chunk in wanted.chunks(READ_CHUNK) {
        let rows = chunk.len().next_power_of_two();
        let last = chunk[chunk.len() - 1];
        let padded = || {
            chunk
                .iter()
                .copied()
                .chain(std::iter::repeat_n(last, rows - chunk.len()))
        };
        let sql = &READ_STATEMENTS[rows.trailing_zeros() as usize];
        let mut found: Vec<Option<Vec<u8>>> = on_pool!(database, pool => {
            let mut query = sqlx::query_scalar(sqlx::AssertSqlSafe(sql.as_str()));
            for key in padded() {
                query = query.bind(key.engine_code).bind(key.tenant_id).bind(key.key);
            }
            query.fetch_all(pool).await
        })
        .context("reading engine storage")?;
        anyhow::ensure!(
            found.len() == rows,
            "a storage read answered {} rows for {rows} keys",
            found.len()
        );
        found.truncate(chunk.len());
        values.extend(found);
    }
    Ok(values)
}

pub async fn set(
    database: &Database,
    scope: &KvScope<'_>,
    key: &str,
    value: &[u8],
) -> anyhow::Result<()> {
    let sql = format!(
        "INSERT INTO engine_entries (scope, key, value) VALUES ({SCOPE}, $3, $4)
         ON CONFLICT (scope, key) DO UPDATE SET value = excluded.value"
    );
    on_writer!(database, pool => async {
        sqlx::query(NUMBER_ONE_SCOPE)
            .bind(scope.tenant_id)
            .bind(scope.engine_code)
            .execute(pool)
            .await?;
        sqlx::query(sqlx::AssertSqlSafe(sql.clone()))
            .bind(scope.engine_code)
            .bind(scope.tenant_id)
            .bind(key)
            .bind(value)
            .execute(pool)
            .await
            .map(drop)
    }
    .await)
    .context("writing engine storage")
}

/// Numbers an (engine, tenant) pair, `$1` the tenant and `$2` the engine, unless it has a
/// number.
const NUMBER_ONE_SCOPE: &str =
    "INSERT INTO engine_scopes (tenant_id, engine_code) VALUES ($1, $2) ON CONFLICT DO NOTHING";

/// The numbers of `scopes` (tenant id, engine code), numbering those without one first, in
/// order (two transactions on PostgreSQL then never wait on each other's new numbers in
/// opposite orders).
async fn number_scopes<'a>(
    tx: &mut Tx,
    scopes: &std::collections::BTreeSet<(&'a str, &'a str)>,
) -> anyhow::Result<std::collections::HashMap<(&'a str, &'a str), i64>> {
    let mut numbers = std::collections::HashMap::with_capacity(scopes.len());
    let scopes: Vec<(&str, &str)> = scopes.iter().copied().collect();
    for chunk in scopes.chunks(WRITE_CHUNK) {
        let found: Vec<Option<i64>> = on_tx!(tx, conn => async {
            let mut insert = sqlx::QueryBuilder::new(
                "INSERT INTO engine_scopes (tenant_id, engine_code) ",
            );
            insert.push_values(chunk, |mut row, (tenant_id, engine_code)| {
                row.push_bind(*tenant_id).push_bind(*engine_code);
            });
            insert.push(" ON CONFLICT DO NOTHING");
            insert.build().execute(&mut **conn).await?;
            let mut select = sqlx::QueryBuilder::new(
                "WITH wanted (position, tenant_id, engine_code) AS (VALUES ",
            );
            let mut rows = select.separated(", ");
            for (position, (tenant_id, engine_code)) in (0_i64..).zip(chunk) {
                rows.push("(");
                rows.push_bind_unseparated(position);
                rows.push_unseparated(", ");
                rows.push_bind_unseparated(*tenant_id);
                rows.push_unseparated(", ");
                rows.push_bind_unseparated(*engine_code);
                rows.push_unseparated(")");
            }
            select.push(
                ") SELECT (SELECT scope.scope FROM engine_scopes AS scope
                           WHERE scope.tenant_id = wanted.tenant_id
                             AND scope.engine_code = wanted.engine_code)
                   FROM wanted ORDER BY wanted.position",
            );
            select.build_query_scalar().fetch_all(&mut **conn).await
        }
        .await)
        .context("numbering engine storage scopes")?;
        anyhow::ensure!(found.len() == chunk.len(), "a scope was not numbered");
        for (scope, number) in chunk.iter().zip(found) {
            numbers.insert(*scope, number.context("a scope was not numbered")?);
        }
    }
    Ok(numbers)
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
        "SELECT key, value FROM engine_entries
         WHERE scope = {SCOPE} AND key {lower_operator} $3 AND key < $4
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

/// How many entries have keys starting with `prefix`.
pub async fn count_prefix(
    database: &Database,
    scope: &KvScope<'_>,
    prefix: &str,
) -> anyhow::Result<u64> {
    let sql = format!(
        "SELECT COUNT(*) FROM engine_entries WHERE scope = {SCOPE} AND key >= $3 AND key < $4"
    );
    let count: i64 =
        on_pool!(database, pool => sqlx::query_scalar(sqlx::AssertSqlSafe(sql.clone()))
    .bind(scope.engine_code)
    .bind(scope.tenant_id)
    .bind(prefix)
    .bind(prefix_upper_bound(prefix))
    .fetch_one(pool)
    .await)
        .context("counting a prefix of engine storage")?;
    Ok(u64::try_from(count).unwrap_or(0))
}

/// Removes every entry whose key starts with `prefix`, in `tx`.
pub async fn delete_prefix_in(
    tx: &mut Tx,
    scope: &KvScope<'_>,
    prefix: &str,
) -> anyhow::Result<()> {
    let sql =
        format!("DELETE FROM engine_entries WHERE scope = {SCOPE} AND key >= $3 AND key < $4");
    on_tx!(tx, conn => sqlx::query(sqlx::AssertSqlSafe(sql.clone()))
    .bind(scope.engine_code)
    .bind(scope.tenant_id)
    .bind(prefix)
    .bind(prefix_upper_bound(prefix))
    .execute(&mut **conn)
    .await
    .map(drop))
    .context("deleting a prefix of engine storage")
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

/// The sets and the deletes of `writes`, each in key order: two transactions writing the same
/// keys at once (two hosts sharing one PostgreSQL) then lock their rows in the same order,
/// instead of each waiting for a row the other holds.
pub fn in_key_order<'w, 'a>(
    writes: &'w [KvWrite<'a>],
) -> (Vec<&'w KvWrite<'a>>, Vec<&'w KvWrite<'a>>) {
    let (mut sets, mut deletes): (Vec<&KvWrite<'a>>, Vec<&KvWrite<'a>>) =
        writes.iter().partition(|write| write.value.is_some());
    let order = |left: &&KvWrite<'a>, right: &&KvWrite<'a>| {
        (left.engine_code, left.tenant_id, left.key).cmp(&(
            right.engine_code,
            right.tenant_id,
            right.key,
        ))
    };
    sets.sort_unstable_by(order);
    deletes.sort_unstable_by(order);
    (sets, deletes)
}

/// Rows per multi-row statement (four parameters each).
const WRITE_CHUNK: usize = 200;

/// Applies `writes` in `tx` with multi-row statements, in key order; every (engine, tenant,
/// key) appears at most once (PostgreSQL refuses an upsert touching one row twice).
pub async fn apply_in(tx: &mut Tx, writes: &[KvWrite<'_>]) -> anyhow::Result<()> {
    if writes.is_empty() {
        return Ok(());
    }
    let scopes = writes
        .iter()
        .map(|write| (write.tenant_id, write.engine_code))
        .collect();
    let numbers = number_scopes(tx, &scopes).await?;
    let number = |write: &KvWrite<'_>| numbers[&(write.tenant_id, write.engine_code)];
    let (sets, deletes) = in_key_order(writes);
    for chunk in sets.chunks(WRITE_CHUNK) {
        on_tx!(tx, conn => {
            let mut upsert =
                sqlx::QueryBuilder::new("INSERT INTO engine_entries (scope, key, value) ");
            upsert.push_values(chunk, |mut row, write| {
                row.push_bind(number(write))
                    .push_bind(write.key)
                    .push_bind(write.value);
            });
            upsert.push(" ON CONFLICT (scope, key) DO UPDATE SET value = excluded.value");
            upsert.build().execute(&mut **conn).await.map(drop)
        })
        .context("writing engine storage in a batch")?;
    }
    for chunk in deletes.chunks(WRITE_CHUNK) {
        on_tx!(tx, conn => {
            let mut delete = sqlx::QueryBuilder::new(
                "DELETE FROM engine_entries WHERE (scope, key) IN (VALUES ",
            );
            let mut rows = delete.separated(", ");
            for write in chunk {
                rows.push("(");
                rows.push_bind_unseparated(number(write));
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

/// The values of the keys a transaction's conditions and counters read, locked by
/// [`lock_in`].
#[derive(Debug, Default)]
pub struct Locked<'a> {
    /// Each key's value when it was locked (`None`: absent).
    pub values: std::collections::HashMap<KvKey<'a>, Option<Vec<u8>>>,
    /// Absent keys claimed with an empty placeholder row (PostgreSQL): the transaction must
    /// write or delete each before it commits.
    pub placeholders: Vec<KvKey<'a>>,
}

/// Reads the values of `keys` in `tx` and keeps other writers off them until `tx` ends.
/// PostgreSQL: each existing row is read `FOR UPDATE`, in key order (two hosts then lock in
/// the same order); an absent key is claimed by inserting an empty placeholder row, so that a
/// concurrent insert of the same key waits for this transaction (`FOR UPDATE` cannot lock a
/// row that does not exist). SQLite: plain reads, its single writer already excludes others.
pub async fn lock_in<'a>(tx: &mut Tx, keys: &[KvKey<'a>]) -> anyhow::Result<Locked<'a>> {
    let mut keys = keys.to_vec();
    keys.sort_unstable();
    keys.dedup();
    let mut locked = Locked::default();
    if keys.is_empty() {
        return Ok(locked);
    }
    let postgres = tx.kind() == DatabaseKind::Postgres;
    // Numbered first: a placeholder needs its scope's number.
    let scopes = keys
        .iter()
        .map(|key| (key.tenant_id, key.engine_code))
        .collect();
    let numbers = number_scopes(tx, &scopes).await?;
    let read = if postgres {
        "SELECT value FROM engine_entries WHERE scope = $1 AND key = $2 FOR UPDATE"
    } else {
        "SELECT value FROM engine_entries WHERE scope = $1 AND key = $2"
    };
    for key in keys {
        let scope = numbers[&(key.tenant_id, key.engine_code)];
        // A placeholder insert can lose to a concurrent insert, and the row read next can be
        // deleted again before it is: a few rounds settle it.
        let mut value = None;
        for _ in 0..8 {
            let current: Option<Vec<u8>> = on_tx!(tx, conn => sqlx::query_scalar(read)
                .bind(scope)
                .bind(key.key)
                .fetch_optional(&mut **conn)
                .await)
            .context("locking engine storage")?;
            if current.is_some() || !postgres {
                value = Some(current);
                break;
            }
            let claimed = on_tx!(tx, conn => sqlx::query(
                "INSERT INTO engine_entries (scope, key, value) VALUES ($1, $2, $3)
                 ON CONFLICT (scope, key) DO NOTHING",
            )
            .bind(scope)
            .bind(key.key)
            .bind(Vec::<u8>::new())
            .execute(&mut **conn)
            .await
            .map(|result| result.rows_affected()))
            .context("claiming an absent key of engine storage")?;
            if claimed == 1 {
                locked.placeholders.push(key);
                value = Some(None);
                break;
            }
        }
        let value = value
            .with_context(|| format!("{} kept changing while it was being locked", key.key))?;
        locked.values.insert(key, value);
    }
    Ok(locked)
}
