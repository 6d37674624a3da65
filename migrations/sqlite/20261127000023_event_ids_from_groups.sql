-- The event log without a copy per event of what its group already names (issue 32, the
-- footprint per entity). An intention's events are almost always about one entity, and their
-- ids are UUID v7s this host makes: each event row carried the entity's 36-character id (and
-- an entry in `events_by_entity`) and an id of its own. Now:
--
-- * A group about one entity names it (`event_groups.entity_id`, with its own index for an
--   entity's timeline), and its events name none (`events.entity_id` NULL: their group's).
--   A group whose events name several entities, or none, names none, and its events keep
--   their own as before.
-- * A group's event ids share all but their last four hex digits, which are the event's
--   offset in the group: the group stores the shared 32 characters (`event_id_prefix`), an
--   event row no id (`events.id` NULL) unless its offset does not fit in four hex digits.
-- * `event_count`: how many events the group has, so a group's events are one range of the
--   tenant's sequence.
--
-- `event_log` gives every column as before, and now each event's `group_offset`. Rows written
-- before keep their own ids and entities (their groups name neither), so nothing changes for
-- them. SQLite cannot drop `NOT NULL` from a column: `events` is rebuilt, positions kept.

ALTER TABLE event_groups ADD COLUMN entity_id TEXT;
ALTER TABLE event_groups ADD COLUMN event_id_prefix TEXT;
ALTER TABLE event_groups ADD COLUMN event_count INTEGER;

CREATE INDEX event_groups_by_entity ON event_groups (entity_id)
    WHERE entity_id IS NOT NULL;

DROP VIEW event_log;

CREATE TABLE events_own (
    position        INTEGER PRIMARY KEY AUTOINCREMENT,
    transaction_id  INTEGER NOT NULL DEFAULT 0,
    tenant_number   INTEGER NOT NULL,
    -- 1, 2, 3… per tenant, without gaps.
    sequence        INTEGER NOT NULL,
    -- The event's place in its group: the group is (tenant_number, sequence - group_offset).
    group_offset    INTEGER NOT NULL,
    event_type      TEXT NOT NULL,
    -- NULL: the group's prefix and the offset in four hex digits.
    id              TEXT,
    -- NULL: the group's entity (none when the group names none either).
    entity_id       TEXT,
    -- JSON object: the event's fields beyond type, entity_id and timestamp.
    data            TEXT NOT NULL,
    UNIQUE (tenant_number, sequence)
);

INSERT INTO events_own (position, transaction_id, tenant_number, sequence, group_offset,
                        event_type, id, entity_id, data)
    SELECT position, transaction_id, tenant_number, sequence, group_offset, event_type, id,
           entity_id, data
    FROM events ORDER BY position;
-- AUTOINCREMENT's high-water mark, so no position is ever handed out twice.
DELETE FROM sqlite_sequence WHERE name = 'events_own';
INSERT INTO sqlite_sequence (name, seq) SELECT 'events_own', seq FROM sqlite_sequence
    WHERE name = 'events';
DROP TABLE events;
ALTER TABLE events_own RENAME TO events;

CREATE INDEX events_by_entity ON events (entity_id, sequence)
    WHERE entity_id IS NOT NULL;

CREATE VIEW event_log AS
    SELECT e.position, e.transaction_id,
           COALESCE(e.id, g.event_id_prefix || printf('%04x', e.group_offset)) AS id,
           s.tenant_id, e.sequence, e.event_type,
           COALESCE(e.entity_id, g.entity_id) AS entity_id,
           g.intention_id, g.actor_id, g.correlation_id, g.depth, e.data, g.occurred_at,
           CASE WHEN e.group_offset = 0 THEN g.entity_state END AS entity_state,
           e.tenant_number, g.traceparent, e.group_offset
    FROM events AS e
    JOIN event_groups AS g
      ON g.tenant_number = e.tenant_number AND g.first_sequence = e.sequence - e.group_offset
    JOIN event_sequences AS s ON s.tenant_number = e.tenant_number;
