//! `wasi:keyvalue@0.2.0-draft` (store, atomics, batch) for `wasi:http` component engines, over
//! the same tenant-scoped storage as the engine world's `storage` import: every read and write
//! goes through it, so it acts in the call's engine and tenant only, its writes join the
//! request's unit of work (committed when the component answers below 400), and its limits
//! (key and value sizes, the scan budget) are the same.
//!
//! A bucket is a key prefix: `open("cache")` names the keys `kv/cache/…` of the engine's
//! storage in the caller's tenant. Every identifier opens (a bucket exists once it holds a key);
//! outside a tenant (an anonymous request on a public path) `open` answers `access-denied`.
//! `list-keys` cursors are valid within the request that received them. `increment` is a
//! synchronisation point, as `compare-and-swap` is: it commits the request's writes so far with
//! the new count, and retries (after a random wait) when another request changed the key in
//! between.

use wasmtime::component::Resource;

use crate::bindings::v0_3::tessera::engine::storage::Host as Storage;
use crate::bindings::v0_3::tessera::engine::storage::Transaction;
use crate::bindings::wasi_standard::Bucket;
use crate::bindings::wasi_standard::wasi::keyvalue::{atomics, batch, store};
use crate::imports::StoreState;
use store::{Error, KeyResponse};

/// The prefix of every key a component stores through `wasi:keyvalue`.
const KEY_PREFIX: &str = "kv/";

/// The longest bucket identifier, in bytes.
pub const MAX_BUCKET_IDENTIFIER_BYTES: usize = 128;

/// How often `increment` tries when other requests keep changing its key; between tries it
/// waits a random while of up to a millisecond per try so far (at most 20 ms), so contenders
/// spread out instead of colliding again.
const INCREMENT_ATTEMPTS: u32 = 64;

impl Bucket {
    fn key(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }
}

/// A message of the storage import as the `other` error.
fn other(message: String) -> Error {
    Error::Other(message)
}

impl StoreState {
    fn bucket(&mut self, bucket: &Resource<Bucket>) -> wasmtime::Result<&mut Bucket> {
        Ok(self.resource_table().get_mut(bucket)?)
    }

    fn bucket_key(&mut self, bucket: &Resource<Bucket>, key: &str) -> wasmtime::Result<String> {
        Ok(self.bucket(bucket)?.key(key))
    }
}

impl store::Host for StoreState {
    async fn open(
        &mut self,
        identifier: String,
    ) -> wasmtime::Result<Result<Resource<Bucket>, Error>> {
        if self.tenant("wasi:keyvalue").is_err() {
            return Ok(Err(Error::AccessDenied));
        }
        if identifier.len() > MAX_BUCKET_IDENTIFIER_BYTES || identifier.contains('/') {
            return Ok(Err(other(format!(
                "a bucket identifier is at most {MAX_BUCKET_IDENTIFIER_BYTES} bytes without '/'"
            ))));
        }
        let bucket = Bucket {
            prefix: format!("{KEY_PREFIX}{identifier}/"),
            cursors: Vec::new(),
        };
        Ok(Ok(self.resource_table().push(bucket)?))
    }
}

impl store::HostBucket for StoreState {
    async fn get(
        &mut self,
        bucket: Resource<Bucket>,
        key: String,
    ) -> wasmtime::Result<Result<Option<Vec<u8>>, Error>> {
        let key = self.bucket_key(&bucket, &key)?;
        Ok(Storage::get(self, key).await?.map_err(other))
    }

    async fn set(
        &mut self,
        bucket: Resource<Bucket>,
        key: String,
        value: Vec<u8>,
    ) -> wasmtime::Result<Result<(), Error>> {
        let key = self.bucket_key(&bucket, &key)?;
        Ok(Storage::set(self, key, value).await?.map_err(other))
    }

    async fn delete(
        &mut self,
        bucket: Resource<Bucket>,
        key: String,
    ) -> wasmtime::Result<Result<(), Error>> {
        let key = self.bucket_key(&bucket, &key)?;
        Ok(Storage::delete(self, key).await?.map(drop).map_err(other))
    }

    async fn exists(
        &mut self,
        bucket: Resource<Bucket>,
        key: String,
    ) -> wasmtime::Result<Result<bool, Error>> {
        let key = self.bucket_key(&bucket, &key)?;
        Ok(Storage::get(self, key)
            .await?
            .map(|value| value.is_some())
            .map_err(other))
    }

