//! Secrets the host generates on first start and keeps in the data dir (mode 0600): created
//! atomically, so two processes starting at once agree on one value. Also what keeps the data
//! dir private: a process umask of 0o077 for the binary (the 0700 directory and 0600 files are
//! `tessera_storage::files`, re-exported here).

use std::io::Write as _;
use std::path::Path;

use anyhow::Context as _;
use rand::RngCore as _;

use crate::config::Secret;
pub use crate::storage::files::{
    create_new_private, create_private_dir, create_private_file, make_private, prepare_data_dir,
};

/// The host's service secret: `TESSERA_SERVICE_SECRET`, else the one generated in the data dir.
pub fn service_secret(config: &crate::config::Config) -> anyhow::Result<Secret> {
    match &config.service_secret {
        Some(secret) => Ok(secret.clone()),
        None => load_or_generate(&config.data_dir, "service_secret"),
    }
}

/// The operator token (CONTRACT §8, `tessera admin operator-token`): a key derived from the
/// service secret (HKDF-SHA256, its own label), hex. Whoever holds the service secret (every
/// host and the admin CLI) derives the same token; the token reveals nothing of the secret.
/// Changing the service secret changes it.
pub fn operator_token(service_secret: &Secret) -> Secret {
    let derivation = hkdf::Hkdf::<sha2::Sha256>::new(None, service_secret.expose().as_bytes());
    let mut token = [0u8; 32];
    derivation
        .expand(b"tessera/operator-token/v1", &mut token)
        .expect("32 bytes is a valid HKDF-SHA256 output length");
    Secret::new(format!("tessera-operator-{}", hex::encode(token)))
}

/// Reads `data_dir/name`, or creates it with 32 random bytes (hex) when it does not exist.
pub fn load_or_generate(data_dir: &Path, name: &str) -> anyhow::Result<Secret> {
    create_private_dir(data_dir)?;
    let path = data_dir.join(name);
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    let fresh = hex::encode(bytes);

    // Write to a temporary name first and link it into place: a reader never sees a
    // half-written file, and exactly one of several racing processes wins.
    let temporary = data_dir.join(format!(".{name}.{}.tmp", uuid::Uuid::new_v4()));
    {
        let mut file = create_new_private(&temporary)
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
