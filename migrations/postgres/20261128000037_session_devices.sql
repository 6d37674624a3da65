-- Where a session was opened from (issue 31: a user's sessions listed and ended one by one):
-- the client's address and its User-Agent (printable, at most 256 characters), shown to that
-- user only. NULL for sessions opened before this migration.

ALTER TABLE sessions ADD COLUMN client_ip TEXT;
ALTER TABLE sessions ADD COLUMN user_agent TEXT;
