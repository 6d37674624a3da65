//! Tenancy: tenants, users, memberships and workspaces. One service used by the admin CLI
//! today and by the HTTP orchestration endpoints later, so both enforce the same rules and
//! write in one transaction each (nothing half-written on failure).

pub mod operator_routes;
pub mod routes;
mod store;
pub mod tenant_routes;

use std::collections::BTreeMap;
pub use tessera_auth::identity::{is_valid_email, normalize_email};

use serde::Serialize;

use tessera_auth::password::{PasswordHasher, PasswordPolicy};
use tessera_core::families;
use tessera_http::ValidationErrors;
use tessera_orchestrator::{
    EngineOutcome, LoadedEngineSummary, Orchestrator, ProvisioningStatus, record_pending_tenant,
};
use tessera_runtime::lifecycle::{TenantProfile, UserProfile};
use tessera_storage::{Database, time};

pub use store::{
    MemberSummary, Tenant, TenantDetails, TenantSummary, User, UserDetails, UserMembership,
    WorkspaceSummary,
};
use tessera_auth::audit::AuditEntry;

/// A member's role in a tenant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Owner,
    Editor,
    Viewer,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Owner => "owner",
            Role::Editor => "editor",
            Role::Viewer => "viewer",
        }
    }
}

/// A user's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum UserType {
    User,
    Guest,
    Agent,
}

impl UserType {
    pub fn as_str(self) -> &'static str {
        match self {
            UserType::User => "user",
            UserType::Guest => "guest",
            UserType::Agent => "agent",
        }
    }
}

