//! The Drive engine: a tenant's folders and files. Every member sees the shared drive (root
//! folder `root`); each provisioned user also has a private home folder (`home-<user_id>`, or
//! `home` in paths and bodies for the caller's own) that nobody else sees. File bytes are
//! host blobs, written in the same transaction as the file's metadata and refused beyond the
//! tenant's quota (the setting `tenant-quota-bytes`); an upload is limited by the setting
//! `max-upload-bytes` (and the host's engine body limit). The routes and their documentation
//! are in `api.rs`.
//!
//! Storage (tenant-scoped by the host; see `store.rs`):
//!
//! | key | value |
//! |---|---|
//! | `tenant`, `users/<user_id>` | provisioning records (`tenancy`) |
//! | `folders/<id>` | a folder: `root`, `home-<user_id>`, or a UUID v7 |
//! | `files/<id>` | a file's metadata (UUID v7); its bytes are the blob `files/<id>` |
//! | `children/<folder_id>/<d\|f>/<lowercased name>` | the folder's name index `{id, claimed_at}` |
//! | `removals/<user_id>` | a pending removal of the user: `{removal_id}` (`tenancy`) |
//!
//! Removing a user takes as many calls as their home drive needs: a first chunk in
//! `deprovision-user`, the rest in jobs `{remove_user, removal_id}` while the marker
//! `removals/<user_id>` holds that removal (`tenancy::remove_user_in_chunks`). Provisioning the
//! user again cancels it; what it had not reached yet of their home stays theirs.
//!
//! Events (identifiers only, and only for the shared drive: home drives are private):
//! `folder.created`, `folder.updated`, `folder.deleted`, `file.uploaded`, `file.updated`,
//! `file.deleted`.

mod api;
mod files;
mod folders;
mod input;
mod store;

use tessera_sdk::serde_json::Value;
use tessera_sdk::tenancy::{RemovalChunk, RemovalJob, RemovedChunk};
use tessera_sdk::{
    ApiError, Context, Descriptor, Engine, HandlerResult, HostError, Job, Request, Response,
    Router, Setting, SettingKind, TenantInfo, UserInfo, ValidationErrors, blobs, events, settings,
    storage, tenancy, time,
};

use crate::store::{Folder, Node, ROOT_ID};

/// The engine code, also its path prefix.
const CODE: &str = "drive";

/// `max-upload-bytes` when the operator does not say.
const DEFAULT_MAX_UPLOAD_BYTES: u64 = 8 * 1024 * 1024;
/// `tenant-quota-bytes` when the operator does not say.
const DEFAULT_TENANT_QUOTA_BYTES: u64 = 1024 * 1024 * 1024;

struct Drive;

impl Engine for Drive {
    fn describe() -> Descriptor {
        Descriptor::new(CODE, "Drive", env!("CARGO_PKG_VERSION"))
            .tenant_provision(true)
            .user_provision(true)
    }

    fn settings() -> Vec<Setting> {
        vec![
            Setting::new(
                SETTING_MAX_UPLOAD_BYTES,
                SettingKind::Integer,
                "The largest file an upload may carry, in bytes (never above the host's engine body limit, TESSERA_ENGINE_MAX_BODY_BYTES).",
            )
            .default_value(DEFAULT_MAX_UPLOAD_BYTES),
            Setting::new(
                SETTING_TENANT_QUOTA_BYTES,
                SettingKind::Integer,
                "The bytes of files one tenant may keep.",
            )
            .default_value(DEFAULT_TENANT_QUOTA_BYTES),
        ]
    }

    fn router() -> Router {
        api::router()
    }

    fn provision_tenant(tenant: &TenantInfo) -> Result<(), String> {
        ensure_top_folder(ROOT_ID, "Shared", None)?;
        tenancy::record_tenant(tenant)?;
        Ok(())
    }

    /// Removes every blob, then every record (a failed run is finished by the next).
    fn deprovision_tenant(_tenant_id: &str) -> Result<(), String> {
        blobs::delete_prefix("")?;
        storage::delete_prefix("")?;
        Ok(())
    }

    /// Cancels a pending removal of the user first (what it had not reached yet of their home
    /// stays theirs), then records the user and creates their home folder if it is gone.
    fn provision_user(user: &UserInfo) -> Result<(), String> {
        tenancy::cancel_removal(&user.user_id)?;
        tenancy::record_user(user)?;
        ensure_top_folder(&store::home_id(&user.user_id), "Home", Some(&user.user_id))?;
        Ok(())
    }

    /// Removes the user's home folder with everything in it, and the user's record: a first
    /// chunk now, the rest in jobs when there is more than one call may scan
    /// (`tenancy::remove_user_in_chunks`). What they put in the shared drive stays (it
    /// belongs to the tenant).
    fn deprovision_user(_tenant_id: &str, user_id: &str) -> Result<(), String> {
        tenancy::remove_user_in_chunks(user_id, |chunk, _| remove_home(chunk))?;
        Ok(())
    }

    /// The jobs of a user's removal (`{remove_user, removal_id}`), the engine's only jobs.
    fn run_job(job: &Job) -> Result<(), String> {
        let Some(removal) = RemovalJob::of(job) else {
            return Err(format!("job {}: not a job of the drive engine", job.id));
        };
        tenancy::continue_removal(&removal, |chunk, _| remove_home(chunk))?;
        Ok(())
    }
}

