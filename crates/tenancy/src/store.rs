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

pub async fn find_tenant_by_id(database: &Database, id: &str) -> anyhow::Result<Option<Tenant>> {
    on_pool!(database, pool => sqlx::query_as::<_, Tenant>(
        "SELECT id, slug, name FROM tenants WHERE id = $1",
    )
    .bind(id)
    .fetch_optional(pool)
    .await)
    .context("looking up a tenant by id")
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

/// A tenant with how many members it has (`admin list-tenants`).
#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize, utoipa::ToSchema)]
pub struct TenantSummary {
    pub tenant_id: String,
    pub slug: String,
    pub name: String,
    pub created_at: String,
    pub members: i64,
    /// When an operator disabled it (`None`: its members may sign in).
    pub disabled_at: Option<String>,
}

/// A member of a tenant (`admin list-users`).
#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct MemberSummary {
    pub user_id: String,
    pub email: String,
    pub first_name: String,
    pub last_name: String,
    #[serde(rename = "type")]
    pub user_type: String,
    pub role: String,
    pub member_since: String,
    /// When an operator disabled the user (`None`: may sign in).
    pub disabled_at: Option<String>,
}

pub async fn list_tenants(database: &Database) -> anyhow::Result<Vec<TenantSummary>> {
    on_pool!(database, pool => sqlx::query_as::<_, TenantSummary>(
        "SELECT t.id AS tenant_id, t.slug, t.name, t.created_at,
                (SELECT COUNT(*) FROM memberships AS m WHERE m.tenant_id = t.id) AS members,
                t.disabled_at
         FROM tenants AS t ORDER BY t.slug",
    )
    .fetch_all(pool)
    .await)
    .context("listing the tenants")
}

pub async fn list_members(
    database: &Database,
    tenant_id: &str,
) -> anyhow::Result<Vec<MemberSummary>> {
    on_pool!(database, pool => sqlx::query_as::<_, MemberSummary>(
        "SELECT u.id AS user_id, u.email, u.first_name, u.last_name, u.user_type, m.role,
                m.created_at AS member_since, u.disabled_at
         FROM memberships AS m JOIN users AS u ON u.id = m.user_id
         WHERE m.tenant_id = $1 ORDER BY u.email",
    )
    .bind(tenant_id)
    .fetch_all(pool)
    .await)
    .context("listing a tenant's members")
}

/// The member's role in the tenant, `None` when the user is not a member.
pub async fn member_role(
    tx: &mut Tx,
    tenant_id: &str,
    user_id: &str,
) -> anyhow::Result<Option<String>> {
    on_tx!(tx, conn => sqlx::query_scalar::<_, String>(
        "SELECT role FROM memberships WHERE tenant_id = $1 AND user_id = $2",
    )
    .bind(tenant_id)
    .bind(user_id)
    .fetch_optional(&mut **conn)
    .await)
    .context("reading a member's role")
}

pub async fn count_owners(tx: &mut Tx, tenant_id: &str) -> anyhow::Result<i64> {
    on_tx!(tx, conn => sqlx::query_scalar::<_, i64>(
        "SELECT COUNT(*) FROM memberships WHERE tenant_id = $1 AND role = 'owner'",
    )
    .bind(tenant_id)
    .fetch_one(&mut **conn)
    .await)
    .context("counting a tenant's owners")
}

pub async fn update_role(
    tx: &mut Tx,
    tenant_id: &str,
    user_id: &str,
    role: Role,
) -> anyhow::Result<()> {
    on_tx!(tx, conn => sqlx::query(
        "UPDATE memberships SET role = $3 WHERE tenant_id = $1 AND user_id = $2",
    )
    .bind(tenant_id)
    .bind(user_id)
    .bind(role.as_str())
    .execute(&mut **conn)
    .await
    .map(drop))
    .context("changing a member's role")
}

/// Sets the user's password hash and revokes every session of theirs; returns how many.
pub async fn replace_password(
    tx: &mut Tx,
    user_id: &str,
    password_hash: &str,
    now: &str,
) -> anyhow::Result<u64> {
    on_tx!(tx, conn => sqlx::query("UPDATE users SET password_hash = $2, updated_at = $3 WHERE id = $1")
        .bind(user_id)
        .bind(password_hash)
        .bind(now)
        .execute(&mut **conn)
        .await
        .map(drop))
    .context("replacing a password hash")?;
    revoke_sessions(tx, user_id, now, "password_reset").await
}

/// Revokes every session of the user still open (their refresh tokens stop working, their
/// access tokens within the session cache's lifetime); returns how many.
pub async fn revoke_sessions(
    tx: &mut Tx,
    user_id: &str,
    now: &str,
    reason: &str,
) -> anyhow::Result<u64> {
    on_tx!(tx, conn => sqlx::query(
        "UPDATE sessions SET revoked_at = $2, revoked_reason = $3
         WHERE user_id = $1 AND revoked_at IS NULL",
    )
    .bind(user_id)
    .bind(now)
    .bind(reason)
    .execute(&mut **conn)
    .await
    .map(|done| done.rows_affected()))
    .context("revoking the user's sessions")
}

