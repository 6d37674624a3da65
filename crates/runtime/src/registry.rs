//! The engine registry: which components are loaded, under which code, from which file. Loads
//! every `*.wasm` of the plugins dir; a broken file, or a second file claiming a code already
//! loaded, is logged and skipped. The `engines` table mirrors it for the engine list.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use anyhow::Context as _;
use serde::Serialize;
use utoipa::ToSchema;

use super::bindings::v0_1::EnginePre;
use super::engine::{CallError, EngineRuntime};
use super::imports::{CallScope, StoreState};
use super::outbound::AllowedHosts;
use super::store::engines as store;
use tessera_storage::Database;

/// Path prefixes the host serves itself; no engine may take them as its code.
pub const RESERVED_CODES: [&str; 3] = ["auth", "core", "api"];

/// What an engine says about itself (`describe`), as plain Rust: `tessera-wire`'s
/// descriptor, the type the SDK gives engine authors.
pub type EngineDescriptor = tessera_wire::engine::Descriptor;

/// A loaded component, ready to instantiate. Calls hold an `Arc`, so a replaced or removed
/// engine finishes its in-flight calls on the old version.
pub struct LoadedEngine {
    pub descriptor: EngineDescriptor,
    pub path: PathBuf,
    pub sha256: String,
    pub pre: EnginePre<StoreState>,
    /// `descriptor.outbound_hosts`, parsed; handed to every call's scope.
    pub outbound_hosts: Arc<AllowedHosts>,
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
        }
    }
}

/// An item of `GET /core/api/v1/engines`.
#[derive(Debug, Clone, Serialize, ToSchema, sqlx::FromRow)]
pub struct EngineRecord {
    pub code: String,
    pub name: String,
    #[sqlx(skip)]
    pub url: String,
    pub is_active: bool,
    pub requires_tenant_provision: bool,
    pub requires_user_provision: bool,
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
    pub fn new(runtime: Arc<EngineRuntime>, database: Database, role: RegistryRole) -> Self {
        Self {
            runtime,
            database,
            role,
            engines: RwLock::new(HashMap::new()),
        }
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
    /// marks engines of this registry that are no longer there inactive.
    pub async fn load_directory(&self, directory: &Path) -> anyhow::Result<()> {
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
            if let Err(error) = self.load_file(path).await {
                tracing::error!(file = %path.display(), error = format!("{error:#}"), "skipping an engine that cannot be loaded");
            }
        }
        let gone: Vec<String> = self
            .loaded()
            .into_iter()
            .filter(|engine| !files.contains(&engine.path))
            .map(|engine| engine.descriptor.code.clone())
            .collect();
        for code in gone {
            self.unload(&code).await?;
        }
        Ok(())
    }

    /// Compiles (or loads from cache), describes and registers one component file. A file
    /// whose code is taken by another file is refused; the same file with new bytes replaces
    /// its previous version.
    pub async fn load_file(&self, path: &Path) -> anyhow::Result<EngineDescriptor> {
        let bytes = tokio::fs::read(path)
            .await
            .with_context(|| format!("reading {}", path.display()))?;
        let sha256 = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&bytes));
        if let Some(existing) = self.loaded().into_iter().find(|engine| engine.path == path)
            && existing.sha256 == sha256
        {
            return Ok(existing.descriptor.clone());
        }
        let component = self.runtime.compile(bytes, &sha256).await?;
        let pre = self.runtime.prepare(&component)?;
        let scope = CallScope {
            engine_code: String::new(),
            tenant_id: None,
            correlation_id: None,
            actor_id: None,
            outbound_hosts: Arc::default(),
        };
        let described = self
            .runtime
            .call(
                &pre,
                scope,
                self.runtime.config().lifecycle_timeout,
                async |guest, store| guest.call_describe(store).await,
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
        let outbound_hosts = AllowedHosts::parse(&descriptor.outbound_hosts).map_err(|error| {
            anyhow::anyhow!("the engine {:?} declares {error}", descriptor.code)
        })?;
        {
            let engines = self.engines.read().expect("engine registry lock");
            if let Some(other) = engines.get(&descriptor.code)
                && other.path != path
            {
                anyhow::bail!(
                    "the engine code {:?} is already loaded from {}",
                    descriptor.code,
                    other.path.display()
                );
            }
        }
        // A file that changed its code: drop the old code first.
        if let Some(previous) = self.loaded().into_iter().find(|engine| engine.path == path)
            && previous.descriptor.code != descriptor.code
        {
            self.unload(&previous.descriptor.code).await?;
        }
        self.record(&descriptor, &sha256, true).await?;
        let loaded = Arc::new(LoadedEngine {
            descriptor: descriptor.clone(),
            path: path.to_path_buf(),
            sha256,
            pre,
            outbound_hosts: Arc::new(outbound_hosts),
        });
        self.engines
            .write()
            .expect("engine registry lock")
            .insert(descriptor.code.clone(), loaded);
        self.runtime
            .services()
            .bus
            .subscriptions()
            .set(&descriptor.code, descriptor.subscriptions.clone());
        tracing::info!(engine = %descriptor.code, version = %descriptor.version, file = %path.display(), "engine loaded");
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

    /// Every engine ever recorded, loaded ones active, with their public URL.
    pub async fn records(&self, public_url: &str) -> anyhow::Result<Vec<EngineRecord>> {
        let mut records = store::list(&self.database).await?;
        for record in &mut records {
            record.url = format!("{public_url}/{}", record.code);
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
        assert!(!valid_code("Chat"));
        assert!(!valid_code("2fa"));
        assert!(!valid_code(""));
    }
}