/// Why a tenancy operation was refused.
#[derive(Debug, thiserror::Error)]
pub enum TenancyError {
    #[error("the tenant slug {0:?} already exists")]
    SlugTaken(String),
    #[error("a user with the e-mail {0:?} already exists")]
    EmailTaken(String),
    #[error("no tenant has the slug {0:?}")]
    TenantNotFound(String),
    #[error("no user has the e-mail {0:?}")]
    UserNotFound(String),
    #[error("{email:?} is already a member of {tenant:?}")]
    AlreadyMember { email: String, tenant: String },
    #[error("the tenant {tenant:?} already has a workspace named {name:?}")]
    WorkspaceNameTaken { tenant: String, name: String },
    #[error("{email:?} is not a member of {tenant:?}")]
    NotMember { email: String, tenant: String },
    #[error("{email:?} is the last owner of {tenant:?}; make another member owner first")]
    LastOwner { email: String, tenant: String },
    /// An owner asked to change their own account through the members endpoints.
    #[error("an owner manages their own account on their account page")]
    OwnAccount,
    /// An owner asked to change an account that also belongs to another tenant: only the
    /// operator may (one tenant's owner must not lock someone out of another tenant).
    #[error("the account also belongs to another tenant")]
    SharedAccount,
    #[error("invalid input: {}", describe(.0))]
    Invalid(ValidationErrors),
    #[error(transparent)]
    Storage(#[from] anyhow::Error),
}

fn describe(errors: &ValidationErrors) -> String {
    errors
        .fields()
        .iter()
        .map(|(field, rules)| format!("{field} fails {}", rules.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The provisioning report of a new tenant: every engine that requires tenant provisioning,
/// with its outcome (`{status, error?}`, the shape the orchestration endpoint answers).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ProvisioningReport {
    pub status: ProvisioningStatus,
    pub engines: BTreeMap<String, EngineProvisioning>,
}

/// One engine's part in a new tenant's provisioning.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct EngineProvisioning {
    /// `provisioned` or `failed`.
    pub status: &'static str,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl ProvisioningReport {
    /// The report of a provisioning with `status` and these engines' outcomes.
    fn of(status: ProvisioningStatus, outcomes: &BTreeMap<String, EngineOutcome>) -> Self {
        Self {
            status,
            engines: engine_outcomes(outcomes),
        }
    }
}

/// Engines' outcomes as the reports show them.
fn engine_outcomes(
    outcomes: &BTreeMap<String, EngineOutcome>,
) -> BTreeMap<String, EngineProvisioning> {
    outcomes
        .iter()
        .map(|(code, outcome)| (code.clone(), outcome.into()))
        .collect()
}

impl From<&EngineOutcome> for EngineProvisioning {
    fn from(outcome: &EngineOutcome) -> Self {
        match outcome {
            EngineOutcome::Provisioned { .. } => Self {
                status: "provisioned",
                error: None,
            },
            EngineOutcome::Failed { error, .. } => Self {
                status: "failed",
                error: Some(error.clone()),
            },
        }
    }
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct CreatedTenant {
    pub tenant_id: String,
    pub slug: String,
    pub name: String,
    pub workspace_id: String,
    pub provisioning: ProvisioningReport,
}

#[derive(Debug, Clone, Serialize)]
pub struct CreatedUser {
    pub user_id: String,
    pub tenant_id: String,
    pub email: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct AddedMember {
    pub user_id: String,
    pub tenant_id: String,
    pub role: Role,
}

/// What `reset_password` did.
#[derive(Debug, Clone, Serialize)]
pub struct PasswordReset {
    pub user_id: String,
    /// The user's sessions it revoked (their refresh tokens stop working).
    pub sessions_revoked: u64,
}

/// A loaded engine and each tenant's state on it (`admin list-engines`).
#[derive(Debug, Clone, Serialize)]
pub struct EngineListing {
    #[serde(flatten)]
    pub engine: LoadedEngineSummary,
    /// By tenant slug; empty for an engine that does not provision tenants.
    pub tenants: BTreeMap<String, EngineProvisioning>,
}

/// What `retry_provisioning` did: the tenant's status after it and the engines it ran.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct RetriedProvisioning {
    pub tenant_id: String,
    pub slug: String,
    pub status: ProvisioningStatus,
    pub retried: BTreeMap<String, EngineProvisioning>,
}

/// `show_tenant`'s answer.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ShownTenant {
    #[serde(flatten)]
    pub tenant: TenantDetails,
    pub provisioning: Option<ProvisioningReport>,
}

/// What `delete_tenant` removed.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct DeletedTenant {
    pub tenant_id: String,
    pub slug: String,
    /// How the engines' deprovisioning went (engine storage is removed whatever they answer).
    pub engines_deprovisioning: ProvisioningStatus,
    pub entities: i64,
    pub members: i64,
    pub events: u64,
    pub search_documents: u64,
    pub inbox_items: u64,
}

/// What `disable_user` / `enable_user` did.
#[derive(Debug, Clone, Serialize)]
pub struct UserAccess {
    pub user_id: String,
    pub email: String,
    /// Whether the user is disabled now.
    pub disabled: bool,
    /// Whether this call changed it (false: it already was).
    pub changed: bool,
    /// The user's sessions it revoked.
    pub sessions_revoked: u64,
}

/// What `disable_tenant` / `enable_tenant` did.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct TenantAccess {
    pub tenant_id: String,
    pub slug: String,
    /// Whether the tenant is disabled now.
    pub disabled: bool,
    /// Whether this call changed it (false: it already was).
    pub changed: bool,
}

/// What `delete_user` removed.
#[derive(Debug, Clone, Serialize)]
pub struct DeletedUser {
    pub user_id: String,
    pub email: String,
    /// The tenants the user was a member of (by id), each with the outcome of removing the
    /// user's data from the engines that provision users.
    pub tenants: BTreeMap<String, ProvisioningStatus>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CreatedWorkspace {
    pub workspace_id: String,
    pub tenant_id: String,
    pub name: String,
}

/// What an owner changes of a member's access ([`TenancyService::change_member_access`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberAccess {
    /// Remove every second factor (TOTP and recovery codes, e-mailed codes, passkeys).
    ResetSecondFactors,
    Disable,
    Enable,
}

/// What [`TenancyService::change_member_access`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemberAccessChanged {
    /// False when it was already so (no factor on, already disabled or enabled).
    pub changed: bool,
    pub sessions_ended: u64,
}

