//! The runtime's SQL, one module per table it owns: the engine registry (`engines`), durable
//! engine work (`engine_work`) and the batch writer's PostgreSQL group statement. The engines'
//! own storage (`engine_kv`, blobs) and the realtime publications (`realtime_events`, which
//! the auth service's audit trail writes too) are `tessera-storage`'s.

pub mod engines;
pub mod published;
pub use tessera_storage::realtime_events;
pub mod work;
pub mod write_group;
