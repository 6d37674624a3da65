-- Passkeys (WebAuthn, CONTRACT §4a): each user's random WebAuthn user handle (what a
-- discoverable credential names its account by; never the user's id), the registered
-- credentials, and the ceremonies between their start and finish. A ceremony row is found by
-- the SHA-256 of its challenge (or of the passwordless `challenge_id`), is taken by the one
-- statement that deletes it (single use), and holds the relying party's state sealed under a
-- key derived from the service secret. Expired ceremonies are pruned as new ones are written.

CREATE TABLE webauthn_user_handles (
    user_id     TEXT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    -- A random UUID (hyphenated), unique.
    user_handle TEXT NOT NULL UNIQUE
);

CREATE TABLE webauthn_credentials (
    id             TEXT PRIMARY KEY,
    user_id        TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    -- The authenticator's credential id (base64url), unique across users.
    credential_id  TEXT NOT NULL UNIQUE,
    name           TEXT NOT NULL,
    -- The relying party's record of the credential (public key, counter, flags), as JSON.
    passkey        TEXT NOT NULL,
    -- The signature counter last accepted; a login whose counter is not above it fails (a
    -- cloned authenticator), unless the authenticator keeps none (both 0).
    sign_count     BIGINT NOT NULL,
    created_at     TEXT NOT NULL,
    last_used_at   TEXT
);
CREATE INDEX webauthn_credentials_by_user ON webauthn_credentials (user_id, created_at);

CREATE TABLE webauthn_ceremonies (
    -- SHA-256 (hex) of the challenge (registration, second factor) or of the passwordless
    -- ceremony's `challenge_id`.
    key_hash    TEXT PRIMARY KEY,
    -- `register`, `mfa` or `passkey`.
    kind        TEXT NOT NULL,
    -- The user it is bound to; NULL for a passwordless ceremony.
    user_id     TEXT REFERENCES users (id) ON DELETE CASCADE,
    -- For `mfa`: the hash of the login's `mfa_token` it belongs to.
    binding     TEXT,
    -- The relying party's ceremony state, sealed (XChaCha20-Poly1305).
    sealed_state TEXT NOT NULL,
    expires_at  TEXT NOT NULL
);
CREATE INDEX webauthn_ceremonies_by_expiry ON webauthn_ceremonies (expires_at);
