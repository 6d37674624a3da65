//! The host side of the `blobs` import: whole binary values (file bytes) in the database,
//! scoped like storage to the calling engine and the tenant of the call, with a per-scope total
//! for quotas (`storage::engine_blobs`).

use super::bindings::v0_2::tessera::engine as world;
use super::imports::{StoreState, check_batch, check_key};
use tessera_storage::engine_blobs::{self, PutOutcome};

/// Largest blob an engine may store, in bytes (engine request bodies are capped lower by
/// default: `TESSERA_ENGINE_MAX_BODY_BYTES`).
pub const MAX_BLOB_BYTES: usize = 64 * 1024 * 1024;

impl world::blobs::Host for StoreState {
    async fn put(
        &mut self,
        key: String,
        content: Vec<u8>,
        quota_bytes: Option<u64>,
        sets: Vec<(String, Vec<u8>)>,
    ) -> wasmtime::Result<Result<bool, String>> {
        let checked = check_key(&key)
            .and_then(|()| check_batch(&sets, &[], 1))
            .and_then(|()| {
                if content.len() > MAX_BLOB_BYTES {
                    Err(format!("blobs are at most {MAX_BLOB_BYTES} bytes"))
                } else {
                    Ok(())
                }
            });
        if let Err(message) = checked {
            return Ok(Err(message));
        }
        let scope = match self.kv_scope() {
            Ok(scope) => scope,
            Err(message) => return Ok(Err(message)),
        };
        let database = &self.services.database;
        Ok(
            match engine_blobs::put(database, &scope, &key, &content, quota_bytes, &sets).await {
                Ok(outcome) => Ok(outcome == PutOutcome::Stored),
                Err(error) => Err(self.import_failure("blobs", error)),
            },
        )
    }

    async fn get(&mut self, key: String) -> wasmtime::Result<Result<Option<Vec<u8>>, String>> {
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
            .and_then(|()| check_batch(&[], &deletes, keys.len()));
        if let Err(message) = checked {
            return Ok(Err(message));
        }
        let scope = match self.kv_scope() {
            Ok(scope) => scope,
            Err(message) => return Ok(Err(message)),
        };
        Ok(
            match engine_blobs::delete(&self.services.database, &scope, &keys, &deletes).await {
                Ok(removed) => Ok(removed),
                Err(error) => Err(self.import_failure("blobs", error)),
            },
        )
    }

    async fn delete_prefix(&mut self, prefix: String) -> wasmtime::Result<Result<u64, String>> {
        let scope = match self.kv_scope() {
            Ok(scope) => scope,
            Err(message) => return Ok(Err(message)),
        };
        Ok(
            match engine_blobs::delete_prefix(&self.services.database, &scope, &prefix).await {
                Ok(removed) => Ok(removed),
                Err(error) => Err(self.import_failure("blobs", error)),
            },
        )
    }

    async fn usage(&mut self) -> wasmtime::Result<Result<u64, String>> {
        let scope = match self.kv_scope() {
            Ok(scope) => scope,
            Err(message) => return Ok(Err(message)),
        };
        Ok(
            match engine_blobs::usage(&self.services.database, &scope).await {
                Ok(bytes) => Ok(bytes),
                Err(error) => Err(self.import_failure("blobs", error)),
            },
        )
    }
}
