-- Per-tenant usage by UTC day (issue 31): what the host answered each tenant, counted in
-- memory and added here in batches (`tessera_http::usage`, `storage::tenant_usage`).
-- `metric` is `engine_calls` (by engine code) or `limits_hit` (by limit name). Rows older
-- than `TESSERA_USAGE_RETENTION_DAYS` are pruned; a tenant's rows go with it.

CREATE TABLE tenant_usage (
    tenant_id  TEXT NOT NULL,
    day        TEXT NOT NULL,
    metric     TEXT NOT NULL,
    dimension  TEXT NOT NULL,
    amount     BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, day, metric, dimension)
);

CREATE INDEX tenant_usage_by_day ON tenant_usage (day);
