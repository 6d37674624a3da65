//! The `vault` import: engines' secrets at rest. Sealed bytes are XChaCha20-Poly1305 under one
//! key derived from the service secret (HKDF-SHA-256, a label of its own), with the engine code
//! and the tenant id as associated data, so a value sealed for one (engine, tenant) does not
//! open for another even when its bytes are copied across. Format: a version byte (1), the
//! 24-byte random nonce, the ciphertext and its 16-byte tag.

use chacha20poly1305::aead::{Aead as _, KeyInit as _, Payload};
use chacha20poly1305::{Key, XChaCha20Poly1305, XNonce};
use hkdf::Hkdf;
use rand::TryRngCore as _;
use sha2::Sha256;

const VERSION: u8 = 1;
const NONCE_BYTES: usize = 24;
const TAG_BYTES: usize = 16;
/// Largest plaintext an engine may seal.
pub const MAX_PLAINTEXT_BYTES: usize = 64 * 1024;

/// The sealing key of a host; cheap to clone.
#[derive(Clone)]
pub struct Vault {
    key: [u8; 32],
}

impl std::fmt::Debug for Vault {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("Vault(***)")
    }
}

/// Why a sealed value did not open.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VaultError {
    #[error("the value is not sealed by this host's vault")]
    Malformed,
    #[error(
        "the sealed value does not open here (another engine, tenant or service secret, or altered)"
    )]
    Unsealing,
    #[error("secrets are at most {MAX_PLAINTEXT_BYTES} bytes")]
    TooLarge,
}

fn associated_data(engine_code: &str, tenant_id: &str) -> Vec<u8> {
    format!("tessera/engine-vault/v1\0{engine_code}\0{tenant_id}").into_bytes()
}

impl Vault {
    /// The vault of a host whose service secret is `service_secret`. Hosts sharing a database
    /// must share the service secret (they already must, for internal signatures).
    pub fn new(service_secret: &str) -> Self {
        let mut key = [0; 32];
        Hkdf::<Sha256>::new(None, service_secret.as_bytes())
            .expand(b"tessera/engine-vault-seal/v1", &mut key)
            .expect("32 bytes is a valid HKDF-SHA-256 output length");
        Self { key }
    }

    pub fn seal(
        &self,
        engine_code: &str,
        tenant_id: &str,
        plaintext: &[u8],
    ) -> Result<Vec<u8>, VaultError> {
        if plaintext.len() > MAX_PLAINTEXT_BYTES {
            return Err(VaultError::TooLarge);
        }
        let mut nonce = [0; NONCE_BYTES];
        rand::rngs::OsRng
            .try_fill_bytes(&mut nonce)
            .expect("the operating system's random number generator failed");
        let aad = associated_data(engine_code, tenant_id);
        let ciphertext = XChaCha20Poly1305::new(&Key::from(self.key))
            .encrypt(
                &XNonce::from(nonce),
                Payload {
                    msg: plaintext,
                    aad: &aad,
                },
            )
            .expect("XChaCha20-Poly1305 encrypts anything this small");
        let mut sealed = Vec::with_capacity(1 + NONCE_BYTES + ciphertext.len());
        sealed.push(VERSION);
        sealed.extend_from_slice(&nonce);
        sealed.extend_from_slice(&ciphertext);
        Ok(sealed)
    }

    pub fn open(
        &self,
        engine_code: &str,
        tenant_id: &str,
        sealed: &[u8],
    ) -> Result<Vec<u8>, VaultError> {
        let Some((&VERSION, rest)) = sealed.split_first() else {
            return Err(VaultError::Malformed);
        };
        if rest.len() < NONCE_BYTES + TAG_BYTES {
            return Err(VaultError::Malformed);
        }
        let (nonce, ciphertext) = rest.split_at(NONCE_BYTES);
        let nonce = <[u8; NONCE_BYTES]>::try_from(nonce).map_err(|_| VaultError::Malformed)?;
        let aad = associated_data(engine_code, tenant_id);
        XChaCha20Poly1305::new(&Key::from(self.key))
            .decrypt(
                &XNonce::from(nonce),
                Payload {
                    msg: ciphertext,
                    aad: &aad,
                },
            )
            .map_err(|_| VaultError::Unsealing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_values_open_only_in_their_engine_and_tenant() {
        let vault = Vault::new("service-secret");
        let sealed = vault.seal("chat", "tenant-a", b"whsec_0123").unwrap();
        assert_ne!(
            sealed,
            vault.seal("chat", "tenant-a", b"whsec_0123").unwrap()
        );
        assert!(!sealed.windows(10).any(|window| window == b"whsec_0123"));
        assert_eq!(
            vault.open("chat", "tenant-a", &sealed).unwrap(),
            b"whsec_0123"
        );
        assert_eq!(
            vault.open("chat", "tenant-b", &sealed),
            Err(VaultError::Unsealing)
        );
        assert_eq!(
            vault.open("mail", "tenant-a", &sealed),
            Err(VaultError::Unsealing)
        );
        assert_eq!(
            Vault::new("another-secret").open("chat", "tenant-a", &sealed),
            Err(VaultError::Unsealing)
        );
        let mut altered = sealed.clone();
        *altered.last_mut().unwrap() ^= 1;
        assert_eq!(
            vault.open("chat", "tenant-a", &altered),
            Err(VaultError::Unsealing)
        );
        assert_eq!(
            vault.open("chat", "tenant-a", b"plain"),
            Err(VaultError::Malformed)
        );
        assert_eq!(
            vault.seal("chat", "tenant-a", &vec![0; MAX_PLAINTEXT_BYTES + 1]),
            Err(VaultError::TooLarge)
        );
    }
}
