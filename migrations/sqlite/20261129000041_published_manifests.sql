-- A wasi:http component is published with the manifest that names its code and grants its
-- public paths, outbound hosts and settings (`tessera admin engine publish --manifest`); the
-- same bytes with another manifest are another version. `manifest` is NULL and
-- `manifest_sha256` empty for an engine-world component, which describes itself.
-- SQLite cannot change a table's UNIQUE constraint in place: the table is rebuilt.

CREATE TABLE engine_versions_with_manifests (
    code            TEXT NOT NULL,
    version         INTEGER NOT NULL,
    sha256          TEXT NOT NULL,
    engine_version  TEXT NOT NULL,
    component       BLOB NOT NULL,
    size_bytes      BIGINT NOT NULL,
    published_at    TEXT NOT NULL,
    manifest        TEXT,
    -- Of the manifest's text (hex), or empty: part of what a version is.
    manifest_sha256 TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (code, version),
    UNIQUE (code, sha256, manifest_sha256)
);

INSERT INTO engine_versions_with_manifests
    (code, version, sha256, engine_version, component, size_bytes, published_at)
SELECT code, version, sha256, engine_version, component, size_bytes, published_at
FROM engine_versions;

DROP TABLE engine_versions;

ALTER TABLE engine_versions_with_manifests RENAME TO engine_versions;
