//! Consistent copies of an embedded (SQLite) database for `tessera admin backup` and
//! `restore`: a snapshot taken with `VACUUM INTO` on a connection of its own (one read
//! transaction, so servers go on writing while it runs and the copy holds exactly the commits
//! before it began), and the checks a copy must pass before a host may open it.

use std::path::{Path, PathBuf};
use std::str::FromStr as _;

use anyhow::Context as _;
use sqlx::Connection as _;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};

use crate::{SQLITE_BUSY_TIMEOUT, SQLITE_MIGRATIONS};

/// What a checked copy holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyFacts {
    /// The newest migration applied to it (`None`: never migrated).
    pub last_migration: Option<i64>,
}

/// The newest SQLite migration this binary knows: a copy past it comes from a newer version.
pub fn latest_known_migration() -> i64 {
    SQLITE_MIGRATIONS
        .iter()
        .filter(|migration| !migration.migration_type.is_down_migration())
        .map(|migration| migration.version)
        .max()
        .unwrap_or(0)
}

/// The file of a `sqlite:` database URL, as [`crate::Database::connect`] reads it; `None` for
/// any other database.
pub fn database_file(url: &str) -> anyhow::Result<Option<PathBuf>> {
    if !url.starts_with("sqlite:") {
        return Ok(None);
    }
    let options = SqliteConnectOptions::from_str(url).context("parsing the SQLite database URL")?;
    let file = options.get_filename();
    anyhow::ensure!(
        !file.as_os_str().is_empty() && file != Path::new(":memory:"),
        "the database {url} is not a file"
    );
    Ok(Some(file.to_path_buf()))
}

/// Opens `database_file` (which must exist) on a connection of its own.
async fn open(database_file: &Path) -> anyhow::Result<SqliteConnection> {
    crate::sqlite_library::configure();
    let options = SqliteConnectOptions::from_str("sqlite://")
        .context("building SQLite options")?
        .filename(database_file)
        .create_if_missing(false)
        .busy_timeout(SQLITE_BUSY_TIMEOUT);
    SqliteConnection::connect_with(&options)
        .await
        .with_context(|| format!("opening {}", database_file.display()))
}

/// Writes a consistent copy of the database at `database_file` to `into` (a path that must not
/// exist yet; SQLite creates it), while other processes may be writing to it, then checks the
/// copy.
pub async fn snapshot(database_file: &Path, into: &Path) -> anyhow::Result<CopyFacts> {
    anyhow::ensure!(
        database_file.is_file(),
        "no SQLite database at {}",
        database_file.display()
    );
    let mut connection = open(database_file).await?;
    let target = into
        .to_str()
        .with_context(|| format!("{} is not valid UTF-8", into.display()))?;
    let copied = sqlx::query("VACUUM INTO $1")
        .bind(target)
        .execute(&mut connection)
        .await
        .with_context(|| format!("copying the database into {}", into.display()));
    connection.close().await.ok();
    copied?;
    check(into).await
}

/// Checks that `database_file` is an intact database (`PRAGMA quick_check`) and reads its
/// newest applied migration.
pub async fn check(database_file: &Path) -> anyhow::Result<CopyFacts> {
    let mut connection = open(database_file).await?;
    let checked = async {
        let verdict: String = sqlx::query_scalar("PRAGMA quick_check")
            .fetch_one(&mut connection)
            .await
            .context("checking the database's integrity")?;
        anyhow::ensure!(verdict == "ok", "the database is damaged: {verdict}");
        let has_migrations: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE name = '_sqlx_migrations')",
        )
        .fetch_one(&mut connection)
        .await
        .context("looking for the migrations table")?;
        let last_migration = if has_migrations {
            sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations WHERE success")
                .fetch_one(&mut connection)
                .await
                .context("reading the applied migrations")?
        } else {
            None
        };
        Ok(CopyFacts { last_migration })
    }
    .await;
    connection.close().await.ok();
    checked
}
