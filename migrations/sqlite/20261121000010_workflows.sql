-- Workflows: each tenant's automations, and the record of their runs. Runs have no foreign
-- key to their workflow: a deleted workflow's history stays.

CREATE TABLE workflows (
    id             TEXT PRIMARY KEY,
    tenant_id      TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name           TEXT NOT NULL,
    description    TEXT,
    trigger_event  TEXT NOT NULL,
    -- Only entities of this family trigger it (NULL: every family).
    family_code    TEXT,
    -- JSON arrays, in the API's shapes ({field, operator, value} / {type, config}).
    conditions     TEXT NOT NULL,
    actions        TEXT NOT NULL,
    is_active      BOOLEAN NOT NULL DEFAULT FALSE,
    created_by     TEXT NOT NULL,
    created_at     TEXT NOT NULL,
    updated_at     TEXT NOT NULL
);

CREATE INDEX workflows_newest_first ON workflows (tenant_id, created_at, id);
CREATE INDEX workflows_active_by_trigger ON workflows (tenant_id, trigger_event)
    WHERE is_active;

CREATE TABLE workflow_runs (
    id                TEXT PRIMARY KEY,
    tenant_id         TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    workflow_id       TEXT NOT NULL,
    trigger_event_id  TEXT NOT NULL,
    -- completed | failed
    status            TEXT NOT NULL,
    error             TEXT,
    actions_executed  INTEGER NOT NULL,
    -- The trigger event's depth: the run's own writes are one deeper.
    depth             INTEGER NOT NULL,
    started_at        TEXT NOT NULL,
    completed_at      TEXT NOT NULL,
    -- A trigger runs a workflow at most once, whatever restarts happen.
    UNIQUE (workflow_id, trigger_event_id)
);

CREATE INDEX workflow_runs_newest_first ON workflow_runs (tenant_id, workflow_id, started_at, id);
CREATE INDEX workflow_runs_by_status ON workflow_runs (tenant_id, status);