/// Marks the tenant disabled since `disabled_at`, or enabled (`None`); returns whether it was
/// disabled before.
pub async fn set_tenant_disabled(
    tx: &mut Tx,
    tenant_id: &str,
    disabled_at: Option<&str>,
) -> anyhow::Result<bool> {
    let was_disabled = on_tx!(tx, conn => sqlx::query_scalar::<_, Option<String>>(
        "SELECT disabled_at FROM tenants WHERE id = $1",
    )
    .bind(tenant_id)
    .fetch_one(&mut **conn)
    .await)
    .context("reading whether a tenant is disabled")?
    .is_some();
    on_tx!(tx, conn => sqlx::query(
        "UPDATE tenants SET disabled_at = CASE WHEN $2 IS NULL THEN NULL
                                               ELSE COALESCE(disabled_at, $2) END
         WHERE id = $1",
    )
    .bind(tenant_id)
    .bind(disabled_at)
    .execute(&mut **conn)
    .await
    .map(drop))
    .context("disabling or enabling a tenant")?;
    Ok(was_disabled)
}

/// How many tenants the user belongs to.
pub async fn count_memberships(tx: &mut Tx, user_id: &str) -> anyhow::Result<i64> {
    on_tx!(tx, conn => sqlx::query_scalar::<_, i64>(
        "SELECT COUNT(*) FROM memberships WHERE user_id = $1",
    )
    .bind(user_id)
    .fetch_one(&mut **conn)
    .await)
    .context("counting a user's memberships")
}

/// A workspace of a tenant.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow, serde::Serialize, utoipa::ToSchema)]
pub struct WorkspaceSummary {
    pub id: String,
    pub name: String,
    /// The workspace a sign-in lands in.
    pub is_default: bool,
    pub created_at: String,
}

/// The tenant's workspaces, the default first, then by name.
pub async fn list_workspaces(
    database: &Database,
    tenant_id: &str,
) -> anyhow::Result<Vec<WorkspaceSummary>> {
    on_pool!(database, pool => sqlx::query_as(
        "SELECT id, name, is_default, created_at FROM workspaces WHERE tenant_id = $1
         ORDER BY is_default DESC, name, id",
    )
    .bind(tenant_id)
    .fetch_all(pool)
    .await)
    .context("listing a tenant's workspaces")
}

/// The tenants `user_id` is a member of, by id.
pub async fn member_tenant_ids(database: &Database, user_id: &str) -> anyhow::Result<Vec<String>> {
    on_pool!(database, pool => sqlx::query_scalar(
        "SELECT tenant_id FROM memberships WHERE user_id = $1 ORDER BY tenant_id",
    )
    .bind(user_id)
    .fetch_all(pool)
    .await)
    .context("listing a user's tenants")
}

/// Deletes the user and everything kept for signing them in (sessions with their refresh
/// tokens, second factors, recovery codes, challenges, memberships); the sign-in audit trail
/// stays (it records what happened, under the user's id).
pub async fn delete_user(tx: &mut Tx, user_id: &str) -> anyhow::Result<()> {
    let statements = [
        "DELETE FROM refresh_tokens WHERE session_id IN (SELECT id FROM sessions WHERE user_id = $1)",
        "DELETE FROM sessions WHERE user_id = $1",
        "DELETE FROM mfa_challenges WHERE user_id = $1",
        "DELETE FROM mfa_recovery_codes WHERE user_id = $1",
        "DELETE FROM user_mfa WHERE user_id = $1",
        "DELETE FROM user_provisioning_engines WHERE user_id = $1",
        "DELETE FROM memberships WHERE user_id = $1",
        "DELETE FROM users WHERE id = $1",
    ];
    run_each(tx, &statements, user_id, "deleting a user").await
}

/// Runs each of `statements`, in order, with `id` as their one parameter.
async fn run_each(tx: &mut Tx, statements: &[&str], id: &str, what: &str) -> anyhow::Result<()> {
    for statement in statements {
        on_tx!(tx, conn => sqlx::query(sqlx::AssertSqlSafe(*statement))
            .bind(id)
            .execute(&mut **conn)
            .await
            .map(drop))
        .with_context(|| format!("{what}: {statement}"))?;
    }
    Ok(())
}

/// Marks the user disabled since `disabled_at`, or enabled (`None`); returns whether the user
/// was disabled before.
pub async fn set_disabled(
    tx: &mut Tx,
    user_id: &str,
    disabled_at: Option<&str>,
    now: &str,
) -> anyhow::Result<bool> {
    let was_disabled = on_tx!(tx, conn => sqlx::query_scalar::<_, Option<String>>(
        "SELECT disabled_at FROM users WHERE id = $1",
    )
    .bind(user_id)
    .fetch_one(&mut **conn)
    .await)
    .context("reading whether a user is disabled")?
    .is_some();
    on_tx!(tx, conn => sqlx::query(
        "UPDATE users SET disabled_at = CASE WHEN $2 IS NULL THEN NULL
                                             ELSE COALESCE(disabled_at, $2) END,
                          updated_at = $3
         WHERE id = $1",
    )
    .bind(user_id)
    .bind(disabled_at)
    .bind(now)
    .execute(&mut **conn)
    .await
    .map(drop))
    .context("disabling or enabling a user")?;
    Ok(was_disabled)
}

