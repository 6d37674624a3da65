-- The search index's word dictionary (core/search/sqlite.rs): every token longer than the
-- prefix indexes of search_index cover (12 characters), so a query expands a long prefix into
-- the words it begins instead of making FTS5 merge the prefix's whole lists. Words are added
-- as documents are indexed and removed when the last document holding them is deleted or
-- changed.
CREATE TABLE search_terms (
    term  TEXT PRIMARY KEY
) WITHOUT ROWID;

-- The dictionary must list every word of every indexed document: the index is emptied and the
-- search projection replays the log into it (as `tessera admin rebuild-projections` does).
INSERT INTO search_index (search_index) VALUES ('delete-all');
DELETE FROM search_documents;
UPDATE projection_checkpoints SET transaction_id = 0, position = 0 WHERE projection = 'search';
