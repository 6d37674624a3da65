//! The SQL of realtime: the log's head and a tenant's events between two positions of the
//! log's reading order `(transaction_id, position)` (`projections/worker.rs` explains it), and
//! the tickets of `POST /core/api/v1/realtime/tickets`, stored hashed and redeemed by a
//! conditional delete so any host of a cluster redeems a ticket once.

use anyhow::Context as _;

use crate::projections::store::log::{LogPosition, STORED_EVENT_COLUMNS};
use crate::store::events::{StoredEvent, TENANT_NUMBER};
use tessera_storage::{Database, Pool};

/// The last position of the log that no later commit can precede: on SQLite the last
/// position (writers are serialized); on PostgreSQL the last one among transactions below
/// the horizon (every transaction still in flight, or yet to begin, sorts after it).
pub(crate) async fn log_head(database: &Database) -> anyhow::Result<LogPosition> {
    let row: Option<(i64, i64)> = match database.pool() {
        Pool::Sqlite(pool) => {
            sqlx::query_as("SELECT 0, position FROM events ORDER BY position DESC LIMIT 1")
                .fetch_optional(pool)
                .await
        }
        Pool::Postgres(pool) => {
            sqlx::query_as(
                "SELECT transaction_id, position FROM events
                 WHERE transaction_id < pg_snapshot_xmin(pg_current_snapshot())::text::bigint
                 ORDER BY transaction_id DESC, position DESC LIMIT 1",
            )
            .fetch_optional(pool)
            .await
        }
    }
    .context("reading the head of the event log")?;
    Ok(
        row.map_or(LogPosition::default(), |(transaction_id, position)| {
            LogPosition {
                transaction_id,
                position,
            }
        }),
    )
}

/// Up to `limit` events of the log after `after`, in reading order, that every later commit
/// follows: on PostgreSQL only those of transactions below the horizon, read with it in one
/// statement.
pub(crate) async fn events_after(
    database: &Database,
    after: LogPosition,
    limit: u32,
) -> anyhow::Result<Vec<StoredEvent>> {
    let limit = i64::from(limit);
    match database.pool() {
        Pool::Sqlite(pool) => {
            let sql = format!(
                "SELECT {STORED_EVENT_COLUMNS} FROM event_log WHERE position > $1
                 ORDER BY position LIMIT $2"
            );
            sqlx::query_as::<_, StoredEvent>(sqlx::AssertSqlSafe(sql))
                .bind(after.position)
                .bind(limit)
                .fetch_all(pool)
                .await
        }
        Pool::Postgres(pool) => {
            let sql = format!(
                "SELECT {STORED_EVENT_COLUMNS} FROM event_log
                 WHERE (transaction_id, position) > ($1, $2)
                   AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())::text::bigint
                 ORDER BY transaction_id, position LIMIT $3"
            );
            sqlx::query_as::<_, StoredEvent>(sqlx::AssertSqlSafe(sql))
                .bind(after.transaction_id)
                .bind(after.position)
                .bind(limit)
                .fetch_all(pool)
                .await
        }
    }
    .context("reading the event log for realtime")
}

/// Up to `limit` of the tenant's events after `after` and at or before `upto`, in reading
/// order (everything up to `upto` has committed: it is a position the hub has passed).
pub(crate) async fn tenant_events_between(
    database: &Database,
    tenant_id: &str,
    after: LogPosition,
    upto: LogPosition,
    limit: u32,
) -> anyhow::Result<Vec<StoredEvent>> {
    let sql = format!(
        "SELECT {STORED_EVENT_COLUMNS} FROM event_log
         WHERE tenant_number = {TENANT_NUMBER}
           AND (transaction_id, position) > ($2, $3) AND (transaction_id, position) <= ($4, $5)
         ORDER BY transaction_id, position LIMIT $6"
    );
    tessera_storage::on_pool!(database, pool => sqlx::query_as::<_, StoredEvent>(
        sqlx::AssertSqlSafe(sql.clone()),
    )
    .bind(tenant_id)
    .bind(after.transaction_id)
    .bind(after.position)
    .bind(upto.transaction_id)
    .bind(upto.position)
    .bind(i64::from(limit))
    .fetch_all(pool)
    .await)
    .context("replaying the tenant's events")
}

/// A ticket's row: who it was issued to.
#[derive(Debug, Clone, sqlx::FromRow)]
pub(crate) struct TicketRow {
    pub tenant_id: String,
    pub user_id: String,
    pub session_id: String,
    pub workspace_id: Option<String>,
    pub role: String,
    pub token_type: String,
    pub token_expires_at: i64,
}

/// Stores a ticket by its hash until `expires_at`, and drops the expired ones.
pub(crate) async fn insert_ticket(
    database: &Database,
    ticket_hash: &str,
    row: &TicketRow,
    expires_at: &str,
    now: &str,
) -> anyhow::Result<()> {
    tessera_storage::on_writer!(database, pool => sqlx::query(
        "DELETE FROM realtime_tickets WHERE expires_at <= $1",
    )
    .bind(now)
    .execute(pool)
    .await
    .map(drop))
    .context("dropping expired realtime tickets")?;
    tessera_storage::on_writer!(database, pool => sqlx::query(
        "INSERT INTO realtime_tickets (ticket_hash, tenant_id, user_id, session_id,
         workspace_id, role, token_type, token_expires_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(ticket_hash)
    .bind(&row.tenant_id)
    .bind(&row.user_id)
    .bind(&row.session_id)
    .bind(&row.workspace_id)
    .bind(&row.role)
    .bind(&row.token_type)
    .bind(row.token_expires_at)
    .bind(expires_at)
    .execute(pool)
    .await
    .map(drop))
    .context("storing a realtime ticket")
}

/// Redeems a ticket: deletes it if it has not expired, answering its row (`None`: unknown,
/// expired or already redeemed, on whichever host).
pub(crate) async fn redeem_ticket(
    database: &Database,
    ticket_hash: &str,
    now: &str,
) -> anyhow::Result<Option<TicketRow>> {
    tessera_storage::on_writer!(database, pool => sqlx::query_as::<_, TicketRow>(
        "DELETE FROM realtime_tickets WHERE ticket_hash = $1 AND expires_at > $2
         RETURNING tenant_id, user_id, session_id, workspace_id, role, token_type,
                   token_expires_at",
    )
    .bind(ticket_hash)
    .bind(now)
    .fetch_optional(pool)
    .await)
    .context("redeeming a realtime ticket")
}
