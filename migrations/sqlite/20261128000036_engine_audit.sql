-- Engines' audited operations in the audit trail (issue 31): an operation an engine's API
-- description marks with `x-tessera-audit` is recorded by the host, in the unit of work of the
-- call that answered it with a success. `engine_code` says which engine's operation an entry
-- records; NULL for the host's own events (sign-ins, MFA, members, …).

ALTER TABLE auth_audit ADD COLUMN engine_code TEXT;
