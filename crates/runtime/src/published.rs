//! Engines published to the cluster (CONTRACT §8): `tessera admin engine publish` or
//! `POST /core/api/operator/engines` checks a component (compiled and described as a host
//! would load it) and stores it in the database as the next version of its engine code,
//! content-addressed by its SHA-256 (publishing the same bytes again finds their version).
//! Each code's active version is the desired state: every host reconciles with it (promptly
//! on PostgreSQL through `LISTEN`, and every `TESSERA_ENGINE_RECONCILE_INTERVAL` to be sure),
//! reads the bytes, verifies their digest, compiles them once into its cache and swaps them
//! in as the plugins watcher does (in-flight calls finish on the old version). A host loads
//! the active versions before it serves. A published code wins over a plugins-dir file of the
//! same code; deactivating the code gives the file its place back.

pub mod routes;

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;
use utoipa::ToSchema;

use crate::component_manifest::ComponentManifest;
use crate::registry::{EngineRegistry, EngineSource};
use crate::store::published as store;
use tessera_distribution::signature::{ComponentSignature, SignatureRefusal};
use tessera_storage::Database;

/// One published version of an engine code.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct PublishedVersion {
    pub code: String,
    /// 1, 2, … in publishing order.
    pub version: i64,
    /// The SHA-256 of the component's bytes (hex).
    pub sha256: String,
    /// The version its descriptor declares.
    pub engine_version: String,
    pub size_bytes: i64,
    pub published_at: String,
    /// Whether it is the code's active version.
    pub active: bool,
}

/// A published code's release state.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct EngineRelease {
    pub code: String,
    /// What every host runs; `null` when deactivated.
    pub active_version: Option<i64>,
    /// The active version's digest.
    pub active_sha256: Option<String>,
    /// What `rollback` returns to.
    pub previous_version: Option<i64>,
    pub changed_at: String,
}

/// Why a publishing operation was refused.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// The component cannot be loaded (not a component, over a sandbox limit, a bad
    /// description…): the reason.
    #[error("the component cannot be loaded: {0}")]
    InvalidComponent(String),
    #[error(
        "the component is {size} bytes, more than TESSERA_ENGINE_MAX_COMPONENT_BYTES ({limit})"
    )]
    TooLarge { size: usize, limit: usize },
    /// `TESSERA_ENGINE_TRUSTED_KEYS` lists keys, and the component carries no signature by
    /// one of them.
    #[error(transparent)]
    Signature(#[from] SignatureRefusal),
    /// The manifest given with the component cannot be used: the reason.
    #[error("the manifest cannot be used: {0}")]
    InvalidManifest(String),
    #[error("no published engine {0:?}")]
    UnknownCode(String),
    #[error("{code:?} has no published version {version}")]
    UnknownVersion { code: String, version: i64 },
    #[error("{0:?} has no previous version to roll back to")]
    NothingToRollBack(String),
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

fn version_of(row: store::VersionRow, active: Option<i64>) -> PublishedVersion {
    PublishedVersion {
        active: active == Some(row.version),
        code: row.code,
        version: row.version,
        sha256: row.sha256,
        engine_version: row.engine_version,
        size_bytes: row.size_bytes,
        published_at: row.published_at,
    }
}

/// What comes with a component to publish.
#[derive(Debug, Clone, Copy)]
pub struct PublishOptions<'a> {
    /// The publisher's signature (required when the operator lists trusted keys).
    pub signature: Option<&'a ComponentSignature>,
    /// The manifest of a `wasi:http` component (its code, public paths, outbound hosts and
    /// settings), as TOML text; an engine-world component describes itself and takes none.
    pub manifest: Option<&'a str>,
    /// Make it the code's active version.
    pub activate: bool,
}

