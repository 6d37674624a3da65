//! A storage transaction under construction: the writes, deletions and jobs of one change,
//! committed together with `storage::write_batch` (all or none), or turned into a conditional
//! `storage::Transaction` when the change holds only if what it read is unchanged.

use serde::Serialize;
use tessera_sdk::storage::Transaction;
use tessera_sdk::{HostError, storage};

#[derive(Default)]
pub struct Batch {
    sets: Vec<(String, Vec<u8>)>,
    deletes: Vec<String>,
    jobs: Vec<(u64, Vec<u8>)>,
}

impl Batch {
    pub fn new() -> Self {
        Self::default()
    }

    /// Stores `value` as JSON under `key`.
    pub fn put<T: Serialize + ?Sized>(
        &mut self,
        key: impl Into<String>,
        value: &T,
    ) -> Result<(), HostError> {
        self.sets.push(storage::json_entry(key, value)?);
        Ok(())
    }

    pub fn delete(&mut self, key: impl Into<String>) {
        self.deletes.push(key.into());
    }

    /// Schedules `payload` as JSON for `at_unix_ms`.
    pub fn job<T: Serialize + ?Sized>(
        &mut self,
        at_unix_ms: u64,
        payload: &T,
    ) -> Result<(), HostError> {
        let bytes = tessera_sdk::serde_json::to_vec(payload)
            .map_err(|error| HostError::new("scheduler.encode", error.to_string()))?;
        self.jobs.push((at_unix_ms, bytes));
        Ok(())
    }

    /// Entries (sets, deletes and jobs) so far.
    pub fn len(&self) -> usize {
        self.sets.len() + self.deletes.len() + self.jobs.len()
    }

    /// The same writes, deletions and jobs as a [`Transaction`], for the caller to add its
    /// conditions (`expect`) to.
    pub fn into_transaction(self) -> Transaction {
        let mut transaction = Transaction::new();
        for (key, value) in self.sets {
            transaction.set(key, value);
        }
        for key in self.deletes {
            transaction.delete(key);
        }
        for (at_unix_ms, payload) in self.jobs {
            transaction.job(at_unix_ms, payload);
        }
        transaction
    }

    pub fn commit(self) -> Result<(), HostError> {
        if self.len() == 0 {
            return Ok(());
        }
        storage::write_batch(&self.sets, &self.deletes, &self.jobs).map(drop)
    }
}
