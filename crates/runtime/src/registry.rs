//! The engine registry: which components are loaded, under which code, from which source (a
//! file of the plugins dir, or a version published to the cluster, `published.rs`). Loads
//! every `*.wasm` of the plugins dir; a broken file, a component over a sandbox limit
//! (`component_limits.rs`), or a second file claiming a code already loaded, is logged and
//! skipped. A code the cluster publishes is the published version's: a file of that code waits
//! in the plugins dir until the code is deactivated. The `engines` table mirrors it for the
//! engine list.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use anyhow::Context as _;
use serde::Serialize;
use utoipa::ToSchema;

use super::api_description::ApiDescription;
use super::component_limits::ComponentFigures;
use super::component_manifest::{ComponentManifest, PublicPaths};
use super::engine::{CallError, EnginePre, EngineRuntime, WorldVersion};
use super::engine_settings::{EngineSettingValues, OperatorSettings, SettingListing};
use super::imports::CallScope;
use super::outbound::AllowedHosts;
use super::realtime::{Subscriber, TopicDecision, TopicPatterns};
use super::store::engines as store;
use tessera_storage::Database;

/// Path prefixes the host serves itself; no engine may take them as its code.
pub const RESERVED_CODES: [&str; 7] = [
    "auth", "core", "api", "console", "metrics", "livez", "readyz",
];

/// What an engine says about itself (`describe`), as plain Rust: `tessera-wire`'s
/// descriptor, the type the SDK gives engine authors.
pub type EngineDescriptor = tessera_wire::engine::Descriptor;

/// A loaded component, ready to instantiate. Calls hold an `Arc`, so a replaced or removed
/// engine finishes its in-flight calls on the old version.
pub struct LoadedEngine {
    pub descriptor: EngineDescriptor,
    /// Where its component came from.
    pub source: EngineSource,
    pub sha256: String,
    pub pre: EnginePre,
    /// `descriptor.outbound_hosts`, parsed; handed to every call's scope.
    pub outbound_hosts: Arc<AllowedHosts>,
    /// Its API (`describe-api`), prefixed for the host's document.
    pub api: ApiDescription,
    /// Its declared settings and their values; handed to every call's scope.
    pub settings: Arc<EngineSettingValues>,
    /// Whether it may send mail (asked for `send-mail`, or named by the operator).
    pub may_send_mail: bool,
    /// Its realtime topic patterns (`describe-topics`; none before world 0.3).
    pub topics: Arc<TopicPatterns>,
    /// The paths answered without a bearer token (a `wasi:http` component's manifest; none for
    /// an engine-world component).
    pub public_paths: PublicPaths,
    /// The text of its manifest, for a `wasi:http` component that has one.
    pub manifest: Option<String>,
}

impl LoadedEngine {
    /// The scope of a call into this engine for `tenant_id`.
    pub fn scope(&self, tenant_id: &str, correlation_id: Option<String>) -> CallScope {
        CallScope {
            engine_code: self.descriptor.code.clone(),
            tenant_id: Some(tenant_id.to_owned()),
            correlation_id,
            actor_id: None,
            outbound_hosts: self.outbound_hosts.clone(),
            settings: self.settings.clone(),
            may_send_mail: self.may_send_mail,
            topics: self.topics.clone(),
        }
    }

    /// The scope of an anonymous request to one of a `wasi:http` component's public paths:
    /// outside any tenant, so storage answers that it is unavailable.
    pub fn anonymous_scope(&self, correlation_id: Option<String>) -> CallScope {
        CallScope {
            tenant_id: None,
            ..self.scope("", correlation_id)
        }
    }

    /// The world version the component was built against.
    pub fn world(&self) -> WorldVersion {
        self.pre.world()
    }
}

/// Where a loaded engine's component came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineSource {
    /// A `*.wasm` file of this host's plugins dir.
    File(PathBuf),
    /// A version published to the cluster (`engine_versions`), the code's active one.
    Published { version: i64 },
}

impl EngineSource {
    /// The file, for an engine of the plugins dir.
    pub fn file(&self) -> Option<&Path> {
        match self {
            Self::File(path) => Some(path),
            Self::Published { .. } => None,
        }
    }

