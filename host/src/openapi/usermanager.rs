//! Documentation-only entries of the usermanager engine's routes (`/usermanager/api/v1/…`),
//! merged into the host's document by `openapi::document`. See `chat.rs` for the pattern:
//! nothing here is called; the types mirror the JSON the engine (`engines/usermanager`) reads
//! and writes.

// Doc-only: the types are never constructed and the functions never called.
#![allow(dead_code)]

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, OpenApi, ToSchema};

use crate::http::envelope::{Data, DataWithMeta};
use crate::http::error::{ErrorBody, ValidationErrorBody};
use crate::http::paging::CursorMeta;

/// The usermanager engine's part of the OpenAPI document.
#[derive(OpenApi)]
#[openapi(
    paths(
        usermanager_status, usermanager_users_list, usermanager_users_me, usermanager_users_show,
        usermanager_users_update, usermanager_users_deactivate, usermanager_users_reactivate,
    ),
    tags((name = "usermanager", description = "The user manager engine: the tenant's user directory"))
)]
pub struct Doc;

// ---------------------------------------------------------------------------------------------
// Schemas
// ---------------------------------------------------------------------------------------------

/// Whether a user is listed as active.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum UserManagerStatus {
    Active,
    Deactivated,
}

/// A user of the tenant's directory.
#[derive(Debug, Serialize, ToSchema)]
pub struct UserManagerProfile {
    pub user_id: String,
    /// From provisioning.
    pub email: String,
    /// From provisioning.
    pub first_name: String,
    /// From provisioning.
    pub last_name: String,
    /// "First Last" (or the e-mail address) until edited.
    pub display_name: String,
    #[schema(required = true)]
    pub title: Option<String>,
    #[schema(required = true)]
    pub phone: Option<String>,
    #[schema(required = true, format = "uri")]
    pub avatar_url: Option<String>,
    /// `user`, `guest` or `agent`, from provisioning.
    pub user_type: String,
    pub status: UserManagerStatus,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339.
    pub updated_at: String,
}

/// `PATCH /usermanager/api/v1/users/{user_id}`: every field optional; any other field is 422
/// `prohibited`. Strings are trimmed; an empty `title`, `phone` or `avatar_url` clears it.
#[derive(Debug, Deserialize, ToSchema)]
pub struct UserManagerProfileUpdate {
    /// Rules `required`, `string`, `max:100`.
    #[schema(nullable = false, min_length = 1, max_length = 100)]
    pub display_name: Option<String>,
    /// Null clears it. Rule `max:100`.
    #[schema(max_length = 100)]
    pub title: Option<String>,
    /// Null clears it. Digits, spaces, `+`, `-`, `(`, `)`, at least three digits (rules
    /// `min:3`, `max:32`, `phone`).
    #[schema(min_length = 3, max_length = 32)]
    pub phone: Option<String>,
    /// Null clears it. An `https://` URL with a host (rules `https`, `url`, `max:2048`).
    #[schema(format = "uri", max_length = 2048)]
    pub avatar_url: Option<String>,
}

/// The engine's provisioning state for the caller.
#[derive(Debug, Serialize, ToSchema)]
pub struct UserManagerProvisioningStatus {
    /// Always `usermanager`.
    pub engine: String,
    pub tenant_provisioned: bool,
    pub user_provisioned: bool,
}

/// The query of the directory list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct UserManagerListQuery {
    /// Case-insensitive substring of the display name, first or last name or e-mail address
    /// (at most 100 characters; empty means no filter).
    pub q: Option<String>,
    /// Only users in this status (422 rule `in` otherwise).
    #[param(inline)]
    pub status: Option<UserManagerStatus>,
    /// Opaque cursor from a previous page's `meta.next_cursor`.
    pub cursor: Option<String>,
    /// Page size; default 50, at most 100.
    #[param(minimum = 1, maximum = 100, default = 50)]
    pub limit: Option<u32>,
}

// ---------------------------------------------------------------------------------------------
// Routes
// ---------------------------------------------------------------------------------------------