/// How many entities and members the tenant has (what deleting it removes).
pub async fn tenant_contents(tx: &mut Tx, tenant_id: &str) -> anyhow::Result<(i64, i64)> {
    on_tx!(tx, conn => sqlx::query_as::<_, (i64, i64)>(
        "SELECT (SELECT COUNT(*) FROM entities WHERE tenant_number =
                    (SELECT tenant_number FROM event_sequences WHERE tenant_id = $1)),
                (SELECT COUNT(*) FROM memberships WHERE tenant_id = $1)",
    )
    .bind(tenant_id)
    .fetch_one(&mut **conn)
    .await)
    .context("counting a tenant's entities and members")
}

/// Deletes the tenant's row, and with it (`ON DELETE CASCADE`) its workspaces, memberships,
/// families and workflows; and its refresh tokens and sign-in audit trail. (Its entities went
/// with its log: `tessera_core::erasure`.)
pub async fn delete_tenant(tx: &mut Tx, tenant_id: &str) -> anyhow::Result<()> {
    let statements = [
        "DELETE FROM refresh_tokens WHERE tenant_id = $1",
        "DELETE FROM auth_audit WHERE tenant_id = $1",
        "DELETE FROM tenant_usage WHERE tenant_id = $1",
        "DELETE FROM tenants WHERE id = $1",
    ];
    run_each(tx, &statements, tenant_id, "deleting a tenant").await
}

/// A tenant in full (`admin show-tenant`).
#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize, utoipa::ToSchema)]
pub struct TenantDetails {
    pub tenant_id: String,
    pub slug: String,
    pub name: String,
    pub created_at: String,
    pub members: i64,
    pub workspaces: i64,
    pub entities: i64,
}

pub async fn tenant_details(
    database: &Database,
    tenant_id: &str,
) -> anyhow::Result<Option<TenantDetails>> {
    on_pool!(database, pool => sqlx::query_as::<_, TenantDetails>(
        "SELECT t.id AS tenant_id, t.slug, t.name, t.created_at,
                (SELECT COUNT(*) FROM memberships AS m WHERE m.tenant_id = t.id) AS members,
                (SELECT COUNT(*) FROM workspaces AS w WHERE w.tenant_id = t.id) AS workspaces,
                (SELECT COUNT(*) FROM entities AS e JOIN event_sequences AS s
                   ON s.tenant_number = e.tenant_number WHERE s.tenant_id = t.id) AS entities
         FROM tenants AS t WHERE t.id = $1",
    )
    .bind(tenant_id)
    .fetch_optional(pool)
    .await)
    .context("reading a tenant")
}

/// A user in full (`admin show-user`), without any secret.
#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct UserDetails {
    pub user_id: String,
    pub email: String,
    pub first_name: String,
    pub last_name: String,
    #[serde(rename = "type")]
    pub user_type: String,
    pub created_at: String,
    pub disabled_at: Option<String>,
    /// When the user's second factor (TOTP) was confirmed; `None` without one.
    pub mfa_enabled_at: Option<String>,
    /// Sessions neither revoked nor expired.
    pub active_sessions: i64,
    #[sqlx(skip)]
    pub memberships: Vec<UserMembership>,
}

/// One tenant a user belongs to.
#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct UserMembership {
    pub tenant_id: String,
    pub slug: String,
    pub role: String,
    pub member_since: String,
}

pub async fn user_details(
    database: &Database,
    user_id: &str,
    now: &str,
) -> anyhow::Result<Option<UserDetails>> {
    let details: Option<UserDetails> = on_pool!(database, pool => sqlx::query_as::<_, UserDetails>(
        "SELECT u.id AS user_id, u.email, u.first_name, u.last_name, u.user_type, u.created_at,
                u.disabled_at,
                (SELECT f.enabled_at FROM user_mfa AS f WHERE f.user_id = u.id) AS mfa_enabled_at,
                (SELECT COUNT(*) FROM sessions AS s
                 WHERE s.user_id = u.id AND s.revoked_at IS NULL AND s.expires_at > $2)
                    AS active_sessions
         FROM users AS u WHERE u.id = $1",
    )
    .bind(user_id)
    .bind(now)
    .fetch_optional(pool)
    .await)
    .context("reading a user")?;
    let Some(mut details) = details else {
        return Ok(None);
    };
    details.memberships = on_pool!(database, pool => sqlx::query_as::<_, UserMembership>(
        "SELECT t.id AS tenant_id, t.slug, m.role, m.created_at AS member_since
         FROM memberships AS m JOIN tenants AS t ON t.id = m.tenant_id
         WHERE m.user_id = $1 ORDER BY t.slug",
    )
    .bind(user_id)
    .fetch_all(pool)
    .await)
    .context("reading a user's memberships")?;
    Ok(Some(details))
}
