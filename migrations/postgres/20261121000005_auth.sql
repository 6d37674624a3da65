-- The authentication service: token signing keys, sessions (one refresh-token family each),
-- refresh tokens stored as hashes, and the failed-login counters of the lockout.

CREATE TABLE signing_keys (
    kid           TEXT PRIMARY KEY,
    algorithm     TEXT NOT NULL,
    -- Base64 of the 32-byte Ed25519 seed.
    private_seed  TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    -- When it stopped signing; it verifies until its last token has expired.
    retired_at    TEXT
);

-- Not a foreign key to users: a session outlives nothing, and revocation is explicit.
CREATE TABLE sessions (
    id              TEXT PRIMARY KEY,
    user_id         TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    expires_at      TEXT NOT NULL,
    revoked_at      TEXT,
    revoked_reason  TEXT
);

CREATE INDEX sessions_by_user ON sessions (user_id, created_at);

CREATE TABLE refresh_tokens (
    -- SHA-256 (hex) of the opaque token; the token itself is never stored.
    token_hash    TEXT PRIMARY KEY,
    session_id    TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    tenant_id     TEXT NOT NULL,
    workspace_id  TEXT,
    issued_at     TEXT NOT NULL,
    expires_at    TEXT NOT NULL,
    -- Set when it was rotated; presenting it again is theft and revokes the session.
    used_at       TEXT
);

CREATE INDEX refresh_tokens_by_session ON refresh_tokens (session_id);

-- Counted per normalized login whether or not an account exists.
CREATE TABLE login_attempts (
    login         TEXT PRIMARY KEY,
    failures      BIGINT NOT NULL,
    locked_until  TEXT,
    updated_at    TEXT NOT NULL
);
