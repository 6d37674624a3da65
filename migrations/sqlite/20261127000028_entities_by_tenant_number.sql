-- Entities name their tenant by its number in the log (issue 32, the footprint per entity).
-- Each entity row and each entry of its two listing indexes carried the tenant's 36-character
-- id; they now carry the tenant's `event_sequences.tenant_number` (one or two bytes), the
-- number its events already use. Every query of `entities` finds the number from the id
-- first (`store/entities.rs`). A tenant with entities but no event yet gets its number here
-- (and from the intention writer before its first entity is written).
--
-- Deleting the tenant's row no longer cascades to its entities (the number is not a foreign
-- key): erasing a tenant deletes them with its log (`store/erasure.rs`), by its number,
-- before its number is released. SQLite cannot drop a column from a table without rowids:
-- `entities` is rebuilt.

INSERT INTO event_sequences (tenant_id, last_sequence)
    SELECT DISTINCT e.tenant_id, 0 FROM entities AS e
    WHERE NOT EXISTS (SELECT 1 FROM event_sequences AS s WHERE s.tenant_id = e.tenant_id)
    ORDER BY e.tenant_id;

CREATE TABLE entities_numbered (
    id             TEXT PRIMARY KEY,
    -- `event_sequences.tenant_number`.
    tenant_number  INTEGER NOT NULL,
    family_code    TEXT NOT NULL,
    status         TEXT NOT NULL,
    -- JSON object: field code → value.
    fields         TEXT NOT NULL,
    created_by     TEXT NOT NULL,
    created_at     TEXT NOT NULL,
    updated_at     TEXT NOT NULL
) WITHOUT ROWID;

INSERT INTO entities_numbered (id, tenant_number, family_code, status, fields, created_by,
                               created_at, updated_at)
    SELECT e.id, s.tenant_number, e.family_code, e.status, e.fields, e.created_by,
           e.created_at, e.updated_at
    FROM entities AS e JOIN event_sequences AS s ON s.tenant_id = e.tenant_id;
DROP TABLE entities;
ALTER TABLE entities_numbered RENAME TO entities;

CREATE INDEX entities_by_family_created
    ON entities (tenant_number, family_code, created_at, id);
CREATE INDEX entities_by_family_updated
    ON entities (tenant_number, family_code, updated_at, id);
