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
    /// The dotted event name, e.g. `login.failed`.
    pub event: &'static str,
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
    pub user_id: Option<String>,
    pub login: Option<String>,
    pub client_ip: Option<String>,
    pub correlation_id: Option<String>,
    /// A JSON object, serialized.
    pub details: String,
    pub created_at: String,
}

const INSERT: &str = "INSERT INTO auth_audit
    (id, tenant_id, user_id, event, login, client_ip, correlation_id, details, created_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)";

/// Inserts `row` in its own statement (committed at once).
pub async fn insert(database: &Database, row: &NewAuditRow) -> anyhow::Result<()> {
    on_pool!(database, pool => sqlx::query(INSERT)
        .bind(&row.id)
        .bind(row.tenant_id.as_deref())
        .bind(row.user_id.as_deref())
        .bind(row.event)
        .bind(row.login.as_deref())
        .bind(row.client_ip.as_deref())
        .bind(row.correlation_id.as_deref())
        .bind(&row.details)
        .bind(&row.created_at)
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
        .bind(row.event)
        .bind(row.login.as_deref())
        .bind(row.client_ip.as_deref())
        .bind(row.correlation_id.as_deref())
        .bind(&row.details)
        .bind(&row.created_at)
        .execute(&mut **conn)
        .await
        .map(drop))
    .with_context(|| format!("recording the audit event {}", row.event))
}

/// Up to `limit` rows of `tenant_id`'s trail, newest first (ties by id, descending), strictly
/// after the position `after` (`(created_at, id)`), of only `event` and `user_id` when given.
pub async fn list(
    database: &Database,
    tenant_id: &str,
    event: Option<&str>,
    user_id: Option<&str>,
    after: Option<(&str, &str)>,
    limit: u32,
) -> anyhow::Result<Vec<AuditRow>> {
    let mut sql = String::from(
        "SELECT id, event, user_id, login, client_ip, correlation_id, details, created_at
         FROM auth_audit WHERE tenant_id = $1",
    );
    let mut binds: Vec<&str> = vec![tenant_id];
    if let Some(event) = event {
        binds.push(event);
        sql.push_str(&format!(" AND event = ${}", binds.len()));
    }
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
