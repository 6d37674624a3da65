//! Documentation-only entries of the drive engine's routes (`/drive/api/v1/…`), merged into the
//! host's document by `openapi::document`. See `chat.rs` for the pattern: nothing here is called;
//! the types mirror the JSON the engine (`engines/drive`) reads and writes.

// Doc-only: the types are never constructed and the functions never called.
#![allow(dead_code)]

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, OpenApi, ToSchema};

use crate::http::envelope::{Data, DataWithMeta};
use crate::http::error::{ErrorBody, ValidationErrorBody};
use crate::http::paging::CursorMeta;

/// The drive engine's part of the OpenAPI document.
#[derive(OpenApi)]
#[openapi(
    paths(
        drive_usage, drive_folder_create, drive_folder_show, drive_folder_children,
        drive_folder_update, drive_folder_delete, drive_file_upload, drive_file_show,
        drive_file_download, drive_file_update, drive_file_delete,
    ),
    tags((name = "drive", description = "The drive engine: folders and files")),
)]
pub struct Doc;

// ---------------------------------------------------------------------------------------------
// Schemas
// ---------------------------------------------------------------------------------------------

/// `folder`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum DriveFolderKind {
    Folder,
}

/// `file`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum DriveFileKind {
    File,
}

/// A folder: the shared drive's root (`root`), a user's home (`home-<user_id>`), or one made by
/// a user (UUID v7).
#[derive(Debug, Serialize, ToSchema)]
pub struct DriveFolder {
    pub kind: DriveFolderKind,
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
#[derive(Debug, Serialize, ToSchema)]
pub struct DriveFile {
    pub kind: DriveFileKind,
    /// UUID v7.
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
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum DriveItem {
    Folder(DriveFolder),
    File(DriveFile),
}

/// The tenant's storage use and limits.
#[derive(Debug, Serialize, ToSchema)]
pub struct DriveUsage {
    /// Bytes of all the tenant's files (shared and home drives).
    pub used_bytes: u64,
    /// `TESSERA_DRIVE_TENANT_QUOTA_BYTES`.
    pub quota_bytes: u64,
    /// `TESSERA_DRIVE_MAX_UPLOAD_BYTES`.
    pub max_upload_bytes: u64,
}

/// `POST /drive/api/v1/folders`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct DriveFolderCreate {
    /// 1 to 255 characters (at most 900 bytes), no `/`, `\` or control characters, not `.` or
    /// `..`; unique in the parent among folders and files, whatever the case.
    #[schema(min_length = 1, max_length = 255)]
    pub name: String,
    /// A folder id, or `home` for the caller's home folder.
    #[schema(nullable = false, default = "root")]
    pub parent_id: Option<String>,
}

/// `PATCH /drive/api/v1/folders/{id}`: rename and/or move within the folder's drive.
#[derive(Debug, Deserialize, ToSchema)]
pub struct DriveFolderUpdate {
    #[schema(nullable = false, min_length = 1, max_length = 255)]
    pub name: Option<String>,
    /// Not the folder itself nor a folder inside it.
    #[schema(nullable = false)]
    pub parent_id: Option<String>,
}

/// `PATCH /drive/api/v1/files/{id}`: rename and/or move.
#[derive(Debug, Deserialize, ToSchema)]
pub struct DriveFileUpdate {
    #[schema(nullable = false, min_length = 1, max_length = 255)]
    pub name: Option<String>,
    /// Any folder the caller sees (`home` for their own): into a home drive the file becomes
    /// private, out of it shared.
    #[schema(nullable = false)]
    pub folder_id: Option<String>,
}

/// The query of a folder listing.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DriveChildrenQuery {
    /// Opaque cursor from a previous page's `meta.next_cursor`.
    pub cursor: Option<String>,
    /// Page size; default 50, at most 100.
    #[param(minimum = 1, maximum = 100, default = 50)]
    pub limit: Option<u32>,
}

/// The query of an upload.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DriveUploadQuery {
    /// The file's name, with the rules of folder names.
    pub name: String,
}

const FOLDER_ID: &str = "A folder id: `root`, `home` (the caller's home folder) or a UUID";

// ---------------------------------------------------------------------------------------------
// Usage
// ---------------------------------------------------------------------------------------------

