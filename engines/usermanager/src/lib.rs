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
//! described in `store.rs` (`profiles/`, `directory/`, `users/`).

mod api;
mod edits;
mod profile;
mod store;
mod users;

use tessera_sdk::serde_json::json;
use tessera_sdk::tenancy::{self, UserRecord};
use tessera_sdk::{
    ApiError, Descriptor, Engine, Operation, Router, TenantInfo, UserInfo, storage, time,
};

use crate::api::{ProfileUpdate, UsersQuery};
use crate::profile::Profile;
use crate::store::Change;

/// The engine code, also its path prefix.
const CODE: &str = "usermanager";

/// The description of the `{user_id}` path parameter.
const USER_ID: &str = "The user id";
/// The 404 of a profile the caller may read.
const NOT_VISIBLE: &str = "No such user in the tenant (or another user, for a guest token)";
/// The 403 of a status change.
const STATUS_OWNERS: &str = "Only owners (with a non-guest token) change a user's status";

struct UserManager;

impl Engine for UserManager {
    fn describe() -> Descriptor {
        Descriptor::new(CODE, "User Manager", env!("CARGO_PKG_VERSION"))
            .tenant_provision(true)
            .user_provision(true)
    }

    fn router() -> Router {
        Router::new()
            .get("/api/v1/status", |ctx, req| tenancy::status(CODE, ctx, req))
            .doc(tenancy::status_operation())
            .get("/api/v1/users", users::list)
            .doc(
                Operation::new("List and search the directory")
                    .description(
                        "Ordered by display name (case-insensitive), then user id. Pages stay \
                         full while filtering; a page may still hold fewer profiles than \
                         `limit` (even none) while `meta.has_more` is true: page on until it is \
                         false. Guest tokens may not list the directory.",
                    )
                    .query::<UsersQuery>()
                    .page::<Profile>()
                    .error(403, "Guest tokens cannot list the directory")
                    .invalid("Invalid `q`, `status`, `cursor` or `limit`"),
            )
            .get("/api/v1/users/me", users::me)
            .doc(
                Operation::new("The caller's own profile")
                    .answers::<Profile>(200, "The caller's profile")
                    .error(404, "The caller is not provisioned"),
            )
            .get("/api/v1/users/{user_id}", users::show)
            .doc(
                Operation::new("Show a user's profile")
                    .path_parameter("user_id", USER_ID)
                    .answers::<Profile>(200, "The profile")
                    .error(404, NOT_VISIBLE),
            )
            .patch("/api/v1/users/{user_id}", users::update)
            .doc(
                Operation::new(
                    "Edit a profile: the user themself (any role, while active) or an owner",
                )
                .description(
                    "Sets the display name, title, phone and avatar URL. Emits \
                         `user.profile_updated` `{user_id, actor_id, fields}` (the names of \
                         the fields that changed) when something changed; an edit that changes \
                         nothing writes and emits nothing.",
                )
                .path_parameter("user_id", USER_ID)
                .body::<ProfileUpdate>()
                .answers::<Profile>(200, "The profile after the edit")
                .error(400, "The body is not JSON, or not a JSON object")
                .error(403, "Neither the user (while active) nor an owner")
                .error(404, NOT_VISIBLE)
                .error(409, "Another change of this user is in progress; try again")
                .invalid("Invalid or prohibited fields; nothing changed"),
            )
            .post("/api/v1/users/{user_id}/deactivate", users::deactivate)
            .doc(
                Operation::new("Deactivate a user (owners; not themselves)")
                    .audited("user.deactivated")
                    .description("Emits `user.deactivated` `{user_id, actor_id}`.")
                    .path_parameter("user_id", USER_ID)
                    .answers::<Profile>(200, "The deactivated profile")
                    .error(403, STATUS_OWNERS)
                    .error(404, "No such user")
                    .error(
                        409,
                        "The caller's own account, a user already deactivated, or another \
                         change of this user in progress",
                    ),
            )
            .post("/api/v1/users/{user_id}/reactivate", users::reactivate)
            .doc(
                Operation::new("Reactivate a user (owners; not themselves)")
                    .audited("user.reactivated")
                    .description("Emits `user.reactivated` `{user_id, actor_id}`.")
                    .path_parameter("user_id", USER_ID)
                    .answers::<Profile>(200, "The reactivated profile")
                    .error(403, STATUS_OWNERS)
                    .error(404, "No such user")
                    .error(
                        409,
                        "The caller's own account, a user already active, or another change \
                         of this user in progress",
                    ),
            )
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
            )?;
        }
        Ok(())
    }

    /// Removes the user's profile, directory entry and provisioning record.
    fn deprovision_user(_tenant_id: &str, user_id: &str) -> Result<(), String> {
        store::change(user_id, |_| Ok((Change::Remove, ()))).map_err(|error| error.to_string())
    }
}

