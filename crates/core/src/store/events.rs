//! The SQL of the event log (`events.rs`): reserving a tenant's sequence numbers and the
//! multi-row inserts of an append, both inside the caller's transaction. The log's layout
//! (`migrations/*/20261127000018_event_groups.sql`): `events` holds what is each event's own,
//! `event_groups` what an append's events share, `event_sequences` numbers the tenants; the
//! `event_log` view joins them back for the readers.

use anyhow::Context as _;

use tessera_storage::Tx;
use tessera_storage::compact::{StoredId, StoredTime};
use tessera_storage::on_tx;

/// SQL for the number in the log of the tenant whose id is `$1` (a scalar subquery): what the
/// log's rows and the entities name their tenant by.
pub(crate) const TENANT_NUMBER: &str =
    "(SELECT tenant_number FROM event_sequences WHERE tenant_id = $1)";

/// An event as stored in the log, in the order projections read it.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct StoredEvent {
    /// Global insertion position (not commit order on PostgreSQL; see `transaction_id`).
    pub position: i64,
    /// The appending transaction's id on PostgreSQL; 0 on SQLite.
    pub transaction_id: i64,
    pub id: String,
    pub tenant_id: String,
    pub sequence: i64,
    pub event_type: String,
    pub entity_id: Option<String>,
    pub intention_id: Option<String>,
    pub actor_id: Option<String>,
    pub correlation_id: Option<String>,
    pub depth: i64,
    /// JSON object text: the fields beyond type, entity id and timestamp.
    pub data: String,
    pub occurred_at: String,
    /// [`crate::events::EntityState`] JSON on the first event of an intention.
    pub entity_state: Option<String>,
    /// The trace its intention was submitted in
    /// ([`crate::events::EventContext::traceparent`]); read as
    /// `None` where a query leaves it out (logs from before migration 21).
    #[sqlx(default)]
    pub traceparent: Option<String>,
    /// The event's place among its intention's events (0: the first); read as 0 where a query
    /// leaves it out.
    #[sqlx(default)]
    pub group_offset: i64,
}

/// What a group of events shares, stored once: the group is found by its tenant's number and
/// its first event's sequence.
pub(crate) struct GroupInsert<'a> {
    pub tenant_number: i64,
    pub first_sequence: i64,
    pub intention_id: Option<&'a str>,
    pub actor_id: Option<&'a str>,
    pub correlation_id: Option<&'a str>,
    pub depth: i64,
    pub occurred_at: &'a str,
    /// [`crate::events::EntityState`] JSON.
    pub entity_state: Option<&'a str>,
    /// The W3C `traceparent` of the request that submitted the events.
    pub traceparent: Option<&'a str>,
    /// The one entity the group's events are about (their rows then name none).
    pub entity_id: Option<&'a str>,
    /// What the group's event ids share: all but their last four hex digits, the offset.
    /// `None`: the first 32 characters of `intention_id`.
    pub event_id_prefix: Option<String>,
    pub event_count: i64,
}

/// A row of the log to insert; `data` is JSON object text. Its group starts at
/// `sequence - group_offset`.
pub(crate) struct EventInsert<'a> {
    /// `None`: the group's prefix and the offset.
    pub id: Option<String>,
    pub tenant_number: i64,
    pub sequence: i64,
    pub group_offset: i64,
    pub event_type: &'a str,
    /// The type's number when the caller knows it (a host type); else it is looked up by
    /// `event_type`.
    pub type_number: Option<i32>,
    /// `None`: the group's entity.
    pub entity_id: Option<&'a str>,
    pub data: String,
}

/// SQL for the sequences of an entity's events in one tenant, to use as
/// `sequence IN (…)` beside `tenant_number = …`: `tenant_number` is SQL for the tenant's
/// number, `entity_parameter` the placeholder of the entity's id, bound as
/// [`StoredId`] (the form the log's rows store it in). The log names an entity in
/// two places (`migrations/*/…_event_ids_from_groups.sql`), each with its index: the groups
/// about it alone, each one range of sequences, and the events that name it themselves
/// (`+tenant_number`: their entity's index, not the tenant's, finds them).
pub(crate) fn entity_sequences(tenant_number: &str, entity_parameter: &str) -> String {
    format!(
        "SELECT e.sequence FROM events AS e
         WHERE e.entity_id = {entity_parameter} AND +e.tenant_number = {tenant_number}
         UNION ALL
         SELECT e.sequence FROM event_groups AS g
         JOIN events AS e
           ON e.tenant_number = g.tenant_number AND e.sequence >= g.first_sequence
          AND e.sequence < g.first_sequence + g.event_count
         WHERE g.entity_id = {entity_parameter} AND g.tenant_number = {tenant_number}"
    )
}

/// A tenant's place in the log after a reservation.
pub(crate) struct Reservation {
    /// The tenant's number in the log's rows.
    pub tenant_number: i64,
    /// The last of the sequence numbers reserved.
    pub last_sequence: i64,
}

