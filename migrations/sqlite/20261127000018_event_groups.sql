-- The event log in a smaller layout (issue 32, the footprint per entity). An intention's
-- events share their tenant, intention, actor, correlation id, depth, time and entity state;
-- each event row carried all of them, five 36-character ids among them, with the tenant's id
-- in the row and again in the (tenant, sequence) index, and a unique index on the event's id
-- that no query reads (ids are UUID v7s this host makes). Now:
--
-- * `event_sequences` numbers each tenant (`tenant_number`) beside its last sequence; the log
--   stores the number.
-- * `event_groups` holds what an append's events share, once, keyed by the tenant and the
--   group's first sequence; an event finds its group at `sequence - group_offset`.
-- * `events` keeps what is the event's own: id, type, entity, data.
-- * `event_log` is the view the readers use: every column an event had before.
--
-- The rows of an older log become one group per event (their own shared columns, the entity
-- state where they had one), so nothing is lost and positions and sequences are unchanged.

CREATE TABLE event_sequences_numbered (
    tenant_number  INTEGER PRIMARY KEY,
    tenant_id      TEXT NOT NULL UNIQUE,
    last_sequence  INTEGER NOT NULL
);
INSERT INTO event_sequences_numbered (tenant_id, last_sequence)
    SELECT tenant_id, last_sequence FROM event_sequences ORDER BY tenant_id;
DROP TABLE event_sequences;
ALTER TABLE event_sequences_numbered RENAME TO event_sequences;

CREATE TABLE event_groups (
    tenant_number   INTEGER NOT NULL,
    first_sequence  INTEGER NOT NULL,
    intention_id    TEXT,
    actor_id        TEXT,
    correlation_id  TEXT,
    -- How many workflow hops led to these events (0: a person's intention).
    depth           INTEGER NOT NULL DEFAULT 0,
    occurred_at     TEXT NOT NULL,
    -- The entity after its intention ({"family", "status", "fields", "created_by",
    -- "changed"}; before it for a deletion): what workflow conditions and templates read.
    entity_state    TEXT,
    PRIMARY KEY (tenant_number, first_sequence)
) WITHOUT ROWID;

INSERT INTO event_groups (tenant_number, first_sequence, intention_id, actor_id,
                          correlation_id, depth, occurred_at, entity_state)
    SELECT s.tenant_number, e.sequence, e.intention_id, e.actor_id, e.correlation_id, e.depth,
           e.occurred_at, e.entity_state
    FROM events AS e JOIN event_sequences AS s ON s.tenant_id = e.tenant_id;

CREATE TABLE events_compact (
    position        INTEGER PRIMARY KEY AUTOINCREMENT,
    transaction_id  INTEGER NOT NULL DEFAULT 0,
    id              TEXT NOT NULL,
    tenant_number   INTEGER NOT NULL,
    -- 1, 2, 3… per tenant, without gaps.
    sequence        INTEGER NOT NULL,
    -- The event's place in its group: the group is (tenant_number, sequence - group_offset).
    group_offset    INTEGER NOT NULL,
    event_type      TEXT NOT NULL,
    entity_id       TEXT,
    -- JSON object: the event's fields beyond type, entity_id and timestamp.
    data            TEXT NOT NULL,
    UNIQUE (tenant_number, sequence)
);

INSERT INTO events_compact (position, transaction_id, id, tenant_number, sequence, group_offset,
                            event_type, entity_id, data)
    SELECT e.position, e.transaction_id, e.id, s.tenant_number, e.sequence, 0, e.event_type,
           e.entity_id, e.data
    FROM events AS e JOIN event_sequences AS s ON s.tenant_id = e.tenant_id
    ORDER BY e.position;
DROP TABLE events;
ALTER TABLE events_compact RENAME TO events;

CREATE INDEX events_by_entity ON events (entity_id, sequence)
    WHERE entity_id IS NOT NULL;

CREATE VIEW event_log AS
    SELECT e.position, e.transaction_id, e.id, s.tenant_id, e.sequence, e.event_type,
           e.entity_id, g.intention_id, g.actor_id, g.correlation_id, g.depth, e.data,
           g.occurred_at,
           CASE WHEN e.group_offset = 0 THEN g.entity_state END AS entity_state,
           e.tenant_number
    FROM events AS e
    JOIN event_groups AS g
      ON g.tenant_number = e.tenant_number AND g.first_sequence = e.sequence - e.group_offset
    JOIN event_sequences AS s ON s.tenant_number = e.tenant_number;