/// Checks `component` as a host would load it and stores it as the next version of its code
/// (or finds the version with the same bytes); with `activate`, makes it the active version.
/// When the operator lists trusted keys, `signature` must be one of theirs over these bytes:
/// checked before anything else, so an unsigned component is not even compiled.
pub async fn publish(
    registry: &EngineRegistry,
    component: Vec<u8>,
    options: PublishOptions<'_>,
) -> Result<PublishedVersion, PublishError> {
    let PublishOptions {
        signature,
        manifest,
        activate,
    } = options;
    let config = registry.runtime().config();
    let limit = config.max_component_bytes;
    if component.len() > limit {
        return Err(PublishError::TooLarge {
            size: component.len(),
            limit,
        });
    }
    let signed_by = config
        .trusted_keys
        .check(&component, signature)?
        .map(|key| key.display().to_string());
    let sha256 = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&component));
    // Compiled into this process's cache and described (in a host, the cache every later load
    // of the same bytes finds).
    let parsed = manifest
        .map(|text| {
            ComponentManifest::with_text(text.to_owned())
                .map_err(|error| PublishError::InvalidManifest(format!("{error:#}")))
        })
        .transpose()?;
    let inspected = registry
        .inspect(
            component.clone(),
            sha256.clone(),
            &EngineSource::Published { version: 0 },
            parsed,
        )
        .await
        .map_err(|error| PublishError::InvalidComponent(format!("{error:#}")))?;
    if manifest.is_some() && !inspected.is_wasi_http() {
        return Err(PublishError::InvalidManifest(
            "the component is not a wasi:http component: it describes itself, and takes no manifest".into(),
        ));
    }
    let code = inspected.descriptor.code.clone();
    let database = registry.database();
    let mut tx = database.begin().await?;
    let release = store::release_for_update(&mut tx, &code).await?;
    let row = match store::version_by_digest(&mut tx, &code, &sha256, manifest).await? {
        Some(row) => row,
        None => {
            store::insert_version(
                &mut tx,
                store::NewVersion {
                    code: &code,
                    sha256: &sha256,
                    engine_version: &inspected.descriptor.version,
                    component: &component,
                    manifest,
                },
            )
            .await?
        }
    };
    let current = release.as_ref().and_then(|release| release.active_version);
    let active = if activate && current != Some(row.version) {
        store::set_release(&mut tx, &code, Some(row.version), current).await?;
        Some(row.version)
    } else {
        if release.is_none() {
            store::set_release(&mut tx, &code, None, None).await?;
        }
        current
    };
    tx.commit().await?;
    tracing::info!(
        engine = %code,
        version = row.version,
        sha256 = %row.sha256,
        active = active == Some(row.version),
        signed_by = signed_by.as_deref().unwrap_or("-"),
        "engine published"
    );
    Ok(version_of(row, active))
}

/// Every published code with its active and previous version.
pub async fn releases(database: &Database) -> anyhow::Result<Vec<EngineRelease>> {
    Ok(store::releases(database, None)
        .await?
        .into_iter()
        .map(release_of)
        .collect())
}

/// `code`'s release state, if it was ever published.
async fn release_of_code(database: &Database, code: &str) -> anyhow::Result<Option<EngineRelease>> {
    Ok(store::releases(database, Some(code))
        .await?
        .into_iter()
        .next()
        .map(release_of))
}

fn release_of(row: store::ReleaseWithDigest) -> EngineRelease {
    EngineRelease {
        code: row.code,
        active_version: row.active_version,
        active_sha256: row.active_sha256,
        previous_version: row.previous_version,
        changed_at: row.changed_at,
    }
}

/// Every published version of `code`, newest first.
pub async fn versions(
    database: &Database,
    code: &str,
) -> Result<Vec<PublishedVersion>, PublishError> {
    let rows = store::versions(database, code).await?;
    if rows.is_empty() {
        return Err(PublishError::UnknownCode(code.to_owned()));
    }
    let active = release_of_code(database, code)
        .await?
        .and_then(|release| release.active_version);
    Ok(rows
        .into_iter()
        .map(|row| version_of(row, active))
        .collect())
}

/// What a release operation does to a code's (active, previous) versions.
enum Change {
    Activate(i64),
    Deactivate,
    RollBack,
}

async fn change(
    database: &Database,
    code: &str,
    change: Change,
) -> Result<EngineRelease, PublishError> {
    let mut tx = database.begin().await?;
    let Some(release) = store::release_for_update(&mut tx, code).await? else {
        return Err(PublishError::UnknownCode(code.to_owned()));
    };
    let current = release.active_version;
    let (active, previous) = match change {
        Change::Activate(version) => {
            if !store::version_exists(&mut tx, code, version).await? {
                return Err(PublishError::UnknownVersion {
                    code: code.to_owned(),
                    version,
                });
            }
            if current == Some(version) {
                (current, release.previous_version)
            } else {
                (Some(version), current.or(release.previous_version))
            }
        }
        Change::Deactivate => (None, current.or(release.previous_version)),
        // Back to the previous version; rolling back again goes forward again.
        Change::RollBack => match release.previous_version {
            Some(previous) => (Some(previous), current),
            None => return Err(PublishError::NothingToRollBack(code.to_owned())),
        },
    };
    store::set_release(&mut tx, code, active, previous).await?;
    tx.commit().await?;
    tracing::info!(engine = %code, ?active, ?previous, "engine release changed");
    Ok(release_of_code(database, code)
        .await?
        .ok_or_else(|| anyhow::anyhow!("the release of {code:?} vanished"))?)
}

