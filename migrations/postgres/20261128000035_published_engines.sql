-- Engines published to the cluster (issue 30, CONTRACT §8): `tessera admin engine publish`
-- stores a component here as a new version of its engine code, content-addressed by its
-- SHA-256; each code's active version is the desired state every host reconciles with
-- (crates/runtime/src/published.rs). A published active version wins over a file of the same
-- code in a host's plugins dir.

CREATE TABLE engine_versions (
    code           TEXT NOT NULL,
    -- 1, 2, … per code, in publishing order.
    version        BIGINT NOT NULL,
    -- Of the component's bytes (hex); a host verifies it before loading them.
    sha256         TEXT NOT NULL,
    -- The version the component's descriptor declares.
    engine_version TEXT NOT NULL,
    component      BYTEA NOT NULL,
    size_bytes     BIGINT NOT NULL,
    published_at   TEXT NOT NULL,
    PRIMARY KEY (code, version),
    UNIQUE (code, sha256)
);

-- One row per published code: what should run, and what ran before it (for rollback).
CREATE TABLE engine_releases (
    code             TEXT PRIMARY KEY,
    -- NULL: deactivated (hosts unload it, or go back to their plugins dir's file of the code).
    active_version   BIGINT,
    previous_version BIGINT,
    changed_at       TEXT NOT NULL
);
