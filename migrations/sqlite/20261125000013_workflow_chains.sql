-- Workflow chains: every intention a workflow action executed, with the person's intention
-- that started its chain (the root; workflow hops carry it on). The workflow runner writes
-- these rows in its batch's transaction, with the actions' writes and its checkpoint, so a
-- chain's count of writes survives batches, restarts and hosts, and is never counted twice;
-- TESSERA_WORKFLOW_CHAIN_WRITE_BUDGET bounds it.
CREATE TABLE workflow_chain_writes (
    intention_id       TEXT PRIMARY KEY,
    tenant_id          TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    root_intention_id  TEXT NOT NULL,
    created_at         TEXT NOT NULL
);

CREATE INDEX workflow_chain_writes_by_root
    ON workflow_chain_writes (tenant_id, root_intention_id);
