-- Entities name their tenant by its number in the log (issue 32, the footprint per entity).
-- Each entity row and each entry of its two listing indexes carried the tenant's 36-character
-- id; they now carry the tenant's `event_sequences.tenant_number`, the number its events
-- already use. Every query of `entities` finds the number from the id first
-- (`store/entities.rs`). A tenant with entities but no event yet gets its number here (and
-- from the intention writer before its first entity is written).
--
-- Deleting the tenant's row no longer cascades to its entities (the number is not a foreign
-- key): erasing a tenant deletes them with its log (`store/erasure.rs`), by its number. The
-- dropped `tenant_id` column keeps its space in existing rows until `VACUUM FULL entities`.

INSERT INTO event_sequences (tenant_id, last_sequence)
    SELECT DISTINCT e.tenant_id, 0 FROM entities AS e
    WHERE NOT EXISTS (SELECT 1 FROM event_sequences AS s WHERE s.tenant_id = e.tenant_id)
    ORDER BY e.tenant_id;

ALTER TABLE entities ADD COLUMN tenant_number BIGINT;
UPDATE entities AS e SET tenant_number = s.tenant_number
    FROM event_sequences AS s WHERE s.tenant_id = e.tenant_id;
ALTER TABLE entities ALTER COLUMN tenant_number SET NOT NULL;

DROP INDEX entities_by_family_created;
DROP INDEX entities_by_family_updated;
ALTER TABLE entities DROP COLUMN tenant_id;

CREATE INDEX entities_by_family_created
    ON entities (tenant_number, family_code, created_at, id);
CREATE INDEX entities_by_family_updated
    ON entities (tenant_number, family_code, updated_at, id);