/// The tenant's storage use, its quota and the upload limit.
#[utoipa::path(
    get,
    path = "/drive/api/v1/usage",
    operation_id = "drive_usage",
    tag = "drive",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Usage and limits", body = Data<DriveUsage>),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
    )
)]
pub fn drive_usage() {}

// ---------------------------------------------------------------------------------------------
// Folders
// ---------------------------------------------------------------------------------------------

/// Create a folder (in the shared drive's root unless `parent_id` says otherwise).
///
/// Emits `folder.created` `{folder_id, parent_id, actor_id}` (shared drive only).
#[utoipa::path(
    post,
    path = "/drive/api/v1/folders",
    operation_id = "drive_folder_create",
    tag = "drive",
    request_body = DriveFolderCreate,
    security(("bearer" = [])),
    responses(
        (status = 201, description = "The folder", body = Data<DriveFolder>),
        (status = 400, description = "The body is not a JSON object", body = ErrorBody),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 403, description = "Viewers and guests cannot write", body = ErrorBody),
        (status = 409, description = "The parent holds a folder or file of this name", body = ErrorBody),
        (status = 422, description = "`name` (`required`, `max:255`, `max_bytes:900`, `filename`), `parent_id` (`exists`)", body = ValidationErrorBody),
    )
)]
pub fn drive_folder_create() {}

/// Show a folder of the shared drive or of the caller's home drive.
#[utoipa::path(
    get,
    path = "/drive/api/v1/folders/{id}",
    operation_id = "drive_folder_show",
    tag = "drive",
    params(("id" = String, Path, description = FOLDER_ID)),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The folder", body = Data<DriveFolder>),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 404, description = "No such folder, or someone else's home drive", body = ErrorBody),
    )
)]
pub fn drive_folder_show() {}

/// List a folder: its folders first, then its files, each by name without regard to case.
#[utoipa::path(
    get,
    path = "/drive/api/v1/folders/{id}/children",
    operation_id = "drive_folder_children",
    tag = "drive",
    params(("id" = String, Path, description = FOLDER_ID), DriveChildrenQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "A page of folders and files", body = DataWithMeta<Vec<DriveItem>, CursorMeta>),
        (status = 400, description = "Unknown query parameter", body = ErrorBody),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 404, description = "No such folder, or someone else's home drive", body = ErrorBody),
        (status = 422, description = "Invalid `cursor` or `limit`", body = ValidationErrorBody),
    )
)]
pub fn drive_folder_children() {}

/// Rename and/or move a folder within its drive.
///
/// In the shared drive, its creator or an owner. Emits `folder.updated` `{folder_id,
/// parent_id, actor_id}` (shared drive only; not when nothing changed).
#[utoipa::path(
    patch,
    path = "/drive/api/v1/folders/{id}",
    operation_id = "drive_folder_update",
    tag = "drive",
    params(("id" = String, Path, description = FOLDER_ID)),
    request_body = DriveFolderUpdate,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The folder", body = Data<DriveFolder>),
        (status = 400, description = "The body is not a JSON object", body = ErrorBody),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 403, description = "A viewer or guest, an editor changing someone else's folder, or the root or a home folder", body = ErrorBody),
        (status = 404, description = "No such folder, or someone else's home drive", body = ErrorBody),
        (status = 409, description = "The destination holds a folder or file of this name", body = ErrorBody),
        (status = 422, description = "`name` as on create, `parent_id` (`exists`, `same_drive`, `not_descendant`)", body = ValidationErrorBody),
    )
)]
pub fn drive_folder_update() {}

/// Delete a folder with every folder and file in it.
///
/// In the shared drive, its creator (only while it is empty) or an owner. Emits
/// `folder.deleted` `{folder_id, parent_id, size_bytes, actor_id}` (shared drive only;
/// `size_bytes` is what was freed).
#[utoipa::path(
    delete,
    path = "/drive/api/v1/folders/{id}",
    operation_id = "drive_folder_delete",
    tag = "drive",
    params(("id" = String, Path, description = FOLDER_ID)),
    security(("bearer" = [])),
    responses(
        (status = 204, description = "Deleted, with everything in it"),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 403, description = "A viewer or guest, an editor deleting someone else's or a non-empty folder, or the root or a home folder", body = ErrorBody),
        (status = 404, description = "No such folder, or someone else's home drive", body = ErrorBody),
    )
)]
pub fn drive_folder_delete() {}

// ---------------------------------------------------------------------------------------------
// Files
// ---------------------------------------------------------------------------------------------

