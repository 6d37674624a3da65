-- An intention's events carry the trace of the request that submitted it (issue 28,
-- OpenTelemetry): the W3C `traceparent` of its request span, once per group of events, so the
-- engines' deliveries of those events (the bus relay) continue that trace. NULL when tracing is
-- off or nothing was traced: nothing is stored then.
ALTER TABLE event_groups ADD COLUMN traceparent TEXT;

DROP VIEW event_log;
CREATE VIEW event_log AS
    SELECT e.position, e.transaction_id, e.id, s.tenant_id, e.sequence, e.event_type,
           e.entity_id, g.intention_id, g.actor_id, g.correlation_id, g.depth, e.data,
           g.occurred_at,
           CASE WHEN e.group_offset = 0 THEN g.entity_state END AS entity_state,
           e.tenant_number, g.traceparent
    FROM events AS e
    JOIN event_groups AS g
      ON g.tenant_number = e.tenant_number AND g.first_sequence = e.sequence - e.group_offset
    JOIN event_sequences AS s ON s.tenant_number = e.tenant_number;
