//! The SQL of the `engine_work` table (jobs and event deliveries, see `crate::work_queue`): insert,
//! claim with a lease, hand back, complete and fail. The queue's rules live in `crate::work_queue`;
//! these functions run its statements and nothing else.

use anyhow::Context as _;

use tessera_storage::{Database, Pool, Tx, time};
use tessera_storage::{on_tx, on_writer};

/// A unit of work's completion found some of its items no longer held by the attempts it ran
/// (another host claimed them again after this host's lease ran out): nothing of the unit
/// commits, and the newer attempt's run is the one that counts.
#[derive(Debug, thiserror::Error)]
#[error("engine work was claimed again by another run: {still_held} of {held} items still held")]
pub struct LeaseLost {
    pub held: usize,
    pub still_held: u64,
}

/// Items inserted by one statement (nine parameters each).
const INSERT_CHUNK: usize = 100;

/// A row to insert: its id, engine code, tenant id, kind, payload and due time (RFC 3339).
pub struct WorkRow<'a> {
    pub id: &'a str,
    pub engine_code: &'a str,
    pub tenant_id: &'a str,
    pub kind: &'static str,
    pub payload: &'a [u8],
    pub due_at: String,
    pub traceparent: Option<&'a str>,
}

/// A claimed row: id, engine code, tenant id, kind, payload, attempt, due at, traceparent.
pub type ClaimedRow = (
    String,
    String,
    String,
    String,
    Vec<u8>,
    i64,
    String,
    Option<String>,
);

/// The condition "`engine_code` is one of the codes bound from parameter `first` on": an array
/// parameter on PostgreSQL, one parameter per code on SQLite (see [`sqlite_codes`]).
fn of_engines(database: &Database, codes: usize, first: usize) -> String {
    match database.pool() {
        Pool::Postgres(_) => format!("engine_code = ANY(${first})"),
        Pool::Sqlite(_) => format!("engine_code IN ({})", sqlite_codes(codes, first)),
    }
}

/// `$first, $first+1, …`: one SQLite parameter per engine code.
fn sqlite_codes(codes: usize, first: usize) -> String {
    (0..codes)
        .map(|index| format!("${}", index + first))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The pending items of `engine_codes` due by `now` (counted up to `cap`) and the due time of
/// the oldest.
pub async fn due_backlog(
    database: &Database,
    engine_codes: &[String],
    now: &str,
    cap: u64,
) -> anyhow::Result<(i64, Option<String>)> {
    if engine_codes.is_empty() {
        return Ok((0, None));
    }
    let cap = i64::try_from(cap).unwrap_or(i64::MAX);
    let of_engines = of_engines(database, engine_codes.len(), 3);
    // The oldest due items first, from the partial index of pending rows: the first `cap` of
    // them hold the oldest.
    let sql = format!(
        "SELECT COUNT(*), MIN(due_at) FROM (SELECT due_at FROM engine_work
         WHERE status = 'pending' AND due_at <= $1 AND {of_engines}
         ORDER BY due_at LIMIT $2) AS due"
    );
    match database.pool() {
        Pool::Postgres(pool) => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(now)
                .bind(cap)
                .bind(engine_codes)
                .fetch_one(pool)
                .await
        }
        Pool::Sqlite(pool) => {
            let query = sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(now).bind(cap);
            engine_codes
                .iter()
                .fold(query, |query, code| query.bind(code))
                .fetch_one(pool)
                .await
        }
    }
    .context("measuring the engine work due")
}

