//! Storage: one `Database` handle over SQLite (the embedded default) or PostgreSQL, migrations,
//! and the small helpers every query shares.
//!
//! Queries are written once, in the SQL both databases accept (`$1` placeholders, `TEXT`
//! identifiers and timestamps), and run through [`on_pool!`] / [`on_tx!`], which expand the
//! same expression once per driver so each is type-checked against its native driver.

pub mod cache;
pub mod engine_blobs;
pub mod engine_kv;
mod sqlite_library;
pub mod time;

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use anyhow::Context as _;
use sqlx::postgres::{PgPoolOptions, Postgres};
use sqlx::sqlite::{
    Sqlite, SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{PgPool, SqlitePool, Transaction};

/// How long a SQLite connection waits for another writer (another `tessera serve` or an admin
/// command on the same file) before giving up with "database is locked".
pub const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(10);

static SQLITE_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("../migrations/sqlite");
static POSTGRES_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("../migrations/postgres");

/// Which database a [`Database`] talks to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DatabaseKind {
    Sqlite,
    Postgres,
}

/// A connection pool of one of the two supported databases.
#[derive(Clone, Debug)]
pub enum Pool {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// An open write transaction on either database. SQLite transactions start with
/// `BEGIN IMMEDIATE` so that two processes never deadlock upgrading a read lock, and wait
/// their turn in-process first (see [`Database::begin`]).
pub struct Tx {
    /// The transaction itself; reach it through [`on_tx!`]. Declared first so it is dropped
    /// (rolled back) before the writer turn below is released.
    #[doc(hidden)]
    pub inner: TxInner,
    _writer_turn: Option<tokio::sync::OwnedMutexGuard<()>>,
    _background_turn: Option<tokio::sync::OwnedMutexGuard<()>>,
}

/// The driver-specific transaction inside a [`Tx`].
pub enum TxInner {
    Sqlite(Transaction<'static, Sqlite>),
    Postgres(Transaction<'static, Postgres>),
}

/// Runs the same expression against whichever pool a [`Database`] holds.
///
/// `on_pool!(db, pool => sqlx::query("…").execute(pool).await)`
#[macro_export]
macro_rules! on_pool {
    ($db:expr, $pool:ident => $body:expr) => {
        match $db.pool() {
            $crate::storage::Pool::Sqlite($pool) => $body,
            $crate::storage::Pool::Postgres($pool) => $body,
        }
    };
}

/// Runs one write statement outside a transaction: on SQLite on the write connection in this
/// process's writer turn (on a pool connection it would sleep in SQLite's busy handler while
/// the writer holds the lock), on PostgreSQL on the pool.
///
/// `on_writer!(db, pool => sqlx::query("UPDATE …").execute(pool).await)`
#[macro_export]
macro_rules! on_writer {
    ($db:expr, $pool:ident => $body:expr) => {
        match $db.sqlite_write_turn().await {
            Some((_turn, $pool)) => $body,
            None => match $db.pool() {
                $crate::storage::Pool::Sqlite($pool) => $body,
                $crate::storage::Pool::Postgres($pool) => $body,
            },
        }
    };
}

/// Runs the same expression against whichever connection a [`Tx`] holds.
///
/// `on_tx!(tx, conn => sqlx::query("…").execute(&mut **conn).await)`
#[macro_export]
macro_rules! on_tx {
    ($tx:expr, $conn:ident => $body:expr) => {
        match &mut ($tx).inner {
            $crate::storage::TxInner::Sqlite($conn) => $body,
            $crate::storage::TxInner::Postgres($conn) => $body,
        }
    };
}

/// Where the database lives and how big its pool is.
#[derive(Clone, Debug)]
pub struct DatabaseConfig {
    /// `sqlite://…` or `postgres://…`.
    pub url: String,
    /// Folder for lock files next to an embedded database.
    pub data_dir: PathBuf,
    pub max_connections: u32,
}

impl DatabaseConfig {
    /// The embedded default: `sqlite://<data-dir>/tessera.db`.
    pub fn default_url(data_dir: &Path) -> String {
        format!("sqlite://{}", data_dir.join("tessera.db").display())
    }
}

/// The host's database handle; cheap to clone.
#[derive(Clone, Debug)]
pub struct Database {
    pool: Pool,
    /// SQLite's write path (`None` on PostgreSQL): see [`SqliteWriter`].
    sqlite_writer: Option<SqliteWriter>,
}

/// SQLite has one writer at a time. Write transactions of this process queue for their turn
/// (fairly, without spinning) instead of in SQLite's busy handler, which sleeps in growing
/// steps and wrecks throughput and latency under concurrent writes; and they all run on one
/// dedicated connection, whose page cache stays warm (a connection drops its cache whenever
/// another connection has committed).
#[derive(Clone, Debug)]
struct SqliteWriter {
    turn: std::sync::Arc<tokio::sync::Mutex<()>>,
    /// Background writers (projection workers) queue here first, so at most one of them
    /// waits in `turn` at a time: a foreground writer (a request) never waits behind
    /// several background batches.
    background_turn: std::sync::Arc<tokio::sync::Mutex<()>>,
    connection: SqlitePool,
}

impl Database {
    /// Connects (creating the SQLite file when missing) and runs every pending migration.
    pub async fn connect_and_migrate(config: &DatabaseConfig) -> anyhow::Result<Self> {
        let database = Self::connect(config).await?;
        database.migrate(&config.data_dir).await?;
        Ok(database)
    }

    /// Connects without migrating.
    pub async fn connect(config: &DatabaseConfig) -> anyhow::Result<Self> {
        let url = config.url.as_str();
        let mut sqlite_writer = None;
        let pool = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            let pool = PgPoolOptions::new()
                .max_connections(config.max_connections)
                .acquire_timeout(Duration::from_secs(10))
                .connect(url)
                .await
                .context("connecting to PostgreSQL")?;
            Pool::Postgres(pool)
        } else if url.starts_with("sqlite:") {
            sqlite_library::configure();
            let options = SqliteConnectOptions::from_str(url)
                .context("parsing the SQLite database URL")?
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Normal)
                .foreign_keys(true)
                .busy_timeout(SQLITE_BUSY_TIMEOUT)
                // No memory-mapped I/O (SQLite's default): in WAL mode a connection unmaps
                // the whole file at the start of every read transaction that follows another
                // connection's commit, so under steady writes each read paid a munmap (a TLB
                // shootdown across cores) and page faults to map its pages back; see
                // BENCHMARKS.md. Reads use the connection's page cache and pread instead.
                // No checkpoint inside a committing writer (it would hold the write lock
                // through the copy and the fsync): a background task checkpoints instead.
                .pragma("wal_autocheckpoint", "0");
            if let Some(parent) = options.get_filename().parent()
                && !parent.as_os_str().is_empty()
            {
                std::fs::create_dir_all(parent)
                    .with_context(|| format!("creating {}", parent.display()))?;
            }
            let pool = SqlitePoolOptions::new()
                .max_connections(config.max_connections)
                .acquire_timeout(Duration::from_secs(30))
                .connect_with(options.clone())
                .await
                .context("opening the SQLite database")?;
            let connection = SqlitePoolOptions::new()
                .max_connections(1)
                .min_connections(1)
                .idle_timeout(None)
                .max_lifetime(None)
                .acquire_timeout(Duration::from_secs(30))
                // Every write goes through this connection: a page cache big enough for the
                // hot index pages of the log, the entities and the read models (64 MiB).
                .connect_with(options.pragma("cache_size", "-65536"))
                .await
                .context("opening the SQLite write connection")?;
            sqlite_writer = Some(SqliteWriter {
                turn: std::sync::Arc::default(),
                background_turn: std::sync::Arc::default(),
                connection,
            });
            Pool::Sqlite(pool)
        } else {
            anyhow::bail!("unsupported database URL: expected sqlite://… or postgres://…");
        };
        if let Pool::Sqlite(pool) = &pool {
            tokio::spawn(checkpoint_wal(pool.clone()));
        }
        Ok(Self {
            pool,
            sqlite_writer,
        })
    }

