//! Erasing a tenant's core data (`tessera admin delete-tenant`): its event log (events, groups
//! and sequence) and its entities (which name the tenant by its number in the log), its search
//! index (documents, index entries, dictionary words, key), its inbox and projection
//! statistics, all inside the caller's transaction. The rows that reference the tenant's row
//! (families, workflows and their runs, workspaces, memberships) go with it by
//! `ON DELETE CASCADE` when the caller deletes the tenant; engine storage is the
//! orchestrator's.

use serde::Serialize;

use crate::store::erasure as store;
use tessera_storage::Tx;

/// How many rows of each kind were erased.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ErasedCoreData {
    pub events: u64,
    pub search_documents: u64,
    pub inbox_items: u64,
}

/// Deletes the tenant's event log, search index entries, inbox items and projection
/// statistics.
pub async fn erase_tenant(tx: &mut Tx, tenant_id: &str) -> anyhow::Result<ErasedCoreData> {
    let events = store::erase_log(tx, tenant_id).await?;
    let search_documents = crate::search::erase_tenant(tx, tenant_id).await?;
    let inbox_items = store::erase_read_models(tx, tenant_id).await?;
    Ok(ErasedCoreData {
        events,
        search_documents,
        inbox_items,
    })
}
