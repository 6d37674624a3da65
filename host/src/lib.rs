//! The Tessera host: one binary serving the authentication service (`/auth`), the core service
//! (`/core`) and, through the engine runtime, every engine component (`/<engine>/…`).
//! See docs/src/architecture.md for the map.

pub mod app;
pub mod backup;
pub mod cli;
pub mod config;
pub mod metrics;
pub mod openapi;
pub mod probes;
pub mod secrets;
pub mod server;
pub mod settings;
pub mod state;
pub mod table;
pub mod telemetry;

/// The authentication service (crates/auth), under the path the host's modules use.
pub use tessera_auth as auth;
/// Cluster membership (crates/cluster), under the path the host's modules use.
pub use tessera_cluster as cluster;
/// The web console (crates/console), under the path the host's modules use.
pub use tessera_console as console;
/// The core service (crates/core), under the path the host's modules use.
pub use tessera_core as core;
/// Engines to and from OCI registries, publisher signatures (crates/distribution), under the
/// path the host's modules use.
pub use tessera_distribution as distribution;
/// The HTTP kit (crates/http), under the path the host's modules use.
pub use tessera_http as http;
/// The orchestrator (crates/orchestrator), under the path the host's modules use.
pub use tessera_orchestrator as orchestrator;
/// The engine runtime (crates/runtime), under the path the host's modules use.
pub use tessera_runtime as runtime;
/// The storage layer (crates/storage), under the path the host's modules use.
pub use tessera_storage as storage;
pub use tessera_storage::{on_pool, on_tx, on_writer};
/// Tenancy (crates/tenancy), under the path the host's modules use.
pub use tessera_tenancy as tenancy;
