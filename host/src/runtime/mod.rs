//! The engine runtime: engines are WebAssembly components run by wasmtime, one fresh store per
//! call, with a deadline, a memory cap and only the imports of the engine world.

pub mod bindings;
pub mod engine;
pub mod registry;
pub mod store;

pub use engine::{CallError, EngineRuntime, RuntimeConfig};
pub use registry::{EngineDescriptor, EngineRegistry, LoadedEngine};
pub mod lifecycle;
pub mod routes;
pub mod watcher;
