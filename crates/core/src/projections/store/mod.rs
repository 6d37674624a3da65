//! The SQL of the projections: their checkpoints (`checkpoints.rs`), the worker's reads of the
//! event log in commit-safe order and the announcement of appends (`log.rs`), the projector's
//! timeline and inbox writes (`projector.rs`) and the per-tenant counters behind the metrics
//! (`stats.rs`). Batch statements run in the worker's transaction (`&mut Tx`), reads outside
//! one on the pool; every function returns plain rows or values.

pub(crate) mod checkpoints;
pub(crate) mod log;
pub(crate) mod projector;
pub(crate) mod stats;
