//! The per-tenant bookkeeping of first-party engines: the `tenant` record written by
//! provisioning, the `users/<user_id>` records, and the `GET /api/v1/status` answer built from
//! them. Keys are relative to the engine's tenant-scoped storage.

use serde::{Deserialize, Serialize};

use crate::context::Context;
use crate::error::HostError;
use crate::request::Request;
use crate::response::Response;
use crate::router::HandlerResult;
use crate::storage;
use crate::time::now_rfc3339;
use crate::types::{TenantInfo, UserInfo};

/// The key of the tenant record.
pub const TENANT_KEY: &str = "tenant";

/// The key of a user's record: `users/<user_id>`.
pub fn user_key(user_id: &str) -> String {
    format!("users/{user_id}")
}

/// What `tenant` holds once the tenant is provisioned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TenantRecord {
    /// The tenant's id.
    pub tenant_id: String,
    /// The tenant's slug.
    pub tenant_short_id: String,
    /// The tenant's name.
    pub name: String,
    /// When it was first provisioned (RFC 3339).
    pub provisioned_at: String,
}

/// What `users/<user_id>` holds once the user is provisioned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserRecord {
    /// The user's tenant.
    pub tenant_id: String,
    /// The user's id.
    pub user_id: String,
    /// The user's e-mail address.
    pub email: String,
    /// First name.
    pub first_name: String,
    /// Last name.
    pub last_name: String,
    /// `user`, `guest` or `agent`.
    pub user_type: String,
    /// When it was first provisioned (RFC 3339).
    pub provisioned_at: String,
}

/// Writes the tenant record (idempotent: a second call keeps the first `provisioned_at` and
/// refreshes slug and name).
pub fn record_tenant(tenant: &TenantInfo) -> Result<TenantRecord, HostError> {
    let provisioned_at = tenant_record()?.map_or_else(now_rfc3339, |old| old.provisioned_at);
    let record = TenantRecord {
        tenant_id: tenant.tenant_id.clone(),
        tenant_short_id: tenant.tenant_short_id.clone(),
        name: tenant.name.clone(),
        provisioned_at,
    };
    storage::put_json(TENANT_KEY, &record)?;
    Ok(record)
}

/// The tenant record, when the tenant is provisioned.
pub fn tenant_record() -> Result<Option<TenantRecord>, HostError> {
    storage::get_json(TENANT_KEY)
}

/// Writes `users/<user_id>` (idempotent like [`record_tenant`]).
pub fn record_user(user: &UserInfo) -> Result<UserRecord, HostError> {
    let key = user_key(&user.user_id);
    let provisioned_at =
        storage::get_json::<UserRecord>(&key)?.map_or_else(now_rfc3339, |old| old.provisioned_at);
    let record = UserRecord {
        tenant_id: user.tenant_id.clone(),
        user_id: user.user_id.clone(),
        email: user.email.clone(),
        first_name: user.first_name.clone(),
        last_name: user.last_name.clone(),
        user_type: user.user_type.clone(),
        provisioned_at,
    };
    storage::put_json(&key, &record)?;
    Ok(record)
}

/// A user's record, when provisioned.
pub fn user_record(user_id: &str) -> Result<Option<UserRecord>, HostError> {
    storage::get_json(&user_key(user_id))
}

/// Removes `users/<user_id>` and everything under `users/<user_id>/`.
pub fn forget_user(user_id: &str) -> Result<(), HostError> {
    let key = user_key(user_id);
    storage::delete(&key)?;
    storage::delete_prefix(&format!("{key}/"))?;
    Ok(())
}

/// `GET /api/v1/status`: 200 `{"data": {"engine": code, "tenant_provisioned": bool,
/// "user_provisioned": bool}}` for the caller's tenant and user; takes no query parameters.
pub fn status(code: &str, ctx: &Context, request: &Request) -> HandlerResult {
    request.query(&[])?;
    let tenant_provisioned = storage::exists(TENANT_KEY)?;
    let user_provisioned = storage::exists(&user_key(&ctx.user_id))?;
    Ok(Response::ok(&serde_json::json!({
        "engine": code,
        "tenant_provisioned": tenant_provisioned,
        "user_provisioned": user_provisioned,
    })))
}
