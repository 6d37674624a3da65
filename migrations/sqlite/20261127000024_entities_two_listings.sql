-- Entities with two listing indexes instead of four, stored in their primary key's b-tree
-- (issue 32, the footprint per entity). Each index entry was led by the tenant's 36-character
-- id: ~0.9 KB per entity with the row, and what sixteen tenants writing at once pay most for
-- (one leaf page per tenant per index per commit, BENCHMARKS.md session 32). A listing of
-- every family is now the merge of one ordered read per family (`store/entities.rs`, `page`),
-- so the tenant-wide `entities_by_created` and `entities_by_updated` go. A rowid table with a
-- text primary key also kept a second copy of every id (its primary key's index) and a rowid
-- in every index entry: WITHOUT ROWID stores the row in the primary key's b-tree, and the
-- indexes name a row by its id, which they already end with.
CREATE TABLE entities_keyed (
    id           TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    family_code  TEXT NOT NULL,
    status       TEXT NOT NULL,
    -- JSON object: field code → value.
    fields       TEXT NOT NULL,
    created_by   TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL
) WITHOUT ROWID;

INSERT INTO entities_keyed (id, tenant_id, family_code, status, fields, created_by, created_at,
                            updated_at)
    SELECT id, tenant_id, family_code, status, fields, created_by, created_at, updated_at
    FROM entities;
DROP TABLE entities;
ALTER TABLE entities_keyed RENAME TO entities;

CREATE INDEX entities_by_family_created ON entities (tenant_id, family_code, created_at, id);
CREATE INDEX entities_by_family_updated ON entities (tenant_id, family_code, updated_at, id);
