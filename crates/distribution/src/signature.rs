//! Publisher signatures of components: a detached Ed25519 signature (RFC 8032, pure Ed25519)
//! over the component's bytes exactly as published. The private key is a PKCS#8 PEM file and
//! the public keys SubjectPublicKeyInfo PEM files, as `openssl genpkey -algorithm ed25519` and
//! `openssl pkey -pubout` write them, so a publisher may sign with OpenSSL
//! (`openssl pkeyutl -sign -rawin -inkey key.pem -in engine.wasm -out engine.wasm.sig`) as well
//! as with `tessera admin engine push --signing-key`. A signature travels as a `.sig` file
//! (its 64 raw bytes, or their base64), as the `Tessera-Component-Signature` header of the
//! operator endpoint (base64), or as the [`SIGNATURE_ANNOTATION`] of an OCI manifest (base64).
//!
//! An operator who lists trusted keys ([`TrustedKeys`]) requires every publication to carry a
//! signature by one of them; without a list nothing is required (and nothing is checked).

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::pkcs8::{DecodePrivateKey as _, DecodePublicKey as _};
use ed25519_dalek::{Signer as _, SigningKey, VerifyingKey};

/// The OCI manifest annotation that carries a component's signature (base64).
pub const SIGNATURE_ANNOTATION: &str = "dev.tessera.component.signature.ed25519";

/// The largest key or signature file read, in bytes.
const MAX_KEY_FILE_BYTES: u64 = 16 * 1024;

/// A detached Ed25519 signature over a component's bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct ComponentSignature(ed25519_dalek::Signature);

impl std::fmt::Debug for ComponentSignature {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "ComponentSignature({})", self.to_base64())
    }
}

/// Why a signature could not be read.
#[derive(Debug, thiserror::Error)]
#[error(
    "a component signature is 64 bytes of Ed25519 signature, raw or in base64; this is {0} bytes"
)]
pub struct MalformedSignature(usize);

impl ComponentSignature {
    /// Reads a signature given as its 64 raw bytes (what `openssl pkeyutl -sign` writes) or as
    /// their base64 (surrounding white space ignored).
    pub fn from_bytes_or_base64(given: &[u8]) -> Result<Self, MalformedSignature> {
        if let Ok(raw) = <[u8; 64]>::try_from(given) {
            return Ok(Self(ed25519_dalek::Signature::from_bytes(&raw)));
        }
        let text = String::from_utf8_lossy(given);
        let decoded = STANDARD
            .decode(text.trim())
            .map_err(|_| MalformedSignature(given.len()))?;
        let raw = <[u8; 64]>::try_from(decoded.as_slice())
            .map_err(|_| MalformedSignature(decoded.len()))?;
        Ok(Self(ed25519_dalek::Signature::from_bytes(&raw)))
    }

    /// Reads a `.sig` file ([`ComponentSignature::from_bytes_or_base64`]).
    pub fn read(path: &Path) -> anyhow::Result<Self> {
        let bytes = read_small_file(path)?;
        Self::from_bytes_or_base64(&bytes).with_context(|| format!("reading {}", path.display()))
    }

    /// The signature in base64 (the header's and the annotation's form).
    pub fn to_base64(&self) -> String {
        STANDARD.encode(self.0.to_bytes())
    }
}

/// A publisher's private key (PKCS#8 PEM).
pub struct PublisherKey(SigningKey);

impl PublisherKey {
    /// Reads an Ed25519 private key from a PKCS#8 PEM file.
    pub fn read(path: &Path) -> anyhow::Result<Self> {
        let text = String::from_utf8(read_small_file(path)?)
            .with_context(|| format!("{} is not a PEM file", path.display()))?;
        SigningKey::from_pkcs8_pem(&text)
            .map(Self)
            .map_err(|error| {
                anyhow::anyhow!(
                    "{} is not an Ed25519 private key in PKCS#8 PEM (`openssl genpkey -algorithm ed25519` writes one): {error}",
                    path.display()
                )
            })
    }

    /// Signs a component's bytes.
    pub fn sign(&self, component: &[u8]) -> ComponentSignature {
        ComponentSignature(self.0.sign(component))
    }
}

/// The public keys whose signatures an operator trusts (`TESSERA_ENGINE_TRUSTED_KEYS`), each
/// with the file it was read from, which names it in messages.
#[derive(Debug, Clone, Default)]
pub struct TrustedKeys(Vec<(PathBuf, VerifyingKey)>);

/// Why a publication's signature was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureRefusal {
    #[error(
        "the component is not signed, and TESSERA_ENGINE_TRUSTED_KEYS requires a signature by one of its keys"
    )]
    Unsigned,
    #[error(
        "the component's signature is not by any key of TESSERA_ENGINE_TRUSTED_KEYS (or the component was changed after it was signed)"
    )]
    NotTrusted,
}

