//! Committing a chat change with its events: [`stage`] adds one webhook delivery (and the job
//! of its first attempt) per subscribed active webhook to the batch of the change itself, so a
//! committed change always has its deliveries, and [`commit_with`] writes that batch and then
//! publishes the events on the host's bus, all in the call's unit of work.

use tessera_sdk::HostError;

use crate::batch::Batch;
use crate::events::{self, ChatEvent};
use crate::webhooks;

/// Adds the deliveries of `chat_events` to `batch`: one per active webhook subscribed to each.
pub fn stage(
    batch: &mut Batch,
    tenant_id: &str,
    chat_events: &[ChatEvent],
) -> Result<(), HostError> {
    if chat_events.is_empty() {
        return Ok(());
    }
    let subscribers = webhooks::active()?;
    for event in chat_events {
        for webhook in subscribers.iter().filter(|webhook| {
            webhook
                .events
                .iter()
                .any(|subscribed| subscribed == event.event_type)
        }) {
            webhooks::delivery::stage_new(batch, tenant_id, webhook, event)?;
        }
    }
    Ok(())
}

/// Writes `batch` with the webhook deliveries of `chat_events` and publishes them, all in the
/// call's unit of work.
pub fn commit_with(
    mut batch: Batch,
    tenant_id: &str,
    chat_events: &[ChatEvent],
) -> Result<(), HostError> {
    stage(&mut batch, tenant_id, chat_events)?;
    batch.commit()?;
    events::publish(chat_events)
}