tessera_sdk::export_engine!(UserManager);

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_sdk::serde_json::Value;

    const ROUTES: [(&str, &str); 7] = [
        ("get", "/api/v1/status"),
        ("get", "/api/v1/users"),
        ("get", "/api/v1/users/me"),
        ("get", "/api/v1/users/{user_id}"),
        ("patch", "/api/v1/users/{user_id}"),
        ("post", "/api/v1/users/{user_id}/deactivate"),
        ("post", "/api/v1/users/{user_id}/reactivate"),
    ];

    #[test]
    fn the_directorys_query_parameters_are_all_optional() {
        let document = UserManager::router().openapi();
        let parameters = document["paths"]["/api/v1/users"]["get"]["parameters"]
            .as_array()
            .unwrap();
        let names: Vec<&str> = parameters
            .iter()
            .map(|parameter| parameter["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["cursor", "limit", "q", "status"]);
        for parameter in parameters {
            assert_ne!(parameter["required"], true, "{parameter}");
        }
    }

    #[test]
    fn every_route_is_documented() {
        let document = UserManager::router().openapi();
        let paths = document["paths"].as_object().unwrap();
        let documented: usize = paths
            .values()
            .map(|item| item.as_object().unwrap().len())
            .sum();
        assert_eq!(documented, ROUTES.len());
        for (method, path) in ROUTES {
            let operation = &document["paths"][path][method];
            let summary = operation["summary"].as_str().unwrap();
            assert!(
                !summary.is_empty() && !summary.starts_with(&method.to_ascii_uppercase()),
                "{method} {path}: {summary}"
            );
            let responses = operation["responses"].as_object().unwrap();
            assert!(
                responses.keys().any(|status| status.starts_with('2')),
                "{method} {path}"
            );
        }
    }

    #[test]
    fn schemas_carry_the_rules() {
        let document = UserManager::router().openapi();
        let schemas = &document["components"]["schemas"];

        let update = &schemas["ProfileUpdate"];
        assert_eq!(update["additionalProperties"], false);
        assert!(update.get("required").is_none());
        let display_name = &update["properties"]["display_name"];
        assert_eq!(display_name["type"], "string");
        assert_eq!(
            (&display_name["minLength"], &display_name["maxLength"]),
            (&1.into(), &100.into())
        );
        assert_eq!(
            update["properties"]["title"]["type"],
            Value::from(vec!["string", "null"])
        );
        assert_eq!(update["properties"]["avatar_url"]["maxLength"], 2048);

        assert_eq!(
            schemas["Status"]["enum"],
            Value::from(vec!["active", "deactivated"])
        );
        let profile = &schemas["Profile"];
        let required = profile["required"].as_array().unwrap();
        for field in ["user_id", "email", "title", "phone", "avatar_url", "status"] {
            assert!(required.contains(&field.into()), "{field}");
        }
        assert_eq!(profile["properties"]["avatar_url"]["maxLength"], 2048);

        let patch = &document["paths"]["/api/v1/users/{user_id}"]["patch"];
        assert_eq!(patch["requestBody"]["required"], true);
        for status in ["200", "400", "403", "404", "409", "422"] {
            assert!(patch["responses"][status].is_object(), "{status}");
        }
        assert_eq!(patch["parameters"][0]["name"], "user_id");

        let list = &document["paths"]["/api/v1/users"]["get"];
        let parameters = list["parameters"].as_array().unwrap();
        let q = parameters.iter().find(|p| p["name"] == "q").unwrap();
        assert_eq!(
            (&q["required"], &q["schema"]["maxLength"]),
            (&false.into(), &100.into())
        );
        let limit = parameters.iter().find(|p| p["name"] == "limit").unwrap();
        assert_eq!(
            (&limit["schema"]["minimum"], &limit["schema"]["default"]),
            (&1.into(), &50.into())
        );
        assert_eq!(parameters.len(), 4);
        assert!(
            list["responses"]["200"]["content"]["application/json"]["schema"]["properties"]["meta"]
                .is_object()
        );
    }
}