impl TrustedKeys {
    /// Reads each SubjectPublicKeyInfo PEM file (`openssl pkey -pubout` writes one).
    pub fn read(paths: &[PathBuf]) -> anyhow::Result<Self> {
        let mut keys = Vec::with_capacity(paths.len());
        for path in paths {
            let text = String::from_utf8(read_small_file(path)?)
                .with_context(|| format!("{} is not a PEM file", path.display()))?;
            let key = VerifyingKey::from_public_key_pem(&text).map_err(|error| {
                anyhow::anyhow!(
                    "{} is not an Ed25519 public key in PEM (`openssl pkey -pubout` writes one): {error}",
                    path.display()
                )
            })?;
            keys.push((path.clone(), key));
        }
        Ok(Self(keys))
    }

    /// Whether signatures are required.
    pub fn required(&self) -> bool {
        !self.0.is_empty()
    }

    /// Checks a publication: with keys listed, `signature` must be a valid signature of
    /// `component` by one of them (verified strictly: no malleable or weak-key signatures);
    /// the file of the key that signed. Without keys: `None`, whatever was given.
    pub fn check(
        &self,
        component: &[u8],
        signature: Option<&ComponentSignature>,
    ) -> Result<Option<&Path>, SignatureRefusal> {
        if !self.required() {
            return Ok(None);
        }
        let signature = signature.ok_or(SignatureRefusal::Unsigned)?;
        self.0
            .iter()
            .find(|(_, key)| key.verify_strict(component, &signature.0).is_ok())
            .map(|(path, _)| Some(path.as_path()))
            .ok_or(SignatureRefusal::NotTrusted)
    }
}

fn read_small_file(path: &Path) -> anyhow::Result<Vec<u8>> {
    let size = std::fs::metadata(path)
        .with_context(|| format!("reading {}", path.display()))?
        .len();
    anyhow::ensure!(
        size <= MAX_KEY_FILE_BYTES,
        "{} is {size} bytes: not a key or signature file",
        path.display()
    );
    std::fs::read(path).with_context(|| format!("reading {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::pkcs8::{EncodePrivateKey as _, EncodePublicKey as _, spki::der::pem};

    fn key_files(directory: &Path, name: &str) -> (PathBuf, PathBuf) {
        let key = SigningKey::from_bytes(&rand::random::<[u8; 32]>());
        let private = directory.join(format!("{name}.pem"));
        let public = directory.join(format!("{name}.pub"));
        std::fs::write(
            &private,
            key.to_pkcs8_pem(pem::LineEnding::LF).unwrap().as_bytes(),
        )
        .unwrap();
        std::fs::write(
            &public,
            key.verifying_key()
                .to_public_key_pem(pem::LineEnding::LF)
                .unwrap(),
        )
        .unwrap();
        (private, public)
    }

    #[test]
    fn a_signature_by_a_trusted_key_passes_and_anything_else_is_refused_by_name() {
        let directory = tempfile::tempdir().unwrap();
        let (publisher, publisher_public) = key_files(directory.path(), "publisher");
        let (stranger, _) = key_files(directory.path(), "stranger");
        let trusted = TrustedKeys::read(std::slice::from_ref(&publisher_public)).unwrap();
        let component = b"\0asm component bytes".to_vec();

        let signature = PublisherKey::read(&publisher).unwrap().sign(&component);
        assert_eq!(
            trusted.check(&component, Some(&signature)),
            Ok(Some(publisher_public.as_path()))
        );
        // The base64 form round-trips; raw bytes are read too.
        let again =
            ComponentSignature::from_bytes_or_base64(signature.to_base64().as_bytes()).unwrap();
        assert_eq!(again, signature);

        assert_eq!(
            trusted.check(&component, None),
            Err(SignatureRefusal::Unsigned)
        );
        let by_stranger = PublisherKey::read(&stranger).unwrap().sign(&component);
        assert_eq!(
            trusted.check(&component, Some(&by_stranger)),
            Err(SignatureRefusal::NotTrusted)
        );
        let mut changed = component.clone();
        changed.push(0);
        assert_eq!(
            trusted.check(&changed, Some(&signature)),
            Err(SignatureRefusal::NotTrusted)
        );
        // No keys listed: nothing is required.
        assert_eq!(TrustedKeys::default().check(&component, None), Ok(None));
    }

    #[test]
    fn malformed_keys_and_signatures_are_refused_with_what_they_should_be() {
        let directory = tempfile::tempdir().unwrap();
        let (private, public) = key_files(directory.path(), "publisher");
        // A private key is not a public key, and the other way round.
        let error = TrustedKeys::read(std::slice::from_ref(&private)).unwrap_err();
        assert!(
            format!("{error:#}").contains("openssl pkey -pubout"),
            "{error:#}"
        );
        let error = PublisherKey::read(&public).err().unwrap();
        assert!(format!("{error:#}").contains("PKCS#8"), "{error:#}");
        let error = ComponentSignature::from_bytes_or_base64(b"bm90IDY0IGJ5dGVz").unwrap_err();
        assert!(error.to_string().contains("64 bytes"), "{error}");
    }
}
