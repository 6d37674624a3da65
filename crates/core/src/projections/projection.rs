//! What a projection is: a consumer of the event log with its own checkpoint, which one
//! worker (`worker.rs`) drives. The projections (`projector.rs`, `bus_relay.rs`, the search
//! index, the workflow runner) implement it; `mod.rs` starts their workers.

use std::future::Future;

use crate::events::StoredEvent;
use tessera_storage::Tx;

/// A consumer of the event log with its own checkpoint.
pub trait Projection: Send + Sync + 'static {
    /// The checkpoint row, the worker slot in extended health and the metrics key:
    /// `projector`, `search`, `workflow` or `bus`.
    fn name(&self) -> &'static str;

    /// Applies `events` (in log order, all after the checkpoint) inside `tx`; the worker
    /// moves the checkpoint in the same transaction. An error rolls the whole batch back.
    fn apply<'a>(
        &'a self,
        tx: &'a mut Tx,
        events: &'a [StoredEvent],
    ) -> impl Future<Output = anyhow::Result<()>> + Send + 'a;

    /// Deletes everything the projection wrote, for `tessera admin rebuild-projections`.
    /// `Ok(false)` when the projection is not a read model and must not be replayed (the
    /// workflow worker: replaying it would run actions again).
    fn reset<'a>(
        &'a self,
        tx: &'a mut Tx,
    ) -> impl Future<Output = anyhow::Result<bool>> + Send + 'a;

    /// Called after a batch's transaction committed (the bus relay wakes the work worker).
    fn committed(&self) {}
}