    async fn list_keys(
        &mut self,
        bucket: Resource<Bucket>,
        cursor: Option<u64>,
    ) -> wasmtime::Result<Result<KeyResponse, Error>> {
        let (prefix, after) = {
            let open = self.bucket(&bucket)?;
            let after = match cursor {
                None | Some(0) => None,
                Some(cursor) => {
                    let Some(after) = usize::try_from(cursor - 1)
                        .ok()
                        .and_then(|index| open.cursors.get(index))
                    else {
                        return Ok(Err(other(format!(
                            "{cursor} is not a cursor of this bucket in this request"
                        ))));
                    };
                    Some(after.clone())
                }
            };
            (open.prefix.clone(), after)
        };
        let page = self.services.settings.scans.page;
        let entries = match Storage::scan(self, prefix.clone(), after, page, false).await? {
            Ok(entries) => entries,
            Err(message) => return Ok(Err(other(message))),
        };
        let full = entries.len() == page as usize;
        let keys: Vec<String> = entries
            .into_iter()
            .filter_map(|(key, _)| key.strip_prefix(&prefix).map(str::to_owned))
            .collect();
        let open = self.bucket(&bucket)?;
        let cursor = match keys.last() {
            Some(last) if full => {
                open.cursors.push(open.key(last));
                Some(open.cursors.len() as u64)
            }
            _ => None,
        };
        Ok(Ok(KeyResponse { keys, cursor }))
    }

    async fn drop(&mut self, bucket: Resource<Bucket>) -> wasmtime::Result<()> {
        self.resource_table().delete(bucket)?;
        Ok(())
    }
}

impl atomics::Host for StoreState {
    async fn increment(
        &mut self,
        bucket: Resource<Bucket>,
        key: String,
        delta: u64,
    ) -> wasmtime::Result<Result<u64, Error>> {
        let key = self.bucket_key(&bucket, &key)?;
        for attempt in 0..INCREMENT_ATTEMPTS {
            if attempt > 0 {
                let most = u64::from(attempt.min(20)) * 1000;
                let wait = rand::random_range(0..most);
                tokio::time::sleep(std::time::Duration::from_micros(wait)).await;
            }
            let current = match Storage::get(self, key.clone()).await? {
                Ok(current) => current,
                Err(message) => return Ok(Err(other(message))),
            };
            let count = match current.as_deref().map(std::str::from_utf8) {
                None => 0,
                Some(Ok(text)) => match text.parse::<u64>() {
                    Ok(count) => count,
                    Err(_) => {
                        return Ok(Err(other(format!(
                            "the value under {key:?} is not a decimal count"
                        ))));
                    }
                },
                Some(Err(_)) => {
                    return Ok(Err(other(format!(
                        "the value under {key:?} is not a decimal count"
                    ))));
                }
            };
            let Some(next) = count.checked_add(delta) else {
                return Ok(Err(other(format!("adding {delta} to {key:?} overflows"))));
            };
            let transaction = Transaction {
                expect: vec![(key.clone(), current)],
                sets: vec![(key.clone(), next.to_string().into_bytes())],
                deletes: Vec::new(),
                add: Vec::new(),
                jobs: Vec::new(),
            };
            match Storage::transact(self, transaction).await? {
                Ok(Some(_)) => return Ok(Ok(next)),
                Ok(None) => continue,
                Err(message) => return Ok(Err(other(message))),
            }
        }
        Ok(Err(other(format!(
            "{key:?} kept changing under {INCREMENT_ATTEMPTS} attempts to increment it"
        ))))
    }
}

impl batch::Host for StoreState {
    async fn get_many(
        &mut self,
        bucket: Resource<Bucket>,
        keys: Vec<String>,
    ) -> wasmtime::Result<Result<Vec<Option<(String, Vec<u8>)>>, Error>> {
        let open = self.bucket(&bucket)?;
        let stored: Vec<String> = keys.iter().map(|key| open.key(key)).collect();
        let values = match Storage::get_many(self, stored).await? {
            Ok(values) => values,
            Err(message) => return Ok(Err(other(message))),
        };
        Ok(Ok(keys
            .into_iter()
            .zip(values)
            .map(|(key, value)| value.map(|value| (key, value)))
            .collect()))
    }

    async fn set_many(
        &mut self,
        bucket: Resource<Bucket>,
        key_values: Vec<(String, Vec<u8>)>,
    ) -> wasmtime::Result<Result<(), Error>> {
        let open = self.bucket(&bucket)?;
        let sets = key_values
            .into_iter()
            .map(|(key, value)| (open.key(&key), value))
            .collect();
        Ok(Storage::write_batch(self, sets, Vec::new(), Vec::new())
            .await?
            .map(drop)
            .map_err(other))
    }

    async fn delete_many(
        &mut self,
        bucket: Resource<Bucket>,
        keys: Vec<String>,
    ) -> wasmtime::Result<Result<(), Error>> {
        let open = self.bucket(&bucket)?;
        let deletes = keys.iter().map(|key| open.key(key)).collect();
        Ok(Storage::write_batch(self, Vec::new(), deletes, Vec::new())
            .await?
            .map(drop)
            .map_err(other))
    }
}
