-- What engines publish to their realtime topics (world 0.3, CONTRACT §9), written in the
-- transaction of the publishing call's unit of work, so an event exists if and only if the
-- call committed; read by every host's realtime hub in (transaction_id, position) order below
-- the oldest transaction in flight, as the event log is (crates/runtime/src/store/
-- realtime_events.rs). Kept for resuming: 15 minutes, or the last 10,000 of a topic.
CREATE TABLE realtime_events (
    position        BIGSERIAL PRIMARY KEY,
    transaction_id  BIGINT NOT NULL DEFAULT (pg_current_xact_id()::text::bigint),
    tenant_id       TEXT NOT NULL,
    engine_code     TEXT NOT NULL,
    -- The full topic name, `<engine_code>.<name>`.
    topic           TEXT NOT NULL,
    -- Only this user's subscriptions hear it; NULL: every subscriber of the topic.
    user_id         TEXT,
    -- `event`, or `end` (the user's subscriptions to the topic end).
    kind            TEXT NOT NULL,
    event_type      TEXT NOT NULL,
    -- JSON object.
    data            TEXT NOT NULL,
    -- RFC 3339, UTC, milliseconds.
    occurred_at     TEXT NOT NULL
);

CREATE INDEX realtime_events_in_commit_order ON realtime_events (transaction_id, position);
CREATE INDEX realtime_events_by_topic ON realtime_events (tenant_id, topic, transaction_id, position);

-- Per topic, the last position the retention deleted: a cursor before it is answered with a
-- `reset` (refetch), never with a gap.
CREATE TABLE realtime_pruned (
    tenant_id       TEXT NOT NULL,
    topic           TEXT NOT NULL,
    transaction_id  BIGINT NOT NULL,
    position        BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, topic)
);
