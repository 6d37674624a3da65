//! Storage: one `Database` handle over SQLite (the embedded default) or PostgreSQL, migrations,
//! and the small helpers every query shares.
//!
//! Queries are written once, in the SQL both databases accept (`$1` placeholders, `TEXT`
//! identifiers and timestamps), and run through [`on_pool!`] / [`on_tx!`], which expand the
//! same expression once per driver so each is type-checked against its native driver.
//!
//! SQLite's write-ahead log is kept bounded ([`WalBound`]): past a threshold, the next writer
//! turn runs a `RESTART` checkpoint, and an idle log is truncated to nothing.

pub mod cache;
pub mod compact;
pub mod engine_blobs;
pub mod engine_kv;
pub mod files;
pub mod rate_limit_buckets;
pub mod realtime_events;
pub mod sqlite_backup;
mod sqlite_library;
mod sqlite_search_rank;
pub mod tenant_usage;
pub mod time;

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions, Postgres};
use sqlx::sqlite::{
    Sqlite, SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{PgPool, SqlitePool, Transaction};

/// How long a SQLite connection waits for another writer (another `tessera serve` or an admin
/// command on the same file) before giving up with "database is locked".
pub const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Default of `TESSERA_SQLITE_WAL_MAX_BYTES`: the size SQLite's write-ahead log stays under.
pub const DEFAULT_SQLITE_WAL_MAX_BYTES: u64 = 64 * 1024 * 1024;

static SQLITE_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations/sqlite");
static POSTGRES_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations/postgres");

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
            $crate::Pool::Sqlite($pool) => $body,
            $crate::Pool::Postgres($pool) => $body,
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
                $crate::Pool::Sqlite($pool) => $body,
                $crate::Pool::Postgres($pool) => $body,
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
            $crate::TxInner::Sqlite($conn) => $body,
            $crate::TxInner::Postgres($conn) => $body,
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
    /// SQLite: the size its write-ahead log stays under (`TESSERA_SQLITE_WAL_MAX_BYTES`); a
    /// writer checkpoints it once it passes a quarter of this.
    pub sqlite_wal_max_bytes: u64,
}

impl DatabaseConfig {
    /// The embedded default: `sqlite://<data-dir>/tessera.db`.
    /// The database this configuration names (by its URL's scheme).
    pub fn kind(&self) -> DatabaseKind {
        if self.url.starts_with("postgres://") || self.url.starts_with("postgresql://") {
            DatabaseKind::Postgres
        } else {
            DatabaseKind::Sqlite
        }
    }

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
    turn: Arc<tokio::sync::Mutex<()>>,
    /// Background writers (projection workers) queue here first, so at most one of them
    /// waits in `turn` at a time: a foreground writer (a request) never waits behind
    /// several background batches.
    background_turn: Arc<tokio::sync::Mutex<()>>,
    connection: SqlitePool,
    wal: Arc<WalBound>,
}

impl SqliteWriter {
    /// This process's writer turn, after bounding the WAL: the moment no local writer is
    /// active, so a checkpoint that has to wait for readers holds no writer up in SQLite's busy
    /// handler (they wait for the turn, in order).
    async fn take_turn(&self) -> tokio::sync::OwnedMutexGuard<()> {
        let turn = self.turn.clone().lock_owned().await;
        self.wal.turns.fetch_add(1, Ordering::Relaxed);
        self.wal.bound(&self.connection).await;
        turn
    }
}

/// Keeps SQLite's write-ahead log bounded. A `PASSIVE` checkpoint never resets the log, and
/// under steady reads some reader always holds a snapshot in it, so the log only grows (to
/// gigabytes, and stays that size). Instead, once the log file passes `restart_at` (a quarter
/// of `TESSERA_SQLITE_WAL_MAX_BYTES`), the next writer turn runs a `RESTART` checkpoint on the
/// write connection: it copies what passive checkpoints have not, waits (briefly) for readers
/// of older snapshots to finish, and makes the next commit write the log from its start;
/// `journal_size_limit` then cuts the file back to `restart_at`. When nothing has written for a
/// moment, the background task truncates the log to zero bytes.
#[derive(Debug)]
struct WalBound {
    /// `<database>-wal`; `None` for a database without a file.
    path: Option<PathBuf>,
    restart_at: u64,
    max_bytes: u64,
    /// Writer turns taken so far: the background task's idle test.
    turns: AtomicU64,
    /// No new attempt before this after a checkpoint that could not finish (readers).
    retry_after: std::sync::Mutex<Option<Instant>>,
}

