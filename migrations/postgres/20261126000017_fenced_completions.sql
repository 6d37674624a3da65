-- The fence (issue 32): a unit of work's effects commit only while every engine work item it
-- completes is still held by the attempt that ran it. A host whose lease ran out (another host
-- claimed the item again and runs it) must not commit the same effects a second time, even
-- when its statement reaches the database after the host itself was killed. The group
-- statement takes the completions of its units apart from the bare ones (runs without
-- effects, which may find their item gone) and fails with SQLSTATE TE001, its message the
-- number still held, when a unit's item is missing.
DROP FUNCTION engine_storage_write_group(
    TEXT[], TEXT[], TEXT[], BYTEA[], TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], TEXT[],
    BYTEA[], TEXT[], TEXT[], BIGINT[], TEXT);

CREATE FUNCTION engine_storage_write_group(
    kv_engine_codes TEXT[], kv_tenant_ids TEXT[], kv_keys TEXT[], kv_values BYTEA[],
    gone_engine_codes TEXT[], gone_tenant_ids TEXT[], gone_keys TEXT[],
    work_ids TEXT[], work_engine_codes TEXT[], work_tenant_ids TEXT[], work_kinds TEXT[],
    work_payloads BYTEA[], work_due_ats TEXT[],
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
