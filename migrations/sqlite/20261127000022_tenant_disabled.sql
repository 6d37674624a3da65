-- A tenant an operator disabled (`tessera admin disable-tenant`, issue 28): its members get no
-- token for it and the tokens issued before are refused (the auth store's membership reads
-- exclude it), until `enable-tenant`. Its data stays as it was.
ALTER TABLE tenants ADD COLUMN disabled_at TEXT;
