-- The timeline is read from the log (issue 32, the footprint per entity): its items were a copy
-- of every `entity.*` event (id, type, entity, actor, data, time) with three indexes, about a
-- sixth of what an entity cost. The timeline now pages the tenant's `entity.*` events by their
-- per-tenant sequence (the UNIQUE (tenant_id, sequence) index); this index serves the timeline of
-- one entity and the projector's look-up of an entity's `entity.created` event. Entity ids are
-- UUIDs, so the index leaves the tenant out (the queries still filter on it, from the row).
CREATE INDEX events_by_entity ON events (entity_id, sequence)
    WHERE entity_id IS NOT NULL;

DROP TABLE timeline_items;
