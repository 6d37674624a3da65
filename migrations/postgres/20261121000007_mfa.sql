-- Multi-factor authentication (TOTP): the sealed secret per user (pending until confirmed),
-- the last accepted time step (a code is never accepted twice), single-use recovery codes
-- stored as hashes, and the short-lived challenges between password and second factor.

CREATE TABLE user_mfa (
    user_id        TEXT PRIMARY KEY,
    -- The TOTP secret sealed with a key derived from the service secret (`v1:` + base64url).
    sealed_secret  TEXT NOT NULL,
    -- NULL while the setup is not confirmed.
    enabled_at     TEXT,
    last_step      BIGINT,
    created_at     TEXT NOT NULL
);

CREATE TABLE mfa_recovery_codes (
    user_id    TEXT NOT NULL,
    code_hash  TEXT NOT NULL,
    used_at    TEXT,
    PRIMARY KEY (user_id, code_hash)
);

CREATE TABLE mfa_challenges (
    -- SHA-256 (hex) of the mfa_token; the token itself is never stored.
    token_hash  TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL,
    login       TEXT NOT NULL,
    expires_at  TEXT NOT NULL,
    used_at     TEXT,
    created_at  TEXT NOT NULL
);