    /// `plugins` or `published`, as the engine list says it.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::File(_) => "plugins",
            Self::Published { .. } => "published",
        }
    }

    /// The published version, for a published engine.
    pub fn published_version(&self) -> Option<i64> {
        match self {
            Self::File(_) => None,
            Self::Published { version } => Some(*version),
        }
    }

    fn label(&self, code_hint: Option<&str>) -> String {
        match self {
            Self::File(path) => path.file_name().map_or_else(
                || path.display().to_string(),
                |name| name.to_string_lossy().into_owned(),
            ),
            Self::Published { version } => {
                format!(
                    "{} version {version} (published)",
                    code_hint.unwrap_or("an engine")
                )
            }
        }
    }
}

/// A component compiled, described and checked: what loading registers.
pub struct InspectedComponent {
    pub descriptor: EngineDescriptor,
    pub sha256: String,
    pre: EnginePre,
    outbound_hosts: AllowedHosts,
    api: ApiDescription,
    settings: EngineSettingValues,
    may_send_mail: bool,
    topics: TopicPatterns,
    figures: ComponentFigures,
    public_paths: PublicPaths,
    manifest: Option<String>,
}

impl InspectedComponent {
    /// Whether it is a `wasi:http` component (described by a manifest, not by itself).
    pub fn is_wasi_http(&self) -> bool {
        self.pre.is_wasi_http()
    }
}

/// `GET /core/api/v1/engines/{code}`: an engine as this host loaded it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct EngineDetails {
    pub code: String,
    pub name: String,
    pub version: String,
    pub url: String,
    /// The engine world version it was built against (`0.1.0`, `0.2.0`, `0.3.0`).
    pub world: String,
    pub requires_tenant_provision: bool,
    pub requires_user_provision: bool,
    pub subscriptions: Vec<String>,
    /// Its realtime topic patterns, without the engine code (`conversation.*`).
    pub topics: Vec<String>,
    pub outbound_hosts: Vec<String>,
    /// Whether it may send mail through the operator's relay.
    pub may_send_mail: bool,
    /// How many operations its API description documents.
    pub operations: usize,
    /// Its declared settings, with the effective values of the non-secret ones.
    pub settings: Vec<SettingListing>,
    /// Its audited operations (`x-tessera-audit`): what the tenant's audit trail records of
    /// it, by event name.
    pub audited_operations: Vec<AuditedOperationListing>,
}

/// An audited operation of an engine, as `GET /core/api/v1/engines/{code}` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct AuditedOperationListing {
    /// The full event name in the audit trail, `<code>.<name>`.
    pub event: String,
    pub method: String,
    /// The public path template, `/<code>/api/v1/…`.
    pub path: String,
}

/// An item of `GET /core/api/v1/engines`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct EngineRecord {
    pub code: String,
    pub name: String,
    pub url: String,
    pub is_active: bool,
    pub requires_tenant_provision: bool,
    pub requires_user_provision: bool,
    /// The version its descriptor declares (of the component last loaded).
    pub version: String,
    /// The SHA-256 of the component last loaded (hex).
    pub sha256: String,
    /// Where this host loaded it from: `plugins` (a file of its plugins dir) or `published`
    /// (published to the cluster); `null` when this host has not loaded it.
    pub source: Option<String>,
    /// The published version this host runs, for a published engine.
    pub published_version: Option<i64>,
}

/// Whether a registry speaks for a serving host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegistryRole {
    /// A `tessera serve` host: what it loads is what the engine list shows (`engines` table).
    Serving,
    /// An admin command: loads the same files to run lifecycle exports, and leaves the
    /// `engines` table to the servers.
    Borrowing,
}

pub struct EngineRegistry {
    runtime: Arc<EngineRuntime>,
    database: Database,
    role: RegistryRole,
    engines: RwLock<HashMap<String, Arc<LoadedEngine>>>,
    /// The operators' values of engines' settings.
    operator_settings: OperatorSettings,
    /// Bumped whenever an engine is loaded, replaced or unloaded (the document is rebuilt).
    generation: AtomicU64,
    /// The codes the cluster publishes (an active version): a plugins-dir file of one of them
    /// is not loaded.
    published_codes: RwLock<HashSet<String>>,
    /// Held by whatever changes the loaded set (a plugins-dir scan, a reconciliation with the
    /// published versions), so the two never interleave.
    loading: tokio::sync::Mutex<()>,
    /// Wakes the reconciler (`published::run_reconciler`) after this host changed a release.
    release_wake: Arc<tokio::sync::Notify>,
}