/// Removes what `chunk` allows of its user's home folder, deepest folders first and the home
/// folder itself last. The removals are committed as they go (blobs with their records).
fn remove_home(chunk: &RemovalChunk) -> Result<RemovedChunk, HostError> {
    let finished = match store::load::<Folder>(&store::home_id(chunk.user_id()))? {
        None => true,
        Some(home) => store::remove_tree_within(&home, |wanted| chunk.next_scan(wanted))?.finished,
    };
    Ok(RemovedChunk {
        finished,
        ..RemovedChunk::default()
    })
}

/// Creates the root or a home folder once.
fn ensure_top_folder(id: &str, name: &str, owner_id: Option<&str>) -> Result<(), HostError> {
    let now = time::now_rfc3339();
    let folder = Folder {
        id: id.to_owned(),
        name: name.to_owned(),
        parent_id: None,
        owner_id: owner_id.map(str::to_owned),
        created_by: None,
        created_at: now.clone(),
        updated_at: now,
    };
    storage::put_json_if_absent(&folder.key(), || folder.clone()).map(drop)
}

/// The setting of the largest upload.
const SETTING_MAX_UPLOAD_BYTES: &str = "max-upload-bytes";
/// The setting of a tenant's quota.
const SETTING_TENANT_QUOTA_BYTES: &str = "tenant-quota-bytes";

/// The operator's upload limit (capped by the host's body limit) and tenant quota.
struct Limits {
    max_upload_bytes: u64,
    quota_bytes: u64,
}

impl Limits {
    fn from_settings() -> Self {
        let read = |name: &str, default: u64| {
            settings::get(name)
                .and_then(|value| value.trim().parse().ok())
                .unwrap_or(default)
        };
        Self {
            max_upload_bytes: read(SETTING_MAX_UPLOAD_BYTES, DEFAULT_MAX_UPLOAD_BYTES)
                .min(read("engine.max-body-bytes", u64::MAX)),
            quota_bytes: read(SETTING_TENANT_QUOTA_BYTES, DEFAULT_TENANT_QUOTA_BYTES),
        }
    }
}

/// `GET /api/v1/usage`: the bytes the tenant's files take, its quota and the upload limit.
fn usage(_ctx: &Context, req: &Request) -> HandlerResult {
    req.query(&[])?;
    let limits = Limits::from_settings();
    Ok(Response::ok(&api::Usage {
        used_bytes: blobs::usage()?,
        quota_bytes: limits.quota_bytes,
        max_upload_bytes: limits.max_upload_bytes,
    }))
}

/// Whether the caller may see an item of the drive `owner_id` (`None`: the shared drive, which
/// guest tokens do not see; else a home drive, seen by its user only).
fn can_see(ctx: &Context, owner_id: Option<&str>) -> bool {
    match owner_id {
        None => !ctx.is_guest(),
        Some(owner_id) => owner_id == ctx.user_id,
    }
}

/// The item `id` of the caller's visible drives; 404 `<what> not found.` otherwise.
fn visible<N: Node>(ctx: &Context, id: &str, what: &str) -> Result<N, ApiError> {
    let id = if id == "home" {
        store::home_id(&ctx.user_id)
    } else {
        id.to_owned()
    };
    if !input::plausible_id(&id) {
        return Err(ApiError::not_found(what));
    }
    store::load::<N>(&id)?
        .filter(|node| can_see(ctx, node.owner()))
        .ok_or_else(|| ApiError::not_found(what))
}

/// The folder a body names under `field` (`home` for the caller's home), when the caller sees
/// it; else `exists` is recorded.
fn target_folder(
    ctx: &Context,
    id: &str,
    field: &str,
    errors: &mut ValidationErrors,
) -> Result<Option<Folder>, ApiError> {
    match visible::<Folder>(ctx, id, "Folder") {
        Ok(folder) => Ok(Some(folder)),
        Err(ApiError::NotFound(_)) => {
            errors.add(field, "exists");
            Ok(None)
        }
        Err(error) => Err(error),
    }
}

/// 403 unless the caller may rename, move or delete `node`: a writer, and in the shared drive
/// its creator or an owner (in a home drive, its user may change everything).
fn require_may_change<N: Node>(ctx: &Context, node: &N) -> Result<(), ApiError> {
    ctx.require_writer()?;
    if node.owner().is_some() || ctx.is_owner() || node.creator() == Some(ctx.user_id.as_str()) {
        Ok(())
    } else {
        Err(ApiError::Forbidden)
    }
}

/// 409 for a name another item of the folder holds.
fn name_taken() -> ApiError {
    ApiError::Conflict("A folder or file with this name already exists in the folder.".into())
}

/// Publishes an event of the shared drive (home drives are private: nothing of them is
/// published), in the call's unit of work: it exists if and only if the change commits.
fn publish(
    shared: bool,
    event_type: &str,
    ctx: &Context,
    mut payload: Value,
) -> Result<(), HostError> {
    if !shared {
        return Ok(());
    }
    payload["actor_id"] = Value::String(ctx.user_id.clone());
    events::publish(event_type, &payload)
}

/// A new identifier that sorts by creation time (UUID v7).
fn new_ordered_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

tessera_sdk::export_engine!(Drive);
