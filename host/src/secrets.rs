//! Secrets the host generates on first start and keeps in the data dir (mode 0600): created
//! atomically, so two processes starting at once agree on one value. Also what keeps the data
//! dir private: a 0700 directory, 0600 files, and a process umask of 0o077 for the binary.

use std::io::Write as _;
use std::path::Path;

use anyhow::Context as _;
use rand::RngCore as _;

use crate::config::Secret;

/// The host's service secret: `TESSERA_SERVICE_SECRET`, else the one generated in the data dir.
pub fn service_secret(config: &crate::config::Config) -> anyhow::Result<Secret> {
    match &config.service_secret {
        Some(secret) => Ok(secret.clone()),
        None => load_or_generate(&config.data_dir, "service_secret"),
    }
}

/// Reads `data_dir/name`, or creates it with 32 random bytes (hex) when it does not exist.
pub fn load_or_generate(data_dir: &Path, name: &str) -> anyhow::Result<Secret> {
    create_private_dir(data_dir)?;
    let path = data_dir.join(name);
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    let fresh = hex::encode(bytes);

    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    // Write to a temporary name first and link it into place: a reader never sees a
    // half-written file, and exactly one of several racing processes wins.
    let temporary = data_dir.join(format!(".{name}.{}.tmp", uuid::Uuid::new_v4()));
    {
        let mut file = options
            .open(&temporary)
            .with_context(|| format!("creating {}", temporary.display()))?;
        file.write_all(fresh.as_bytes())
            .context("writing a generated secret")?;
        file.sync_all().context("syncing a generated secret")?;
    }
    let linked = std::fs::hard_link(&temporary, &path);
    let _ = std::fs::remove_file(&temporary);
    match linked {
        Ok(()) => Ok(Secret::new(fresh)),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
            make_private(&path)?;
            let existing = std::fs::read_to_string(&path)
                .with_context(|| format!("reading {}", path.display()))?;
            let existing = existing.trim();
            anyhow::ensure!(!existing.is_empty(), "{} is empty", path.display());
            Ok(Secret::new(existing.to_owned()))
        }
        Err(error) => Err(error).with_context(|| format!("creating {}", path.display())),
    }
}

/// Files the host creates get no permission for group and others (0600 files, 0700 folders),
/// whatever creates them (SQLite, the artifact cache, lock files): called first thing by the
/// `tessera` binary, before any thread or file exists. The explicit modes below keep the data
/// dir private for hosts embedded in another process too.
pub fn restrict_umask() {
    #[cfg(unix)]
    // SAFETY: umask only replaces the process's file mode creation mask; it cannot fail.
    unsafe {
        libc::umask(0o077);
    }
}

/// Creates `dir` (and missing parents) with mode 0700; an existing `dir` this user owns is
/// made private (group and other permissions removed), with a warning.
pub fn create_private_dir(dir: &Path) -> anyhow::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt as _;
        builder.mode(0o700);
    }
    builder
        .create(dir)
        .with_context(|| format!("creating the data dir {}", dir.display()))?;
    make_private(dir)
}

/// Removes group and other permissions from `path` (not following a symbolic link) when this
/// user owns it and it has any, with a warning; a loose entry owned by someone else is left as
/// it is, with a warning. `Ok` when `path` does not exist.
pub fn make_private(path: &Path) -> anyhow::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
        let metadata = match std::fs::symlink_metadata(path) {
            Ok(metadata) => metadata,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(error) => {
                return Err(error).with_context(|| format!("reading {}", path.display()));
            }
        };
        let mode = metadata.mode() & 0o7777;
        if metadata.file_type().is_symlink() || mode & 0o077 == 0 {
            return Ok(());
        }
        // SAFETY: geteuid has no preconditions and cannot fail.
        let owner = unsafe { libc::geteuid() };
        if metadata.uid() != owner {
            tracing::warn!(
                path = %path.display(),
                mode = format!("{mode:o}"),
                "readable by other users and owned by another user: not changed"
            );
            return Ok(());
        }
        let private = mode & !0o077;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(private))
            .with_context(|| format!("making {} private", path.display()))?;
        tracing::warn!(
            path = %path.display(),
            was = format!("{mode:o}"),
            now = format!("{private:o}"),
            "was open to other users: made private"
        );
    }
    Ok(())
}

/// Makes the data dir private at start: creates it 0700, or removes group and other
/// permissions from it and from everything in it that this user owns (files of an older
/// version, compiled artifacts, the database and its WAL).
pub fn prepare_data_dir(data_dir: &Path) -> anyhow::Result<()> {
    create_private_dir(data_dir)?;
    make_private_within(data_dir)
}

fn make_private_within(dir: &Path) -> anyhow::Result<()> {
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("reading the folder {}", dir.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("reading the folder {}", dir.display()))?;
        let path = entry.path();
        make_private(&path)?;
        let is_dir = entry
            .file_type()
            .with_context(|| format!("reading {}", path.display()))?
            .is_dir();
        if is_dir {
            make_private_within(&path)?;
        }
    }
    Ok(())
}

/// Creates `path` empty with mode 0600 if it does not exist (another process may create it at
/// the same moment: that is fine), else makes it private ([`make_private`]).
pub fn create_private_file(path: &Path) -> anyhow::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    match options.open(path) {
        Ok(_) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => make_private(path),
        Err(error) => Err(error).with_context(|| format!("creating {}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_secret_is_kept_and_reused() {
        let dir = std::env::temp_dir().join(format!("tessera-secret-{}", uuid::Uuid::new_v4()));
        let first = load_or_generate(&dir, "service_secret").unwrap();
        let second = load_or_generate(&dir, "service_secret").unwrap();
        assert_eq!(first, second);
        assert_eq!(first.expose().len(), 64);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
