-- Search documents under their tenant's key (issue 32, the footprint per entity). A document
-- and its unique index both carried the tenant's 36-character id, although every tenant with
-- documents has a short number already (`search_tenants.key`, which starts its tokens). Rowids
-- are kept: they are the documents' rows in `search_index`.
CREATE TABLE search_documents_keyed (
    id           INTEGER PRIMARY KEY,
    tenant_key   INTEGER NOT NULL,
    entity_id    TEXT NOT NULL,
    family_code  TEXT NOT NULL,
    -- JSON object: field code → value as last set.
    fields       TEXT NOT NULL,
    UNIQUE (tenant_key, entity_id)
);

INSERT INTO search_documents_keyed (id, tenant_key, entity_id, family_code, fields)
    SELECT d.id, t.key, d.entity_id, d.family_code, d.fields
    FROM search_documents AS d JOIN search_tenants AS t ON t.tenant_id = d.tenant_id;
DROP TABLE search_documents;
ALTER TABLE search_documents_keyed RENAME TO search_documents;