/// A new user's details.
#[derive(Debug, Clone)]
pub struct NewUser {
    pub tenant_slug: String,
    pub email: String,
    pub password: String,
    pub role: Role,
    pub user_type: UserType,
    pub first_name: String,
    pub last_name: String,
}

/// The name of every tenant's first workspace.
pub const DEFAULT_WORKSPACE_NAME: &str = "Default";

#[derive(Clone)]
pub struct TenancyService {
    database: Database,
    password_policy: PasswordPolicy,
    password_hasher: PasswordHasher,
    orchestrator: Orchestrator,
}

impl TenancyService {
    pub fn new(
        database: Database,
        password_policy: PasswordPolicy,
        password_hasher: PasswordHasher,
        orchestrator: Orchestrator,
    ) -> Self {
        Self {
            database,
            password_policy,
            password_hasher,
            orchestrator,
        }
    }

    /// Creates a tenant with its default workspace, default families and a `pending`
    /// provisioning record in one transaction, then provisions it on every engine that
    /// requires it (the orchestrator's best-effort run; a failed engine is reported, not
    /// rolled back, and retry completes it).
    pub async fn create_tenant(
        &self,
        slug: &str,
        name: &str,
    ) -> Result<CreatedTenant, TenancyError> {
        let slug = slug.trim().to_owned();
        let name = name.trim().to_owned();
        let mut errors = ValidationErrors::new();
        validate_slug(&slug, &mut errors);
        validate_name("name", &name, &mut errors);
        if !errors.is_empty() {
            return Err(TenancyError::Invalid(errors));
        }

        let tenant_id = uuid::Uuid::new_v4().to_string();
        let workspace_id = uuid::Uuid::new_v4().to_string();
        let now = time::now();
        let mut tx = self.database.begin().await?;
        store::insert_tenant(&mut tx, &tenant_id, &slug, &name, &now)
            .await?
            .map_err(|_| TenancyError::SlugTaken(slug.clone()))?;
        store::insert_workspace(
            &mut tx,
            &workspace_id,
            &tenant_id,
            DEFAULT_WORKSPACE_NAME,
            true,
            &now,
        )
        .await?
        .map_err(|_| anyhow::anyhow!("a brand-new tenant already had a default workspace"))?;
        families::create_default_families(&mut tx, &tenant_id).await?;
        let profile = TenantProfile {
            tenant_id: tenant_id.clone(),
            tenant_short_id: slug.clone(),
            name: name.clone(),
        };
        record_pending_tenant(&mut tx, &profile).await?;
        tx.commit().await?;

        let provisioning = self.orchestrator.provision_tenant(&profile).await?;
        Ok(CreatedTenant {
            tenant_id,
            slug,
            name,
            workspace_id,
            provisioning: ProvisioningReport::of(provisioning.status, &provisioning.engines),
        })
    }

    /// Creates a user (password policy enforced, argon2id hash) as a member of a tenant.
    pub async fn create_user(&self, new_user: NewUser) -> Result<CreatedUser, TenancyError> {
        let email = normalize_email(&new_user.email);
        let mut errors = ValidationErrors::new();
        if !is_valid_email(&email) {
            errors.add("email", "email");
        }
        for rule in self.password_policy.violations(&new_user.password) {
            errors.add("password", rule);
        }
        for (field, value) in [
            ("first_name", &new_user.first_name),
            ("last_name", &new_user.last_name),
        ] {
            if value.chars().count() > 100 {
                errors.add(field, "max:100");
            }
        }
        if !errors.is_empty() {
            return Err(TenancyError::Invalid(errors));
        }
        let tenant = self.tenant_by_slug(&new_user.tenant_slug).await?;
        if store::find_user_by_email(&self.database, &email)
            .await?
            .is_some()
        {
            return Err(TenancyError::EmailTaken(email));
        }
        let password_hash = self.password_hasher.hash(new_user.password).await?;

        let user_id = uuid::Uuid::new_v4().to_string();
        let now = time::now();
        let user = User {
            id: user_id.clone(),
            email: email.clone(),
            first_name: new_user.first_name.trim().to_owned(),
            last_name: new_user.last_name.trim().to_owned(),
            user_type: new_user.user_type.as_str().to_owned(),
        };
        let mut tx = self.database.begin().await?;
        store::insert_user(&mut tx, &user, &password_hash, &now)
            .await?
            .map_err(|_| TenancyError::EmailTaken(email.clone()))?;
        store::insert_membership(&mut tx, &user_id, &tenant.id, new_user.role, &now)
            .await?
            .map_err(|_| anyhow::anyhow!("a brand-new user was already a member"))?;
        tx.commit().await?;

        let provisioning = self
            .orchestrator
            .provision_user(&UserProfile {
                tenant_id: tenant.id.clone(),
                user_id: user_id.clone(),
                email: user.email.clone(),
                first_name: user.first_name.clone(),
                last_name: user.last_name.clone(),
                user_type: user.user_type.clone(),
            })
            .await?;
        if provisioning.status != ProvisioningStatus::Completed {
            tracing::warn!(user_id = %user_id, status = provisioning.status.as_str(), "the user was created; some engines did not provision it");
        }
        Ok(CreatedUser {
            user_id,
            tenant_id: tenant.id,
            email,
        })
    }