fn valid_code(code: &str) -> bool {
    (1..=32).contains(&code.len())
        && code
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && code.as_bytes()[0].is_ascii_lowercase()
        && !RESERVED_CODES.contains(&code)
}

impl EngineRegistry {
    pub fn new(
        runtime: Arc<EngineRuntime>,
        database: Database,
        role: RegistryRole,
        operator_settings: OperatorSettings,
    ) -> Self {
        Self {
            runtime,
            database,
            role,
            engines: RwLock::new(HashMap::new()),
            operator_settings,
            generation: AtomicU64::new(0),
            published_codes: RwLock::new(HashSet::new()),
            loading: tokio::sync::Mutex::new(()),
            release_wake: Arc::new(tokio::sync::Notify::new()),
        }
    }

    /// Tells this host's reconciler that a release changed (other hosts hear it from the
    /// database).
    pub fn releases_changed(&self) {
        self.release_wake.notify_one();
    }

    pub(crate) fn release_wake(&self) -> Arc<tokio::sync::Notify> {
        self.release_wake.clone()
    }

    /// The database the registry records in.
    pub fn database(&self) -> &Database {
        &self.database
    }

    /// Whether `code` is published to the cluster (an active version), so a file of that code
    /// in the plugins dir is not loaded.
    pub fn is_published(&self, code: &str) -> bool {
        self.published_codes
            .read()
            .expect("published codes lock")
            .contains(code)
    }

    /// Holds off plugins-dir scans while `published.rs` reconciles.
    pub(crate) async fn lock_loading(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.loading.lock().await
    }

    /// Names the codes the cluster publishes (see [`Self::is_published`]).
    pub(crate) fn set_published_codes(&self, codes: HashSet<String>) {
        *self.published_codes.write().expect("published codes lock") = codes;
    }

    /// Changes whenever the set of loaded engines does (a load, a replacement, an unload).
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    pub fn runtime(&self) -> &Arc<EngineRuntime> {
        &self.runtime
    }

    pub fn get(&self, code: &str) -> Option<Arc<LoadedEngine>> {
        self.engines
            .read()
            .expect("engine registry lock")
            .get(code)
            .cloned()
    }

    /// Whether `subscriber` may subscribe to the engine topic `topic` (`<code>.<name>`):
    /// unknown when no loaded engine has that code or its patterns do not match the name
    /// (the engine is not asked); else the engine's `authorize-subscription` decides, and
    /// anything but `true` (a trap included) forbids.
    pub async fn authorize_subscription(
        &self,
        subscriber: &Subscriber,
        topic: &str,
    ) -> anyhow::Result<TopicDecision> {
        let Some((code, name)) = topic.split_once('.') else {
            return Ok(TopicDecision::Unknown);
        };
        let Some(engine) = self.get(code) else {
            return Ok(TopicDecision::Unknown);
        };
        if !engine.topics.matches(name) {
            return Ok(TopicDecision::Unknown);
        }
        let caller = subscriber.to_wit();
        let timeout = self.runtime.config().limits_of(code).handle_timeout;
        let scope = engine.scope(
            &subscriber.tenant_id,
            Some(subscriber.correlation_id.clone()),
        );
        let answer = self
            .runtime
            .call(
                &engine.pre,
                scope,
                timeout,
                |_| false,
                async |guest, store| {
                    guest
                        .call_authorize_subscription(store, &caller, name)
                        .await
                },
            )
            .await;
        match answer {
            Ok(true) => Ok(TopicDecision::Allowed),
            Ok(false) => Ok(TopicDecision::Forbidden),
            Err(CallError::Trap(detail)) => {
                tracing::warn!(engine = %code, error = %detail, "authorize-subscription trapped; refused");
                Ok(TopicDecision::Forbidden)
            }
            Err(error) => Err(anyhow::anyhow!(
                "asking {code} whether a subscription is allowed: {error}"
            )),
        }
    }

    /// The codes of the loaded engines, in no particular order.
    pub fn codes(&self) -> Vec<String> {
        self.engines
            .read()
            .expect("engine registry lock")
            .keys()
            .cloned()
            .collect()
    }

    /// Every loaded engine, ordered by code.
    pub fn loaded(&self) -> Vec<Arc<LoadedEngine>> {
        let mut engines: Vec<_> = self
            .engines
            .read()
            .expect("engine registry lock")
            .values()
            .cloned()
            .collect();
        engines.sort_by(|a, b| a.descriptor.code.cmp(&b.descriptor.code));
        engines
    }

