-- Claims of engine work read only what they claim: due pending rows in due order from an index
-- holding pending rows only, rows whose lease ran out from one ordered by the lease's end
-- (holding running rows only). The old `(status, due_at)` index made the lease branch of
-- every claim read all running rows. (PostgreSQL's twin migration also pins the claim's plan.)

DROP INDEX engine_work_due;
CREATE INDEX engine_work_pending ON engine_work (due_at) WHERE status = 'pending';
CREATE INDEX engine_work_leases ON engine_work (locked_until) WHERE status = 'running';