/// The tenants with the most pending items of `engine_codes` due by `now` among the oldest
/// `cap` of them: at most `limit` `(tenant id, items)`.
pub async fn due_by_tenant(
    database: &Database,
    engine_codes: &[String],
    now: &str,
    cap: u64,
    limit: u64,
) -> anyhow::Result<Vec<(String, i64)>> {
    if engine_codes.is_empty() {
        return Ok(Vec::new());
    }
    let cap = i64::try_from(cap).unwrap_or(i64::MAX);
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let of_engines = of_engines(database, engine_codes.len(), 4);
    let sql = format!(
        "SELECT tenant_id, COUNT(*) FROM (SELECT tenant_id FROM engine_work
         WHERE status = 'pending' AND due_at <= $1 AND {of_engines}
         ORDER BY due_at LIMIT $2) AS due GROUP BY tenant_id ORDER BY 2 DESC LIMIT $3"
    );
    match database.pool() {
        Pool::Postgres(pool) => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(now)
                .bind(cap)
                .bind(limit)
                .bind(engine_codes)
                .fetch_all(pool)
                .await
        }
        Pool::Sqlite(pool) => {
            let query = sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(now)
                .bind(cap)
                .bind(limit);
            engine_codes
                .iter()
                .fold(query, |query, code| query.bind(code))
                .fetch_all(pool)
                .await
        }
    }
    .context("measuring the engine work due per tenant")
}

