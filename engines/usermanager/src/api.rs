//! The API description's own types: the PATCH body and the list query the handlers read by
//! hand (`edits.rs` and `users.rs` check them field by field, to name every failing rule), and
//! the schema transforms the documented types share. Nothing here is constructed; the profile
//! itself (`profile.rs`) documents the answers.

use schemars::JsonSchema;

use crate::profile::Status;

/// What `avatar_url` accepts, surrounding whitespace (trimmed) included: empty (clears it), or
/// `https://` (any case) and a host without `@`, then a path, query or fragment, no whitespace
/// or control characters.
const AVATAR_URL_PATTERN: &str =
    r"^\s*(?:[Hh][Tt][Tt][Pp][Ss]://[^/?#@\s\x00-\x1f\x7f]+(?:[/?#][^\s\x00-\x1f\x7f]*)?)?\s*$";

/// What `phone` accepts, surrounding whitespace (trimmed) included: empty (clears it), or 3 to
/// 32 digits, spaces, `+`, `-`, `(` and `)` with at least three digits.
const PHONE_PATTERN: &str = r"^\s*(?:(?=(?:[^0-9]*[0-9]){3})[0-9 +()\-]{3,32})?\s*$";

/// `PATCH /api/v1/users/{user_id}`: a JSON object whose fields are all optional; any other field
/// is 422 `prohibited` (e-mail, names and type come from provisioning, the status from owners).
/// Strings are trimmed; an empty `title`, `phone` or `avatar_url` clears it like null. Nothing
/// is applied unless every field is valid.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(
    dead_code,
    reason = "documentation only: the handler reads the body by hand"
)]
pub struct ProfileUpdate {
    /// 1 to 100 characters after trimming; never null or blank (rules `required`, `string`,
    /// `max:100`).
    #[schemars(length(min = 1, max = 100), transform = tessera_sdk::openapi::not_null)]
    display_name: Option<String>,
    /// Null or empty clears it; at most 100 characters after trimming (rules `string`,
    /// `max:100`).
    #[schemars(length(max = 100))]
    title: Option<String>,
    /// Null or empty clears it; else 3 to 32 characters after trimming: digits, spaces, `+`,
    /// `-`, `(`, `)`, with at least three digits (rules `string`, `min:3`, `max:32`, `phone`).
    #[schemars(regex(pattern = PHONE_PATTERN))]
    phone: Option<String>,
    /// Null or empty clears it; else an `https://` URL with a host, at most 2048 characters
    /// (rules `string`, `max:2048`, `https`, `url`).
    #[schemars(length(max = 2048), regex(pattern = AVATAR_URL_PATTERN))]
    avatar_url: Option<String>,
}

/// The `status` filter: a [`Status`], or empty for all.
fn status_filter(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "string",
        "enum": ["", "active", "deactivated"],
    })
}

/// The query of the directory list.
#[derive(JsonSchema)]
#[allow(
    dead_code,
    reason = "documentation only: the handler reads the query by hand"
)]
pub struct UsersQuery {
    /// Case-insensitive substring of the display name, first or last name or e-mail address;
    /// empty means no filter (422 rule `max:100`).
    #[schemars(length(max = 100))]
    q: Option<String>,
    /// Only users in this status; empty means all (422 rule `in` otherwise).
    // `default`: with `schema_with`, the field would be listed as required.
    #[serde(default)]
    #[schemars(schema_with = "status_filter")]
    status: Option<Status>,
    /// Opaque cursor from a previous page's `meta.next_cursor` (422 rule `invalid` when it is
    /// not one of this list's).
    cursor: Option<String>,
    /// Page size: default 50; larger values than 100 are taken as 100 (422 rules `integer`,
    /// `min:1`).
    #[schemars(range(min = 1, max = 4_294_967_295u64), extend("default" = 50))]
    limit: Option<u32>,
}
