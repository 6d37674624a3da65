//! `tessera admin backup --to FILE` and `tessera admin restore --from FILE --data-dir DIR` for
//! the embedded (SQLite) deployment: a backup is one gzip-compressed tar archive, private to its
//! owner (0600), holding `manifest.json` (what it holds, with the database's SHA-256), a
//! consistent online copy of the database (`tessera.db`, see
//! `tessera_storage::sqlite_backup`) and the service secret that seals what the database
//! keeps sealed (TOTP secrets, vault data, signing seeds), without which the copy cannot be
//! used. A restore checks all of it before anything lands in the data dir, and never
//! overwrites. PostgreSQL is backed up with `pg_dump` (docs/src/operating/backup.md).

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use crate::config::{Config, Secret};
use crate::storage::sqlite_backup::{self, CopyFacts};

/// The archive's format, in its manifest.
const FORMAT: &str = "tessera-backup";
/// The manifest's version: a restore refuses others.
const FORMAT_VERSION: u32 = 1;
const MANIFEST_ENTRY: &str = "manifest.json";
const DATABASE_ENTRY: &str = "tessera.db";
const SECRET_ENTRY: &str = "service_secret";
/// Largest manifest or secret entry read (both are a few hundred bytes).
const SMALL_ENTRY_MAX_BYTES: u64 = 64 * 1024;

/// `manifest.json`: the first entry of every backup.
#[derive(Debug, Serialize, Deserialize)]
struct Manifest {
    format: String,
    version: u32,
    created_at: String,
    tessera_version: String,
    database: DatabaseEntry,
}

#[derive(Debug, Serialize, Deserialize)]
struct DatabaseEntry {
    bytes: u64,
    sha256: String,
    last_migration: Option<i64>,
}

/// What `admin backup` prints.
#[derive(Debug, Serialize)]
pub struct BackupReport {
    pub backup: PathBuf,
    pub bytes: u64,
    pub database_bytes: u64,
    pub database_sha256: String,
    pub last_migration: Option<i64>,
    pub created_at: String,
}

/// What `admin restore` prints.
#[derive(Debug, Serialize)]
pub struct RestoreReport {
    pub data_dir: PathBuf,
    pub database: PathBuf,
    pub database_bytes: u64,
    pub last_migration: Option<i64>,
    pub backup_created_at: String,
}

/// The SQLite file of `config`'s database; an error naming `pg_dump` for PostgreSQL.
fn sqlite_file(config: &Config, command: &str) -> anyhow::Result<PathBuf> {
    sqlite_backup::database_file(&config.database.url)?.with_context(|| {
        format!(
            "`tessera admin {command}` handles the embedded SQLite database; this one is PostgreSQL: \
             back it up with pg_dump and keep the service secret with it (docs/src/operating/backup.md)"
        )
    })
}

/// The service secret the servers use, read, never generated: `TESSERA_SERVICE_SECRET`, else
/// `<data-dir>/service_secret`.
fn current_service_secret(config: &Config) -> anyhow::Result<Secret> {
    if let Some(secret) = &config.service_secret {
        return Ok(secret.clone());
    }
    let path = config.data_dir.join(SECRET_ENTRY);
    let secret = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "reading the service secret {} (a server creates it on first start; \
             set --data-dir to the servers' data dir)",
            path.display()
        )
    })?;
    let secret = secret.trim();
    anyhow::ensure!(!secret.is_empty(), "{} is empty", path.display());
    Ok(Secret::new(secret.to_owned()))
}

/// A temporary path beside `path`, removed when dropped unless kept.
struct Scratch(PathBuf);

