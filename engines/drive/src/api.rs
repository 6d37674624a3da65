//! The drive's API description: the documented routes ([`router`]) and the schemas of what they
//! read and answer (documentation types deriving `JsonSchema`; [`Usage`] is also what
//! `GET /api/v1/usage` serializes). The host shows them under `/drive/…` as `drive.<Name>`.

// Documentation types: only their schemas are used, never their values.
#![allow(dead_code)]

use schemars::JsonSchema;
use serde::Serialize;
use tessera_sdk::{Operation, Router, tenancy};

use crate::{CODE, files, folders, usage};

/// The drive's routes, each documented.
pub fn router() -> Router {
    Router::new()
        .get("/api/v1/status", |ctx, req| tenancy::status(CODE, ctx, req))
        .doc(tenancy::status_operation())
        .get("/api/v1/usage", usage)
        .doc(
            Operation::new("The tenant's storage use, its quota and the upload limit")
                .ok::<Usage>(),
        )
        .post("/api/v1/folders", folders::create)
        .doc(
            Operation::new(
                "Create a folder (in the shared drive's root unless `parent_id` says otherwise)",
            )
            .description(
                "Emits `folder.created` `{folder_id, parent_id, actor_id}` (shared drive only).",
            )
            .body::<FolderCreate>()
            .created::<Folder>()
            .error(403, "Viewers and guests cannot write")
            .error(409, "The parent holds a folder or file of this name")
            .invalid(
                "`name` (`required`, `max:255`, `max_bytes:900`, `filename`), `parent_id` \
                 (`exists`: no such folder, or one the caller does not see)",
            ),
        )
        .get("/api/v1/folders/{id}", folders::show)
        .doc(
            Operation::new("Show a folder of the shared drive or of the caller's home drive")
                .description("Guest tokens do not see the shared drive.")
                .path_parameter("id", FOLDER_ID)
                .ok::<Folder>()
                .error(404, FOLDER_NOT_FOUND),
        )
        .patch("/api/v1/folders/{id}", folders::update)
        .doc(
            Operation::new("Rename and/or move a folder within its drive")
                .description(
                    "In the shared drive, its creator or an owner. Emits `folder.updated` \
                     `{folder_id, parent_id, actor_id}` (shared drive only; not when nothing \
                     changed).",
                )
                .path_parameter("id", FOLDER_ID)
                .body::<FolderUpdate>()
                .ok::<Folder>()
                .error(
                    403,
                    "A viewer or guest, an editor changing someone else's folder, or the root or \
                     a home folder",
                )
                .error(404, FOLDER_NOT_FOUND)
                .error(409, "The destination holds a folder or file of this name")
                .invalid(
                    "`name` as on create, `parent_id` (`exists`, `same_drive`, `not_descendant`)",
                ),
        )
        .delete("/api/v1/folders/{id}", folders::destroy)
        .doc(
            Operation::new("Delete a folder with every folder and file in it")
                .description(
                    "In the shared drive, its creator (only while it is empty) or an owner; in a \
                     home drive, its user. Emits `folder.deleted` `{folder_id, parent_id, \
                     size_bytes, actor_id}` (shared drive only; `size_bytes` is what was freed).",
                )
                .path_parameter("id", FOLDER_ID)
                .no_content()
                .error(
                    403,
                    "A viewer or guest, an editor deleting someone else's or a non-empty folder \
                     of the shared drive, or the root or a home folder",
                )
                .error(404, FOLDER_NOT_FOUND),
        )
        .get("/api/v1/folders/{id}/children", folders::children)
        .doc(
            Operation::new(
                "List a folder: its folders first, then its files, each by name without regard \
                 to case",
            )
            .path_parameter("id", FOLDER_ID)
            .query::<ChildrenQuery>()
            .page::<Item>()
            .error(404, FOLDER_NOT_FOUND)
            .invalid("Invalid `cursor` or `limit`"),
        )
        .post("/api/v1/folders/{id}/files", files::upload)
        .doc(
            Operation::new(
                "Upload a file into a folder: the request body is the file, its `Content-Type` \
                 the file's",
            )
            .description(
                "The body is the file's bytes, with any `Content-Type` (default \
                 `application/octet-stream`). An upload is at most the drive's setting \
                 `max-upload-bytes` (operator variable \
                 `TESSERA_ENGINES__DRIVE__MAX_UPLOAD_BYTES`, never above the host's engine \
                 body limit; `max_upload_bytes` of the usage), and the tenant's files at most \
                 `tenant-quota-bytes` (`TESSERA_ENGINES__DRIVE__TENANT_QUOTA_BYTES`). Nothing \
                 is stored when the upload is refused. Emits `file.uploaded` `{file_id, \
                 folder_id, size_bytes, actor_id}` (shared drive only).",
            )
            .path_parameter("id", FOLDER_ID)
            .query::<UploadQuery>()
            .optional_binary_body("application/octet-stream")
            .created::<File>()
            .error(403, "Viewers and guests cannot write")
            .error(
                404,
                "No such folder, someone else's home drive, the shared drive for a guest token, or \
                 the folder was deleted during the upload",
            )
            .error(409, "The folder holds a folder or file of this name")
            .error(413, "Larger than `max_upload_bytes`")
            .invalid(
                "`name` as for folders, `content_type` (`mime_type`), `content` (`quota`: the \
                 tenant's quota would be exceeded)",
            ),
        )
        .get("/api/v1/files/{id}", files::show)
        .doc(
            Operation::new("Show a file's metadata")
                .path_parameter("id", FILE_ID)
                .ok::<File>()
                .error(404, FILE_NOT_FOUND),
        )
        .patch("/api/v1/files/{id}", files::update)
        .doc(
            Operation::new("Rename and/or move a file")
                .description(
                    "In the shared drive, its uploader or an owner. Emits `file.updated` \
                     `{file_id, folder_id, actor_id}` when the file was or is in the shared \
                     drive (not when nothing changed).",
                )
                .path_parameter("id", FILE_ID)
                .body::<FileUpdate>()
                .ok::<File>()
                .error(
                    403,
                    "A viewer or guest, or an editor changing someone else's file",
                )
                .error(404, FILE_NOT_FOUND)
                .error(409, "The destination holds a folder or file of this name")
                .invalid("`name` as on upload, `folder_id` (`exists`)"),
        )
        .delete("/api/v1/files/{id}", files::destroy)
        .doc(
            Operation::new(
                "Delete a file: its bytes and metadata go in one transaction and the quota is \
                 freed",
            )
            .description(
                "In the shared drive, its uploader or an owner. Emits `file.deleted` `{file_id, \
                 folder_id, size_bytes, actor_id}` (shared drive only).",
            )
            .path_parameter("id", FILE_ID)
            .no_content()
            .error(
                403,
                "A viewer or guest, or an editor deleting someone else's file",
            )
            .error(404, FILE_NOT_FOUND),
        )
        .get("/api/v1/files/{id}/content", files::download)
        .doc(
            Operation::new(
                "Download a file: its exact bytes with its content type, as an attachment",
            )
            .description(
                "Headers: `Content-Type` (the file's, shown here as \
                     `application/octet-stream`), `Content-Disposition: attachment; \
                     filename=\"…\"; filename*=UTF-8''…`, `X-Content-Type-Options: nosniff` and \
                     a sandboxing `Content-Security-Policy`.",
            )
            .path_parameter("id", FILE_ID)
            .answers_binary(200, "The file's bytes", "application/octet-stream")
            .error(404, FILE_NOT_FOUND),
        )
}

