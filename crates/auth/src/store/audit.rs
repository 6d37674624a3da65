//! SQL of the audit trail (`auth_audit`): inserting an entry, on the pool or in the caller's
//! transaction, and reading a page of a tenant's trail.

use anyhow::Context as _;

use tessera_storage::{Database, Tx};
use tessera_storage::{on_pool, on_tx};

/// A row to insert, already normalized by the audit service (secrets dropped, login checked).
pub struct NewAuditRow {
    pub id: String,
    pub tenant_id: Option<String>,
    pub user_id: Option<String>,
    /// The dotted event name, e.g. `login.failed`, or an engine's `<code>.<name>`.
    pub event: String,
    /// The engine whose audited operation this records; `None` for the host's own events.
    pub engine_code: Option<String>,
    pub login: Option<String>,
    pub client_ip: Option<String>,
    pub correlation_id: Option<String>,
    /// A JSON object, serialized.
    pub details: String,
    pub created_at: String,
}

/// A stored row as the trail lists it.
#[derive(sqlx::FromRow)]
pub struct AuditRow {
    pub id: String,
    pub event: String,
    pub engine_code: Option<String>,
    pub user_id: Option<String>,
    pub login: Option<String>,
    pub client_ip: Option<String>,
    pub correlation_id: Option<String>,
    /// A JSON object, serialized.
    pub details: String,
    pub created_at: String,
}

const INSERT: &str = "INSERT INTO auth_audit
    (id, tenant_id, user_id, event, login, client_ip, correlation_id, details, created_at,
     engine_code)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";

/// Inserts `row` in its own statement (committed at once).
pub async fn insert(database: &Database, row: &NewAuditRow) -> anyhow::Result<()> {
    on_pool!(database, pool => sqlx::query(INSERT)
        .bind(&row.id)
        .bind(row.tenant_id.as_deref())
        .bind(row.user_id.as_deref())
        .bind(&row.event)
        .bind(row.login.as_deref())
        .bind(row.client_ip.as_deref())
        .bind(row.correlation_id.as_deref())
        .bind(&row.details)
        .bind(&row.created_at)
        .bind(row.engine_code.as_deref())
        .execute(pool)
        .await
        .map(drop))
    .with_context(|| format!("recording the audit event {}", row.event))
}

/// Inserts `row` inside the caller's transaction: it is kept only if that commits.
pub async fn insert_in(tx: &mut Tx, row: &NewAuditRow) -> anyhow::Result<()> {
    on_tx!(tx, conn => sqlx::query(INSERT)
        .bind(&row.id)
        .bind(row.tenant_id.as_deref())
        .bind(row.user_id.as_deref())
        .bind(&row.event)
        .bind(row.login.as_deref())
        .bind(row.client_ip.as_deref())
        .bind(row.correlation_id.as_deref())
        .bind(&row.details)
        .bind(&row.created_at)
        .bind(row.engine_code.as_deref())
        .execute(&mut **conn)
        .await
        .map(drop))
    .with_context(|| format!("recording the audit event {}", row.event))
}

/// Which entries of an event name a filter keeps.
#[derive(Debug, Clone, Copy)]
pub enum EventFilter<'a> {
    /// The host's own event of this name (never an engine's entry).
    Host(&'a str),
    /// An engine's entries of this full name (`<code>.<name>`).
    Engine(&'a str),
}

/// What a page of the trail is narrowed to.
#[derive(Debug, Clone, Copy, Default)]
pub struct ListFilter<'a> {
    pub event: Option<EventFilter<'a>>,
    pub user_id: Option<&'a str>,
    /// Only the entries of this engine's operations.
    pub engine_code: Option<&'a str>,
}

/// Up to `limit` rows of `tenant_id`'s trail, newest first (ties by id, descending), strictly
/// after the position `after` (`(created_at, id)`), narrowed by `filter`.
pub async fn list(
    database: &Database,
    tenant_id: &str,
    filter: ListFilter<'_>,
    after: Option<(&str, &str)>,
    limit: u32,
) -> anyhow::Result<Vec<AuditRow>> {
    let mut sql = String::from(
        "SELECT id, event, engine_code, user_id, login, client_ip, correlation_id, details,
                created_at
         FROM auth_audit WHERE tenant_id = $1",
    );
    let mut binds: Vec<&str> = vec![tenant_id];
    match filter.event {
        None => {}
        Some(EventFilter::Host(event)) => {
            binds.push(event);
            sql.push_str(&format!(
                " AND event = ${} AND engine_code IS NULL",
                binds.len()
            ));
        }
        Some(EventFilter::Engine(event)) => {
            binds.push(event);
            sql.push_str(&format!(
                " AND event = ${} AND engine_code IS NOT NULL",
                binds.len()
            ));
        }
    }
    if let Some(engine_code) = filter.engine_code {
        binds.push(engine_code);
        sql.push_str(&format!(" AND engine_code = ${}", binds.len()));
    }
    let user_id = filter.user_id;
    if let Some(user_id) = user_id {
        binds.push(user_id);
        sql.push_str(&format!(" AND user_id = ${}", binds.len()));
    }
    if let Some((created_at, id)) = after {
        binds.extend([created_at, created_at, id]);
        let n = binds.len();
        sql.push_str(&format!(
            " AND (created_at < ${} OR (created_at = ${} AND id < ${}))",
            n - 2,
            n - 1,
            n
        ));
    }
    sql.push_str(&format!(
        " ORDER BY created_at DESC, id DESC LIMIT ${}",
        binds.len() + 1
    ));
    on_pool!(database, pool => {
        let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql.clone()));
        for bind in &binds {
            query = query.bind(*bind);
        }
        query.bind(i64::from(limit)).fetch_all(pool).await
    })
    .context("listing the audit trail")
}
