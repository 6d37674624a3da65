-- Search: the full-text index of each tenant's entities, a projection of the event log
-- (core/search). One row per live entity in search_documents, and its tokens in the FTS5
-- table search_index under the same rowid. Tokens are made in Rust (core/search/query.rs)
-- and all start with the tenant's key, so every term of the index belongs to one tenant.

-- A short, stable number per tenant, the first 8 characters (zero-padded) of its tokens.
-- Never deleted, not even by a rebuild.
CREATE TABLE search_tenants (
    key        INTEGER PRIMARY KEY,
    tenant_id  TEXT NOT NULL UNIQUE
);

CREATE TABLE search_documents (
    id           INTEGER PRIMARY KEY,
    tenant_id    TEXT NOT NULL,
    entity_id    TEXT NOT NULL,
    family_code  TEXT NOT NULL,
    -- JSON object: field code → value as last set.
    fields       TEXT NOT NULL,
    UNIQUE (tenant_id, entity_id)
);

-- rowid = search_documents.id. `tokens`: the document's word and field tokens; `family`: its
-- family token, for the family filter only (weight 0 in the rank below). The `ascii`
-- tokenizer only splits on the spaces between the ready-made tokens; the prefix indexes cover
-- one to three characters of a word after the 8-digit tenant key and the kind letter.
CREATE VIRTUAL TABLE search_index USING fts5(
    tokens,
    family,
    content = '',
    contentless_delete = 1,
    tokenize = 'ascii',
    prefix = '10 11 12'
);

INSERT INTO search_index (search_index, rank) VALUES ('rank', 'bm25(1.0, 0.0)');
