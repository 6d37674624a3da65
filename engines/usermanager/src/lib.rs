//! The User Manager engine: the tenant's user directory, fed by user provisioning. Each
//! provisioned user has a profile (e-mail, names and type from the host; display name, title,
//! phone and avatar URL editable by the user or an owner; a status owners switch between
//! `active` and `deactivated`). Deprovisioning a user removes the profile; deprovisioning the
//! tenant removes everything.
//!
//! Routes (under `/usermanager`): `GET /api/v1/status`, `GET /api/v1/users` (`q`, `status`,
//! `cursor`, `limit`), `GET /api/v1/users/me`, `GET` and `PATCH /api/v1/users/{user_id}`,
//! `POST /api/v1/users/{user_id}/deactivate` and `/reactivate`. Events (identifiers only):
//! `user.profile_updated` `{user_id, actor_id, fields}`, `user.deactivated` and
//! `user.reactivated` `{user_id, actor_id}`.
//!
//! Storage (tenant-scoped by the host): `tenant`, `directory-settings`, and per user the keys
//! described in `store.rs` (`profiles/`, `directory/`, `users/`, `leases/`).

mod edits;
mod profile;
mod store;
mod users;

use tessera_sdk::serde_json::json;
use tessera_sdk::tenancy::{self, UserRecord};
use tessera_sdk::{
    ApiError, Context, Descriptor, Engine, Request, Response, Router, TenantInfo, UserInfo,
    storage, time,
};

use crate::store::Change;

/// The engine code, also its path prefix.
const CODE: &str = "usermanager";

struct UserManager;

impl Engine for UserManager {
    fn describe() -> Descriptor {
        Descriptor::new(CODE, "User Manager", env!("CARGO_PKG_VERSION"))
            .tenant_provision(true)
            .user_provision(true)
    }

    fn handle(ctx: &Context, request: Request) -> Response {
        Router::new()
            .get("/api/v1/status", |ctx, req| tenancy::status(CODE, ctx, req))
            .get("/api/v1/users", users::list)
            .get("/api/v1/users/me", users::me)
            .get("/api/v1/users/{user_id}", users::show)
            .patch("/api/v1/users/{user_id}", users::update)
            .post("/api/v1/users/{user_id}/deactivate", users::deactivate)
            .post("/api/v1/users/{user_id}/reactivate", users::reactivate)
            .handle(ctx, request)
    }

    fn provision_tenant(tenant: &TenantInfo) -> Result<(), String> {
        storage::put_json_if_absent("directory-settings", || {
            json!({
                "default_role": "editor",
                "allow_guests": true,
                "allow_agents": true,
                "created_at": time::now_rfc3339(),
            })
        })?;
        tenancy::record_tenant(tenant)?;
        Ok(())
    }

    /// Creates the user's profile, or refreshes the host's data in it (publishing
    /// `user.profile_updated` when that changed something).
    fn provision_user(user: &UserInfo) -> Result<(), String> {
        let now = time::now_rfc3339();
        let changed = store::change(&user.user_id, |current| {
            let (profile, changed) = profile::provisioned(user, current, &now);
            let provisioned_at = tenancy::user_record(&user.user_id)?
                .map_or_else(|| now.clone(), |record| record.provisioned_at);
            let record = UserRecord {
                user: user.clone(),
                provisioned_at,
            };
            Ok((Change::Provision(profile, record), changed))
        })
        .map_err(|error: ApiError| error.to_string())?;
        if !changed.is_empty() {
            users::publish(
                "user.profile_updated",
                &users::profile_updated(&user.user_id, None, &changed),
            );
        }
        Ok(())
    }

    /// Removes the user's profile, directory entry and provisioning record.
    fn deprovision_user(_tenant_id: &str, user_id: &str) -> Result<(), String> {
        store::change(user_id, |_| Ok((Change::Remove, ()))).map_err(|error| error.to_string())
    }
}

tessera_sdk::export_engine!(UserManager);
