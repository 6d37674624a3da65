//! The SQL of the timeline and inbox reads (`feeds.rs`): the timeline's cursor pages over the
//! log's per-tenant `sequence`, the inbox's over `position`, and the lock and update of
//! marking an inbox item read. Every query is bounded by the tenant, and inbox queries by the
//! recipient too. (The projector writes the inbox: `projections/store/projector.rs`.)

use anyhow::Context as _;

use tessera_http::paging::CursorPage;
use tessera_storage::{Database, DatabaseKind, Tx};
use tessera_storage::{on_pool, on_tx};

/// A timeline row: the event's sequence, id, type, occurrence time, entity, actor and data
/// (JSON object text).
pub(crate) type TimelineRow = (
    i64,
    String,
    String,
    String,
    Option<String>,
    Option<String>,
    String,
);

/// An inbox item row with its position (`feeds.rs` makes the API's item of it).
#[derive(sqlx::FromRow)]
pub(crate) struct InboxRow {
    pub position: i64,
    pub id: String,
    /// `entity.assigned` or `notification`.
    pub item_type: String,
    pub title: String,
    pub entity_id: Option<String>,
    pub created_at: String,
    /// Null until marked read.
    pub read_at: Option<String>,
}

const INBOX_COLUMNS: &str = "position, id, item_type, title, entity_id, created_at, read_at";

/// `WHERE` fragment and order of a cursor page over the column `column`.
fn cursor_clause(
    column: &str,
    after: Option<i64>,
    descending: bool,
    parameter: usize,
) -> (String, &'static str) {
    let condition = match (after, descending) {
        (None, _) => String::new(),
        (Some(_), true) => format!(" AND {column} < ${parameter}"),
        (Some(_), false) => format!(" AND {column} > ${parameter}"),
    };
    (condition, if descending { "DESC" } else { "ASC" })
}

/// A page of the tenant's timeline (optionally of one entity): its `entity.*` events, read
/// from the log by their per-tenant sequence. A sequence is taken under the tenant's
/// sequence row lock and held until commit, so within a tenant later commits have higher
/// sequences and a newest-first walk never misses an event that existed when it started.
pub(crate) async fn timeline(
    database: &Database,
    tenant_id: &str,
    entity_id: Option<&str>,
    page: &CursorPage<i64>,
    descending: bool,
) -> anyhow::Result<Vec<TimelineRow>> {
    // The tenant's number, once; an entity's events through the entity's indexes.
    let tenant_number = super::events::TENANT_NUMBER;
    let scope_condition = if entity_id.is_some() {
        format!(
            "tenant_number = {tenant_number} AND sequence IN ({})",
            super::events::entity_sequences(tenant_number, "$3")
        )
    } else {
        format!("tenant_number = {tenant_number}")
    };
    let cursor_parameter = if entity_id.is_some() { 4 } else { 3 };
    let (cursor_condition, order) =
        cursor_clause("sequence", page.after, descending, cursor_parameter);
    let sql = format!(
        "SELECT sequence, id, event_type, occurred_at, entity_id, actor_id, data
         FROM event_log
         WHERE {scope_condition}{cursor_condition} AND event_type LIKE 'entity.%'
         ORDER BY sequence {order} LIMIT $2"
    );
    on_pool!(database, pool => {
        let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql.clone()))
            .bind(tenant_id)
            .bind(i64::from(page.fetch_limit()));
        if let Some(entity_id) = entity_id {
            query = query.bind(tessera_storage::compact::StoredId(entity_id));
        }
        if let Some(after) = page.after {
            query = query.bind(after);
        }
        query.fetch_all(pool).await
    })
    .context("reading the timeline")
}

/// A page of the recipient's inbox in the tenant.
pub(crate) async fn inbox(
    database: &Database,
    tenant_id: &str,
    recipient_id: &str,
    page: &CursorPage<i64>,
    descending: bool,
) -> anyhow::Result<Vec<InboxRow>> {
    let (cursor_condition, order) = cursor_clause("position", page.after, descending, 4);
    let sql = format!(
        "SELECT {INBOX_COLUMNS} FROM inbox_items
         WHERE tenant_id = $1 AND recipient_id = $2{cursor_condition}
         ORDER BY position {order} LIMIT $3"
    );
    on_pool!(database, pool => {
        let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql.clone()))
            .bind(tenant_id)
            .bind(recipient_id)
            .bind(i64::from(page.fetch_limit()));
        if let Some(after) = page.after {
            query = query.bind(after);
        }
        query.fetch_all(pool).await
    })
    .context("reading the inbox")
}

/// One of the recipient's items in the tenant, locked until the transaction ends
/// (PostgreSQL `FOR UPDATE`).
pub(crate) async fn lock_inbox_item(
    tx: &mut Tx,
    tenant_id: &str,
    recipient_id: &str,
    item_id: &str,
) -> anyhow::Result<Option<InboxRow>> {
    let lock = match tx.kind() {
        DatabaseKind::Sqlite => "",
        DatabaseKind::Postgres => " FOR UPDATE",
    };
    let sql = format!(
        "SELECT {INBOX_COLUMNS} FROM inbox_items
         WHERE tenant_id = $1 AND recipient_id = $2 AND id = $3{lock}"
    );
    on_tx!(tx, conn => sqlx::query_as(sqlx::AssertSqlSafe(sql.clone()))
        .bind(tenant_id)
        .bind(recipient_id)
        .bind(item_id)
        .fetch_optional(&mut **conn)
        .await)
    .context("reading an inbox item")
}

/// Sets an inbox item's read time.
pub(crate) async fn set_read_at(tx: &mut Tx, item_id: &str, read_at: &str) -> anyhow::Result<()> {
    on_tx!(tx, conn => sqlx::query("UPDATE inbox_items SET read_at = $2 WHERE id = $1")
        .bind(item_id)
        .bind(read_at)
        .execute(&mut **conn)
        .await
        .map(drop))
    .context("marking an inbox item read")
}