/// Reserves the tenant's next `count` sequence numbers. On PostgreSQL the tenant's row stays
/// locked until the transaction ends.
pub(crate) async fn reserve_sequences(
    tx: &mut Tx,
    tenant_id: &str,
    count: i64,
) -> anyhow::Result<Reservation> {
    let (tenant_number, last_sequence) = on_tx!(tx, conn => sqlx::query_as(
        "INSERT INTO event_sequences (tenant_id, last_sequence) VALUES ($1, $2)
         ON CONFLICT (tenant_id)
         DO UPDATE SET last_sequence = event_sequences.last_sequence + excluded.last_sequence
         RETURNING tenant_number, last_sequence",
    )
    .bind(tenant_id)
    .bind(count)
    .fetch_one(&mut **conn)
    .await)
    .context("reserving event sequence numbers")?;
    Ok(Reservation {
        tenant_number,
        last_sequence,
    })
}

/// Inserts `groups` in one multi-row statement (12 parameters a row).
pub(crate) async fn insert_groups(tx: &mut Tx, groups: &[GroupInsert<'_>]) -> anyhow::Result<()> {
    on_tx!(tx, conn => {
        let mut insert = sqlx::QueryBuilder::new(
            "INSERT INTO event_groups (tenant_number, first_sequence, intention_id, actor_id,
             correlation_id, depth, occurred_at, entity_state, traceparent, entity_id,
             event_id_prefix, event_count) ",
        );
        insert.push_values(groups, |mut row, group| {
            // Ids and the time in their compact form on SQLite (`compact`; `event_log` reads
            // them back as text).
            row.push_bind(group.tenant_number)
                .push_bind(group.first_sequence)
                .push_bind(group.intention_id.map(StoredId))
                .push_bind(group.actor_id.map(StoredId))
                .push_bind(group.correlation_id.map(StoredId))
                .push_bind(group.depth)
                .push_bind(StoredTime(group.occurred_at))
                .push_bind(group.entity_state)
                .push_bind(group.traceparent)
                .push_bind(group.entity_id.map(StoredId))
                .push_bind(&group.event_id_prefix)
                .push_bind(group.event_count);
        });
        insert.build().execute(&mut **conn).await.map(drop)
    })
    .context("appending to the event log's groups")
}

/// Numbers the types not numbered yet in `event_types`, in one statement. Only names not
/// found are inserted: a number is taken only for a new type (PostgreSQL takes an identity
/// value for every row an insert tries, even one a conflict then skips).
pub(crate) async fn number_types(tx: &mut Tx, names: &[&str]) -> anyhow::Result<()> {
    on_tx!(tx, conn => {
        let mut insert = sqlx::QueryBuilder::new("INSERT INTO event_types (name) SELECT name FROM (");
        let mut first = true;
        for name in names {
            insert.push(if first { "SELECT " } else { " UNION ALL SELECT " });
            insert.push_bind(*name).push(" AS name");
            first = false;
        }
        insert.push(
            ") AS new_types WHERE NOT EXISTS
               (SELECT 1 FROM event_types AS t WHERE t.name = new_types.name)
             ON CONFLICT (name) DO NOTHING",
        );
        insert.build().execute(&mut **conn).await.map(drop)
    })
    .context("numbering event types")
}

/// Inserts `rows` in one multi-row statement (7 parameters a row); their types must be
/// numbered ([`number_types`]).
pub(crate) async fn insert(tx: &mut Tx, rows: &[EventInsert<'_>]) -> anyhow::Result<()> {
    on_tx!(tx, conn => {
        let mut insert = sqlx::QueryBuilder::new(
            "INSERT INTO events (id, tenant_number, sequence, group_offset, type_number,
             entity_id, data) ",
        );
        insert.push_values(rows, |mut row, event| {
            row.push_bind(&event.id)
                .push_bind(event.tenant_number)
                .push_bind(event.sequence)
                .push_bind(event.group_offset)
                .push_unseparated(", ");
            match event.type_number {
                Some(number) => {
                    row.push_bind_unseparated(number);
                }
                None => {
                    row.push_unseparated("(SELECT type_number FROM event_types WHERE name = ")
                        .push_bind_unseparated(event.event_type)
                        .push_unseparated(")");
                }
            }
            row.push_bind(event.entity_id.map(StoredId))
                .push_bind(&event.data);
        });
        insert.build().execute(&mut **conn).await.map(drop)
    })
    .context("appending to the event log")
}

/// The type and data (as `event_log` gives them) of every event after the first of the group
/// that starts at `first_sequence` in the tenant's log, in order (the group's `event_count`
/// bounds the range, so the read is one range of the tenant's index).
pub(crate) async fn group_followers(
    tx: &mut Tx,
    tenant_id: &str,
    first_sequence: i64,
) -> anyhow::Result<Vec<(String, String)>> {
    on_tx!(tx, conn => sqlx::query_as(
        "SELECT l.event_type, l.data
         FROM event_sequences AS s
         JOIN event_groups AS g
           ON g.tenant_number = s.tenant_number AND g.first_sequence = $2
         JOIN event_log AS l
           ON l.tenant_number = g.tenant_number AND l.sequence > g.first_sequence
          AND l.sequence < g.first_sequence + g.event_count
         WHERE s.tenant_id = $1
         ORDER BY l.sequence",
    )
    .bind(tenant_id)
    .bind(first_sequence)
    .fetch_all(&mut **conn)
    .await)
    .context("reading the events of an intention")
}