    /// Runs the migrations of `migrations/<kind>/`. On SQLite a lock file in the data dir keeps
    /// two processes starting at once from applying the same migration twice; PostgreSQL uses
    /// the migrator's advisory lock.
    pub async fn migrate(&self, data_dir: &Path) -> anyhow::Result<()> {
        match &self.pool {
            Pool::Sqlite(pool) => {
                std::fs::create_dir_all(data_dir)
                    .with_context(|| format!("creating the data dir {}", data_dir.display()))?;
                let lock_path = data_dir.join(".migrations.lock");
                let lock = tokio::task::spawn_blocking(move || -> anyhow::Result<std::fs::File> {
                    let file = std::fs::OpenOptions::new()
                        .create(true)
                        .truncate(false)
                        .write(true)
                        .open(&lock_path)
                        .with_context(|| format!("opening {}", lock_path.display()))?;
                    file.lock().context("locking the migrations lock file")?;
                    Ok(file)
                })
                .await
                .context("waiting for the migrations lock")??;
                let result = SQLITE_MIGRATIONS.run(pool).await;
                drop(lock);
                result.context("running SQLite migrations")?;
            }
            Pool::Postgres(pool) => {
                POSTGRES_MIGRATIONS
                    .run(pool)
                    .await
                    .context("running PostgreSQL migrations")?;
            }
        }
        Ok(())
    }

    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// On SQLite, this process's writer turn and the write connection (see [`on_writer!`]);
    /// `None` on PostgreSQL.
    pub async fn sqlite_write_turn(
        &self,
    ) -> Option<(tokio::sync::OwnedMutexGuard<()>, &SqlitePool)> {
        let writer = self.sqlite_writer.as_ref()?;
        Some((writer.turn.clone().lock_owned().await, &writer.connection))
    }

