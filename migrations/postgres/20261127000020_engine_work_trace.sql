-- Engine work carries the trace it was queued in (issue 28, OpenTelemetry): a job scheduled,
-- or an event published, during an engine call keeps that call's W3C `traceparent`, and the
-- run of the item continues the trace. NULL when tracing is off or nothing was traced.
-- The claim and the storage group statement read and write the column; their signatures
-- change, so they are dropped and made again (bodies as in migrations 12 and 17).

ALTER TABLE engine_work ADD COLUMN traceparent TEXT;

DROP FUNCTION engine_work_claim(TEXT, TEXT, TEXT[], BIGINT);

CREATE FUNCTION engine_work_claim(due_by TEXT, lease_until TEXT, engine_codes TEXT[], claim_limit BIGINT)
RETURNS TABLE (id TEXT, engine_code TEXT, tenant_id TEXT, kind TEXT, payload BYTEA, attempt BIGINT, due_at TEXT,
               traceparent TEXT)
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
                            work.attempt, work.due_at, work.traceparent)
    SELECT claimed.id, claimed.engine_code, claimed.tenant_id, claimed.kind, claimed.payload,
           claimed.attempt, claimed.due_at, claimed.traceparent
    FROM claimed;
END
$$;

DROP FUNCTION engine_storage_write_group(
    TEXT[], TEXT[], TEXT[], BYTEA[], TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], TEXT[],
    BYTEA[], TEXT[], TEXT[], BIGINT[], TEXT[], BIGINT[], TEXT);

CREATE FUNCTION engine_storage_write_group(
    kv_engine_codes TEXT[], kv_tenant_ids TEXT[], kv_keys TEXT[], kv_values BYTEA[],
    gone_engine_codes TEXT[], gone_tenant_ids TEXT[], gone_keys TEXT[],
    work_ids TEXT[], work_engine_codes TEXT[], work_tenant_ids TEXT[], work_kinds TEXT[],
    work_payloads BYTEA[], work_due_ats TEXT[], work_traceparents TEXT[],
    done_ids TEXT[], done_attempts BIGINT[],
    fenced_ids TEXT[], fenced_attempts BIGINT[],
    written_at TEXT)
RETURNS TABLE (sets BIGINT, deletes BIGINT, scheduled BIGINT, completed BIGINT)
LANGUAGE plpgsql VOLATILE
SET enable_hashjoin = off
SET enable_mergejoin = off
SET enable_seqscan = off
SET enable_bitmapscan = off
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    set_count BIGINT;
    delete_count BIGINT;
    scheduled_count BIGINT;
    completed_count BIGINT;
    fenced_count BIGINT;
BEGIN
    WITH
      kv_set AS (
        INSERT INTO engine_kv AS kv (engine_code, tenant_id, key, value)
        SELECT entry.engine_code, entry.tenant_id, entry.key, entry.value
        FROM unnest(kv_engine_codes, kv_tenant_ids, kv_keys, kv_values)
             AS entry (engine_code, tenant_id, key, value)
        ON CONFLICT (engine_code, tenant_id, key)
        DO UPDATE SET value = excluded.value
        RETURNING 1),
      kv_gone AS (
        DELETE FROM engine_kv AS kv
        USING unnest(gone_engine_codes, gone_tenant_ids, gone_keys)
              AS gone (engine_code, tenant_id, key)
        WHERE kv.engine_code = gone.engine_code AND kv.tenant_id = gone.tenant_id
          AND kv.key = gone.key
        RETURNING 1),
      work_new AS (
        INSERT INTO engine_work (id, engine_code, tenant_id, kind, payload, due_at, traceparent,
                                 attempt, status, created_at)
        SELECT item.id, item.engine_code, item.tenant_id, item.kind, item.payload, item.due_at,
               item.traceparent, 0, 'pending', written_at
        FROM unnest(work_ids, work_engine_codes, work_tenant_ids, work_kinds, work_payloads,
                    work_due_ats, work_traceparents)
             AS item (id, engine_code, tenant_id, kind, payload, due_at, traceparent)
        RETURNING 1),
      work_done AS (
        DELETE FROM engine_work AS work
        USING unnest(done_ids, done_attempts) AS done (id, attempt)
        WHERE work.id = done.id AND work.attempt = done.attempt
        RETURNING 1),
      work_fenced AS (
        DELETE FROM engine_work AS work
        USING unnest(fenced_ids, fenced_attempts) AS done (id, attempt)
        WHERE work.id = done.id AND work.attempt = done.attempt
        RETURNING 1)
    SELECT (SELECT count(*) FROM kv_set), (SELECT count(*) FROM kv_gone),
           (SELECT count(*) FROM work_new), (SELECT count(*) FROM work_done),
           (SELECT count(*) FROM work_fenced)
    INTO set_count, delete_count, scheduled_count, completed_count, fenced_count;
    IF fenced_count <> coalesce(cardinality(fenced_ids), 0) THEN
        RAISE EXCEPTION USING ERRCODE = 'TE001', MESSAGE = fenced_count::text;
    END IF;
    RETURN QUERY SELECT set_count, delete_count, scheduled_count,
                        completed_count + fenced_count;
END
$$;
