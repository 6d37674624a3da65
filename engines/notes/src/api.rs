//! The JSON the notes API reads and answers, as documentation types: their schemas (derived with
//! `schemars`, doc comments becoming descriptions) are what [`Notes::router`](crate::Notes)
//! documents each route with. Nothing here is built or parsed: the handlers read bodies field by
//! field (`input.rs`) and answer the views of `handlers.rs`, whose shapes a unit test there
//! holds against these.

// Documentation only: the types are never constructed, their fields never read.
#![allow(dead_code)]

use schemars::JsonSchema;

use crate::input::{MAX_TAG_CHARS, MAX_TAGS, MAX_TITLE_CHARS};

/// What a tag may hold (with 1 to 50 characters): lower-case ASCII letters, digits, `-`, `_`.
const TAG_PATTERN: &str = "^[a-z0-9_-]+$";

/// What a user may do with a note: `owner` (everything: edit, delete, share), `edit` (read and
/// change title, body, tags and pinned), `read` (read only).
#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Permission {
    Owner,
    Edit,
    Read,
}

/// The permission a share grants: `read`, or `edit` (change title, body, tags and pinned).
#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SharePermission {
    Read,
    Edit,
}

/// One user a note is shared with.
#[derive(JsonSchema)]
pub struct Share {
    pub user_id: String,
    pub permission: SharePermission,
}

/// A note.
#[derive(JsonSchema)]
pub struct Note {
    /// UUID v7 (ids sort by creation).
    #[schemars(extend("format" = "uuid"))]
    pub id: String,
    pub title: String,
    /// Markdown, stored and returned as sent.
    pub body: String,
    /// Distinct tags, in the order sent.
    pub tags: Vec<String>,
    pub pinned: bool,
    /// The user who created the note.
    pub owner_id: String,
    /// The users it is shared with, by user id.
    pub shares: Vec<Share>,
    /// The caller's permission on this note.
    pub permission: Permission,
    /// RFC 3339.
    #[schemars(extend("format" = "date-time"))]
    pub created_at: String,
    /// RFC 3339.
    #[schemars(extend("format" = "date-time"))]
    pub updated_at: String,
}

/// A note as lists show it: without its body and shares (read those with
/// `GET /notes/api/v1/notes/{id}`).
#[derive(JsonSchema)]
pub struct NoteSummary {
    /// UUID v7 (ids sort by creation).
    #[schemars(extend("format" = "uuid"))]
    pub id: String,
    pub title: String,
    /// Distinct tags, in the order sent.
    pub tags: Vec<String>,
    pub pinned: bool,
    /// The user who created the note.
    pub owner_id: String,
    /// The caller's permission on this note.
    pub permission: Permission,
    /// RFC 3339.
    #[schemars(extend("format" = "date-time"))]
    pub created_at: String,
    /// RFC 3339.
    #[schemars(extend("format" = "date-time"))]
    pub updated_at: String,
}

/// `POST /notes/api/v1/notes`.
#[derive(JsonSchema)]
pub struct NoteCreate {
    /// Trimmed; 1 to 200 characters.
    #[schemars(length(min = 1, max = MAX_TITLE_CHARS))]
    pub title: String,
    /// Markdown; at most the tenant's `max_note_length` characters (100,000 by default).
    #[schemars(transform = tessera_sdk::openapi::not_null, extend("default" = ""))]
    pub body: Option<String>,
    /// At most 20 distinct tags, each 1 to 50 characters of `a-z`, `0-9`, `-` and `_`.
    #[schemars(
        transform = tessera_sdk::openapi::not_null,
        length(max = MAX_TAGS),
        inner(length(min = 1, max = MAX_TAG_CHARS), regex(pattern = TAG_PATTERN)),
        extend("uniqueItems" = true, "default" = [])
    )]
    pub tags: Option<Vec<String>>,
    #[schemars(transform = tessera_sdk::openapi::not_null, extend("default" = false))]
    pub pinned: Option<bool>,
}