/// Whether the caller's tenant and user are provisioned on the engine.
#[utoipa::path(
    get,
    path = "/usermanager/api/v1/status",
    operation_id = "usermanager_status",
    tag = "usermanager",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The provisioning state", body = Data<UserManagerProvisioningStatus>),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
    )
)]
pub fn usermanager_status() {}

/// List and search the directory.
///
/// Ordered by display name (case-insensitive), then user id. Pages stay full while filtering.
/// Guest tokens may not list the directory.
#[utoipa::path(
    get,
    path = "/usermanager/api/v1/users",
    operation_id = "usermanager_users_list",
    tag = "usermanager",
    params(UserManagerListQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "A page of profiles", body = DataWithMeta<Vec<UserManagerProfile>, CursorMeta>),
        (status = 400, description = "Unknown query parameter", body = ErrorBody),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 403, description = "Guest tokens cannot list the directory", body = ErrorBody),
        (status = 422, description = "Invalid `q`, `status`, `cursor` or `limit`", body = ValidationErrorBody),
    )
)]
pub fn usermanager_users_list() {}

/// The caller's own profile.
#[utoipa::path(
    get,
    path = "/usermanager/api/v1/users/me",
    operation_id = "usermanager_users_me",
    tag = "usermanager",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The caller's profile", body = Data<UserManagerProfile>),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 404, description = "The caller is not provisioned", body = ErrorBody),
    )
)]
pub fn usermanager_users_me() {}

/// Show a user's profile.
#[utoipa::path(
    get,
    path = "/usermanager/api/v1/users/{user_id}",
    operation_id = "usermanager_users_show",
    tag = "usermanager",
    params(("user_id" = String, Path, description = "The user id")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The profile", body = Data<UserManagerProfile>),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 404, description = "No such user in the tenant (or another user, for a guest token)", body = ErrorBody),
    )
)]
pub fn usermanager_users_show() {}

/// Edit a profile: the user themself (any role, while active) or an owner.
///
/// Emits `user.profile_updated` `{user_id, fields}` when something changed.
#[utoipa::path(
    patch,
    path = "/usermanager/api/v1/users/{user_id}",
    operation_id = "usermanager_users_update",
    tag = "usermanager",
    params(("user_id" = String, Path, description = "The user id")),
    request_body = UserManagerProfileUpdate,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The profile after the edit", body = Data<UserManagerProfile>),
        (status = 400, description = "The body is not a JSON object", body = ErrorBody),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 403, description = "Neither the user (while active) nor an owner", body = ErrorBody),
        (status = 404, description = "No such user", body = ErrorBody),
        (status = 409, description = "Another change of this user is in progress", body = ErrorBody),
        (status = 422, description = "Invalid or prohibited fields; nothing changed", body = ValidationErrorBody),
    )
)]
pub fn usermanager_users_update() {}

/// Deactivate a user (owners; not themselves).
///
/// Emits `user.deactivated` `{user_id}`.
#[utoipa::path(
    post,
    path = "/usermanager/api/v1/users/{user_id}/deactivate",
    operation_id = "usermanager_users_deactivate",
    tag = "usermanager",
    params(("user_id" = String, Path, description = "The user id")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The deactivated profile", body = Data<UserManagerProfile>),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 403, description = "Only owners change a user's status", body = ErrorBody),
        (status = 404, description = "No such user", body = ErrorBody),
        (status = 409, description = "The caller's own account, or the user is already deactivated", body = ErrorBody),
    )
)]
pub fn usermanager_users_deactivate() {}

/// Reactivate a user (owners).
///
/// Emits `user.reactivated` `{user_id}`.
#[utoipa::path(
    post,
    path = "/usermanager/api/v1/users/{user_id}/reactivate",
    operation_id = "usermanager_users_reactivate",
    tag = "usermanager",
    params(("user_id" = String, Path, description = "The user id")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The reactivated profile", body = Data<UserManagerProfile>),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 403, description = "Only owners change a user's status", body = ErrorBody),
        (status = 404, description = "No such user", body = ErrorBody),
        (status = 409, description = "The caller's own account, or the user is already active", body = ErrorBody),
    )
)]
pub fn usermanager_users_reactivate() {}