/// How long a checkpoint on a writer's turn waits for readers of older snapshots (they are
/// single requests' reads) while the log is under half its bound; beyond half, longer.
const CHECKPOINT_PATIENCE: Duration = Duration::from_millis(50);
const CHECKPOINT_PATIENCE_NEAR_BOUND: Duration = Duration::from_millis(1000);
/// Pause before a new attempt after a checkpoint that readers kept from finishing.
const CHECKPOINT_RETRY: Duration = Duration::from_millis(100);

impl WalBound {
    fn new(database_file: &Path, max_bytes: u64) -> Self {
        let mut wal = database_file.as_os_str().to_owned();
        wal.push("-wal");
        let in_memory = database_file.as_os_str().is_empty()
            || database_file.to_string_lossy().starts_with(":memory:");
        Self {
            path: (!in_memory).then(|| PathBuf::from(wal)),
            restart_at: (max_bytes / 4).max(64 * 1024),
            max_bytes,
            turns: AtomicU64::new(0),
            retry_after: std::sync::Mutex::new(None),
        }
    }

    /// The log file's size (0 when it does not exist).
    fn size(&self) -> u64 {
        self.path
            .as_ref()
            .and_then(|path| std::fs::metadata(path).ok())
            .map_or(0, |metadata| metadata.len())
    }

    /// On a writer's turn: a `RESTART` checkpoint when the log is past `restart_at`.
    async fn bound(&self, connection: &SqlitePool) {
        let size = self.size();
        if size <= self.restart_at {
            return;
        }
        let near_bound = size >= self.max_bytes / 2;
        {
            let retry_after = self.retry_after.lock().expect("checkpoint retry lock");
            if !near_bound && retry_after.is_some_and(|at| Instant::now() < at) {
                return;
            }
        }
        let patience = if near_bound {
            CHECKPOINT_PATIENCE_NEAR_BOUND
        } else {
            CHECKPOINT_PATIENCE
        };
        let finished = match checkpoint(connection, Checkpoint::Restart, patience).await {
            Ok(finished) => finished,
            Err(error) => {
                tracing::warn!(
                    error = format!("{error:#}"),
                    "checkpointing the SQLite WAL failed"
                );
                false
            }
        };
        *self.retry_after.lock().expect("checkpoint retry lock") =
            (!finished).then(|| Instant::now() + CHECKPOINT_RETRY);
        if !finished {
            tracing::debug!(
                size,
                "a WAL checkpoint waited for readers in vain; retrying later"
            );
        }
    }
}

/// The checkpoints the host runs.
#[derive(Clone, Copy, Debug)]
enum Checkpoint {
    Restart,
    Truncate,
}

/// Runs a `RESTART` or `TRUNCATE` checkpoint on `connection` (the write connection, on this
/// process's writer turn), waiting at most `patience` for readers and other processes'
/// writers. `Ok(true)` when it finished: the whole log copied and the next commit writes it
/// from the start.
///
/// It runs in a task of its own: a caller dropped mid-way (a request whose client left) never
/// leaves the write connection with the shortened busy timeout.
async fn checkpoint(
    connection: &SqlitePool,
    mode: Checkpoint,
    patience: Duration,
) -> anyhow::Result<bool> {
    tokio::spawn(checkpoint_on(connection.clone(), mode, patience))
        .await
        .context("the checkpoint task")?
}

