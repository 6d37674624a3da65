//! Batched reads of engines' storage (`storage.get`, `storage.get-many`): one reader task per
//! host sends one statement at a time (`engine_kv::get_across`) for every read waiting when it
//! starts, as a DataLoader does. Under load, the concurrent calls of engines (64 webhook
//! deliveries each reading their webhook, delivery and failure count, say) then cost the
//! database one round trip per group instead of one per call; a read that finds the reader
//! idle is sent at once, alone. Measured, one statement at a time beat several at once (more,
//! smaller statements cost more CPU than the wait they save: BENCHMARKS.md).
//!
//! A read is sent after it was asked, so it sees every write committed before the call asked
//! it (a call's own `write-batch`, answered after its commit, included).

use tokio::sync::{mpsc, oneshot};

use tessera_storage::Database;
use tessera_storage::engine_kv::{self, KvKey};

/// The most calls' reads one group takes.
const MAX_GROUP: usize = 64;

/// How many reads may wait before callers wait to enqueue.
const QUEUE: usize = 1024;

struct Read {
    engine_code: String,
    tenant_id: String,
    keys: Vec<String>,
    reply: oneshot::Sender<anyhow::Result<Vec<Option<Vec<u8>>>>>,
}

/// The handle engine calls use; cheap to clone.
#[derive(Clone)]
pub struct BatchReader {
    reads: mpsc::Sender<Read>,
}

impl BatchReader {
    /// Starts the reader task on the current runtime; it ends when every handle is dropped.
    pub fn start(database: Database) -> Self {
        let (reads, receiver) = mpsc::channel(QUEUE);
        tokio::spawn(run(database, receiver));
        Self { reads }
    }

    /// The values under `keys` of (`engine_code`, `tenant_id`), in the order of `keys` (`None`
    /// where absent), read from one snapshot.
    pub async fn get(
        &self,
        engine_code: String,
        tenant_id: String,
        keys: Vec<String>,
    ) -> anyhow::Result<Vec<Option<Vec<u8>>>> {
        let (reply, answer) = oneshot::channel();
        self.reads
            .send(Read {
                engine_code,
                tenant_id,
                keys,
                reply,
            })
            .await
            .map_err(|_| anyhow::anyhow!("the storage reader has stopped"))?;
        answer
            .await
            .map_err(|_| anyhow::anyhow!("the storage reader dropped a read"))?
    }
}

async fn run(database: Database, mut receiver: mpsc::Receiver<Read>) {
    let mut group = Vec::with_capacity(MAX_GROUP);
    while receiver.recv_many(&mut group, MAX_GROUP).await > 0 {
        read_group(&database, std::mem::take(&mut group)).await;
    }
}

/// Reads the keys of every read of `group` together and answers each with its own.
async fn read_group(database: &Database, group: Vec<Read>) {
    let wanted: Vec<KvKey<'_>> = group
        .iter()
        .flat_map(|read| {
            read.keys.iter().map(|key| KvKey {
                engine_code: &read.engine_code,
                tenant_id: &read.tenant_id,
                key,
            })
        })
        .collect();
    match engine_kv::get_across(database, &wanted).await {
        Ok(values) => {
            let mut values = values.into_iter();
            for read in group {
                let own = values.by_ref().take(read.keys.len()).collect();
                let _ = read.reply.send(Ok(own));
            }
        }
        Err(error) => {
            let message = format!("{error:#}");
            for read in group {
                let _ = read.reply.send(Err(anyhow::anyhow!("{message}")));
            }
        }
    }
}
