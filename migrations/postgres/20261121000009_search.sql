-- Search: the full-text index of each tenant's entities, a projection of the event log
-- (core/search). One row per live entity; its tokens, made in Rust (core/search/query.rs),
-- in a tsvector (written as a literal: no parser, no dictionary) with a GIN index. Every token
-- starts with the tenant's key, so every term of the index belongs to one tenant.

-- A short, stable number per tenant, in decimal the first characters of its tokens. Never
-- deleted, not even by a rebuild.
CREATE TABLE search_tenants (
    tenant_id  TEXT PRIMARY KEY,
    key        BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE
);

-- The key leads with entity_id on purpose: no index leads with tenant_id alone, so a search
-- never walks a whole tenant through a B-tree instead of using the GIN index.
CREATE TABLE search_documents (
    entity_id    TEXT NOT NULL,
    tenant_id    TEXT NOT NULL,
    family_code  TEXT NOT NULL,
    -- JSON object: field code → value as last set.
    fields       TEXT NOT NULL,
    tokens       TSVECTOR NOT NULL,
    PRIMARY KEY (entity_id, tenant_id)
);

-- No pending list: writes come in batches from the projection worker, and searches never
-- scan unmerged entries.
CREATE INDEX search_documents_tokens ON search_documents USING GIN (tokens)
    WITH (fastupdate = off);
