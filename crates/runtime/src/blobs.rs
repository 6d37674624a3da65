//! The host side of the `blobs` import: whole binary values (file bytes) in the database,
//! scoped like storage to the calling engine and the tenant of the call, with a per-scope total
//! for quotas (`storage::engine_blobs`).

use super::bindings::v0_3::tessera::engine as world;
use super::imports::{StoreState, check_batch, check_key};
use tessera_storage::Database;
use tessera_storage::engine_blobs;
use tessera_storage::engine_kv::KvScope;

/// Largest blob an engine may store, in bytes (engine request bodies are capped lower by
/// default: `TESSERA_ENGINE_MAX_BODY_BYTES`).
pub const MAX_BLOB_BYTES: usize = 64 * 1024 * 1024;

/// Blob writes go into the call's unit of work like storage writes. A put's quota is checked
/// against the call's view now, and against the committed total again when the unit commits
/// (at a synchronisation point or at the end of the call); a unit over it commits nothing.
impl world::blobs::Host for StoreState {
    async fn put(
        &mut self,
        key: String,
        content: Vec<u8>,
        quota_bytes: Option<u64>,
        sets: Vec<(String, Vec<u8>)>,
    ) -> wasmtime::Result<Result<bool, String>> {
        let bytes = sets.iter().map(|(_, value)| value.len()).sum();
        let checked = check_key(&key)
            .and_then(|()| check_batch(&sets, &[], 1))
            .and_then(|()| {
                if content.len() > MAX_BLOB_BYTES {
                    Err(format!("blobs are at most {MAX_BLOB_BYTES} bytes"))
                } else {
                    Ok(())
                }
            })
            .and_then(|()| self.unit.check_room(sets.len() + 1, bytes));
        if let Err(message) = checked {
            return Ok(Err(message));
        }
        let committed_size = match self.committed_blob_size(&key).await {
            Ok(size) => size,
            Err(message) => return Ok(Err(message)),
        };
        if let Some(quota) = quota_bytes {
            let usage = match self.blob_usage_in_view().await {
                Ok(usage) => usage,
                Err(message) => return Ok(Err(message)),
            };
            let replaced = match self.unit.blobs().known(&key) {
                Some(current) => current.map_or(0, |content| content.len() as u64),
                None => committed_size.unwrap_or(0),
            };
            if usage.saturating_sub(replaced) + content.len() as u64 > quota {
                return Ok(Ok(false));
            }
        }
        if let Err(message) = self
            .unit
            .blobs_mut()
            .put(key, content, committed_size, quota_bytes)
        {
            return Ok(Err(message));
        }
        for (key, value) in sets {
            self.unit.write(key, Some(value));
        }
        Ok(Ok(true))
    }

    async fn get(&mut self, key: String) -> wasmtime::Result<Result<Option<Vec<u8>>, String>> {
        if let Some(known) = self.unit.blobs().known(&key) {
            return Ok(Ok(known.map(<[u8]>::to_vec)));
        }
        let scope = match self.kv_scope() {
            Ok(scope) => scope,
            Err(message) => return Ok(Err(message)),
        };
        Ok(
            match engine_blobs::get(&self.services.database, &scope, &key).await {
                Ok(content) => Ok(content),
                Err(error) => Err(self.import_failure("blobs", error)),
            },
        )
    }

    async fn delete(
        &mut self,
        keys: Vec<String>,
        deletes: Vec<String>,
    ) -> wasmtime::Result<Result<u64, String>> {
        let checked = keys
            .iter()
            .try_for_each(|key| check_key(key))
            .and_then(|()| check_batch(&[], &deletes, keys.len()))
            .and_then(|()| self.unit.check_room(keys.len() + deletes.len(), 0));
        if let Err(message) = checked {
            return Ok(Err(message));
        }
        let mut removed = 0;
        for key in keys {
            let committed_size = match self.committed_blob_size(&key).await {
                Ok(size) => size,
                Err(message) => return Ok(Err(message)),
            };
            if self.unit.blobs_mut().delete(&key, committed_size) {
                removed += 1;
            }
        }
        for key in deletes {
            self.unit.write(key, None);
        }
        Ok(Ok(removed))
    }

