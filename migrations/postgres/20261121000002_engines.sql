-- The engine registry and the engines' tenant-scoped key-value storage.

CREATE TABLE engines (
    code                       TEXT PRIMARY KEY,
    name                       TEXT NOT NULL,
    version                    TEXT NOT NULL,
    requires_tenant_provision  BOOLEAN NOT NULL,
    requires_user_provision    BOOLEAN NOT NULL,
    is_active                  BOOLEAN NOT NULL,
    -- SHA-256 of the component file currently loaded.
    component_sha256           TEXT NOT NULL,
    updated_at                 TEXT NOT NULL
);

-- Every row belongs to one engine and one tenant; the host fills both from the call, never
-- from the engine, so an engine cannot name another engine's or another tenant's rows.
CREATE TABLE engine_kv (
    engine_code  TEXT NOT NULL,
    tenant_id    TEXT NOT NULL,
    key          TEXT COLLATE "C" NOT NULL,
    value        BYTEA NOT NULL,
    updated_at   TEXT NOT NULL,
    PRIMARY KEY (engine_code, tenant_id, key)
);
