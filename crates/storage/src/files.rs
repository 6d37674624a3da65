//! The data dir's privacy: a 0700 directory and 0600 files (SQLite's database and companions,
//! lock files, generated secrets), made private when they are found loose.

use std::path::Path;

use anyhow::Context as _;

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

/// Opens a new file at `path` for writing, with mode 0600; an error if `path` exists.
pub fn create_new_private(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    options.open(path)
}

/// Creates `path` empty with mode 0600 if it does not exist (another process may create it at
/// the same moment: that is fine), else makes it private ([`make_private`]).
pub fn create_private_file(path: &Path) -> anyhow::Result<()> {
    match create_new_private(path) {
        Ok(_) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => make_private(path),
        Err(error) => Err(error).with_context(|| format!("creating {}", path.display())),
    }
}
