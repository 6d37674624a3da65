-- Operators disable and enable users (`tessera admin disable-user` / `enable-user`): a disabled
-- user cannot sign in (as for an unknown login), gets no token, and the tokens issued before
-- are refused (the membership check excludes them); enabling clears the mark. Nothing else of
-- the user changes.
ALTER TABLE users ADD COLUMN disabled_at TEXT;
