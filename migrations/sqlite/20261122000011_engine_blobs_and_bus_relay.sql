-- Engine blobs (the `blobs` import): binary content too large for engine_kv values, scoped
-- like engine_kv to (engine, tenant) by the host, with each scope's running total so a quota
-- check is one row read (and, on PostgreSQL, one row lock that serialises concurrent puts).

CREATE TABLE engine_blobs (
    engine_code  TEXT NOT NULL,
    tenant_id    TEXT NOT NULL,
    key          TEXT NOT NULL,
    content      BLOB NOT NULL,
    size_bytes   BIGINT NOT NULL,
    updated_at   TEXT NOT NULL,
    PRIMARY KEY (engine_code, tenant_id, key)
);

CREATE TABLE engine_blob_usage (
    engine_code  TEXT NOT NULL,
    tenant_id    TEXT NOT NULL,
    bytes        BIGINT NOT NULL,
    PRIMARY KEY (engine_code, tenant_id)
);

-- The bus relay (core/projections/bus_relay.rs) publishes the core's events to the engines'
-- bus from here on: a new installation starts at the beginning of its (empty) log, an upgraded
-- one at its end (the events before the upgrade are not replayed to engines).
INSERT INTO projection_checkpoints (projection, transaction_id, position, counted_transaction_id, counted_position, updated_at)
SELECT 'bus', COALESCE(MAX(transaction_id), 0), COALESCE(MAX(position), 0), COALESCE(MAX(transaction_id), 0), COALESCE(MAX(position), 0), ''
FROM events;