/// Inserts `rows` as pending items in the caller's transaction, [`INSERT_CHUNK`] per statement.
/// A row whose id is already queued is skipped: the same event's delivery to the same engine
/// is queued once at a time (`bus.rs`).
pub async fn insert(tx: &mut Tx, rows: &[WorkRow<'_>]) -> anyhow::Result<()> {
    let now = time::now();
    for chunk in rows.chunks(INSERT_CHUNK) {
        on_tx!(tx, conn => {
            let mut insert = sqlx::QueryBuilder::new(
                "INSERT INTO engine_work (id, engine_code, tenant_id, kind, payload, due_at, traceparent, attempt, status, created_at) ",
            );
            insert.push_values(chunk, |mut row, item| {
                row.push_bind(item.id)
                    .push_bind(item.engine_code)
                    .push_bind(item.tenant_id)
                    .push_bind(item.kind)
                    .push_bind(item.payload)
                    .push_bind(&item.due_at)
                    .push_bind(item.traceparent)
                    .push_bind(0_i64)
                    .push_bind("pending")
                    .push_bind(&now);
            });
            insert.push(" ON CONFLICT (id) DO NOTHING");
            insert.build().execute(&mut **conn).await.map(drop)
        })
        .context("enqueuing engine work")?;
    }
    Ok(())
}

/// Deletes a pending job of this engine and tenant; true when there was one.
pub async fn delete_pending_job(
    database: &Database,
    engine_code: &str,
    tenant_id: &str,
    job_id: &str,
) -> anyhow::Result<bool> {
    let deleted = on_writer!(database, pool => sqlx::query(
        "DELETE FROM engine_work WHERE id = $1 AND engine_code = $2 AND tenant_id = $3
         AND kind = 'job' AND status = 'pending'",
    )
    .bind(job_id)
    .bind(engine_code)
    .bind(tenant_id)
    .execute(pool)
    .await
    .map(|result| result.rows_affected()))
    .context("cancelling a job")?;
    Ok(deleted > 0)
}

/// SQLite's claim of up to `$3` items of `engine_codes` engines (`$4`…) due by `$1`, leased
/// until `$2`. Pending items and items whose lease ran out are read separately, each from its
/// partial index in order and cut at the limit (one OR-ed query would sort every due item).
fn sqlite_claim_statement(engine_codes: usize) -> String {
    let codes = sqlite_codes(engine_codes, 4);
    format!(
        "WITH
           pending AS (SELECT id, due_at FROM engine_work
                       WHERE status = 'pending' AND due_at <= $1 AND engine_code IN ({codes})
                       ORDER BY due_at LIMIT $3),
           expired AS (SELECT id, due_at FROM engine_work
                       WHERE status = 'running' AND locked_until <= $1 AND engine_code IN ({codes})
                       ORDER BY locked_until LIMIT $3),
           chosen AS (SELECT id FROM (SELECT id, due_at FROM pending
                                      UNION ALL SELECT id, due_at FROM expired)
                      ORDER BY due_at LIMIT $3)
         UPDATE engine_work SET status = 'running', locked_until = $2, attempt = attempt + 1
         WHERE id IN (SELECT id FROM chosen)
         RETURNING id, engine_code, tenant_id, kind, payload, attempt, due_at, traceparent"
    )
}

/// Claims up to `limit` items of `engine_codes` due by `now`, leased until `lease_until`,
/// counting the run (see `WorkQueue::claim` for the statement on each database). The rows come
/// back in no particular order.
pub async fn claim(
    database: &Database,
    engine_codes: &[String],
    now: &str,
    lease_until: &str,
    limit: i64,
) -> anyhow::Result<Vec<ClaimedRow>> {
    match database.pool() {
        Pool::Postgres(pool) => {
            sqlx::query_as(
                "SELECT id, engine_code, tenant_id, kind, payload, attempt, due_at, traceparent
                 FROM engine_work_claim($1, $2, $3, $4)",
            )
            .bind(now)
            .bind(lease_until)
            .bind(engine_codes)
            .bind(limit)
            .fetch_all(pool)
            .await
        }
        Pool::Sqlite(_) => {
            let claim = sqlite_claim_statement(engine_codes.len());
            on_writer!(database, pool => {
                let mut query = sqlx::query_as(sqlx::AssertSqlSafe(claim.clone()))
                    .bind(now)
                    .bind(lease_until)
                    .bind(limit);
                for code in engine_codes {
                    query = query.bind(code);
                }
                query.fetch_all(pool).await
            })
        }
    }
    .context("claiming due engine work")
}

/// Makes the claimed `items` (`(id, attempt)`, at most a few hundred) pending again, due at
/// `due_at` when given, their claims not counted; an item claimed again since (a newer attempt)
/// or already completed is left alone.
pub async fn hand_back(
    database: &Database,
    items: &[(String, u32)],
    due_at: Option<&str>,
) -> anyhow::Result<()> {
    if items.is_empty() {
        return Ok(());
    }
    on_writer!(database, pool => {
        let mut update = sqlx::QueryBuilder::new(
            "UPDATE engine_work SET status = 'pending', locked_until = NULL,
             attempt = attempt - 1, due_at = COALESCE(",
        );
        update.push_bind(due_at);
        update.push(", due_at) WHERE status = 'running' AND (id, attempt) IN (VALUES ");
        let mut rows = update.separated(", ");
        for (id, attempt) in items {
            rows.push("(");
            rows.push_bind_unseparated(id);
            rows.push_unseparated(", ");
            rows.push_bind_unseparated(i64::from(*attempt));
            rows.push_unseparated(")");
        }
        update.push(")");
        update.build().execute(pool).await.map(drop)
    })
    .context("handing back claimed engine work")
}

/// Deletes the items of `done` (`(id, attempt)`, at most a few hundred) in the caller's
/// transaction; an item claimed again since (a newer attempt) stays. The number deleted.
pub async fn delete_completed(tx: &mut Tx, done: &[(String, u32)]) -> anyhow::Result<u64> {
    on_tx!(tx, conn => {
        let mut delete = sqlx::QueryBuilder::new(
            "DELETE FROM engine_work WHERE (id, attempt) IN (VALUES ",
        );
        let mut rows = delete.separated(", ");
        for (id, attempt) in done {
            rows.push("(");
            rows.push_bind_unseparated(id);
            rows.push_unseparated(", ");
            rows.push_bind_unseparated(i64::from(*attempt));
            rows.push_unseparated(")");
        }
        delete.push(")");
        delete.build().execute(&mut **conn).await.map(|done| done.rows_affected())
    })
    .context("completing engine work")
}

/// Records a failed run of `id` at `attempt`: its new status, when it is due, and the error.
pub async fn record_failure(
    database: &Database,
    id: &str,
    attempt: u32,
    status: &str,
    due_at: &str,
    error: &str,
) -> anyhow::Result<()> {
    on_writer!(database, pool => sqlx::query(
        "UPDATE engine_work SET status = $3, due_at = $4, locked_until = NULL, last_error = $5
         WHERE id = $1 AND attempt = $2",
    )
    .bind(id)
    .bind(i64::from(attempt))
    .bind(status)
    .bind(due_at)
    .bind(error)
    .execute(pool)
    .await
    .map(drop))
    .context("recording failed engine work")
}