/// `PATCH /notes/api/v1/notes/{id}`: any subset of the fields, with the rules of creation; a
/// field left out keeps its value (none may be `null`).
#[derive(JsonSchema)]
pub struct NoteUpdate {
    /// Trimmed; 1 to 200 characters.
    #[schemars(transform = tessera_sdk::openapi::not_null, length(min = 1, max = MAX_TITLE_CHARS))]
    pub title: Option<String>,
    /// Markdown; at most the tenant's `max_note_length` characters (100,000 by default).
    #[schemars(transform = tessera_sdk::openapi::not_null)]
    pub body: Option<String>,
    /// At most 20 distinct tags, each 1 to 50 characters of `a-z`, `0-9`, `-` and `_`; replaces
    /// the note's tags.
    #[schemars(
        transform = tessera_sdk::openapi::not_null,
        length(max = MAX_TAGS),
        inner(length(min = 1, max = MAX_TAG_CHARS), regex(pattern = TAG_PATTERN)),
        extend("uniqueItems" = true)
    )]
    pub tags: Option<Vec<String>>,
    #[schemars(transform = tessera_sdk::openapi::not_null)]
    pub pinned: Option<bool>,
}

/// `PUT /notes/api/v1/notes/{id}/shares/{user_id}`.
#[derive(JsonSchema)]
pub struct ShareWrite {
    pub permission: SharePermission,
}

/// A share as `PUT …/shares/{user_id}` answers it.
#[derive(JsonSchema)]
pub struct NoteShare {
    #[schemars(extend("format" = "uuid"))]
    pub note_id: String,
    pub user_id: String,
    pub permission: SharePermission,
}

/// Which notes a list shows: `all` (owned and shared with the caller, the default), `mine`
/// (owned by the caller), `shared` (shared with the caller).
#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
pub enum Scope {
    All,
    Mine,
    Shared,
}

/// The query of `GET /notes/api/v1/notes`.
#[derive(JsonSchema)]
pub struct ListQuery {
    /// Only notes with this tag (1 to 50 characters of `a-z`, `0-9`, `-` and `_`).
    #[schemars(length(min = 1, max = MAX_TAG_CHARS), regex(pattern = TAG_PATTERN))]
    pub tag: Option<String>,
    /// Only pinned (`true`) or unpinned (`false`) notes; `1` and `0` work too.
    pub pinned: Option<bool>,
    /// `all` (the default), `mine` or `shared`.
    #[schemars(transform = tessera_sdk::openapi::not_null, extend("default" = "all"))]
    pub scope: Option<Scope>,
    /// Opaque cursor from a previous page's `meta.next_cursor`.
    pub cursor: Option<String>,
    /// Page size; default 50, and a larger value than 100 is taken as 100.
    #[schemars(range(min = 1, max = 4_294_967_295u64), extend("default" = 50))]
    pub limit: Option<u32>,
}

#[cfg(test)]
mod tests {
    use tessera_sdk::Engine;
    use tessera_sdk::serde_json::{Value, json};

    use crate::Notes;

    /// Every route of the engine.
    const ROUTES: [(&str, &str); 8] = [
        ("get", "/api/v1/status"),
        ("get", "/api/v1/notes"),
        ("post", "/api/v1/notes"),
        ("get", "/api/v1/notes/{id}"),
        ("patch", "/api/v1/notes/{id}"),
        ("delete", "/api/v1/notes/{id}"),
        ("put", "/api/v1/notes/{id}/shares/{user_id}"),
        ("delete", "/api/v1/notes/{id}/shares/{user_id}"),
    ];

    fn document() -> Value {
        Notes::router().openapi()
    }

    /// Every `$ref` in `value`.
    fn references(value: &Value, found: &mut Vec<String>) {
        match value {
            Value::Object(object) => {
                for (key, value) in object {
                    match (key.as_str(), value) {
                        ("$ref", Value::String(reference)) => found.push(reference.clone()),
                        _ => references(value, found),
                    }
                }
            }
            Value::Array(values) => values.iter().for_each(|value| references(value, found)),
            _ => {}
        }
    }