async fn checkpoint_on(
    connection: SqlitePool,
    mode: Checkpoint,
    patience: Duration,
) -> anyhow::Result<bool> {
    let mut connection = connection
        .acquire()
        .await
        .context("taking the SQLite write connection")?;
    let patience_ms = i64::try_from(patience.as_millis()).unwrap_or(i64::MAX);
    let busy_timeout_ms = i64::try_from(SQLITE_BUSY_TIMEOUT.as_millis()).unwrap_or(i64::MAX);
    // The busy timeout bounds how long the checkpoint waits for readers; PRAGMA takes no
    // parameters, so the numbers (not input) are formatted in.
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "PRAGMA busy_timeout = {patience_ms}"
    )))
    .execute(&mut *connection)
    .await
    .context("shortening the busy timeout for a checkpoint")?;
    let statement = match mode {
        Checkpoint::Restart => "PRAGMA wal_checkpoint(RESTART)",
        Checkpoint::Truncate => "PRAGMA wal_checkpoint(TRUNCATE)",
    };
    let result: Result<(i64, i64, i64), sqlx::Error> =
        sqlx::query_as(statement).fetch_one(&mut *connection).await;
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "PRAGMA busy_timeout = {busy_timeout_ms}"
    )))
    .execute(&mut *connection)
    .await
    .context("restoring the busy timeout after a checkpoint")?;
    let (busy, _, _) = result.with_context(|| format!("running {statement}"))?;
    Ok(busy == 0)
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
            // No synchronized sequential scans: a scan joining another one mid-table would
            // return rows in a different order, and a search's candidate window is the first
            // rows its scan finds (core/search), which every host must find alike.
            let options = PgConnectOptions::from_str(url)
                .context("parsing the PostgreSQL database URL")?
                .options([("synchronize_seqscans", "off")]);
            let pool = PgPoolOptions::new()
                .max_connections(config.max_connections)
                .acquire_timeout(Duration::from_secs(10))
                .connect_with(options)
                .await
                .context("connecting to PostgreSQL")?;
            Pool::Postgres(pool)
        } else if url.starts_with("sqlite:") {
            sqlite_library::configure();
            sqlite_search_rank::register();
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
                // through the copy and the fsync): writer turns and a background task
                // checkpoint instead (see `WalBound`).
                .pragma("wal_autocheckpoint", "0");
            let database_file = options.get_filename().to_path_buf();
            let wal = Arc::new(WalBound::new(&database_file, config.sqlite_wal_max_bytes));
            // After a RESTART checkpoint, the next commit cuts the log file back to this.
            let options = options.pragma("journal_size_limit", wal.restart_at.to_string());
            if wal.path.is_some() {
                // The database holds secrets: its folder 0700 and the file 0600 before SQLite
                // opens it (SQLite gives the -wal and -shm files the database file's mode).
                if let Some(parent) = database_file.parent()
                    && !parent.as_os_str().is_empty()
                {
                    crate::files::create_private_dir(parent)?;
                }
                crate::files::create_private_file(&database_file)?;
                let mut shm = database_file.as_os_str().to_owned();
                shm.push("-shm");
                for companion in [wal.path.clone(), Some(PathBuf::from(shm))]
                    .into_iter()
                    .flatten()
                {
                    crate::files::make_private(&companion)?;
                }
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
                turn: Arc::default(),
                background_turn: Arc::default(),
                connection,
                wal,
            });
            Pool::Sqlite(pool)
        } else {
            anyhow::bail!("unsupported database URL: expected sqlite://… or postgres://…");
        };
        if let (Pool::Sqlite(pool), Some(writer)) = (&pool, &sqlite_writer) {
            tokio::spawn(checkpoint_wal(pool.clone(), writer.clone()));
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
                crate::files::create_private_dir(data_dir)?;
                let lock_path = data_dir.join(".migrations.lock");
                let lock = tokio::task::spawn_blocking(move || -> anyhow::Result<std::fs::File> {
                    let mut options = std::fs::OpenOptions::new();
                    options.create(true).truncate(false).write(true);
                    #[cfg(unix)]
                    {
                        use std::os::unix::fs::OpenOptionsExt as _;
                        options.mode(0o600);
                    }
                    let file = options
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
        Some((writer.take_turn().await, &writer.connection))
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
                let turn = writer.take_turn().await;
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
    /// The versions of this binary's migrations the database has not applied successfully:
    /// empty when its schema is the one this binary expects (`/readyz`).
    pub async fn unapplied_migrations(&self) -> anyhow::Result<Vec<i64>> {
        let migrator = match &self.pool {
            Pool::Sqlite(_) => &SQLITE_MIGRATIONS,
            Pool::Postgres(_) => &POSTGRES_MIGRATIONS,
        };
        let applied: Vec<i64> = on_pool!(self, pool => sqlx::query_scalar(
            "SELECT version FROM _sqlx_migrations WHERE success",
        )
        .fetch_all(pool)
        .await)
        .context("reading the applied migrations")?;
        Ok(migrator
            .iter()
            .filter(|migration| !migration.migration_type.is_down_migration())
            .map(|migration| migration.version)
            .filter(|version| !applied.contains(version))
            .collect())
    }

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

    /// Starts a savepoint: what follows can be undone by [`Tx::rollback_to_savepoint`]
    /// without ending the transaction, or kept by [`Tx::release_savepoint`]. One at a time.
    pub async fn savepoint(&mut self) -> anyhow::Result<()> {
        self.execute_plain("SAVEPOINT tessera_unit")
            .await
            .context("starting a savepoint")
    }

    /// Keeps what was written since [`Tx::savepoint`] (it still commits with the transaction).
    pub async fn release_savepoint(&mut self) -> anyhow::Result<()> {
        self.execute_plain("RELEASE SAVEPOINT tessera_unit")
            .await
            .context("releasing a savepoint")
    }

    /// Undoes what was written since [`Tx::savepoint`] and ends the savepoint; the
    /// transaction goes on.
    pub async fn rollback_to_savepoint(&mut self) -> anyhow::Result<()> {
        self.execute_plain("ROLLBACK TO SAVEPOINT tessera_unit")
            .await
            .context("rolling back to a savepoint")?;
        self.release_savepoint().await
    }

    async fn execute_plain(&mut self, statement: &'static str) -> Result<(), sqlx::Error> {
        on_tx!(self, conn => sqlx::query(statement).execute(&mut **conn).await.map(drop))
    }

    pub fn kind(&self) -> DatabaseKind {
        match self.inner {
            TxInner::Sqlite(_) => DatabaseKind::Sqlite,
            TxInner::Postgres(_) => DatabaseKind::Postgres,
        }
    }
}

/// How often the WAL of an SQLite database is copied back into the database file, and how
/// long nothing must have written before an idle WAL is truncated.
const CHECKPOINT_INTERVAL: Duration = Duration::from_millis(250);

/// Checkpoints the WAL in the background until the pool closes. While writes go on, `PASSIVE`
/// copies what it can without blocking writers or readers, so the `RESTART` checkpoints of
/// writer turns ([`WalBound`]) find little left to copy. Once no writer turn was taken for an
/// interval and the log did not change, a `TRUNCATE` checkpoint (on a writer turn) empties
/// the file; when the last connection closes, SQLite checkpoints and removes the WAL itself.
async fn checkpoint_wal(pool: SqlitePool, writer: SqliteWriter) {
    let mut interval = tokio::time::interval(CHECKPOINT_INTERVAL);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last = (u64::MAX, u64::MAX);
    loop {
        interval.tick().await;
        if pool.is_closed() {
            return;
        }
        let size = writer.wal.size();
        let now = (writer.wal.turns.load(Ordering::Relaxed), size);
        let idle = now == last;
        last = now;
        if size == 0 {
            continue;
        }
        let result = if idle {
            let _turn = writer.turn.clone().lock_owned().await;
            checkpoint(
                &writer.connection,
                Checkpoint::Truncate,
                CHECKPOINT_PATIENCE,
            )
            .await
            .map(drop)
        } else {
            sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
                .execute(&pool)
                .await
                .map(drop)
                .context("running PRAGMA wal_checkpoint(PASSIVE)")
        };
        if let Err(error) = result {
            if pool.is_closed() {
                return;
            }
            tracing::warn!(
                error = format!("{error:#}"),
                "checkpointing the SQLite WAL failed"
            );
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