/// The description of a folder id in a path.
const FOLDER_ID: &str = "A folder id: `root`, `home` (the caller's home folder) or a UUID";
/// The description of a file id in a path.
const FILE_ID: &str = "The file id";
/// The 404 of a folder in the path.
const FOLDER_NOT_FOUND: &str =
    "No such folder, someone else's home drive, or the shared drive for a guest token";
/// The 404 of a file in the path.
const FILE_NOT_FOUND: &str =
    "No such file, or in someone else's home drive or (for a guest token) the shared drive";

/// `folder`.
#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FolderKind {
    Folder,
}

/// `file`.
#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FileKind {
    File,
}

/// A folder: the shared drive's root (`root`), a user's home (`home-<user_id>`), or one made by
/// a user (UUID v7).
#[derive(JsonSchema)]
#[schemars(transform = tessera_sdk::openapi::all_required)]
pub struct Folder {
    pub kind: FolderKind,
    pub id: String,
    pub name: String,
    /// Null for the root and home folders.
    pub parent_id: Option<String>,
    /// The user whose home drive holds the folder; null in the shared drive.
    pub owner_id: Option<String>,
    /// Null for the root and home folders.
    pub created_by: Option<String>,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339.
    pub updated_at: String,
}

/// A file's metadata.
#[derive(JsonSchema)]
#[schemars(transform = tessera_sdk::openapi::all_required)]
pub struct File {
    pub kind: FileKind,
    /// UUID v7.
    #[schemars(extend("format" = "uuid"))]
    pub id: String,
    pub name: String,
    pub folder_id: String,
    /// The user whose home drive holds the file; null in the shared drive.
    pub owner_id: Option<String>,
    /// The `Content-Type` of the upload (default `application/octet-stream`).
    pub content_type: String,
    pub size_bytes: u64,
    pub created_by: String,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339.
    pub updated_at: String,
}

