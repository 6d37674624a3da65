//! SQL for tenants, users, memberships and workspaces. Inserts that can hit a unique
//! constraint return `Ok(Err(Conflict))` so callers name the conflict precisely.

use anyhow::Context as _;

use super::Role;
use tessera_storage::{Database, Tx, is_unique_violation};
use tessera_storage::{on_pool, on_tx};

/// A unique constraint refused the insert.
#[derive(Debug)]
pub struct Conflict;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Tenant {
    pub id: String,
    pub slug: String,
    pub name: String,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct User {
    pub id: String,
    pub email: String,
    pub first_name: String,
    pub last_name: String,
    pub user_type: String,
}

fn conflict_or_error(
    result: Result<(), sqlx::Error>,
    what: &str,
) -> anyhow::Result<Result<(), Conflict>> {
    match result {
        Ok(()) => Ok(Ok(())),
        Err(error) if is_unique_violation(&error) => Ok(Err(Conflict)),
        Err(error) => Err(error).context(format!("inserting {what}")),
    }
}

pub async fn insert_tenant(
    tx: &mut Tx,
    id: &str,
    slug: &str,
    name: &str,
    now: &str,
) -> anyhow::Result<Result<(), Conflict>> {
    let result = on_tx!(tx, conn => sqlx::query(
        "INSERT INTO tenants (id, slug, name, created_at) VALUES ($1, $2, $3, $4)",
    )
    .bind(id)
    .bind(slug)
    .bind(name)
    .bind(now)
    .execute(&mut **conn)
    .await
    .map(drop));
    conflict_or_error(result, "a tenant")
}

pub async fn insert_workspace(
    tx: &mut Tx,
    id: &str,
    tenant_id: &str,
    name: &str,
    is_default: bool,
    now: &str,
) -> anyhow::Result<Result<(), Conflict>> {
    let result = on_tx!(tx, conn => sqlx::query(
        "INSERT INTO workspaces (id, tenant_id, name, is_default, created_at)
         VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(id)
    .bind(tenant_id)
    .bind(name)
    .bind(is_default)
    .bind(now)
    .execute(&mut **conn)
    .await
    .map(drop));
    conflict_or_error(result, "a workspace")
}

pub async fn insert_user(
    tx: &mut Tx,
    user: &User,
    password_hash: &str,
    now: &str,
) -> anyhow::Result<Result<(), Conflict>> {
    let result = on_tx!(tx, conn => sqlx::query(
        "INSERT INTO users (id, email, password_hash, first_name, last_name, user_type, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $7)",
    )
    .bind(&user.id)
    .bind(&user.email)
    .bind(password_hash)
    .bind(&user.first_name)
    .bind(&user.last_name)
    .bind(&user.user_type)
    .bind(now)
    .execute(&mut **conn)
    .await
    .map(drop));
    conflict_or_error(result, "a user")
}

pub async fn insert_membership(
    tx: &mut Tx,
    user_id: &str,
    tenant_id: &str,
    role: Role,
    now: &str,
) -> anyhow::Result<Result<(), Conflict>> {
    let result = on_tx!(tx, conn => sqlx::query(
        "INSERT INTO memberships (user_id, tenant_id, role, created_at) VALUES ($1, $2, $3, $4)",
    )
    .bind(user_id)
    .bind(tenant_id)
    .bind(role.as_str())
    .bind(now)
    .execute(&mut **conn)
    .await
    .map(drop));
    conflict_or_error(result, "a membership")
}

pub async fn find_tenant_by_slug(
    database: &Database,
    slug: &str,
) -> anyhow::Result<Option<Tenant>> {
    on_pool!(database, pool => sqlx::query_as::<_, Tenant>(
        "SELECT id, slug, name FROM tenants WHERE slug = $1",
    )
    .bind(slug)
    .fetch_optional(pool)
    .await)
    .context("looking up a tenant by slug")
}

pub async fn find_user_by_email(database: &Database, email: &str) -> anyhow::Result<Option<User>> {
    on_pool!(database, pool => sqlx::query_as::<_, User>(
        "SELECT id, email, first_name, last_name, user_type FROM users WHERE email = $1",
    )
    .bind(email)
    .fetch_optional(pool)
    .await)
    .context("looking up a user by e-mail")
}
