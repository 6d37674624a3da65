-- The hosts of a cluster (issue 30): every `tessera serve` registers itself under a fresh id
-- when it starts, heartbeats (with the engines it has loaded) while it serves, and marks itself
-- stopped when it shuts down cleanly. A host not stopped whose `expires_at` has passed (its
-- last heartbeat plus its TESSERA_CLUSTER_HOST_TIMEOUT) is reported gone: killed, frozen or
-- cut off. Each host writes its own deadline, so every reader judges alike. Rows of
-- hosts stopped or gone for a day are deleted by the live hosts' heartbeats.

CREATE TABLE cluster_hosts (
    -- A UUID, new at every start.
    id             TEXT PRIMARY KEY,
    -- The address it listens on (`TESSERA_LISTEN`, the real port when 0 was asked).
    listen_address TEXT NOT NULL,
    public_url     TEXT NOT NULL,
    -- The `tessera` version it runs.
    version        TEXT NOT NULL,
    started_at     TEXT NOT NULL,
    heartbeat_at   TEXT NOT NULL,
    -- Gone after this time without another heartbeat.
    expires_at     TEXT NOT NULL,
    stopped_at     TEXT,
    -- The engines loaded at the last heartbeat: a JSON array of {code, version, sha256}.
    engines        TEXT NOT NULL
);
CREATE INDEX cluster_hosts_by_heartbeat ON cluster_hosts (heartbeat_at);
