//! The engine runtime: engines are WebAssembly components run by wasmtime, one store per call
//! (a fresh one, or one kept warm from an earlier call of the same engine version in the same
//! tenant), with a deadline, a memory cap and only the imports of the engine world, each call
//! admitted within the pool's size and its tenant's share of it.

pub mod admission;
pub mod api_description;
pub mod batch_reader;
pub mod batch_writer;
pub mod bindings;
pub mod blobs;
pub mod bus;
pub mod call_metrics;
pub mod component_limits;
pub mod component_manifest;
pub mod config;
pub mod engine;
pub mod engine_settings;
mod guest;
pub mod imports;
mod instance_limits;
pub mod registry;

pub mod lifecycle;
pub mod lifecycle_routes;
pub mod mail_transport;
mod older_worlds;
pub mod outbound;
pub mod published;
pub mod realtime;
pub mod routes;
pub mod state;
mod store;
pub mod unit_of_work;
pub mod vault;
pub mod warm_instances;
mod wasi_config;
mod wasi_http;
mod wasi_http_outbound;
mod wasi_keyvalue;
pub mod watcher;
pub mod work;
mod work_queue;

use std::sync::Arc;

pub use engine::{CallError, EngineRuntime, RuntimeConfig};
pub use registry::{EngineDescriptor, EngineRegistry, LoadedEngine, RegistryRole};

pub use crate::config::RuntimeSetup;
use tessera_storage::Database;

/// Starts the runtime and loads every engine of the plugins dir, then the versions published
/// to the cluster (which win over files of the same code). A serving host first marks every
/// recorded engine inactive, so the engine list shows what it actually serves.
pub async fn start_engines(
    config: RuntimeSetup<'_>,
    database: &Database,
    role: RegistryRole,
) -> anyhow::Result<Arc<EngineRegistry>> {
    let engines = start_registry(config, database, role)?;
    if role == RegistryRole::Serving {
        engines.mark_all_inactive().await?;
    }
    // The published versions first: the plugins dir's files of their codes are then left aside.
    published::reconcile(&engines, config.plugins_dir).await?;
    engines.load_directory(config.plugins_dir).await?;
    Ok(engines)
}

/// Starts the runtime with an empty registry (what `admin engine publish` checks a component
/// with).
pub fn start_registry(
    config: RuntimeSetup<'_>,
    database: &Database,
    role: RegistryRole,
) -> anyhow::Result<Arc<EngineRegistry>> {
    let runtime = EngineRuntime::new(
        config.runtime.clone(),
        imports::HostServices::new(config, database.clone())?,
    )?;
    Ok(Arc::new(EngineRegistry::new(
        Arc::new(runtime),
        database.clone(),
        role,
        config.engine_settings.clone(),
    )))
}
