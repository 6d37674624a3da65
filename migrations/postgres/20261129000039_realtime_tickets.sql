-- Realtime tickets (CONTRACT §9): a browser cannot set `Authorization` on a WebSocket, so it
-- trades its bearer token for a ticket (`POST /core/api/v1/realtime/tickets`) and connects
-- with `?ticket=`. A ticket is single use and lives 30 s; it is stored here (any host of a
-- cluster may redeem it), hashed, and redeemed by a conditional delete
-- (crates/core/src/realtime/store.rs). UNLOGGED: worth nothing after a crash.

CREATE UNLOGGED TABLE realtime_tickets (
    -- SHA-256 (hex) of the ticket: never the ticket itself.
    ticket_hash      TEXT PRIMARY KEY,
    tenant_id        TEXT NOT NULL,
    user_id          TEXT NOT NULL,
    -- The session of the token the ticket was issued for: its connection ends with it.
    session_id       TEXT NOT NULL,
    workspace_id     TEXT,
    role             TEXT NOT NULL,
    token_type       TEXT NOT NULL,
    -- When the token the ticket was issued for expires (Unix seconds): its connection ends then.
    token_expires_at BIGINT NOT NULL,
    -- RFC 3339: the ticket cannot be redeemed from then on.
    expires_at       TEXT NOT NULL
);

CREATE INDEX realtime_tickets_by_expiry ON realtime_tickets (expires_at);
