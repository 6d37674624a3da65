//! Wake-ups for projection workers: a local signal after every append of this host, and on
//! PostgreSQL a debounced `NOTIFY` so the workers of other hosts wake too (`LISTEN`). Workers
//! also poll, so a lost notification only delays them.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::store;
use tessera_storage::{Database, Pool};

/// The PostgreSQL channel the log's appends are announced on.
pub const CHANNEL: &str = "tessera_events";

/// Appends coalesced into one `NOTIFY` at most this often.
const NOTIFY_INTERVAL: Duration = Duration::from_millis(20);

/// Shared, cheap to clone.
#[derive(Clone, Default)]
pub struct EventSignal {
    /// Wakes this host's workers.
    local: Arc<Notify>,
    /// Wakes the task that notifies other hosts.
    remote: Arc<Notify>,
}

impl EventSignal {
    /// Called after a transaction that appended events committed.
    pub fn appended(&self) {
        self.local.notify_waiters();
        self.remote.notify_one();
    }

    /// Resolves at the next append (of this host, or of another one on PostgreSQL).
    pub fn wait(&self) -> tokio::sync::futures::Notified<'_> {
        self.local.notified()
    }

    /// On PostgreSQL: announces this host's appends to the others, and relays theirs to this
    /// host's workers. Does nothing on SQLite (one process runs the workers).
    pub async fn run_postgres_relay(self, database: Database, shutdown: CancellationToken) {
        let Pool::Postgres(pool) = database.pool().clone() else {
            return;
        };
        let listener_pool = pool.clone();
        let local = self.local.clone();
        let listening = shutdown.clone();
        let listen = async move {
            loop {
                match sqlx::postgres::PgListener::connect_with(&listener_pool).await {
                    Ok(mut listener) => {
                        if let Err(error) = listener.listen(CHANNEL).await {
                            tracing::warn!(%error, "cannot LISTEN for event log appends");
                        } else {
                            loop {
                                match listener.recv().await {
                                    Ok(_) => local.notify_waiters(),
                                    Err(error) => {
                                        tracing::warn!(%error, "lost the event log LISTEN connection");
                                        break;
                                    }
                                }
                            }
                        }
                    }
                    Err(error) => tracing::warn!(%error, "cannot connect to LISTEN for appends"),
                }
                tokio::select! {
                    () = listening.cancelled() => return,
                    () = tokio::time::sleep(Duration::from_secs(1)) => {}
                }
            }
        };
        let remote = self.remote.clone();
        let notify = async move {
            loop {
                remote.notified().await;
                if let Err(error) = store::log::notify(&pool, CHANNEL).await {
                    tracing::warn!(%error, "cannot NOTIFY other hosts of appends");
                }
                tokio::time::sleep(NOTIFY_INTERVAL).await;
            }
        };
        tokio::select! {
            () = shutdown.cancelled() => {}
            () = listen => {}
            () = notify => {}
        }
    }
}