    #[test]
    fn every_route_is_documented_with_a_summary_and_a_success() {
        let document = document();
        let mut routes: Vec<(String, String)> = Vec::new();
        for (path, item) in document["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                routes.push((method.clone(), path.clone()));
                let summary = operation["summary"].as_str().unwrap();
                assert!(!summary.is_empty(), "{method} {path}");
                assert_ne!(
                    summary,
                    format!("{} {path}", method.to_ascii_uppercase()),
                    "{method} {path} has no summary of its own"
                );
                let responses = operation["responses"].as_object().unwrap();
                assert!(
                    responses.keys().any(|status| status.starts_with('2')),
                    "{method} {path} documents no success"
                );
                assert!(!responses.contains_key("default"), "{method} {path}");
            }
        }
        routes.sort();
        let mut expected: Vec<(String, String)> = ROUTES
            .iter()
            .map(|(method, path)| ((*method).to_owned(), (*path).to_owned()))
            .collect();
        expected.sort();
        assert_eq!(routes, expected);
    }

    #[test]
    fn every_reference_names_a_schema() {
        let document = document();
        let mut found = Vec::new();
        references(&document, &mut found);
        assert!(!found.is_empty());
        for reference in found {
            let name = reference
                .strip_prefix("#/components/schemas/")
                .unwrap_or_else(|| panic!("{reference}"));
            assert!(
                document["components"]["schemas"][name].is_object(),
                "{reference}"
            );
        }
    }

    #[test]
    fn schemas_keep_the_rules_of_the_handlers() {
        let document = document();
        let schemas = &document["components"]["schemas"];
        assert!(schemas.get("NotesNote").is_none() && schemas["Note"].is_object());

        let create = &schemas["NoteCreate"];
        assert_eq!(create["required"], json!(["title"]));
        assert_eq!(create["properties"]["title"]["minLength"], 1);
        assert_eq!(create["properties"]["title"]["maxLength"], 200);
        // Optional but never null.
        assert_eq!(create["properties"]["body"]["type"], "string");
        let tags = &create["properties"]["tags"];
        assert_eq!(tags["type"], "array");
        assert_eq!(tags["maxItems"], 20);
        assert_eq!(tags["uniqueItems"], true);
        assert_eq!(tags["items"]["maxLength"], 50);
        assert_eq!(tags["items"]["pattern"], "^[a-z0-9_-]+$");
        assert!(schemas["NoteUpdate"].get("required").is_none());
        assert_eq!(
            schemas["NoteUpdate"]["properties"]["title"]["type"],
            "string"
        );

        assert_eq!(
            schemas["Permission"]["enum"],
            json!(["owner", "edit", "read"])
        );
        assert_eq!(schemas["SharePermission"]["enum"], json!(["read", "edit"]));
        assert_eq!(schemas["ShareWrite"]["required"], json!(["permission"]));
        assert_eq!(
            schemas["Note"]["properties"]["permission"]["$ref"],
            "#/components/schemas/Permission"
        );

        let list = &document["paths"]["/api/v1/notes"]["get"];
        let parameter = |name: &str| {
            list["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .find(|parameter| parameter["name"] == name)
                .unwrap_or_else(|| panic!("no parameter {name}"))
                .clone()
        };
        assert_eq!(
            parameter("scope")["schema"]["enum"],
            json!(["all", "mine", "shared"])
        );
        assert_eq!(parameter("limit")["schema"]["minimum"], 1);
        assert_eq!(parameter("tag")["required"], false);
        assert_eq!(
            list["responses"]["200"]["content"]["application/json"]["schema"]["properties"]["data"]
                ["items"]["$ref"],
            "#/components/schemas/NoteSummary"
        );
        let share = &document["paths"]["/api/v1/notes/{id}/shares/{user_id}"]["put"];
        assert!(share["responses"]["200"].is_object() && share["responses"]["201"].is_object());
    }
}
