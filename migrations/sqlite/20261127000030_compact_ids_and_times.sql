-- Ids and times in their compact form (issue 32, the footprint per entity). A canonical UUID
-- (lower-case, hyphenated) was stored as 36 characters, a timestamp in the storage format as
-- 27; they are now 16 bytes (a blob) and an integer (microseconds since 1970), in the columns
-- that hold one per entity: an entity's id, creator and two times (in its row and in its two
-- listing indexes), a group's intention, actor, correlation id, entity and time, an event's
-- own entity, and a search document's entity. Any other value (an id that is not a canonical
-- UUID, a time in another format) keeps its text. Writers bind the values through
-- `tessera_storage::compact::{StoredId, StoredTime}`, which choose the same way, and readers
-- decode them as `compact::{IdText, TimeText}` or read the `event_log` view below, which give
-- the text back: every value reads as it was written. PostgreSQL is unchanged.
--
-- A column declared `TEXT` stores a blob as it is but turns an integer into its text, so the
-- tables with times (`entities`, `event_groups`) are rebuilt with those columns declared
-- `INTEGER` (which keeps a text that is not a number as text); the others are converted in
-- place (SQLite reuses the freed pages for later rows).

CREATE TABLE entities_compact (
    id             TEXT PRIMARY KEY,
    -- `event_sequences.tenant_number`.
    tenant_number  INTEGER NOT NULL,
    family_code    TEXT NOT NULL,
    status         TEXT NOT NULL,
    -- JSON object: field code → value.
    fields         TEXT NOT NULL,
    created_by     TEXT NOT NULL,
    -- Microseconds since 1970 (`compact::StoredTime`).
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL
) WITHOUT ROWID;

INSERT INTO entities_compact (id, tenant_number, family_code, status, fields, created_by,
                              created_at, updated_at)
    SELECT CASE WHEN id GLOB '[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]' THEN unhex(replace(id, '-', '')) ELSE id END,
           tenant_number, family_code, status, fields,
           CASE WHEN created_by GLOB '[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]' THEN unhex(replace(created_by, '-', '')) ELSE created_by END,
           CASE WHEN created_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]Z' AND (unixepoch(substr(created_at, 1, 19)) * 1000000 + CAST(substr(created_at, 21, 6) AS INTEGER)) >= 0
                     AND strftime('%Y-%m-%dT%H:%M:%S', (unixepoch(substr(created_at, 1, 19)) * 1000000 + CAST(substr(created_at, 21, 6) AS INTEGER)) / 1000000, 'unixepoch') || printf('.%06dZ', (unixepoch(substr(created_at, 1, 19)) * 1000000 + CAST(substr(created_at, 21, 6) AS INTEGER)) % 1000000) = created_at
                THEN (unixepoch(substr(created_at, 1, 19)) * 1000000 + CAST(substr(created_at, 21, 6) AS INTEGER)) ELSE created_at END,
           CASE WHEN updated_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]Z' AND (unixepoch(substr(updated_at, 1, 19)) * 1000000 + CAST(substr(updated_at, 21, 6) AS INTEGER)) >= 0
                     AND strftime('%Y-%m-%dT%H:%M:%S', (unixepoch(substr(updated_at, 1, 19)) * 1000000 + CAST(substr(updated_at, 21, 6) AS INTEGER)) / 1000000, 'unixepoch') || printf('.%06dZ', (unixepoch(substr(updated_at, 1, 19)) * 1000000 + CAST(substr(updated_at, 21, 6) AS INTEGER)) % 1000000) = updated_at
                THEN (unixepoch(substr(updated_at, 1, 19)) * 1000000 + CAST(substr(updated_at, 21, 6) AS INTEGER)) ELSE updated_at END
    FROM entities;
DROP TABLE entities;
ALTER TABLE entities_compact RENAME TO entities;

CREATE INDEX entities_by_family_created
    ON entities (tenant_number, family_code, created_at, id);
CREATE INDEX entities_by_family_updated
    ON entities (tenant_number, family_code, updated_at, id);

CREATE TABLE event_groups_compact (
    tenant_number    INTEGER NOT NULL,
    first_sequence   INTEGER NOT NULL,
    intention_id     TEXT,
    actor_id         TEXT,
    correlation_id   TEXT,
    -- How many workflow hops led to these events (0: a person's intention).
    depth            INTEGER NOT NULL DEFAULT 0,
    -- Microseconds since 1970 (`compact::StoredTime`).
    occurred_at      INTEGER NOT NULL,
    -- The entity's recorded state (`events::RecordedState`).
    entity_state     TEXT,
    traceparent      TEXT,
    entity_id        TEXT,
    event_id_prefix  TEXT,
    event_count      INTEGER,
    PRIMARY KEY (tenant_number, first_sequence)
) WITHOUT ROWID;

INSERT INTO event_groups_compact (tenant_number, first_sequence, intention_id, actor_id,
                                  correlation_id, depth, occurred_at, entity_state,
                                  traceparent, entity_id, event_id_prefix, event_count)
    SELECT tenant_number, first_sequence,
           CASE WHEN intention_id GLOB '[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]' THEN unhex(replace(intention_id, '-', '')) ELSE intention_id END,
           CASE WHEN actor_id GLOB '[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]' THEN unhex(replace(actor_id, '-', '')) ELSE actor_id END,
           CASE WHEN correlation_id GLOB '[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]' THEN unhex(replace(correlation_id, '-', '')) ELSE correlation_id END,
           depth,
           CASE WHEN occurred_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]Z' AND (unixepoch(substr(occurred_at, 1, 19)) * 1000000 + CAST(substr(occurred_at, 21, 6) AS INTEGER)) >= 0
                     AND strftime('%Y-%m-%dT%H:%M:%S', (unixepoch(substr(occurred_at, 1, 19)) * 1000000 + CAST(substr(occurred_at, 21, 6) AS INTEGER)) / 1000000, 'unixepoch') || printf('.%06dZ', (unixepoch(substr(occurred_at, 1, 19)) * 1000000 + CAST(substr(occurred_at, 21, 6) AS INTEGER)) % 1000000) = occurred_at
                THEN (unixepoch(substr(occurred_at, 1, 19)) * 1000000 + CAST(substr(occurred_at, 21, 6) AS INTEGER)) ELSE occurred_at END,
           entity_state, traceparent,
           CASE WHEN entity_id GLOB '[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]' THEN unhex(replace(entity_id, '-', '')) ELSE entity_id END,
           event_id_prefix, event_count
    FROM event_groups;