    /// Loads every `*.wasm` in `directory` (in name order, so the first file wins a code), and
    /// unloads engines of this registry loaded from files no longer there.
    pub async fn load_directory(&self, directory: &Path) -> anyhow::Result<()> {
        let _loading = self.loading.lock().await;
        self.load_directory_locked(directory).await
    }

    /// [`Self::load_directory`], with the loading lock already held.
    pub(crate) async fn load_directory_locked(&self, directory: &Path) -> anyhow::Result<()> {
        let mut files = Vec::new();
        match std::fs::read_dir(directory) {
            Ok(entries) => {
                for entry in entries {
                    let path = entry.context("reading the plugins dir")?.path();
                    if path
                        .extension()
                        .is_some_and(|extension| extension == "wasm")
                        && path.is_file()
                    {
                        files.push(path);
                    }
                }
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                tracing::warn!(directory = %directory.display(), "the plugins dir does not exist; no engines loaded");
            }
            Err(error) => {
                return Err(error).with_context(|| format!("reading {}", directory.display()));
            }
        }
        files.sort();
        for path in &files {
            if let Err(error) = self.load_file_locked(path).await {
                tracing::error!(file = %path.display(), error = format!("{error:#}"), "skipping an engine that cannot be loaded");
            }
        }
        let gone: Vec<String> = self
            .loaded()
            .into_iter()
            .filter(|engine| {
                engine
                    .source
                    .file()
                    .is_some_and(|path| !files.iter().any(|file| file == path))
            })
            .map(|engine| engine.descriptor.code.clone())
            .collect();
        for code in gone {
            self.unload(&code).await?;
        }
        Ok(())
    }

    /// Compiles (or loads from cache), describes and registers one component file. A file
    /// whose code is taken by another file is refused; the same file with new bytes replaces
    /// its previous version; a file of a code the cluster publishes is left aside.
    pub async fn load_file(&self, path: &Path) -> anyhow::Result<EngineDescriptor> {
        let _loading = self.loading.lock().await;
        self.load_file_locked(path).await
    }

