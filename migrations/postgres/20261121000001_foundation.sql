-- Foundation: tenants, users, memberships, workspaces and entity families.
-- Identifiers are UUID strings and timestamps fixed-width RFC 3339 UTC text
-- ("2026-11-21T17:19:00.000000Z"), so one query text serves SQLite and PostgreSQL and
-- lexical order is time order.

CREATE TABLE tenants (
    id          TEXT PRIMARY KEY,
    slug        TEXT NOT NULL UNIQUE,
    name        TEXT NOT NULL,
    created_at  TEXT NOT NULL
);

CREATE TABLE users (
    id             TEXT PRIMARY KEY,
    email          TEXT NOT NULL UNIQUE,
    password_hash  TEXT NOT NULL,
    first_name     TEXT NOT NULL DEFAULT '',
    last_name      TEXT NOT NULL DEFAULT '',
    user_type      TEXT NOT NULL CHECK (user_type IN ('user', 'guest', 'agent')),
    created_at     TEXT NOT NULL,
    updated_at     TEXT NOT NULL
);

CREATE TABLE workspaces (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name        TEXT NOT NULL,
    is_default  BOOLEAN NOT NULL DEFAULT FALSE,
    created_at  TEXT NOT NULL,
    UNIQUE (tenant_id, name)
);

CREATE TABLE memberships (
    user_id     TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    tenant_id   TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    role        TEXT NOT NULL CHECK (role IN ('owner', 'editor', 'viewer')),
    created_at  TEXT NOT NULL,
    PRIMARY KEY (user_id, tenant_id)
);

CREATE INDEX memberships_by_tenant ON memberships (tenant_id);

CREATE TABLE families (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    code        TEXT NOT NULL,
    label       TEXT NOT NULL,
    -- JSON array of status codes; the first one is the default status of new entities.
    statuses    TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    UNIQUE (tenant_id, code)
);