    /// Makes an existing user a member of another tenant.
    pub async fn add_member(
        &self,
        tenant_slug: &str,
        email: &str,
        role: Role,
    ) -> Result<AddedMember, TenancyError> {
        let tenant = self.tenant_by_slug(tenant_slug).await?;
        let (email, user) = self.user_by_email(email).await?;
        let mut tx = self.database.begin().await?;
        store::insert_membership(&mut tx, &user.id, &tenant.id, role, &time::now())
            .await?
            .map_err(|_| TenancyError::AlreadyMember {
                email: email.clone(),
                tenant: tenant.slug.clone(),
            })?;
        tx.commit().await?;
        Ok(AddedMember {
            user_id: user.id,
            tenant_id: tenant.id,
            role,
        })
    }

    /// An owner's change to the access of a member of `tenant_id` (not themselves, and only an
    /// account that belongs to no other tenant), with its audit `entry` in the same
    /// transaction: the member's second factors removed, or the account disabled or enabled.
    /// Disabling and resetting end every session of the member. Returns how many sessions
    /// ended and whether anything changed.
    pub async fn change_member_access(
        &self,
        tenant_id: &str,
        user_id: &str,
        owner_id: &str,
        change: MemberAccess,
        entry: AuditEntry,
    ) -> Result<MemberAccessChanged, TenancyError> {
        if user_id == owner_id {
            return Err(TenancyError::OwnAccount);
        }
        let now = time::now();
        let mut tx = self.database.begin().await?;
        if store::member_role(&mut tx, tenant_id, user_id)
            .await?
            .is_none()
        {
            return Err(TenancyError::NotMember {
                email: user_id.to_owned(),
                tenant: tenant_id.to_owned(),
            });
        }
        if store::count_memberships(&mut tx, user_id).await? > 1 {
            return Err(TenancyError::SharedAccount);
        }
        let (changed, sessions_ended) = match change {
            MemberAccess::ResetSecondFactors => {
                let had = !tessera_auth::enrolled_methods(&self.database, user_id)
                    .await?
                    .is_empty();
                tessera_auth::remove_every_second_factor_in(&mut tx, user_id).await?;
                let ended = store::revoke_sessions(&mut tx, user_id, &now, "mfa_reset").await?;
                (had, ended)
            }
            MemberAccess::Disable => {
                let was = store::set_disabled(&mut tx, user_id, Some(&now), &now).await?;
                let ended = store::revoke_sessions(&mut tx, user_id, &now, "user_disabled").await?;
                (!was, ended)
            }
            MemberAccess::Enable => {
                let was = store::set_disabled(&mut tx, user_id, None, &now).await?;
                (was, 0)
            }
        };
        let entry = entry
            .detail("member_id", user_id.to_owned())
            .detail("changed", changed)
            .detail("sessions_ended", sessions_ended);
        tessera_auth::audit::record_in(&mut tx, &entry).await?;
        tx.commit().await?;
        Ok(MemberAccessChanged {
            changed,
            sessions_ended,
        })
    }

