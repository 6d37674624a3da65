//! The host's in-process cache: short-lived lookups (sessions, engine metadata) kept next to
//! the database so the hot path does not query it on every request.
//!
//! Each host keeps its own cache; entries are small and expire quickly, and whoever changes
//! the underlying row invalidates the entry, so several hosts on one PostgreSQL never need a
//! shared cache for correctness.

use std::time::Duration;

/// A bounded, time-limited string-keyed cache.
#[derive(Clone)]
pub struct Cache {
    entries: moka::future::Cache<String, String>,
}

impl Cache {
    pub fn new(max_entries: u64, time_to_live: Duration) -> Self {
        Self {
            entries: moka::future::Cache::builder()
                .max_capacity(max_entries)
                .time_to_live(time_to_live)
                .build(),
        }
    }

    pub async fn get(&self, key: &str) -> Option<String> {
        self.entries.get(key).await
    }

    pub async fn insert(&self, key: String, value: String) {
        self.entries.insert(key, value).await;
    }

    pub async fn invalidate(&self, key: &str) {
        self.entries.invalidate(key).await;
    }

    /// Writes, reads back and removes a probe entry: the extended health check.
    pub async fn check(&self) -> anyhow::Result<()> {
        let key = format!("health-probe:{}", uuid::Uuid::new_v4());
        let value = uuid::Uuid::new_v4().to_string();
        self.insert(key.clone(), value.clone()).await;
        let read_back = self.get(&key).await;
        self.invalidate(&key).await;
        anyhow::ensure!(
            read_back.as_deref() == Some(value.as_str()),
            "cache lost a probe entry"
        );
        Ok(())
    }
}
