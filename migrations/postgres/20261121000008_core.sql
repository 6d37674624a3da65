-- Core: entities (the write model), the append-only event log with its per-tenant sequence,
-- projection checkpoints, and the read models the projector fills from the log (timeline,
-- inbox, per-tenant statistics). The search index has its own migration.

CREATE TABLE entities (
    id           TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    family_code  TEXT NOT NULL,
    status       TEXT NOT NULL,
    -- JSON object: field code → value.
    fields       TEXT NOT NULL,
    created_by   TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL
);

CREATE INDEX entities_by_created ON entities (tenant_id, created_at, id);
CREATE INDEX entities_by_updated ON entities (tenant_id, updated_at, id);
CREATE INDEX entities_by_family_created ON entities (tenant_id, family_code, created_at, id);
CREATE INDEX entities_by_family_updated ON entities (tenant_id, family_code, updated_at, id);

-- The event log. Rows are only ever inserted. Projections read it in (transaction_id,
-- position) order and only below the oldest transaction still in flight, because positions
-- (sequence values) are taken before commit and so become visible out of order.
CREATE TABLE events (
    position        BIGSERIAL PRIMARY KEY,
    -- pg_current_xact_id() of the appending transaction: see projections/worker.rs.
    transaction_id  BIGINT NOT NULL DEFAULT (pg_current_xact_id()::text::bigint),
    id              TEXT NOT NULL UNIQUE,
    tenant_id       TEXT NOT NULL,
    -- 1, 2, 3… per tenant, without gaps.
    sequence        BIGINT NOT NULL,
    event_type      TEXT NOT NULL,
    entity_id       TEXT,
    intention_id    TEXT,
    actor_id        TEXT,
    correlation_id  TEXT,
    -- How many workflow hops led to this event (0: a person's intention).
    depth           BIGINT NOT NULL DEFAULT 0,
    -- JSON object: the event's fields beyond type, entity_id and timestamp.
    data            TEXT NOT NULL,
    occurred_at     TEXT NOT NULL,
    -- The entity after its intention ({"family", "status", "fields", "created_by",
    -- "changed"}; before it for a deletion), on the first event of each intention: what
    -- workflow conditions and templates read, exactly as the intention left it.
    entity_state    TEXT,
    UNIQUE (tenant_id, sequence)
);

CREATE INDEX events_in_commit_order ON events (transaction_id, position);

CREATE TABLE event_sequences (
    tenant_id      TEXT PRIMARY KEY,
    last_sequence  BIGINT NOT NULL
);

-- How far each projection has applied the log; updated in the same transaction as the
-- projection's own writes.
CREATE TABLE projection_checkpoints (
    projection      TEXT PRIMARY KEY,
    transaction_id  BIGINT NOT NULL DEFAULT 0,
    position        BIGINT NOT NULL DEFAULT 0,
    -- The furthest event ever applied: a rebuild replays up to here without counting the
    -- events again in projection_stats.
    counted_transaction_id  BIGINT NOT NULL DEFAULT 0,
    counted_position        BIGINT NOT NULL DEFAULT 0,
    updated_at      TEXT NOT NULL
);

INSERT INTO projection_checkpoints (projection, updated_at) VALUES
    ('projector', ''), ('search', ''), ('workflow', '');

-- One item per domain event. The position is assigned by the projector (one writer at a
-- time), so a newest-first cursor walk never misses an item that existed when it started.
CREATE TABLE timeline_items (
    position      BIGSERIAL PRIMARY KEY,
    id            TEXT NOT NULL UNIQUE,
    tenant_id     TEXT NOT NULL,
    entity_id     TEXT,
    item_type     TEXT NOT NULL,
    actor_id      TEXT,
    data          TEXT NOT NULL,
    occurred_at   TEXT NOT NULL,
    projected_at  TEXT NOT NULL
);

CREATE INDEX timeline_by_tenant ON timeline_items (tenant_id, position);
CREATE INDEX timeline_by_entity ON timeline_items (tenant_id, entity_id, position);

CREATE TABLE inbox_items (
    position         BIGSERIAL PRIMARY KEY,
    -- The id of the event that produced the item, so a rebuild gives the same ids.
    id               TEXT NOT NULL UNIQUE,
    tenant_id        TEXT NOT NULL,
    recipient_id     TEXT NOT NULL,
    item_type        TEXT NOT NULL,
    title            TEXT NOT NULL,
    entity_id        TEXT,
    created_at       TEXT NOT NULL,
    read_at          TEXT
);

CREATE INDEX inbox_by_recipient ON inbox_items (tenant_id, recipient_id, position);

-- Per projection and tenant: events applied and the summed delay from append to apply.
CREATE TABLE projection_stats (
    projection        TEXT NOT NULL,
    tenant_id         TEXT NOT NULL,
    events_processed  BIGINT NOT NULL DEFAULT 0,
    latency_ms_total  DOUBLE PRECISION NOT NULL DEFAULT 0,
    PRIMARY KEY (projection, tenant_id)
);