    /// The tenant's usage counters from `since` (a UTC day) on.
    pub async fn usage_of(
        &self,
        tenant_id: &str,
        since: &str,
    ) -> Result<Vec<tessera_storage::tenant_usage::UsageRow>, TenancyError> {
        Ok(tessera_storage::tenant_usage::of_tenant(&self.database, tenant_id, since).await?)
    }

    /// What each engine keeps for the tenant.
    pub async fn engine_storage_of(
        &self,
        tenant_id: &str,
    ) -> Result<Vec<tessera_storage::tenant_usage::EngineStorage>, TenancyError> {
        Ok(tessera_storage::tenant_usage::engine_storage(&self.database, tenant_id).await?)
    }

    /// Every tenant's usage totals from `since` (a UTC day) on.
    pub async fn usage_totals(
        &self,
        since: &str,
    ) -> Result<Vec<tessera_storage::tenant_usage::TenantTotal>, TenancyError> {
        Ok(tessera_storage::tenant_usage::totals_since(&self.database, since).await?)
    }

    /// The tenant's workspaces, the default first.
    pub async fn workspaces_of(
        &self,
        tenant_id: &str,
    ) -> Result<Vec<WorkspaceSummary>, TenancyError> {
        Ok(store::list_workspaces(&self.database, tenant_id).await?)
    }

    /// Adds a workspace to a tenant; names are unique within a tenant.
    pub async fn create_workspace(
        &self,
        tenant_slug: &str,
        name: &str,
    ) -> Result<CreatedWorkspace, TenancyError> {
        let name = name.trim().to_owned();
        let mut errors = ValidationErrors::new();
        validate_name("name", &name, &mut errors);
        if !errors.is_empty() {
            return Err(TenancyError::Invalid(errors));
        }
        let tenant = self.tenant_by_slug(tenant_slug).await?;
        let workspace_id = uuid::Uuid::new_v4().to_string();
        let mut tx = self.database.begin().await?;
        store::insert_workspace(
            &mut tx,
            &workspace_id,
            &tenant.id,
            &name,
            false,
            &time::now(),
        )
        .await?
        .map_err(|_| TenancyError::WorkspaceNameTaken {
            tenant: tenant.slug.clone(),
            name: name.clone(),
        })?;
        tx.commit().await?;
        Ok(CreatedWorkspace {
            workspace_id,
            tenant_id: tenant.id,
            name,
        })
    }

    /// Every tenant with its member count, by slug.
    pub async fn list_tenants(&self) -> Result<Vec<TenantSummary>, TenancyError> {
        Ok(store::list_tenants(&self.database).await?)
    }

    /// A tenant's members with their roles, by e-mail.
    pub async fn list_members(
        &self,
        tenant_slug: &str,
    ) -> Result<Vec<MemberSummary>, TenancyError> {
        let tenant = self.tenant_by_slug(tenant_slug).await?;
        Ok(store::list_members(&self.database, &tenant.id).await?)
    }

    /// Changes a member's role in a tenant; a tenant keeps at least one owner.
    pub async fn set_role(
        &self,
        tenant_slug: &str,
        email: &str,
        role: Role,
    ) -> Result<AddedMember, TenancyError> {
        let tenant = self.tenant_by_slug(tenant_slug).await?;
        let (email, user) = self.user_by_email(email).await?;
        let mut tx = self.database.begin().await?;
        let current = store::member_role(&mut tx, &tenant.id, &user.id)
            .await?
            .ok_or_else(|| TenancyError::NotMember {
                email: email.clone(),
                tenant: tenant.slug.clone(),
            })?;
        if current == Role::Owner.as_str()
            && role != Role::Owner
            && store::count_owners(&mut tx, &tenant.id).await? <= 1
        {
            return Err(TenancyError::LastOwner {
                email,
                tenant: tenant.slug,
            });
        }
        store::update_role(&mut tx, &tenant.id, &user.id, role).await?;
        tx.commit().await?;
        Ok(AddedMember {
            user_id: user.id,
            tenant_id: tenant.id,
            role,
        })
    }

