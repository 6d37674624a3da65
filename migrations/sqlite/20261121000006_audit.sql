-- The audit trail of authentication events (login, lockout, refresh reuse, logout, MFA, …),
-- written by `auth::audit::record` and read by owners at GET /auth/api/v1/audit.
-- Never holds passwords, codes or tokens. No foreign keys: the trail outlives the accounts it
-- mentions, and a failed login of an unknown account has no tenant or user.

CREATE TABLE auth_audit (
    id              TEXT PRIMARY KEY,
    -- NULL when unknown (e.g. a failed login of an account that does not exist).
    tenant_id       TEXT,
    user_id         TEXT,
    -- A dotted event name, e.g. `login.failed` (see `AuditEvent`).
    event           TEXT NOT NULL,
    -- The normalized e-mail attempted (trimmed, lower-cased); NULL when not e-mail shaped.
    login           TEXT,
    client_ip       TEXT,
    correlation_id  TEXT,
    -- A JSON object of event details (reason, method, session id, …).
    details         TEXT NOT NULL DEFAULT '{}',
    created_at      TEXT NOT NULL
);

CREATE INDEX auth_audit_by_tenant ON auth_audit (tenant_id, created_at, id);