/// Upload a file into a folder: the request body is the file, its `Content-Type` the file's.
///
/// Nothing is stored when the upload is refused. Emits `file.uploaded` `{file_id, folder_id,
/// size_bytes, actor_id}` (shared drive only).
#[utoipa::path(
    post,
    path = "/drive/api/v1/folders/{id}/files",
    operation_id = "drive_file_upload",
    tag = "drive",
    params(("id" = String, Path, description = FOLDER_ID), DriveUploadQuery),
    request_body(content = [u8], content_type = "application/octet-stream", description = "The file's bytes, with any `Content-Type` (default `application/octet-stream`)"),
    security(("bearer" = [])),
    responses(
        (status = 201, description = "The file", body = Data<DriveFile>),
        (status = 400, description = "Unknown query parameter", body = ErrorBody),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 403, description = "Viewers and guests cannot write", body = ErrorBody),
        (status = 404, description = "No such folder, or someone else's home drive", body = ErrorBody),
        (status = 409, description = "The folder holds a folder or file of this name", body = ErrorBody),
        (status = 413, description = "Larger than `max_upload_bytes`", body = ErrorBody),
        (status = 422, description = "`name` as for folders, `content_type` (`mime_type`), `content` (`quota`: the tenant's quota would be exceeded)", body = ValidationErrorBody),
    )
)]
pub fn drive_file_upload() {}

/// Show a file's metadata.
#[utoipa::path(
    get,
    path = "/drive/api/v1/files/{id}",
    operation_id = "drive_file_show",
    tag = "drive",
    params(("id" = String, Path, description = "The file id")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The file", body = Data<DriveFile>),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 404, description = "No such file, or in someone else's home drive", body = ErrorBody),
    )
)]
pub fn drive_file_show() {}

/// Download a file: its exact bytes with its content type, as an attachment.
///
/// Headers: `Content-Type` (the file's), `Content-Disposition: attachment; filename="…";
/// filename*=UTF-8''…`, `X-Content-Type-Options: nosniff` and a sandboxing
/// `Content-Security-Policy`.
#[utoipa::path(
    get,
    path = "/drive/api/v1/files/{id}/content",
    operation_id = "drive_file_download",
    tag = "drive",
    params(("id" = String, Path, description = "The file id")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The file's bytes", content_type = "application/octet-stream", body = [u8]),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 404, description = "No such file, or in someone else's home drive", body = ErrorBody),
    )
)]
pub fn drive_file_download() {}

/// Rename and/or move a file.
///
/// In the shared drive, its uploader or an owner. Emits `file.updated` `{file_id, folder_id,
/// actor_id}` when the file was or is in the shared drive (not when nothing changed).
#[utoipa::path(
    patch,
    path = "/drive/api/v1/files/{id}",
    operation_id = "drive_file_update",
    tag = "drive",
    params(("id" = String, Path, description = "The file id")),
    request_body = DriveFileUpdate,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The file", body = Data<DriveFile>),
        (status = 400, description = "The body is not a JSON object", body = ErrorBody),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 403, description = "A viewer or guest, or an editor changing someone else's file", body = ErrorBody),
        (status = 404, description = "No such file, or in someone else's home drive", body = ErrorBody),
        (status = 409, description = "The destination holds a folder or file of this name", body = ErrorBody),
        (status = 422, description = "`name` as on upload, `folder_id` (`exists`)", body = ValidationErrorBody),
    )
)]
pub fn drive_file_update() {}

/// Delete a file: its bytes and metadata go in one transaction and the quota is freed.
///
/// In the shared drive, its uploader or an owner. Emits `file.deleted` `{file_id, folder_id,
/// size_bytes, actor_id}` (shared drive only).
#[utoipa::path(
    delete,
    path = "/drive/api/v1/files/{id}",
    operation_id = "drive_file_delete",
    tag = "drive",
    params(("id" = String, Path, description = "The file id")),
    security(("bearer" = [])),
    responses(
        (status = 204, description = "Deleted"),
        (status = 401, description = "Missing or invalid bearer token", body = ErrorBody),
        (status = 403, description = "A viewer or guest, or an editor deleting someone else's file", body = ErrorBody),
        (status = 404, description = "No such file, or in someone else's home drive", body = ErrorBody),
    )
)]
pub fn drive_file_delete() {}