    /// Replaces a member's password (the policy enforced, argon2id off the async workers) and
    /// revokes every session of theirs, so refresh tokens issued before stop working.
    pub async fn reset_password(
        &self,
        tenant_slug: &str,
        email: &str,
        password: String,
    ) -> Result<PasswordReset, TenancyError> {
        let mut errors = ValidationErrors::new();
        for rule in self.password_policy.violations(&password) {
            errors.add("password", rule);
        }
        if !errors.is_empty() {
            return Err(TenancyError::Invalid(errors));
        }
        let tenant = self.tenant_by_slug(tenant_slug).await?;
        let (email, user) = self.user_by_email(email).await?;
        let password_hash = self.password_hasher.hash(password).await?;
        let mut tx = self.database.begin().await?;
        if store::member_role(&mut tx, &tenant.id, &user.id)
            .await?
            .is_none()
        {
            return Err(TenancyError::NotMember {
                email,
                tenant: tenant.slug,
            });
        }
        let sessions_revoked =
            store::replace_password(&mut tx, &user.id, &password_hash, &time::now()).await?;
        tx.commit().await?;
        Ok(PasswordReset {
            user_id: user.id,
            sessions_revoked,
        })
    }

    /// Disables a user everywhere: signing in fails as for an unknown login, no token is
    /// issued, every session is revoked and the tokens issued before are refused (the bearer
    /// check's membership read excludes disabled users). Disabling a disabled user changes
    /// nothing.
    pub async fn disable_user(&self, email: &str) -> Result<UserAccess, TenancyError> {
        let (email, user) = self.user_by_email(email).await?;
        let now = time::now();
        let mut tx = self.database.begin().await?;
        let was_disabled = store::set_disabled(&mut tx, &user.id, Some(&now), &now).await?;
        let sessions_revoked =
            store::revoke_sessions(&mut tx, &user.id, &now, "user_disabled").await?;
        tx.commit().await?;
        Ok(UserAccess {
            user_id: user.id,
            email,
            disabled: true,
            changed: !was_disabled,
            sessions_revoked,
        })
    }

    /// Lets a disabled user sign in again (with the same password and second factors).
    pub async fn enable_user(&self, email: &str) -> Result<UserAccess, TenancyError> {
        let (email, user) = self.user_by_email(email).await?;
        let now = time::now();
        let mut tx = self.database.begin().await?;
        let was_disabled = store::set_disabled(&mut tx, &user.id, None, &now).await?;
        tx.commit().await?;
        Ok(UserAccess {
            user_id: user.id,
            email,
            disabled: false,
            changed: was_disabled,
            sessions_revoked: 0,
        })
    }

    /// Disables a tenant: its members get no token for it (signing in lands in another of
    /// their tenants, or fails as for no membership) and the tokens issued for it are refused
    /// (within the bearer check's membership cache, seconds). Its data and engines stay as
    /// they are. Disabling a disabled tenant changes nothing.
    pub async fn disable_tenant(&self, tenant_slug: &str) -> Result<TenantAccess, TenancyError> {
        self.set_tenant_disabled(tenant_slug, Some(&time::now()))
            .await
    }

    /// Lets a disabled tenant's members in again.
    pub async fn enable_tenant(&self, tenant_slug: &str) -> Result<TenantAccess, TenancyError> {
        self.set_tenant_disabled(tenant_slug, None).await
    }

    async fn set_tenant_disabled(
        &self,
        tenant_slug: &str,
        disabled_at: Option<&str>,
    ) -> Result<TenantAccess, TenancyError> {
        let tenant = self.tenant_by_slug(tenant_slug).await?;
        let mut tx = self.database.begin().await?;
        let was_disabled = store::set_tenant_disabled(&mut tx, &tenant.id, disabled_at).await?;
        tx.commit().await?;
        let disabled = disabled_at.is_some();
        Ok(TenantAccess {
            tenant_id: tenant.id,
            slug: tenant.slug,
            disabled,
            changed: was_disabled != disabled,
        })
    }

