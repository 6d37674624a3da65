-- The orchestrator's persisted provisioning statuses: one row per tenant provisioning, one per
-- (tenant, engine) outcome, one per (tenant, user, engine) outcome. Tenant ids are not foreign
-- keys: the orchestration endpoints take the ids the authentication service hands them.

CREATE TABLE tenant_provisioning (
    tenant_id        TEXT PRIMARY KEY,
    tenant_short_id  TEXT NOT NULL,
    name             TEXT NOT NULL,
    status           TEXT NOT NULL
        CHECK (status IN ('pending', 'in_progress', 'completed', 'partial_failure', 'failed')),
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL
);

CREATE TABLE tenant_provisioning_engines (
    tenant_id       TEXT NOT NULL REFERENCES tenant_provisioning (tenant_id) ON DELETE CASCADE,
    engine_code     TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('provisioned', 'failed')),
    error           TEXT,
    provisioned_at  TEXT,
    failed_at       TEXT,
    PRIMARY KEY (tenant_id, engine_code)
);

CREATE TABLE user_provisioning_engines (
    tenant_id       TEXT NOT NULL,
    user_id         TEXT NOT NULL,
    engine_code     TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('provisioned', 'failed')),
    error           TEXT,
    provisioned_at  TEXT,
    failed_at       TEXT,
    PRIMARY KEY (tenant_id, user_id, engine_code)
);
