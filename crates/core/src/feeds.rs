//! The timeline and inbox read models (written by the projector, `projections/projector.rs`):
//! cursor-paged reads and marking inbox items read. Every query is bounded by the tenant, and
//! inbox queries by the recipient too.

use anyhow::Context as _;
use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::events::{self, EventContext, NewEvent};
use crate::projections::signal::EventSignal;
use tessera_http::paging::CursorPage;
use tessera_storage::{Database, DatabaseKind, time};
use tessera_storage::{on_pool, on_tx};

/// A timeline item: one domain event of the tenant.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct TimelineItem {
    /// The event's id.
    pub id: String,
    /// The event type, e.g. `entity.created`.
    #[serde(rename = "type")]
    pub kind: String,
    pub occurred_at: String,
    pub entity_id: Option<String>,
    /// Who caused it.
    pub actor_id: Option<String>,
    /// The event's other fields (`family`, `field`, `value`, `old_value`, …).
    #[schema(value_type = Object)]
    pub data: Map<String, Value>,
}

/// An inbox item.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema, sqlx::FromRow)]
pub struct InboxItem {
    pub id: String,
    /// `entity.assigned` or `notification`.
    #[serde(rename = "type")]
    #[sqlx(rename = "item_type")]
    pub kind: String,
    pub title: String,
    pub entity_id: Option<String>,
    pub created_at: String,
    /// Null until marked read.
    pub read_at: Option<String>,
}

/// `WHERE` fragment and order of a cursor page over a `position` column.
fn cursor_clause(after: Option<i64>, descending: bool, parameter: usize) -> (String, &'static str) {
    let condition = match (after, descending) {
        (None, _) => String::new(),
        (Some(_), true) => format!(" AND position < ${parameter}"),
        (Some(_), false) => format!(" AND position > ${parameter}"),
    };
    (condition, if descending { "DESC" } else { "ASC" })
}

/// A page of the tenant's timeline (optionally of one entity) with each item's position.
pub async fn timeline(
    database: &Database,
    tenant_id: &str,
    entity_id: Option<&str>,
    page: &CursorPage<i64>,
    descending: bool,
) -> anyhow::Result<Vec<(i64, TimelineItem)>> {
    let entity_condition = if entity_id.is_some() {
        " AND entity_id = $3"
    } else {
        ""
    };
    let cursor_parameter = if entity_id.is_some() { 4 } else { 3 };
    let (cursor_condition, order) = cursor_clause(page.after, descending, cursor_parameter);
    let sql = format!(
        "SELECT position, id, item_type, occurred_at, entity_id, actor_id, data
         FROM timeline_items WHERE tenant_id = $1{entity_condition}{cursor_condition}
         ORDER BY position {order} LIMIT $2"
    );
    type Row = (
        i64,
        String,
        String,
        String,
        Option<String>,
        Option<String>,
        String,
    );
    let rows: Vec<Row> = on_pool!(database, pool => {
        let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql.clone()))
            .bind(tenant_id)
            .bind(i64::from(page.fetch_limit()));
        if let Some(entity_id) = entity_id {
            query = query.bind(entity_id);
        }
        if let Some(after) = page.after {
            query = query.bind(after);
        }
        query.fetch_all(pool).await
    })
    .context("reading the timeline")?;
    rows.into_iter()
        .map(
            |(position, id, kind, occurred_at, entity_id, actor_id, data)| {
                Ok((
                    position,
                    TimelineItem {
                        data: serde_json::from_str(&data)
                            .with_context(|| format!("decoding timeline item {id}"))?,
                        id,
                        kind,
                        occurred_at,
                        entity_id,
                        actor_id,
                    },
                ))
            },
        )
        .collect()
}

#[derive(sqlx::FromRow)]
struct InboxRow {
    position: i64,
    #[sqlx(flatten)]
    item: InboxItem,
}

const INBOX_COLUMNS: &str = "position, id, item_type, title, entity_id, created_at, read_at";

/// A page of the recipient's inbox in the tenant, with each item's position.
pub async fn inbox(
    database: &Database,
    tenant_id: &str,
    recipient_id: &str,
    page: &CursorPage<i64>,
    descending: bool,
) -> anyhow::Result<Vec<(i64, InboxItem)>> {
    let (cursor_condition, order) = cursor_clause(page.after, descending, 4);
    let sql = format!(
        "SELECT {INBOX_COLUMNS} FROM inbox_items
         WHERE tenant_id = $1 AND recipient_id = $2{cursor_condition}
         ORDER BY position {order} LIMIT $3"
    );
    let rows: Vec<InboxRow> = on_pool!(database, pool => {
        let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql.clone()))
            .bind(tenant_id)
            .bind(recipient_id)
            .bind(i64::from(page.fetch_limit()));
        if let Some(after) = page.after {
            query = query.bind(after);
        }
        query.fetch_all(pool).await
    })
    .context("reading the inbox")?;
    Ok(rows
        .into_iter()
        .map(|row| (row.position, row.item))
        .collect())
}

/// Marks one of the recipient's items read (keeping the first read time) and records it in
/// the log as `inbox.item_read`, so a rebuild keeps the mark. `None` when the recipient has no
/// such item in the tenant.
pub async fn mark_read(
    database: &Database,
    signal: &EventSignal,
    tenant_id: &str,
    recipient_id: &str,
    item_id: &str,
) -> anyhow::Result<Option<InboxItem>> {
    let lock = match database.kind() {
        DatabaseKind::Sqlite => "",
        DatabaseKind::Postgres => " FOR UPDATE",
    };
    let sql = format!(
        "SELECT {INBOX_COLUMNS} FROM inbox_items
         WHERE tenant_id = $1 AND recipient_id = $2 AND id = $3{lock}"
    );
    let mut tx = database.begin().await?;
    let row: Option<InboxRow> =
        on_tx!(&mut tx, conn => sqlx::query_as(sqlx::AssertSqlSafe(sql.clone()))
        .bind(tenant_id)
        .bind(recipient_id)
        .bind(item_id)
        .fetch_optional(&mut **conn)
        .await)
        .context("reading an inbox item")?;
    let Some(InboxRow { mut item, .. }) = row else {
        tx.rollback().await?;
        return Ok(None);
    };
    if item.read_at.is_some() {
        tx.rollback().await?;
        return Ok(Some(item));
    }
    let read_at = time::now();
    on_tx!(&mut tx, conn => sqlx::query("UPDATE inbox_items SET read_at = $2 WHERE id = $1")
        .bind(item_id)
        .bind(&read_at)
        .execute(&mut **conn)
        .await
        .map(drop))
    .context("marking an inbox item read")?;
    let mut data = Map::new();
    data.insert("item_id".into(), Value::String(item_id.to_owned()));
    let context = EventContext {
        tenant_id: tenant_id.to_owned(),
        actor_id: Some(recipient_id.to_owned()),
        ..EventContext::default()
    };
    let event = NewEvent {
        event_type: "inbox.item_read".into(),
        entity_id: item.entity_id.clone(),
        data,
    };
    events::append(&mut tx, &context, &[event], &read_at).await?;
    tx.commit().await?;
    signal.appended();
    item.read_at = Some(read_at);
    Ok(Some(item))
}