    pub fn kind(&self) -> DatabaseKind {
        match self.pool {
            Pool::Sqlite(_) => DatabaseKind::Sqlite,
            Pool::Postgres(_) => DatabaseKind::Postgres,
        }
    }

    /// Starts a write transaction. On SQLite it first waits for this process's writer turn
    /// (held until the transaction ends) and runs on the write connection, so never call it
    /// while holding another [`Tx`].
    pub async fn begin(&self) -> anyhow::Result<Tx> {
        let (inner, writer_turn) = match (&self.pool, &self.sqlite_writer) {
            (Pool::Sqlite(_), Some(writer)) => {
                let turn = writer.turn.clone().lock_owned().await;
                let tx = writer
                    .connection
                    .begin_with("BEGIN IMMEDIATE")
                    .await
                    .context("beginning a SQLite transaction")?;
                (TxInner::Sqlite(tx), Some(turn))
            }
            (Pool::Sqlite(pool), None) => (
                TxInner::Sqlite(
                    pool.begin_with("BEGIN IMMEDIATE")
                        .await
                        .context("beginning a SQLite transaction")?,
                ),
                None,
            ),
            (Pool::Postgres(pool), _) => (
                TxInner::Postgres(
                    pool.begin()
                        .await
                        .context("beginning a PostgreSQL transaction")?,
                ),
                None,
            ),
        };
        Ok(Tx {
            inner,
            _writer_turn: writer_turn,
            _background_turn: None,
        })
    }

    /// Starts a write transaction for background work (projection workers). On SQLite such
    /// transactions take turns among themselves before joining the writers' queue, so
    /// requests' writes wait behind at most one background batch; on PostgreSQL it is
    /// [`Database::begin`].
    pub async fn begin_background(&self) -> anyhow::Result<Tx> {
        let background_turn = match &self.sqlite_writer {
            Some(writer) => Some(writer.background_turn.clone().lock_owned().await),
            None => None,
        };
        let mut tx = self.begin().await?;
        tx._background_turn = background_turn;
        Ok(tx)
    }

    /// A real round trip to the database, for health checks.
    pub async fn ping(&self) -> anyhow::Result<()> {
        let one: i32 = on_pool!(self, pool => sqlx::query_scalar("SELECT 1").fetch_one(pool).await)
            .context("querying the database")?;
        anyhow::ensure!(one == 1, "the database answered SELECT 1 with {one}");
        Ok(())
    }

    pub async fn close(&self) {
        if let Some(writer) = &self.sqlite_writer {
            writer.connection.close().await;
        }
        match &self.pool {
            Pool::Sqlite(pool) => pool.close().await,
            Pool::Postgres(pool) => pool.close().await,
        }
    }
}

impl Tx {
    pub async fn commit(self) -> anyhow::Result<()> {
        match self.inner {
            TxInner::Sqlite(tx) => tx.commit().await,
            TxInner::Postgres(tx) => tx.commit().await,
        }
        .context("committing the transaction")
    }

    /// Ends the transaction without keeping its writes.
    pub async fn rollback(self) -> anyhow::Result<()> {
        match self.inner {
            TxInner::Sqlite(tx) => tx.rollback().await,
            TxInner::Postgres(tx) => tx.rollback().await,
        }
        .context("rolling the transaction back")
    }

    pub fn kind(&self) -> DatabaseKind {
        match self.inner {
            TxInner::Sqlite(_) => DatabaseKind::Sqlite,
            TxInner::Postgres(_) => DatabaseKind::Postgres,
        }
    }
}

/// How often the WAL of an SQLite database is copied back into the database file.
const CHECKPOINT_INTERVAL: Duration = Duration::from_millis(500);

/// Checkpoints the WAL in the background until the pool closes: `PASSIVE` copies what it can
/// without blocking writers or readers, so commits never wait for a checkpoint's copy and
/// fsync; when the last connection closes, SQLite checkpoints and removes the WAL itself.
async fn checkpoint_wal(pool: SqlitePool) {
    let mut interval = tokio::time::interval(CHECKPOINT_INTERVAL);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        interval.tick().await;
        if pool.is_closed() {
            return;
        }
        if let Err(error) = sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
            .execute(&pool)
            .await
        {
            if pool.is_closed() {
                return;
            }
            tracing::warn!(%error, "checkpointing the SQLite WAL failed");
        }
    }
}

/// True when `error` is a unique-constraint violation (on either database).
pub fn is_unique_violation(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Database(db_error) => db_error.is_unique_violation(),
        _ => false,
    }
}