    /// Deletes a user: first their data on the engines that provision users, in each of their
    /// tenants (as the orchestrator's deprovisioning does), then the account with its
    /// memberships, sessions and second factors, in one transaction. What the user created in
    /// the tenants (entities, messages, files) stays, as the tenants' data. If the second step
    /// fails, running it again finishes the deletion.
    pub async fn delete_user(&self, email: &str) -> Result<DeletedUser, TenancyError> {
        let (email, user) = self.user_by_email(email).await?;
        let mut tenants = BTreeMap::new();
        for tenant_id in store::member_tenant_ids(&self.database, &user.id).await? {
            let status = self
                .orchestrator
                .deprovision_user(&tenant_id, &user.id)
                .await?;
            tenants.insert(tenant_id, status);
        }
        let mut tx = self.database.begin().await?;
        store::delete_user(&mut tx, &user.id).await?;
        tx.commit().await?;
        Ok(DeletedUser {
            user_id: user.id,
            email,
            tenants,
        })
    }

    /// A tenant with its counts of members, workspaces and entities, and its provisioning on
    /// each engine (`None` when never provisioned).
    pub async fn show_tenant(&self, tenant_slug: &str) -> Result<ShownTenant, TenancyError> {
        let tenant = self.tenant_by_slug(tenant_slug).await?;
        let details = store::tenant_details(&self.database, &tenant.id)
            .await?
            .ok_or_else(|| TenancyError::TenantNotFound(tenant.slug.clone()))?;
        let provisioning = self
            .orchestrator
            .tenant_status(&tenant.id)
            .await?
            .map(|provisioning| ProvisioningReport::of(provisioning.status, &provisioning.engines));
        Ok(ShownTenant {
            tenant: details,
            provisioning,
        })
    }

    /// A user with the tenants they belong to, whether disabled, whether a second factor is
    /// on and how many sessions are open; never a secret.
    pub async fn show_user(&self, email: &str) -> Result<UserDetails, TenancyError> {
        let (email, user) = self.user_by_email(email).await?;
        store::user_details(&self.database, &user.id, &time::now())
            .await?
            .ok_or(TenancyError::UserNotFound(email))
    }

    /// Deletes a tenant and everything it holds, irreversibly: first every loaded engine's
    /// deprovisioning and all engine storage of the tenant (the orchestrator's), then in one
    /// transaction its event log, search index, inbox, workspaces, memberships, families,
    /// entities, workflows, refresh tokens and sign-in audit trail. Its members' accounts stay
    /// (they may belong to other tenants); their tokens for this tenant are refused from then
    /// on. If the second step fails, running it again finishes the deletion.
    pub async fn delete_tenant(&self, tenant_slug: &str) -> Result<DeletedTenant, TenancyError> {
        let tenant = self.tenant_by_slug(tenant_slug).await?;
        let engines = self.orchestrator.deprovision_tenant(&tenant.id).await?;
        let mut tx = self.database.begin().await?;
        let (entities, members) = store::tenant_contents(&mut tx, &tenant.id).await?;
        let core = tessera_core::erasure::erase_tenant(&mut tx, &tenant.id).await?;
        store::delete_tenant(&mut tx, &tenant.id).await?;
        tx.commit().await?;
        Ok(DeletedTenant {
            tenant_id: tenant.id,
            slug: tenant.slug,
            engines_deprovisioning: engines,
            entities,
            members,
            events: core.events,
            search_documents: core.search_documents,
            inbox_items: core.inbox_items,
        })
    }

