-- Event types by number, event ids from their intention's, and field events' values without
-- their keys (issue 32, the footprint per entity).
--
-- * Every event row carried its type as text (`entity.field_set`: 16 bytes; a creation of
--   five fields is six rows). The log holds a handful of types: `event_types` numbers each
--   once, and an event row holds its type's number (`type_number`). Numbers are never
--   removed, so a row's number always names its type.
-- * A group's event ids share 32 characters (`event_groups.event_id_prefix`). When the
--   group's intention id is a UUID v7 this host made, the prefix is now its first 32
--   characters and the group stores none (NULL): `event_log` takes it from the intention id.
--   Groups written before keep their own prefix and read the same.
-- * A field event's data was an object whose keys were a third of it
--   (`{"field":"city","value":"London"}`; a creation of five fields is five such rows). An
--   `entity.field_set` row now stores `[field, value]`, an `entity.field_updated` row `[field,
--   old_value, new_value]`, and `event_log` gives the object back. Rows written before keep
--   their object.
--
-- `event_log` gives every column as before. SQLite cannot change a column's type: `events` is
-- rebuilt, positions kept.

CREATE TABLE event_types (
    type_number  INTEGER PRIMARY KEY,
    name         TEXT NOT NULL UNIQUE
);

-- The types the host appends, numbered ahead: an append numbers a type only the first time
-- it is seen, inside its own transaction, and a concurrent append of the same new type waits
-- for that transaction to end. Then any other type the log holds.
INSERT INTO event_types (name) VALUES
    ('entity.created'), ('entity.field_set'), ('entity.field_updated'),
    ('entity.status_changed'), ('entity.deleted'), ('notification.created'),
    ('inbox.item_read');
INSERT INTO event_types (name)
    SELECT DISTINCT e.event_type FROM events AS e
    WHERE NOT EXISTS (SELECT 1 FROM event_types AS t WHERE t.name = e.event_type)
    ORDER BY e.event_type;

DROP VIEW event_log;

CREATE TABLE events_numbered (
    position        INTEGER PRIMARY KEY AUTOINCREMENT,
    transaction_id  INTEGER NOT NULL DEFAULT 0,
    tenant_number   INTEGER NOT NULL,
    -- 1, 2, 3… per tenant, without gaps.
    sequence        INTEGER NOT NULL,
    -- The event's place in its group: the group is (tenant_number, sequence - group_offset).
    group_offset    INTEGER NOT NULL,
    -- `event_types.type_number`.
    type_number     INTEGER NOT NULL,
    -- NULL: the group's prefix and the offset in four hex digits.
    id              TEXT,
    -- NULL: the group's entity (none when the group names none either).
    entity_id       TEXT,
    -- JSON object: the event's fields beyond type, entity_id and timestamp.
    data            TEXT NOT NULL,
    UNIQUE (tenant_number, sequence)
);

INSERT INTO events_numbered (position, transaction_id, tenant_number, sequence, group_offset,
                             type_number, id, entity_id, data)
    SELECT e.position, e.transaction_id, e.tenant_number, e.sequence, e.group_offset,
           t.type_number, e.id, e.entity_id, e.data
    FROM events AS e JOIN event_types AS t ON t.name = e.event_type
    ORDER BY e.position;
-- AUTOINCREMENT's high-water mark, so no position is ever handed out twice.
DELETE FROM sqlite_sequence WHERE name = 'events_numbered';
INSERT INTO sqlite_sequence (name, seq) SELECT 'events_numbered', seq FROM sqlite_sequence
    WHERE name = 'events';
DROP TABLE events;
ALTER TABLE events_numbered RENAME TO events;

CREATE INDEX events_by_entity ON events (entity_id, sequence)
    WHERE entity_id IS NOT NULL;

CREATE VIEW event_log AS
    SELECT e.position, e.transaction_id,
           COALESCE(e.id, COALESCE(g.event_id_prefix, substr(g.intention_id, 1, 32))
                          || printf('%04x', e.group_offset)) AS id,
           s.tenant_id, e.sequence, t.name AS event_type,
           COALESCE(e.entity_id, g.entity_id) AS entity_id,
           g.intention_id, g.actor_id, g.correlation_id, g.depth,
           CASE
               WHEN substr(e.data, 1, 1) <> '[' THEN e.data
               WHEN t.name = 'entity.field_set'
                   THEN json_object('field', e.data ->> 0, 'value', e.data -> 1)
               ELSE json_object('field', e.data ->> 0, 'old_value', e.data -> 1,
                                'new_value', e.data -> 2)
           END AS data,
           g.occurred_at,
           CASE WHEN e.group_offset = 0 THEN g.entity_state END AS entity_state,
           e.tenant_number, g.traceparent, e.group_offset
    FROM events AS e
    JOIN event_groups AS g
      ON g.tenant_number = e.tenant_number AND g.first_sequence = e.sequence - e.group_offset
    JOIN event_sequences AS s ON s.tenant_number = e.tenant_number
    JOIN event_types AS t ON t.type_number = e.type_number;
