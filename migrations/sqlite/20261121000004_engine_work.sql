-- Durable work for engines: jobs they schedule (`scheduler.schedule` → `run-job`) and events
-- delivered to subscribers (`events.publish` → `on-event`). A host claims due rows with a
-- lease (`locked_until`); a row whose lease ran out (its host died) is claimed again.

CREATE TABLE engine_work (
    id            TEXT PRIMARY KEY,
    engine_code   TEXT NOT NULL,
    tenant_id     TEXT NOT NULL,
    kind          TEXT NOT NULL CHECK (kind IN ('job', 'event')),
    -- The job's payload, or the event as JSON.
    payload       BLOB NOT NULL,
    due_at        TEXT NOT NULL,
    -- Runs started so far (a run is counted when it is claimed).
    attempt       BIGINT NOT NULL DEFAULT 0,
    status        TEXT NOT NULL CHECK (status IN ('pending', 'running', 'failed')),
    locked_until  TEXT,
    last_error    TEXT,
    created_at    TEXT NOT NULL
);

CREATE INDEX engine_work_due ON engine_work (status, due_at);
CREATE INDEX engine_work_by_tenant ON engine_work (tenant_id);
