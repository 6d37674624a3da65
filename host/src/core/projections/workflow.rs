//! The workflow worker's consumer of the log. It tails the log with its own checkpoint like
//! every projection; the workflows (event-driven automations) it will run for each event are
//! the subject of their own module. It is not a read model: a rebuild leaves it alone, since
//! replaying it would run actions a second time.

use crate::core::events::StoredEvent;
use crate::core::projections::Projection;
use crate::storage::Tx;

/// Consumes the log for workflows.
#[derive(Debug, Clone, Default)]
pub struct WorkflowConsumer;

impl Projection for WorkflowConsumer {
    fn name(&self) -> &'static str {
        "workflow"
    }

    async fn apply(&self, _tx: &mut Tx, _events: &[StoredEvent]) -> anyhow::Result<()> {
        // No workflow definitions exist yet, so no event triggers anything.
        Ok(())
    }

    async fn reset(&self, _tx: &mut Tx) -> anyhow::Result<bool> {
        Ok(false)
    }
}
