-- Engine storage keyed by a scope number (issue 32, the footprint per entity). Every entry
-- carried its engine's code and its tenant's 36-character id, ~45 bytes an entry: activity's
-- item of a creation is five entries. An (engine, tenant) pair is now numbered once in
-- `engine_scopes`, and an entry is (scope, key, value) in `engine_entries`. The view
-- `engine_kv` gives the entries with their engine and tenant as before, for reading.
-- A number is never handed out twice (AUTOINCREMENT; PostgreSQL's identity never reuses one
-- either): an entry left by a scope removed with its tenant can never join another tenant's.
CREATE TABLE engine_scopes (
    scope        INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id    TEXT NOT NULL,
    engine_code  TEXT NOT NULL,
    UNIQUE (tenant_id, engine_code)
);

CREATE TABLE engine_entries (
    scope  INTEGER NOT NULL,
    key    TEXT NOT NULL,
    value  BLOB NOT NULL,
    PRIMARY KEY (scope, key)
) WITHOUT ROWID;

INSERT INTO engine_scopes (tenant_id, engine_code)
    SELECT DISTINCT tenant_id, engine_code FROM engine_kv ORDER BY tenant_id, engine_code;
INSERT INTO engine_entries (scope, key, value)
    SELECT s.scope, kv.key, kv.value FROM engine_kv AS kv
    JOIN engine_scopes AS s ON s.tenant_id = kv.tenant_id AND s.engine_code = kv.engine_code;
DROP TABLE engine_kv;

CREATE VIEW engine_kv AS
    SELECT s.engine_code, s.tenant_id, e.key, e.value
    FROM engine_entries AS e JOIN engine_scopes AS s ON s.scope = e.scope;
