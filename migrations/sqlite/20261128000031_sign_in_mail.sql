-- Sign-in by mail (CONTRACT §4a): the single-use tokens mailed to users (password resets,
-- magic links), stored only as SHA-256 hashes, and the windows that limit how many sign-in
-- mails go out per login and per client address. Both are pruned as they are written: a
-- token row lives until it expires, a window row until its window ends.

CREATE TABLE sign_in_tokens (
    -- SHA-256 (hex) of the token; the token itself is never stored.
    token_hash  TEXT PRIMARY KEY,
    -- `password_reset` or `magic_link`.
    purpose     TEXT NOT NULL,
    user_id     TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    expires_at  TEXT NOT NULL,
    used_at     TEXT,
    created_at  TEXT NOT NULL
);
CREATE INDEX sign_in_tokens_by_user ON sign_in_tokens (user_id, purpose);
CREATE INDEX sign_in_tokens_by_expiry ON sign_in_tokens (expires_at);

CREATE TABLE sign_in_mail_windows (
    -- `login:<normalized login>` or `address:<client address>`.
    limit_key     TEXT PRIMARY KEY,
    window_start  TEXT NOT NULL,
    sent          BIGINT NOT NULL
);
CREATE INDEX sign_in_mail_windows_by_start ON sign_in_mail_windows (window_start);

-- E-mail one-time codes (`otp`): a user's enrolment (pending until its first code is
-- confirmed), and the current code per purpose (`enrol`, `login`) as a keyed hash (HMAC-SHA-256
-- under a key derived from the service secret: six digits are too few for a plain hash).
CREATE TABLE email_otp (
    user_id     TEXT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    -- NULL while the enrolment is not confirmed.
    enabled_at  TEXT,
    created_at  TEXT NOT NULL
);

CREATE TABLE email_codes (
    user_id     TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    purpose     TEXT NOT NULL,
    code_hash   TEXT NOT NULL,
    expires_at  TEXT NOT NULL,
    used_at     TEXT,
    PRIMARY KEY (user_id, purpose)
);
