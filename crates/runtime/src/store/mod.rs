//! The runtime's SQL, one module per table it owns: the engine registry (`engines`), durable
//! engine work (`engine_work`) and the batch writer's PostgreSQL group statement. The engines'
//! own storage (`engine_kv`, blobs) is `tessera-storage`'s.

pub mod engines;
pub mod published;
pub mod realtime_events;
pub mod work;
pub mod write_group;
