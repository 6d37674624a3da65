-- Entities with two listing indexes instead of four (issue 32, the footprint per entity). Each
-- index entry was led by the tenant's 36-character id, and every index is written on every
-- creation and update. A listing of every family is now the merge of one ordered read per
-- family (`store/entities.rs`, `page`), so the tenant-wide indexes go.
DROP INDEX entities_by_created;
DROP INDEX entities_by_updated;