    async fn load_file_locked(&self, path: &Path) -> anyhow::Result<EngineDescriptor> {
        let bytes = tokio::fs::read(path)
            .await
            .with_context(|| format!("reading {}", path.display()))?;
        let sha256 = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&bytes));
        let manifest = ComponentManifest::read_beside(path)?;
        let source = EngineSource::File(path.to_path_buf());
        if let Some(existing) = self
            .loaded()
            .into_iter()
            .find(|engine| engine.source == source)
            && existing.sha256 == sha256
            && existing.manifest.as_deref() == manifest.as_ref().map(|(_, text)| text.as_str())
        {
            return Ok(existing.descriptor.clone());
        }
        let inspected = self.inspect(bytes, sha256, &source, manifest).await?;
        let code = inspected.descriptor.code.clone();
        if self.is_published(&code) {
            tracing::info!(
                engine = %code,
                file = %path.display(),
                "not loading a plugins-dir file of an engine the cluster publishes"
            );
            return Ok(inspected.descriptor);
        }
        {
            let engines = self.engines.read().expect("engine registry lock");
            if let Some(other) = engines.get(&code)
                && other.source != source
            {
                match &other.source {
                    EngineSource::File(other_path) => anyhow::bail!(
                        "the engine code {code:?} is already loaded from {}",
                        other_path.display()
                    ),
                    // Published in the meantime: the published version stays.
                    EngineSource::Published { .. } => return Ok(inspected.descriptor),
                }
            }
        }
        // A file that changed its code: drop the old code first.
        if let Some(previous) = self
            .loaded()
            .into_iter()
            .find(|engine| engine.source == source)
            && previous.descriptor.code != code
        {
            self.unload(&previous.descriptor.code).await?;
        }
        self.register(inspected, source).await
    }

    /// Registers a published version of `code` (its bytes already checked against their
    /// digest), in place of whatever serves the code now. In-flight calls finish on the old one.
    pub(crate) async fn load_published(
        &self,
        code: &str,
        version: i64,
        bytes: Vec<u8>,
        sha256: String,
        manifest: Option<String>,
    ) -> anyhow::Result<EngineDescriptor> {
        let source = EngineSource::Published { version };
        let manifest = manifest
            .map(ComponentManifest::with_text)
            .transpose()
            .context("its manifest")?;
        let inspected = self.inspect(bytes, sha256, &source, manifest).await?;
        anyhow::ensure!(
            inspected.descriptor.code == code,
            "version {version} of {code:?} describes itself as {:?}",
            inspected.descriptor.code
        );
        self.register(inspected, source).await
    }

    /// Compiles (or loads from the cache), describes and checks a component without
    /// registering it: what publishing checks before it stores a component. A `wasi:http`
    /// component is described by its `manifest` (with its text) instead.
    pub async fn inspect(
        &self,
        bytes: Vec<u8>,
        sha256: String,
        source: &EngineSource,
        manifest: Option<(ComponentManifest, String)>,
    ) -> anyhow::Result<InspectedComponent> {
        // Its figures, read before wasmtime compiles it: a component over the limits no engine
        // exceeds is refused here by name (wasmtime's pool would refuse it with its own words),
        // and over its own engine's limits once `describe` named the engine.
        let file = source.label(None);
        let (bytes, figures) = tokio::task::spawn_blocking(move || {
            let figures = ComponentFigures::of(&bytes);
            (bytes, figures)
        })
        .await
        .context("reading the component's figures failed")?;
        let figures = figures.with_context(|| format!("{file} is not a readable component"))?;
        self.runtime
            .config()
            .check_component(&file, &figures, None)?;
        let component = self.runtime.compile(bytes, &sha256).await?;
        let pre = self.runtime.prepare(&component)?;
        if pre.is_wasi_http() {
            return self.inspect_wasi_http(sha256, source, manifest, pre, figures);
        }
        if manifest.is_some() {
            tracing::warn!(file = %file, "a manifest beside an engine-world component is ignored: it describes itself");
        }
        let (described, api, declared_settings, permissions, declared_topics) = self
            .runtime
            .call(
                &pre,
                CallScope::outside_engines(),
                self.runtime.config().loosest_limits().lifecycle_timeout,
                |_| false,
                async |guest, store| {
                    let descriptor = guest.call_describe(&mut *store).await?;
                    let api = guest.call_describe_api(&mut *store).await?;
                    let settings = guest.call_describe_settings(&mut *store).await?;
                    let permissions = guest.call_describe_permissions(&mut *store).await?;
                    let topics = guest.call_describe_topics(store).await?;
                    Ok((descriptor, api, settings, permissions, topics))
                },
            )
            .await
            .map_err(|error: CallError| anyhow::anyhow!("describe failed: {error}"))?;
        let descriptor = EngineDescriptor {
            code: described.code,
            name: described.name,
            version: described.version,
            requires_tenant_provision: described.requires_tenant_provision,
            requires_user_provision: described.requires_user_provision,
            subscriptions: described.subscriptions,
            outbound_hosts: described.outbound_hosts,
        };
        anyhow::ensure!(
            valid_code(&descriptor.code),
            "the engine code {:?} is not 1-32 lower-case letters, digits or hyphens starting with a letter, or is reserved",
            descriptor.code
        );
        self.runtime
            .config()
            .check_component(&file, &figures, Some(&descriptor.code))?;
        let outbound_hosts = AllowedHosts::parse(&descriptor.outbound_hosts).map_err(|error| {
            anyhow::anyhow!("the engine {:?} declares {error}", descriptor.code)
        })?;
        let api = ApiDescription::parse(&descriptor.code, &api).map_err(|error| {
            anyhow::anyhow!(
                "the engine {:?} describes its API wrongly: {error}",
                descriptor.code
            )
        })?;
        let settings = EngineSettingValues::resolve(
            &descriptor.code,
            declared_settings,
            self.operator_settings.get(&descriptor.code),
        )
        .map_err(|error| anyhow::anyhow!("the engine {:?}: {error}", descriptor.code))?;
        let topics = TopicPatterns::parse(&declared_topics).map_err(|error| {
            anyhow::anyhow!("the engine {:?} declares {error}", descriptor.code)
        })?;
        let may_send_mail = self.runtime.services().mail_transport.grants(
            &descriptor.code,
            permissions.contains(&tessera_wire::engine::Permission::SendMail),
        );
        Ok(InspectedComponent {
            descriptor,
            sha256,
            pre,
            outbound_hosts,
            api,
            settings,
            may_send_mail,
            topics,
            figures,
            public_paths: PublicPaths::default(),
            manifest: None,
        })
    }

    /// Describes a `wasi:http` component from its manifest (or, without one, its file name):
    /// no provisioning, events, jobs, topics or mail; its API the host's catch-all.
    fn inspect_wasi_http(
        &self,
        sha256: String,
        source: &EngineSource,
        manifest: Option<(ComponentManifest, String)>,
        pre: EnginePre,
        figures: ComponentFigures,
    ) -> anyhow::Result<InspectedComponent> {
        let file = source.label(None);
        let (manifest, manifest_text) = match manifest {
            Some((manifest, text)) => (manifest, Some(text)),
            None => (ComponentManifest::default(), None),
        };
        let code = match (&manifest.code, source) {
            (Some(code), _) => code.clone(),
            (None, EngineSource::File(path)) => path
                .file_stem()
                .map(|stem| stem.to_string_lossy().into_owned())
                .unwrap_or_default(),
            (None, EngineSource::Published { .. }) => anyhow::bail!(
                "{file} is a wasi:http component: publish it with a manifest that names its code (`tessera admin engine publish FILE --manifest FILE.toml`)"
            ),
        };
        anyhow::ensure!(
            valid_code(&code),
            "the engine code {code:?} of the wasi:http component {file} is not 1-32 lower-case letters, digits or hyphens starting with a letter, or is reserved"
        );
        self.runtime
            .config()
            .check_component(&file, &figures, Some(&code))?;
        let outbound_hosts = AllowedHosts::parse(&manifest.outbound_hosts)
            .map_err(|error| anyhow::anyhow!("the engine {code:?}'s manifest lists {error}"))?;
        let settings = EngineSettingValues::resolve(
            &code,
            manifest.declared_settings(),
            self.operator_settings.get(&code),
        )
        .map_err(|error| anyhow::anyhow!("the engine {code:?}: {error}"))?;
        let public_paths =
            PublicPaths::parse(&manifest.public_paths).map_err(anyhow::Error::msg)?;
        let descriptor = EngineDescriptor {
            name: manifest.name.clone().unwrap_or_else(|| code.clone()),
            version: manifest.version.clone().unwrap_or_else(|| "0.0.0".into()),
            code: code.clone(),
            requires_tenant_provision: false,
            requires_user_provision: false,
            subscriptions: Vec::new(),
            outbound_hosts: manifest.outbound_hosts.clone(),
        };
        Ok(InspectedComponent {
            api: ApiDescription::wasi_http_component(&code, &public_paths),
            descriptor,
            sha256,
            pre,
            outbound_hosts,
            settings,
            may_send_mail: false,
            topics: TopicPatterns::default(),
            figures,
            public_paths,
            manifest: manifest_text,
        })
    }

    /// Makes `inspected` the engine of its code, replacing the one loaded (whose in-flight
    /// calls finish on it).
    async fn register(
        &self,
        inspected: InspectedComponent,
        source: EngineSource,
    ) -> anyhow::Result<EngineDescriptor> {
        let InspectedComponent {
            descriptor,
            sha256,
            pre,
            outbound_hosts,
            api,
            settings,
            may_send_mail,
            topics,
            figures,
            public_paths,
            manifest,
        } = inspected;
        self.record(&descriptor, &sha256, true).await?;
        let origin = source.label(Some(&descriptor.code));
        let loaded = Arc::new(LoadedEngine {
            descriptor: descriptor.clone(),
            source,
            sha256,
            pre,
            outbound_hosts: Arc::new(outbound_hosts),
            api,
            settings: Arc::new(settings),
            may_send_mail,
            topics: Arc::new(topics),
            public_paths,
            manifest,
        });
        let replaced = self
            .engines
            .write()
            .expect("engine registry lock")
            .insert(descriptor.code.clone(), loaded);
        if let Some(replaced) = replaced {
            self.runtime.retire_warm_prepared(replaced.pre.id());
        }
        self.generation.fetch_add(1, Ordering::AcqRel);
        self.runtime
            .services()
            .bus
            .subscriptions()
            .set(&descriptor.code, descriptor.subscriptions.clone());
        tracing::info!(
            engine = %descriptor.code,
            version = %descriptor.version,
            source = %origin,
            core_instances = figures.core_instances,
            memories = figures.memories,
            tables = figures.tables,
            initial_memory_bytes = figures.initial_memory_bytes,
            largest_table_elements = figures.largest_initial_table_elements,
            "engine loaded"
        );
        Ok(descriptor)
    }

    /// Unloads an engine: new requests get 404, in-flight calls finish; the list shows it
    /// inactive.
    pub async fn unload(&self, code: &str) -> anyhow::Result<()> {
        let removed = self
            .engines
            .write()
            .expect("engine registry lock")
            .remove(code);
        if let Some(removed) = &removed {
            self.generation.fetch_add(1, Ordering::AcqRel);
            self.runtime.retire_warm_prepared(removed.pre.id());
        }
        self.runtime.services().bus.subscriptions().remove(code);
        if removed.is_some() && self.role == RegistryRole::Serving {
            store::mark_inactive(&self.database, code).await?;
            tracing::info!(engine = %code, "engine unloaded");
        }
        Ok(())
    }

    async fn record(
        &self,
        descriptor: &EngineDescriptor,
        sha256: &str,
        is_active: bool,
    ) -> anyhow::Result<()> {
        if self.role == RegistryRole::Borrowing {
            return Ok(());
        }
        store::upsert(&self.database, descriptor, sha256, is_active).await
    }

    /// Marks every recorded engine inactive: called at start, before loading the plugins dir,
    /// so the list reflects what this host actually serves.
    pub async fn mark_all_inactive(&self) -> anyhow::Result<()> {
        store::mark_all_inactive(&self.database).await
    }

    /// A loaded engine as owners see it (`GET /core/api/v1/engines/{code}`).
    pub fn details(&self, code: &str, public_url: &str) -> Option<EngineDetails> {
        let engine = self.get(code)?;
        let descriptor = &engine.descriptor;
        Some(EngineDetails {
            code: descriptor.code.clone(),
            name: descriptor.name.clone(),
            version: descriptor.version.clone(),
            url: format!("{public_url}/{}", descriptor.code),
            world: engine.world().as_str().to_owned(),
            requires_tenant_provision: descriptor.requires_tenant_provision,
            requires_user_provision: descriptor.requires_user_provision,
            subscriptions: descriptor.subscriptions.clone(),
            topics: engine.topics.to_strings(),
            outbound_hosts: descriptor.outbound_hosts.clone(),
            may_send_mail: engine.may_send_mail,
            operations: engine
                .api
                .paths
                .values()
                .filter_map(serde_json::Value::as_object)
                .map(|item| {
                    item.keys()
                        .filter(|key| {
                            !matches!(key.as_str(), "summary" | "description" | "parameters")
                        })
                        .count()
                })
                .sum(),
            settings: engine.settings.listing(&descriptor.code),
            audited_operations: engine
                .api
                .audited
                .iter()
                .map(|operation| AuditedOperationListing {
                    event: operation.event.clone(),
                    method: operation.method.clone(),
                    path: format!("/{}{}", descriptor.code, operation.path),
                })
                .collect(),
        })
    }

    /// Every engine ever recorded, loaded ones active, with their public URL.
    pub async fn records(&self, public_url: &str) -> anyhow::Result<Vec<EngineRecord>> {
        let rows = store::list(&self.database).await?;
        let mut records: Vec<EngineRecord> = rows
            .into_iter()
            .map(|row| EngineRecord {
                url: format!("{public_url}/{}", row.code),
                code: row.code,
                name: row.name,
                is_active: row.is_active,
                requires_tenant_provision: row.requires_tenant_provision,
                requires_user_provision: row.requires_user_provision,
                version: row.version,
                sha256: row.component_sha256,
                source: None,
                published_version: None,
            })
            .collect();
        for record in &mut records {
            if let Some(loaded) = self.get(&record.code) {
                // This host's own view, whatever another host recorded last.
                record.version = loaded.descriptor.version.clone();
                record.sha256 = loaded.sha256.clone();
                record.source = Some(loaded.source.kind().to_owned());
                record.published_version = loaded.source.published_version();
            }
        }
        Ok(records)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_codes_are_checked() {
        assert!(valid_code("chat"));
        assert!(valid_code("user-manager2"));
        assert!(!valid_code("core"));
        assert!(!valid_code("console"));
        assert!(!valid_code("Chat"));
        assert!(!valid_code("2fa"));
        assert!(!valid_code(""));
    }
}