    async fn delete_prefix(&mut self, prefix: String) -> wasmtime::Result<Result<u64, String>> {
        if let Err(message) = self.unit.check_room(1, 0) {
            return Ok(Err(message));
        }
        let decided = self.unit.blobs().decided_under(&prefix);
        let committed = if self.unit.blobs().prefix_deleted(&prefix) {
            0
        } else {
            match self.committed_blobs_under(&prefix, true).await {
                Ok((count, _)) => count.saturating_sub(decided.committed),
                Err(message) => return Ok(Err(message)),
            }
        };
        self.unit.blobs_mut().delete_prefix(&prefix);
        Ok(Ok(committed + decided.visible))
    }

    async fn usage(&mut self) -> wasmtime::Result<Result<u64, String>> {
        Ok(self.blob_usage_in_view().await)
    }
}

impl StoreState {
    /// The committed size of the blob `key`, when the unit has not decided it.
    async fn committed_blob_size(&mut self, key: &str) -> Result<Option<u64>, String> {
        if self.unit.blobs().touched(key) {
            return Ok(None);
        }
        let (engine_code, tenant_id) = self.owned_scope()?;
        let scope = KvScope {
            engine_code: &engine_code,
            tenant_id: &tenant_id,
        };
        let database = self.services.database.clone();
        match engine_blobs::sizes(&database, &scope, &[key.to_owned()]).await {
            Ok(mut sizes) => Ok(sizes.remove(0)),
            Err(error) => Err(self.import_failure("blobs", error)),
        }
    }

    /// How many committed blobs are under `prefix` and their bytes, leaving out those under
    /// the unit's deleted prefixes inside it when `inside` is true.
    async fn committed_blobs_under(
        &mut self,
        prefix: &str,
        inside: bool,
    ) -> Result<(u64, u64), String> {
        let (engine_code, tenant_id) = self.owned_scope()?;
        let inner = if inside {
            self.unit.blobs().deleted_prefixes_under(prefix)
        } else {
            Vec::new()
        };
        let database = self.services.database.clone();
        let scope = KvScope {
            engine_code: &engine_code,
            tenant_id: &tenant_id,
        };
        match count_blobs(&database, &scope, prefix, &inner).await {
            Ok(counted) => Ok(counted),
            Err(error) => Err(self.import_failure("blobs", error)),
        }
    }

    /// The bytes the scope's blobs take in the call's view.
    async fn blob_usage_in_view(&mut self) -> Result<u64, String> {
        let (engine_code, tenant_id) = self.owned_scope()?;
        let database = self.services.database.clone();
        let scope = KvScope {
            engine_code: &engine_code,
            tenant_id: &tenant_id,
        };
        let committed = match engine_blobs::usage(&database, &scope).await {
            Ok(committed) => committed,
            Err(error) => return Err(self.import_failure("blobs", error)),
        };
        let mut freed = 0;
        for prefix in self.unit.blobs().deleted_prefixes_under("") {
            freed += self.committed_blobs_under(&prefix, false).await?.1;
        }
        let (added, removed) = self.unit.blobs().usage_change();
        Ok((committed + added).saturating_sub(removed + freed))
    }
}

/// The committed blobs under `prefix` but not under the disjoint prefixes `inner`: how many,
/// and their bytes.
async fn count_blobs(
    database: &Database,
    scope: &KvScope<'_>,
    prefix: &str,
    inner: &[String],
) -> anyhow::Result<(u64, u64)> {
    let (mut count, mut bytes) = engine_blobs::count_prefix(database, scope, prefix).await?;
    for inner in inner {
        let (inner_count, inner_bytes) = engine_blobs::count_prefix(database, scope, inner).await?;
        count = count.saturating_sub(inner_count);
        bytes = bytes.saturating_sub(inner_bytes);
    }
    Ok((count, bytes))
}
