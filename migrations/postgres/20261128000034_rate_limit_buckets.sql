-- Rate-limit buckets shared by the hosts of a cluster (issue 30, TESSERA_RATE_LIMIT_SCOPE =
-- cluster, the default on PostgreSQL): one GCRA cell per bucket key, drawn from by one
-- statement per batch of requests (crates/storage/src/rate_limit_buckets.rs), so a limit holds
-- for the cluster whichever host a request reaches. The SQLite set has the table for the
-- schemas' parity; a host on SQLite keeps its buckets in memory.
--
-- On PostgreSQL the table is UNLOGGED: its rows are written on most requests and worth nothing
-- after a crash (buckets start full again), so they skip the write-ahead log.

CREATE UNLOGGED TABLE rate_limit_buckets (
    -- The class, what is counted and by what: 'auth:ip:192.0.2.1', 'read:token:<sha-256 hex>',
    -- 'write:ceiling:2001:db8::' (never a token itself).
    key         TEXT PRIMARY KEY,
    -- The theoretical arrival time (microseconds since the epoch, on the database's clock):
    -- the bucket is full again at it, and a request fits while it is within the burst window.
    tat_us      BIGINT NOT NULL,
    -- How many requests the last draw was granted.
    granted     INTEGER NOT NULL,
    -- One request's share of the window (60 s / limit), and the burst (the limit).
    interval_us BIGINT NOT NULL,
    burst       INTEGER NOT NULL
);