/// Makes `version` the active version of `code`.
pub async fn activate(
    database: &Database,
    code: &str,
    version: i64,
) -> Result<EngineRelease, PublishError> {
    change(database, code, Change::Activate(version)).await
}

/// Leaves `code` without an active version: hosts unload it (or load their plugins dir's file
/// of it). `rollback` or `activate` brings a version back.
pub async fn deactivate(database: &Database, code: &str) -> Result<EngineRelease, PublishError> {
    change(database, code, Change::Deactivate).await
}

/// Makes the previous version active again (and the current one the previous).
pub async fn rollback(database: &Database, code: &str) -> Result<EngineRelease, PublishError> {
    change(database, code, Change::RollBack).await
}

/// Brings this host's engines in line with the published desired state: the active version of
/// every published code loaded (bytes checked against their digest), published engines no
/// longer active unloaded, and the plugins dir rescanned when one was (its file of the code
/// comes back). A version that fails to load here is logged and the code keeps what it ran.
pub async fn reconcile(registry: &EngineRegistry, plugins_dir: &Path) -> anyhow::Result<()> {
    let database = registry.database();
    let desired = store::desired(database).await?;
    let _loading = registry.lock_loading().await;
    registry.set_published_codes(desired.iter().map(|active| active.code.clone()).collect());
    for active in &desired {
        if let Some(loaded) = registry.get(&active.code)
            && loaded.source.published_version() == Some(active.version)
            && loaded.sha256 == active.sha256
        {
            continue;
        }
        let loaded = async {
            let (bytes, manifest) =
                store::component(database, &active.code, active.version).await?;
            let digest = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&bytes));
            anyhow::ensure!(
                digest == active.sha256,
                "its bytes have the digest {digest}, not the published {}",
                active.sha256
            );
            registry
                .load_published(&active.code, active.version, bytes, digest, manifest)
                .await
        };
        if let Err(error) = loaded.await {
            tracing::error!(
                engine = %active.code,
                version = active.version,
                error = format!("{error:#}"),
                "cannot load a published engine version; the engine keeps what it ran"
            );
        }
    }
    let active_codes: HashSet<&str> = desired.iter().map(|active| active.code.as_str()).collect();
    let retired: Vec<String> = registry
        .loaded()
        .into_iter()
        .filter(|engine| {
            engine.source.published_version().is_some()
                && !active_codes.contains(engine.descriptor.code.as_str())
        })
        .map(|engine| engine.descriptor.code.clone())
        .collect();
    for code in &retired {
        registry.unload(code).await?;
    }
    if !retired.is_empty() {
        registry.load_directory_locked(plugins_dir).await?;
    }
    Ok(())
}

/// Reconciles until `stop`: when another host announces a change (PostgreSQL `LISTEN`), when
/// this host changed a release ([`EngineRegistry::releases_changed`]), and every `interval`.
pub async fn run_reconciler(
    registry: Arc<EngineRegistry>,
    plugins_dir: std::path::PathBuf,
    interval: Duration,
    stop: CancellationToken,
) {
    let wake = registry.release_wake();
    let database = registry.database().clone();
    let (announced, mut announcements) = tokio::sync::mpsc::channel::<()>(1);
    if let tessera_storage::Pool::Postgres(pool) = database.pool().clone() {
        let stop = stop.clone();
        tokio::spawn(async move {
            loop {
                match sqlx::postgres::PgListener::connect_with(&pool).await {
                    Ok(mut listener) => match listener.listen(store::CHANNEL).await {
                        Ok(()) => loop {
                            tokio::select! {
                                () = stop.cancelled() => return,
                                received = listener.recv() => match received {
                                    Ok(_) => { let _ = announced.try_send(()); }
                                    Err(error) => {
                                        tracing::warn!(%error, "lost the engine releases LISTEN connection");
                                        break;
                                    }
                                },
                            }
                        },
                        Err(error) => tracing::warn!(%error, "cannot LISTEN for engine releases"),
                    },
                    Err(error) => {
                        tracing::warn!(%error, "cannot connect to LISTEN for engine releases");
                    }
                }
                // Reconnected or not, a change may have been missed meanwhile.
                let _ = announced.try_send(());
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(Duration::from_secs(1)) => {}
                }
            }
        });
    }
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(interval) => {}
            () = wake.notified() => {}
            Some(()) = announcements.recv() => {}
        }
        if let Err(error) = reconcile(&registry, &plugins_dir).await {
            tracing::warn!(
                error = format!("{error:#}"),
                "reconciling with the published engines failed"
            );
        }
    }
}
