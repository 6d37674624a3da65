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

ALTER TABLE event_sequences ADD COLUMN tenant_number BIGSERIAL NOT NULL UNIQUE;

CREATE TABLE event_groups (
    tenant_number   BIGINT NOT NULL,
    first_sequence  BIGINT NOT NULL,
    intention_id    TEXT,
    actor_id        TEXT,
    correlation_id  TEXT,
    -- How many workflow hops led to these events (0: a person's intention).
    depth           BIGINT NOT NULL DEFAULT 0,
    occurred_at     TEXT NOT NULL,
    -- The entity after its intention ({"family", "status", "fields", "created_by",
    -- "changed"}; before it for a deletion): what workflow conditions and templates read.
    entity_state    TEXT,
    PRIMARY KEY (tenant_number, first_sequence)
);

INSERT INTO event_groups (tenant_number, first_sequence, intention_id, actor_id,
                          correlation_id, depth, occurred_at, entity_state)
    SELECT s.tenant_number, e.sequence, e.intention_id, e.actor_id, e.correlation_id, e.depth,
           e.occurred_at, e.entity_state
    FROM events AS e JOIN event_sequences AS s ON s.tenant_id = e.tenant_id;

ALTER TABLE events ADD COLUMN tenant_number BIGINT;
ALTER TABLE events ADD COLUMN group_offset BIGINT NOT NULL DEFAULT 0;
UPDATE events AS e SET tenant_number = s.tenant_number
    FROM event_sequences AS s WHERE s.tenant_id = e.tenant_id;
ALTER TABLE events ALTER COLUMN tenant_number SET NOT NULL;
ALTER TABLE events ALTER COLUMN group_offset DROP DEFAULT;
-- Dropping the shared columns drops the (tenant_id, sequence) and id constraints with them.
ALTER TABLE events DROP COLUMN tenant_id, DROP COLUMN intention_id, DROP COLUMN actor_id,
    DROP COLUMN correlation_id, DROP COLUMN depth, DROP COLUMN occurred_at,
    DROP COLUMN entity_state;
ALTER TABLE events DROP CONSTRAINT events_id_key;
ALTER TABLE events ADD CONSTRAINT events_tenant_number_sequence_key
    UNIQUE (tenant_number, sequence);

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