DROP VIEW event_log;
DROP TABLE event_groups;
ALTER TABLE event_groups_compact RENAME TO event_groups;

CREATE INDEX event_groups_by_entity ON event_groups (entity_id)
    WHERE entity_id IS NOT NULL;

UPDATE events SET entity_id = CASE WHEN entity_id GLOB '[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]' THEN unhex(replace(entity_id, '-', '')) ELSE entity_id END
    WHERE entity_id GLOB '[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]';
UPDATE search_documents SET entity_id = CASE WHEN entity_id GLOB '[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]' THEN unhex(replace(entity_id, '-', '')) ELSE entity_id END
    WHERE entity_id GLOB '[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]';

CREATE VIEW event_log AS
    SELECT e.position, e.transaction_id,
           COALESCE(e.id, COALESCE(g.event_id_prefix, substr(CASE WHEN typeof(g.intention_id) = 'blob' THEN lower(substr(hex(g.intention_id), 1, 8) || '-' || substr(hex(g.intention_id), 9, 4)
                || '-' || substr(hex(g.intention_id), 13, 4) || '-' || substr(hex(g.intention_id), 17, 4) || '-' || substr(hex(g.intention_id), 21))
                ELSE g.intention_id END, 1, 32))
                          || printf('%04x', e.group_offset)) AS id,
           s.tenant_id, e.sequence, t.name AS event_type,
           CASE WHEN typeof(COALESCE(e.entity_id, g.entity_id)) = 'blob' THEN lower(substr(hex(COALESCE(e.entity_id, g.entity_id)), 1, 8) || '-' || substr(hex(COALESCE(e.entity_id, g.entity_id)), 9, 4)
                || '-' || substr(hex(COALESCE(e.entity_id, g.entity_id)), 13, 4) || '-' || substr(hex(COALESCE(e.entity_id, g.entity_id)), 17, 4) || '-' || substr(hex(COALESCE(e.entity_id, g.entity_id)), 21))
                ELSE COALESCE(e.entity_id, g.entity_id) END AS entity_id,
           CASE WHEN typeof(g.intention_id) = 'blob' THEN lower(substr(hex(g.intention_id), 1, 8) || '-' || substr(hex(g.intention_id), 9, 4)
                || '-' || substr(hex(g.intention_id), 13, 4) || '-' || substr(hex(g.intention_id), 17, 4) || '-' || substr(hex(g.intention_id), 21))
                ELSE g.intention_id END AS intention_id,
           CASE WHEN typeof(g.actor_id) = 'blob' THEN lower(substr(hex(g.actor_id), 1, 8) || '-' || substr(hex(g.actor_id), 9, 4)
                || '-' || substr(hex(g.actor_id), 13, 4) || '-' || substr(hex(g.actor_id), 17, 4) || '-' || substr(hex(g.actor_id), 21))
                ELSE g.actor_id END AS actor_id,
           CASE WHEN typeof(g.correlation_id) = 'blob' THEN lower(substr(hex(g.correlation_id), 1, 8) || '-' || substr(hex(g.correlation_id), 9, 4)
                || '-' || substr(hex(g.correlation_id), 13, 4) || '-' || substr(hex(g.correlation_id), 17, 4) || '-' || substr(hex(g.correlation_id), 21))
                ELSE g.correlation_id END AS correlation_id,
           g.depth,
           CASE
               WHEN substr(e.data, 1, 1) <> '[' THEN e.data
               WHEN t.name = 'entity.field_set'
                   THEN json_object('field', e.data ->> 0, 'value', e.data -> 1)
               ELSE json_object('field', e.data ->> 0, 'old_value', e.data -> 1,
                                'new_value', e.data -> 2)
           END AS data,
           CASE WHEN typeof(g.occurred_at) = 'integer' THEN strftime('%Y-%m-%dT%H:%M:%S', g.occurred_at / 1000000, 'unixepoch') || printf('.%06dZ', g.occurred_at % 1000000)
                ELSE g.occurred_at END AS occurred_at,
           CASE WHEN e.group_offset = 0 THEN g.entity_state END AS entity_state,
           e.tenant_number, g.traceparent, e.group_offset
    FROM events AS e
    JOIN event_groups AS g
      ON g.tenant_number = e.tenant_number AND g.first_sequence = e.sequence - e.group_offset
    JOIN event_sequences AS s ON s.tenant_number = e.tenant_number
    JOIN event_types AS t ON t.type_number = e.type_number;