/// An item of a folder listing: a folder or a file, told apart by `kind`.
#[derive(JsonSchema)]
#[serde(untagged)]
pub enum Item {
    Folder(Folder),
    File(File),
}

/// The tenant's storage use and limits.
#[derive(Serialize, JsonSchema)]
pub struct Usage {
    /// Bytes of all the tenant's files (shared and home drives).
    pub used_bytes: u64,
    /// The drive's setting `tenant-quota-bytes` (operator variable
    /// `TESSERA_ENGINES__DRIVE__TENANT_QUOTA_BYTES`).
    pub quota_bytes: u64,
    /// The drive's setting `max-upload-bytes` (operator variable
    /// `TESSERA_ENGINES__DRIVE__MAX_UPLOAD_BYTES`), never above the host's engine body limit.
    pub max_upload_bytes: u64,
}

/// `POST /drive/api/v1/folders`.
#[derive(JsonSchema)]
pub struct FolderCreate {
    /// 1 to 255 characters (at most 900 bytes), no `/`, `\` or control characters, not `.` or
    /// `..`, not only spaces; unique in the parent among folders and files, whatever the case.
    #[schemars(length(min = 1, max = 255), regex(pattern = NAME_PATTERN))]
    pub name: String,
    /// A folder id, or `home` for the caller's home folder; absent or null: the root.
    #[schemars(extend("default" = "root"))]
    pub parent_id: Option<String>,
}

/// `PATCH /drive/api/v1/folders/{id}`: rename and/or move within the folder's drive.
#[derive(JsonSchema)]
pub struct FolderUpdate {
    /// The new name, with the rules of a new folder's.
    #[schemars(
        length(min = 1, max = 255),
        regex(pattern = NAME_PATTERN)
    )]
    pub name: Option<String>,
    /// The new parent (`home` for the caller's home folder): a folder of the same drive, not
    /// the folder itself nor a folder inside it.
    pub parent_id: Option<String>,
}

/// `PATCH /drive/api/v1/files/{id}`: rename and/or move.
#[derive(JsonSchema)]
pub struct FileUpdate {
    /// The new name, with the rules of folder names.
    #[schemars(
        length(min = 1, max = 255),
        regex(pattern = NAME_PATTERN)
    )]
    pub name: Option<String>,
    /// Any folder the caller sees (`home` for their own): into a home drive the file becomes
    /// private, out of it shared.
    pub folder_id: Option<String>,
}

