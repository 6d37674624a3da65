-- Engine storage without its second copy of every key (issue 32, the footprint per entity).
-- A rowid table with a composite primary key stores each key twice: in the table and in the
-- primary key's index. WITHOUT ROWID stores the row in the primary key's B-tree itself, so a
-- key is stored once. `updated_at` was written on every write and read by nothing.
CREATE TABLE engine_kv_compact (
    engine_code  TEXT NOT NULL,
    tenant_id    TEXT NOT NULL,
    key          TEXT NOT NULL,
    value        BLOB NOT NULL,
    PRIMARY KEY (engine_code, tenant_id, key)
) WITHOUT ROWID;

INSERT INTO engine_kv_compact (engine_code, tenant_id, key, value)
    SELECT engine_code, tenant_id, key, value FROM engine_kv;
DROP TABLE engine_kv;
ALTER TABLE engine_kv_compact RENAME TO engine_kv;
