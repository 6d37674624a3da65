-- A wasi:http component is published with the manifest that names its code and grants its
-- public paths, outbound hosts and settings (`tessera admin engine publish --manifest`); the
-- same bytes with another manifest are another version. `manifest` is NULL and
-- `manifest_sha256` empty for an engine-world component, which describes itself.

ALTER TABLE engine_versions ADD COLUMN manifest TEXT;
-- Of the manifest's text (hex), or empty: part of what a version is.
ALTER TABLE engine_versions ADD COLUMN manifest_sha256 TEXT NOT NULL DEFAULT '';
ALTER TABLE engine_versions DROP CONSTRAINT engine_versions_code_sha256_key;
ALTER TABLE engine_versions ADD CONSTRAINT engine_versions_content
    UNIQUE (code, sha256, manifest_sha256);