/// The query of a folder listing.
#[derive(JsonSchema)]
pub struct ChildrenQuery {
    /// Opaque cursor from a previous page's `meta.next_cursor`.
    pub cursor: Option<String>,
    /// Page size; default 50, larger values are taken as 100.
    #[schemars(range(min = 1, max = 4_294_967_295u64), extend("default" = 50))]
    pub limit: Option<u32>,
}

/// The query of an upload.
#[derive(JsonSchema)]
pub struct UploadQuery {
    /// The file's name, with the rules of folder names.
    #[schemars(length(min = 1, max = 255), regex(pattern = NAME_PATTERN))]
    pub name: String,
}

/// What a name may not contain: `/`, `\` and control characters (the other rules are in the
/// descriptions).
const NAME_PATTERN: &str = r"^[^/\\\u0000-\u001F\u007F-\u009F]+$";

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use tessera_sdk::Engine;
    use tessera_sdk::serde_json::{self, Value, json};

    use super::*;
    use crate::store;

    fn document() -> Value {
        crate::Drive::router().openapi()
    }

    fn schema<'a>(document: &'a Value, name: &str) -> &'a Value {
        &document["components"]["schemas"][name]
    }

    fn property_names(schema: &Value) -> BTreeSet<String> {
        schema["properties"]
            .as_object()
            .expect("properties")
            .keys()
            .cloned()
            .collect()
    }

    #[test]
    fn every_route_is_documented_with_a_summary_and_a_success() {
        let document = document();
        let expected = [
            ("get", "/api/v1/status"),
            ("get", "/api/v1/usage"),
            ("post", "/api/v1/folders"),
            ("get", "/api/v1/folders/{id}"),
            ("patch", "/api/v1/folders/{id}"),
            ("delete", "/api/v1/folders/{id}"),
            ("get", "/api/v1/folders/{id}/children"),
            ("post", "/api/v1/folders/{id}/files"),
            ("get", "/api/v1/files/{id}"),
            ("patch", "/api/v1/files/{id}"),
            ("delete", "/api/v1/files/{id}"),
            ("get", "/api/v1/files/{id}/content"),
        ];
        let mut documented = Vec::new();
        for (path, item) in document["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                documented.push((method.clone(), path.clone()));
                let summary = operation["summary"].as_str().unwrap();
                let fallback = format!("{} {path}", method.to_uppercase());
                assert!(
                    !summary.is_empty() && summary != fallback,
                    "{method} {path}"
                );
                let responses = operation["responses"].as_object().unwrap();
                assert!(
                    responses.keys().any(|status| status.starts_with('2')),
                    "{method} {path} has no 2xx answer"
                );
            }
        }
        documented.sort();
        let mut expected: Vec<(String, String)> = expected
            .iter()
            .map(|(method, path)| ((*method).to_owned(), (*path).to_owned()))
            .collect();
        expected.sort();
        assert_eq!(documented, expected);
    }

    #[test]
    fn bodies_and_queries_carry_their_rules() {
        let document = document();
        let create = schema(&document, "FolderCreate");
        assert_eq!(create["required"], json!(["name"]));
        assert_eq!(create["properties"]["name"]["maxLength"], 255);
        assert_eq!(create["properties"]["name"]["minLength"], 1);
        // Absent or null means `root`.
        assert_eq!(
            create["properties"]["parent_id"],
            json!({
                "type": ["string", "null"],
                "default": "root",
                "description": "A folder id, or `home` for the caller's home folder; absent or null: the root."
            })
        );
        // Null changes nothing, as absent does.
        let update = schema(&document, "FileUpdate");
        assert!(update.get("required").is_none());
        assert_eq!(
            update["properties"]["folder_id"]["type"],
            json!(["string", "null"])
        );
        assert_eq!(
            update["properties"]["name"]["type"],
            json!(["string", "null"])
        );
        assert_eq!(schema(&document, "FolderKind")["enum"], json!(["folder"]));
        assert_eq!(schema(&document, "FileKind")["enum"], json!(["file"]));

        let paths = &document["paths"];
        let children = &paths["/api/v1/folders/{id}/children"]["get"];
        let limit = children["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|parameter| parameter["name"] == "limit")
            .unwrap();
        assert_eq!(limit["schema"]["minimum"], 1);
        assert_eq!(limit["schema"]["default"], 50);
        assert_eq!(limit["required"], false);

        let upload = &paths["/api/v1/folders/{id}/files"]["post"];
        let name = upload["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|parameter| parameter["name"] == "name")
            .unwrap();
        assert_eq!(name["required"], true);
        assert_eq!(name["schema"]["maxLength"], 255);
        assert_eq!(
            upload["requestBody"]["content"]["application/octet-stream"]["schema"]["format"],
            "binary"
        );
        assert!(upload["responses"]["409"].is_object());
        assert!(
            upload["responses"]["413"]["description"]
                .as_str()
                .unwrap()
                .contains("max_upload_bytes")
        );
        let download = &paths["/api/v1/files/{id}/content"]["get"];
        assert_eq!(
            download["responses"]["200"]["content"]["application/octet-stream"]["schema"]["format"],
            "binary"
        );
        assert_eq!(
            paths["/api/v1/folders"]["post"]["responses"]["201"]["content"]["application/json"]["schema"]
                ["properties"]["data"]["$ref"],
            "#/components/schemas/Folder"
        );
    }

    /// The documented folder and file are what the engine serializes, field for field.
    #[test]
    fn answers_match_what_the_engine_serializes() {
        let document = document();
        let folder = store::Folder {
            id: "f".into(),
            name: "Reports".into(),
            parent_id: Some("root".into()),
            owner_id: None,
            created_by: Some("u".into()),
            created_at: "2026-01-01T00:00:00Z".into(),
            updated_at: "2026-01-01T00:00:00Z".into(),
        };
        let file = store::File {
            id: "x".into(),
            name: "a.txt".into(),
            folder_id: "f".into(),
            owner_id: None,
            content_type: "text/plain".into(),
            size_bytes: 3,
            created_by: "u".into(),
            created_at: "2026-01-01T00:00:00Z".into(),
            updated_at: "2026-01-01T00:00:00Z".into(),
        };
        let usage = Usage {
            used_bytes: 1,
            quota_bytes: 2,
            max_upload_bytes: 3,
        };
        for (name, value) in [
            (
                "Folder",
                serde_json::to_value(store::Item::Folder(folder)).unwrap(),
            ),
            (
                "File",
                serde_json::to_value(store::Item::File(file)).unwrap(),
            ),
            ("Usage", serde_json::to_value(usage).unwrap()),
        ] {
            let schema = schema(&document, name);
            let keys: BTreeSet<String> = value.as_object().unwrap().keys().cloned().collect();
            assert_eq!(keys, property_names(schema), "{name}");
            // Every field is always there (null when empty).
            let required: BTreeSet<String> = schema["required"]
                .as_array()
                .unwrap()
                .iter()
                .map(|name| name.as_str().unwrap().to_owned())
                .collect();
            assert_eq!(keys, required, "{name}");
        }
        assert_eq!(
            schema(&document, "Folder")["properties"]["parent_id"]["type"],
            json!(["string", "null"])
        );
        assert_eq!(
            serde_json::to_value(store::Item::Folder(store::Folder {
                id: "root".into(),
                name: "Shared".into(),
                parent_id: None,
                owner_id: None,
                created_by: None,
                created_at: String::new(),
                updated_at: String::new(),
            }))
            .unwrap()["kind"],
            schema(&document, "FolderKind")["enum"][0]
        );
    }
}