    /// Every loaded engine with, for those that provision tenants, each tenant's state on it
    /// (by slug): `provisioned`, `failed` (with the error), or `not_provisioned` (the tenant's
    /// provisioning never ran it: a host stopped mid-way, or the engine was added since).
    pub async fn list_engines(&self) -> Result<Vec<EngineListing>, TenancyError> {
        let tenants = store::list_tenants(&self.database).await?;
        let mut states = Vec::with_capacity(tenants.len());
        for tenant in &tenants {
            let provisioning = self.orchestrator.tenant_status(&tenant.tenant_id).await?;
            states.push((tenant.slug.clone(), provisioning));
        }
        Ok(self
            .orchestrator
            .loaded_engines()
            .into_iter()
            .map(|engine| {
                let tenants = if engine.requires_tenant_provision {
                    states
                        .iter()
                        .map(|(slug, provisioning)| {
                            let state = provisioning
                                .as_ref()
                                .and_then(|provisioning| provisioning.engines.get(&engine.code))
                                .map_or(
                                    EngineProvisioning {
                                        status: "not_provisioned",
                                        error: None,
                                    },
                                    EngineProvisioning::from,
                                );
                            (slug.clone(), state)
                        })
                        .collect()
                } else {
                    BTreeMap::new()
                };
                EngineListing { engine, tenants }
            })
            .collect())
    }

    /// Runs the tenant's provisioning again on every engine that has not provisioned it (those
    /// that failed, and those never run); engines already done are left alone.
    pub async fn retry_provisioning(
        &self,
        tenant_slug: &str,
    ) -> Result<RetriedProvisioning, TenancyError> {
        let tenant = self.tenant_by_slug(tenant_slug).await?;
        let report = self
            .orchestrator
            .retry_tenant(&tenant.id)
            .await?
            .ok_or_else(|| anyhow::anyhow!("the tenant {:?} was never provisioned", tenant.slug))?;
        Ok(RetriedProvisioning {
            tenant_id: tenant.id,
            slug: tenant.slug,
            status: report.status,
            retried: engine_outcomes(&report.retried),
        })
    }

    /// The user with `email` (normalized), with the normalized e-mail.
    async fn user_by_email(&self, email: &str) -> Result<(String, User), TenancyError> {
        let email = normalize_email(email);
        let user = store::find_user_by_email(&self.database, &email)
            .await?
            .ok_or_else(|| TenancyError::UserNotFound(email.clone()))?;
        Ok((email, user))
    }

    /// The tenant with the id `id` (a caller's tenant).
    pub async fn tenant_by_id(&self, id: &str) -> Result<Tenant, TenancyError> {
        store::find_tenant_by_id(&self.database, id)
            .await?
            .ok_or_else(|| TenancyError::TenantNotFound(id.to_owned()))
    }

    /// The members of the tenant `tenant_id`, by e-mail.
    pub async fn members_of(&self, tenant_id: &str) -> Result<Vec<MemberSummary>, TenancyError> {
        Ok(store::list_members(&self.database, tenant_id).await?)
    }

    pub async fn tenant_by_slug(&self, slug: &str) -> Result<Tenant, TenancyError> {
        let slug = slug.trim();
        store::find_tenant_by_slug(&self.database, slug)
            .await?
            .ok_or_else(|| TenancyError::TenantNotFound(slug.to_owned()))
    }
}

/// Slugs: 2 to 63 characters of lower-case letters, digits and inner hyphens.
fn validate_slug(slug: &str, errors: &mut ValidationErrors) {
    if slug.is_empty() {
        errors.add("slug", "required");
        return;
    }
    if slug.len() < 2 {
        errors.add("slug", "min:2");
    }
    if slug.len() > 63 {
        errors.add("slug", "max:63");
    }
    let well_formed = slug
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !slug.starts_with('-')
        && !slug.ends_with('-');
    if !well_formed {
        errors.add("slug", "slug");
    }
}

fn validate_name(field: &str, name: &str, errors: &mut ValidationErrors) {
    if name.is_empty() {
        errors.add(field, "required");
    } else if name.chars().count() > 200 {
        errors.add(field, "max:200");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails_and_slugs_are_checked() {
        assert!(is_valid_email("ada@example.com"));
        assert!(!is_valid_email("ada@example"));
        assert!(!is_valid_email("ada example@example.com"));
        assert!(!is_valid_email("@example.com"));
        assert_eq!(normalize_email("  Ada@Example.COM "), "ada@example.com");

        let mut errors = ValidationErrors::new();
        validate_slug("acme-corp", &mut errors);
        assert!(errors.is_empty());
        validate_slug("Acme Corp", &mut errors);
        assert_eq!(errors.fields()["slug"], vec!["slug"]);
    }
}
