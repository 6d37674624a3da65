-- The search index without positions (issue 32, the footprint per entity). FTS5 stored, for
-- every token of a document and for each of its three prefix indexes, the token's positions
-- and column; a search needs neither: its terms are single tokens (never phrases of several),
-- and the family filter is a token of its own kind (`g`), which no word token can equal, so
-- it needs no column of its own. With `detail = none` an index entry is the document's rowid
-- alone; the index went from about 306 to 113 bytes per five-field contact. What ranking
-- loses: FTS5 cannot tell a contentless `detail = none` table's rank function how often a
-- term occurs in a row, so on SQLite every term counts once per document, and shorter
-- documents rank first (`search_rank`, tessera-storage; ARCHITECTURE.md, "Search").
--
-- The dictionary `search_terms` now lists word tokens only, every one of them (short words
-- too): a `field:word` term is expanded through the words into their field tokens, so field
-- tokens, one per word of every document, are no longer listed.
--
-- The index is emptied and the search projection replays the log into it, as
-- `tessera admin rebuild-projections` does (the dictionary must list every indexed word).
DROP TABLE search_index;

CREATE VIRTUAL TABLE search_index USING fts5(
    tokens,
    content = '',
    contentless_delete = 1,
    tokenize = 'ascii',
    prefix = '10 11 12',
    detail = none
);

DELETE FROM search_terms;
DELETE FROM search_documents;
UPDATE projection_checkpoints SET transaction_id = 0, position = 0 WHERE projection = 'search';
