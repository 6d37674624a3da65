-- Claims of engine work read only what they claim, whatever the table's statistics say.
--
-- Due pending rows are read in due order from an index that holds pending rows only, and rows
-- whose lease ran out from one ordered by the lease's end (holding running rows only), so the
-- index entries a claim walks are those it may take: not the versions left behind by rows
-- already claimed, run and deleted (which, until a vacuum removes them, the old
-- `(status, due_at)` index made every claim step over).

DROP INDEX engine_work_due;
CREATE INDEX engine_work_pending ON engine_work (due_at) WHERE status = 'pending';
CREATE INDEX engine_work_leases ON engine_work (locked_until) WHERE status = 'running';

-- The claim itself, as a function so that its plan does not depend on statistics (and, in
-- PL/pgSQL, is planned once per connection). A work
-- queue's table is never what its last ANALYZE saw (empty then, 100,000 rows a minute later;
-- never analyzed where autovacuum is off), and with estimates of a few rows the planner reads
-- every due row through a bitmap scan and sorts them, once per claim: with a backlog, each
-- claim then costs O(backlog). Without bitmap and sequential scans, the only plan left is the
-- ordered scan of each partial index that stops after `claim_limit` rows; and that one plan is
-- made once per connection (a custom plan per call, which the limit's value would otherwise
-- make the plan cache choose, costs more than the claim).
CREATE FUNCTION engine_work_claim(due_by TEXT, lease_until TEXT, engine_codes TEXT[], claim_limit BIGINT)
RETURNS TABLE (id TEXT, engine_code TEXT, tenant_id TEXT, kind TEXT, payload BYTEA, attempt BIGINT, due_at TEXT)
LANGUAGE plpgsql VOLATILE
SET enable_bitmapscan = off
SET enable_seqscan = off
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    -- Every column is qualified: the names of the result columns are variables here.
    RETURN QUERY
    WITH
      pending AS (SELECT work.id, work.due_at FROM engine_work AS work
                  WHERE work.status = 'pending' AND work.due_at <= due_by
                    AND work.engine_code = ANY (engine_codes)
                  ORDER BY work.due_at LIMIT claim_limit FOR UPDATE SKIP LOCKED),
      expired AS (SELECT work.id, work.due_at FROM engine_work AS work
                  WHERE work.status = 'running' AND work.locked_until <= due_by
                    AND work.engine_code = ANY (engine_codes)
                  ORDER BY work.locked_until LIMIT claim_limit FOR UPDATE SKIP LOCKED),
      chosen AS (SELECT due.id FROM (SELECT pending.id, pending.due_at FROM pending
                                     UNION ALL SELECT expired.id, expired.due_at FROM expired) AS due
                 ORDER BY due.due_at LIMIT claim_limit),
      claimed AS (UPDATE engine_work AS work
                  SET status = 'running', locked_until = lease_until, attempt = work.attempt + 1
                  WHERE work.id IN (SELECT chosen.id FROM chosen)
                  RETURNING work.id, work.engine_code, work.tenant_id, work.kind, work.payload,
                            work.attempt, work.due_at)
    SELECT claimed.id, claimed.engine_code, claimed.tenant_id, claimed.kind, claimed.payload,
           claimed.attempt, claimed.due_at
    FROM claimed;
END
$$;

-- A group of engines' storage writes (`storage.write-batch` calls and completions of engine
-- work, runtime/batch_writer.rs) as one statement: one round trip and one commit for the whole
-- group instead of a transaction of five. The rows come as arrays, so the statement has one
-- shape and one plan; the plan looks every row up by its primary key (never a hash join over
-- a table whose statistics may be missing). `kv_*` are the net sets (in key order, so
-- concurrent groups lock rows in the same order) and deletes of engine_kv, each key once;
-- `work_*` the new items of engine_work; `done_*` the runs (id, attempt) whose items are
-- deleted. Returns how many rows each part touched.
CREATE FUNCTION engine_storage_write_group(
    kv_engine_codes TEXT[], kv_tenant_ids TEXT[], kv_keys TEXT[], kv_values BYTEA[],
    gone_engine_codes TEXT[], gone_tenant_ids TEXT[], gone_keys TEXT[],
    work_ids TEXT[], work_engine_codes TEXT[], work_tenant_ids TEXT[], work_kinds TEXT[],
    work_payloads BYTEA[], work_due_ats TEXT[],
    done_ids TEXT[], done_attempts BIGINT[],
    written_at TEXT)
RETURNS TABLE (sets BIGINT, deletes BIGINT, scheduled BIGINT, completed BIGINT)
LANGUAGE plpgsql VOLATILE
SET enable_hashjoin = off
SET enable_mergejoin = off
SET enable_seqscan = off
SET enable_bitmapscan = off
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    RETURN QUERY
    WITH
      kv_set AS (
        INSERT INTO engine_kv AS kv (engine_code, tenant_id, key, value, updated_at)
        SELECT entry.engine_code, entry.tenant_id, entry.key, entry.value, written_at
        FROM unnest(kv_engine_codes, kv_tenant_ids, kv_keys, kv_values)
             AS entry (engine_code, tenant_id, key, value)
        ON CONFLICT (engine_code, tenant_id, key)
        DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
        RETURNING 1),
      kv_gone AS (
        DELETE FROM engine_kv AS kv
        USING unnest(gone_engine_codes, gone_tenant_ids, gone_keys)
              AS gone (engine_code, tenant_id, key)
        WHERE kv.engine_code = gone.engine_code AND kv.tenant_id = gone.tenant_id
          AND kv.key = gone.key
        RETURNING 1),
      work_new AS (
        INSERT INTO engine_work (id, engine_code, tenant_id, kind, payload, due_at, attempt,
                                 status, created_at)
        SELECT item.id, item.engine_code, item.tenant_id, item.kind, item.payload, item.due_at,
               0, 'pending', written_at
        FROM unnest(work_ids, work_engine_codes, work_tenant_ids, work_kinds, work_payloads,
                    work_due_ats) AS item (id, engine_code, tenant_id, kind, payload, due_at)
        RETURNING 1),
      work_done AS (
        DELETE FROM engine_work AS work
        USING unnest(done_ids, done_attempts) AS done (id, attempt)
        WHERE work.id = done.id AND work.attempt = done.attempt
        RETURNING 1)
    SELECT (SELECT count(*) FROM kv_set), (SELECT count(*) FROM kv_gone),
           (SELECT count(*) FROM work_new), (SELECT count(*) FROM work_done);
END
$$;