impl Scratch {
    fn beside(path: &Path, what: &str) -> anyhow::Result<Self> {
        let parent = match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
        let name = path
            .file_name()
            .with_context(|| format!("{} names no file", path.display()))?
            .to_string_lossy();
        Ok(Self(parent.join(format!(
            ".{name}.{what}.{}.tmp",
            uuid::Uuid::new_v4()
        ))))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Moves `from` to `to` only if `to` does not exist (a hard link, then the old name removed).
fn place_without_overwriting(from: &Path, to: &Path) -> anyhow::Result<()> {
    match std::fs::hard_link(from, to) {
        Ok(()) => {
            let _ = std::fs::remove_file(from);
            Ok(())
        }
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
            anyhow::bail!("{} already exists: not overwritten", to.display())
        }
        Err(error) => Err(error).with_context(|| format!("creating {}", to.display())),
    }
}

fn private_new_file(path: &Path) -> anyhow::Result<File> {
    crate::secrets::create_new_private(path).with_context(|| format!("creating {}", path.display()))
}

fn sha256_of(path: &Path) -> anyhow::Result<(u64, String)> {
    let mut file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut hasher = Sha256::new();
    let bytes = std::io::copy(&mut file, &mut hasher)
        .with_context(|| format!("reading {}", path.display()))?;
    Ok((bytes, hex::encode(hasher.finalize())))
}

fn tar_header(bytes: u64) -> tar::Header {
    let mut header = tar::Header::new_gnu();
    header.set_size(bytes);
    header.set_mode(0o600);
    header.set_mtime(u64::try_from(chrono::Utc::now().timestamp()).unwrap_or(0));
    header
}

/// `tessera admin backup --to FILE`: copies the database while servers run, then writes the
/// archive under a temporary name beside `to` and moves it there (never over an existing file).
pub async fn backup(config: &Config, to: &Path) -> anyhow::Result<BackupReport> {
    let database_file = sqlite_file(config, "backup")?;
    anyhow::ensure!(
        !to.exists(),
        "{} already exists: not overwritten",
        to.display()
    );
    let secret = current_service_secret(config)?;
    let copy = Scratch::beside(to, "database")?;
    let facts = sqlite_backup::snapshot(&database_file, &copy.0).await?;
    let to = to.to_owned();
    tokio::task::spawn_blocking(move || write_archive(&copy, facts, &secret, &to))
        .await
        .context("writing the backup")?
}

fn write_archive(
    copy: &Scratch,
    facts: CopyFacts,
    secret: &Secret,
    to: &Path,
) -> anyhow::Result<BackupReport> {
    let (database_bytes, database_sha256) = sha256_of(&copy.0)?;
    let created_at = crate::storage::time::format(chrono::Utc::now());
    let manifest = Manifest {
        format: FORMAT.to_owned(),
        version: FORMAT_VERSION,
        created_at: created_at.clone(),
        tessera_version: env!("CARGO_PKG_VERSION").to_owned(),
        database: DatabaseEntry {
            bytes: database_bytes,
            sha256: database_sha256.clone(),
            last_migration: facts.last_migration,
        },
    };
    let manifest = serde_json::to_vec_pretty(&manifest).context("encoding the manifest")?;

    let archive = Scratch::beside(to, "archive")?;
    let file = private_new_file(&archive.0)?;
    let encoder = flate2::write::GzEncoder::new(BufWriter::new(file), flate2::Compression::fast());
    let mut builder = tar::Builder::new(encoder);
    builder
        .append_data(
            &mut tar_header(manifest.len() as u64),
            MANIFEST_ENTRY,
            manifest.as_slice(),
        )
        .context("writing the manifest")?;
    let database = File::open(&copy.0).context("opening the database copy")?;
    builder
        .append_data(
            &mut tar_header(database_bytes),
            DATABASE_ENTRY,
            BufReader::new(database),
        )
        .context("writing the database into the backup")?;
    let secret = secret.expose().as_bytes();
    builder
        .append_data(&mut tar_header(secret.len() as u64), SECRET_ENTRY, secret)
        .context("writing the service secret into the backup")?;
    let file = builder
        .into_inner()
        .context("finishing the archive")?
        .finish()
        .context("finishing the compression")?
        .into_inner()
        .map_err(|error| error.into_error())
        .context("writing the backup")?;
    file.sync_all().context("syncing the backup")?;
    let bytes = file.metadata().context("reading the backup's size")?.len();
    drop(file);
    place_without_overwriting(&archive.0, to)?;
    Ok(BackupReport {
        backup: to.to_owned(),
        bytes,
        database_bytes,
        database_sha256,
        last_migration: facts.last_migration,
        created_at,
    })
}

/// `tessera admin restore --from FILE --data-dir DIR`: unpacks a backup into a data dir that
/// holds no database yet. The archive is read whole and checked (its manifest, the database's
/// size and SHA-256 and integrity, a schema this binary can run, a service secret agreeing with
/// `TESSERA_SERVICE_SECRET` when that is set) before the database and the secret are put in
/// place; on any error the data dir is left as it was.
pub async fn restore(config: &Config, from: &Path) -> anyhow::Result<RestoreReport> {
    let database_file = sqlite_file(config, "restore")?;
    let secret_file = config.data_dir.join(SECRET_ENTRY);
    let mut wal = database_file.clone().into_os_string();
    wal.push("-wal");
    for existing in [&database_file, &PathBuf::from(wal), &secret_file] {
        anyhow::ensure!(
            !existing.exists(),
            "{} already exists: restore into a data dir without a database or service secret",
            existing.display()
        );
    }
    if let Some(parent) = database_file
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
    {
        crate::secrets::create_private_dir(parent)?;
    }
    crate::secrets::create_private_dir(&config.data_dir)?;

    let copy = Scratch::beside(&database_file, "restore")?;
    let unpacked = {
        let (from, copy_path) = (from.to_owned(), copy.0.clone());
        tokio::task::spawn_blocking(move || unpack(&from, &copy_path))
            .await
            .context("reading the backup")??
    };
    let facts = sqlite_backup::check(&copy.0)
        .await
        .context("checking the backed-up database")?;
    anyhow::ensure!(
        facts.last_migration == unpacked.manifest.database.last_migration,
        "the backed-up database's migrations ({:?}) differ from its manifest's ({:?})",
        facts.last_migration,
        unpacked.manifest.database.last_migration
    );
    let known = sqlite_backup::latest_known_migration();
    if let Some(last) = facts.last_migration {
        anyhow::ensure!(
            last <= known,
            "the backup comes from a newer Tessera (migration {last}; this binary knows up to \
             {known}): restore it with that version or a later one"
        );
    }
    if let Some(configured) = &config.service_secret {
        anyhow::ensure!(
            configured.expose() == unpacked.secret.expose(),
            "TESSERA_SERVICE_SECRET differs from the backup's service secret: the restored data \
             could not be unsealed; unset it, or set it to the backed-up secret"
        );
    }

    // Everything checked: the secret first (so a database never lands without it), then the
    // database, neither over an existing file.
    let secret_scratch = Scratch::beside(&secret_file, "restore")?;
    {
        let mut file = private_new_file(&secret_scratch.0)?;
        file.write_all(unpacked.secret.expose().as_bytes())
            .context("writing the service secret")?;
        file.sync_all().context("syncing the service secret")?;
    }
    place_without_overwriting(&secret_scratch.0, &secret_file)?;
    if let Err(error) = place_without_overwriting(&copy.0, &database_file) {
        let _ = std::fs::remove_file(&secret_file);
        return Err(error);
    }
    Ok(RestoreReport {
        data_dir: config.data_dir.clone(),
        database: database_file,
        database_bytes: unpacked.manifest.database.bytes,
        last_migration: facts.last_migration,
        backup_created_at: unpacked.manifest.created_at,
    })
}

struct Unpacked {
    manifest: Manifest,
    secret: Secret,
}

/// Reads the archive at `from`: the manifest (first), the database into `database_copy`
/// (checked against the manifest's size and SHA-256) and the service secret. Any other entry,
/// or one missing, is an error.
fn unpack(from: &Path, database_copy: &Path) -> anyhow::Result<Unpacked> {
    let file =
        File::open(from).with_context(|| format!("opening the backup {}", from.display()))?;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(BufReader::new(file)));
    let mut manifest: Option<Manifest> = None;
    let mut database: Option<(u64, String)> = None;
    let mut secret: Option<Secret> = None;
    let entries = archive
        .entries()
        .with_context(|| format!("{} is not a Tessera backup", from.display()))?;
    for entry in entries {
        let mut entry = entry.with_context(|| format!("reading the backup {}", from.display()))?;
        let name = entry
            .path()
            .context("reading an entry's name")?
            .to_string_lossy()
            .into_owned();
        match (name.as_str(), &manifest) {
            (MANIFEST_ENTRY, None) => {
                let read: Manifest = serde_json::from_slice(&read_small(&mut entry, &name)?)
                    .context("reading the backup's manifest")?;
                anyhow::ensure!(
                    read.format == FORMAT && read.version == FORMAT_VERSION,
                    "{} is a backup of format {} version {}; this binary reads {FORMAT} version \
                     {FORMAT_VERSION}",
                    from.display(),
                    read.format,
                    read.version
                );
                manifest = Some(read);
            }
            (DATABASE_ENTRY, Some(_)) if database.is_none() => {
                let mut hasher = Sha256::new();
                let mut out = BufWriter::new(private_new_file(database_copy)?);
                let mut buffer = vec![0u8; 256 * 1024];
                let mut bytes = 0u64;
                loop {
                    let read = entry.read(&mut buffer).context("reading the database")?;
                    if read == 0 {
                        break;
                    }
                    hasher.update(&buffer[..read]);
                    out.write_all(&buffer[..read])
                        .context("writing the database")?;
                    bytes += read as u64;
                }
                let file = out
                    .into_inner()
                    .map_err(|error| error.into_error())
                    .context("writing the database")?;
                file.sync_all().context("syncing the database")?;
                database = Some((bytes, hex::encode(hasher.finalize())));
            }
            (SECRET_ENTRY, Some(_)) if secret.is_none() => {
                let bytes = read_small(&mut entry, &name)?;
                let text = String::from_utf8(bytes).context("the service secret is not text")?;
                anyhow::ensure!(
                    !text.trim().is_empty(),
                    "the backup's service secret is empty"
                );
                secret = Some(Secret::new(text.trim().to_owned()));
            }
            _ => anyhow::bail!(
                "{} is not a Tessera backup: unexpected entry {name:?}",
                from.display()
            ),
        }
    }
    let manifest = manifest.with_context(|| format!("{} holds no manifest", from.display()))?;
    let (bytes, sha256) =
        database.with_context(|| format!("{} holds no database", from.display()))?;
    anyhow::ensure!(
        bytes == manifest.database.bytes && sha256 == manifest.database.sha256,
        "the backup's database does not match its manifest ({bytes} bytes, SHA-256 {sha256}; \
         expected {} bytes, {}): the file is damaged",
        manifest.database.bytes,
        manifest.database.sha256
    );
    let secret = secret.with_context(|| format!("{} holds no service secret", from.display()))?;
    Ok(Unpacked { manifest, secret })
}

fn read_small(entry: &mut impl Read, name: &str) -> anyhow::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    entry
        .take(SMALL_ENTRY_MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("reading {name}"))?;
    anyhow::ensure!(
        bytes.len() as u64 <= SMALL_ENTRY_MAX_BYTES,
        "{name} is larger than a backup writes"
    );
    Ok(bytes)
}
