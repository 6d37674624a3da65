//! Token signing keys: Ed25519 (JWT `EdDSA`), generated on first start and kept in the
//! database so that every host sharing it signs and verifies the same tokens. The newest key
//! signs; older ones stay verifiable (and in the JWKS) until the tokens they signed have expired.
//! A host that meets a `kid` it does not know reloads the keys (at most once a second), so keys
//! made by another host are picked up without a restart; servers also reread them every
//! `signing_keys_refresh`, so a rotation made elsewhere (`tessera admin rotate-keys`, another
//! host) signs their new tokens within that time, and `--revoke-previous` stops the old keys
//! verifying within it.
//!
//! Seeds are stored sealed (XChaCha20-Poly1305 under a key derived from the service secret,
//! bound to the key's `kid`), never in plaintext: hosts sharing a database must share the
//! service secret. Plaintext seeds of older versions are sealed at start.

use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use chacha20poly1305::aead::{Aead as _, KeyInit as _, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use chrono::Utc;
use ed25519_dalek::SigningKey;
use ed25519_dalek::pkcs8::EncodePrivateKey as _;
use jsonwebtoken::{DecodingKey, EncodingKey};
use serde::Serialize;
use utoipa::ToSchema;

use crate::config::AuthConfig;
use crate::store::keys::{self as store, KeyRow};
use tessera_http::config::Secret;
use tessera_storage::{Database, time};

/// A signing key stops signing after this long and a new one takes over.
pub const ROTATION_AGE: Duration = Duration::from_secs(30 * 24 * 3600);
/// How often an unknown `kid` may trigger a reload from the database.
const RELOAD_INTERVAL: Duration = Duration::from_secs(1);

/// One key as the host holds it.
struct Key {
    kid: String,
    /// Base64url of the 32-byte public key (the JWK `x`).
    public_x: String,
    encoding: EncodingKey,
    decoding: DecodingKey,
    created_at: String,
    /// When it stopped signing; `None` for the signing key.
    retired_at: Option<String>,
}

/// A public key of the JWKS document (RFC 8037 OKP).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PublicJwk {
    pub kty: &'static str,
    pub crv: &'static str,
    pub alg: &'static str,
    #[serde(rename = "use")]
    pub usage: &'static str,
    pub kid: String,
    pub x: String,
}

/// `{keys: [...]}` at `/auth/.well-known/jwks.json`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Jwks {
    pub keys: Vec<PublicJwk>,
}

/// The keys; cheap to clone.
#[derive(Clone)]
pub struct SigningKeys {
    database: Database,
    keys: Arc<RwLock<Vec<Arc<Key>>>>,
    last_reload: Arc<Mutex<Option<Instant>>>,
    /// Retired keys stay verifiable this long (the access token lifetime).
    token_lifetime: Duration,
    /// How stale a server's copy of the keys may be (see [`Self::reload`]).
    refresh_interval: Duration,
    /// Seals and opens the stored seeds.
    sealing: Arc<SealingKey>,
}

/// Prefix of a sealed seed: `v1:` + base64url (no padding) of a 24-byte nonce, the encrypted
/// 32-byte seed and the 16-byte tag. A plaintext seed (standard base64) never contains `:`.
const SEALED_V1: &str = "v1:";
const NONCE_BYTES: usize = 24;
const SEED_BYTES: usize = 32;
const TAG_BYTES: usize = 16;

/// The key that seals signing seeds, derived from the service secret with HKDF-SHA-256 under
/// a label of its own (independent of the TOTP and vault keys and of request signatures).
struct SealingKey([u8; 32]);

impl SealingKey {
    fn new(service_secret: &Secret) -> Self {
        let mut key = [0; 32];
        hkdf::Hkdf::<sha2::Sha256>::new(None, service_secret.expose().as_bytes())
            .expand(b"tessera/auth/signing-key-seal/v1", &mut key)
            .expect("32 bytes is a valid HKDF-SHA-256 output length");
        Self(key)
    }

    fn cipher(&self) -> XChaCha20Poly1305 {
        XChaCha20Poly1305::new(&chacha20poly1305::Key::from(self.0))
    }

    /// The associated data: binds a sealed seed to its purpose and its `kid`, so a sealed value
    /// copied onto another key's row does not open.
    fn associated_data(kid: &str) -> Vec<u8> {
        [b"tessera/auth/signing-key/v1:".as_slice(), kid.as_bytes()].concat()
    }

    /// `seed` sealed for storage in the row of `kid`.
    fn seal(&self, kid: &str, seed: &[u8; SEED_BYTES]) -> String {
        let nonce: [u8; NONCE_BYTES] = rand::random();
        let ciphertext = self
            .cipher()
            .encrypt(
                &XNonce::from(nonce),
                Payload {
                    msg: seed,
                    aad: &Self::associated_data(kid),
                },
            )
            .expect("XChaCha20-Poly1305 encrypts 32 bytes");
        let mut sealed = Vec::with_capacity(NONCE_BYTES + ciphertext.len());
        sealed.extend_from_slice(&nonce);
        sealed.extend_from_slice(&ciphertext);
        format!("{SEALED_V1}{}", URL_SAFE_NO_PAD.encode(sealed))
    }

    /// The seed of a stored value: sealed, or (from an older version, until the start-up pass
    /// seals it) plaintext base64.
    fn open(&self, kid: &str, stored: &str) -> anyhow::Result<[u8; SEED_BYTES]> {
        let Some(encoded) = stored.strip_prefix(SEALED_V1) else {
            return plaintext_seed(stored);
        };
        let bytes = URL_SAFE_NO_PAD
            .decode(encoded)
            .with_context(|| format!("the sealed signing key {kid} is not base64url"))?;
        anyhow::ensure!(
            bytes.len() == NONCE_BYTES + SEED_BYTES + TAG_BYTES,
            "the sealed signing key {kid} has the wrong length"
        );
        let (nonce, ciphertext) = bytes.split_at(NONCE_BYTES);
        let nonce = <[u8; NONCE_BYTES]>::try_from(nonce).expect("split at the nonce length");
        let seed = self
            .cipher()
            .decrypt(
                &XNonce::from(nonce),
                Payload {
                    msg: ciphertext,
                    aad: &Self::associated_data(kid),
                },
            )
            .map_err(|_| {
                anyhow::anyhow!(
                    "the signing key {kid} does not open with this host's service secret \
                     (hosts sharing a database need the same TESSERA_SERVICE_SECRET)"
                )
            })?;
        <[u8; SEED_BYTES]>::try_from(seed.as_slice())
            .map_err(|_| anyhow::anyhow!("the signing key {kid} is not 32 bytes"))
    }
}

/// A plaintext seed as older versions stored it: standard base64 of 32 bytes.
fn plaintext_seed(stored: &str) -> anyhow::Result<[u8; SEED_BYTES]> {
    STANDARD
        .decode(stored)
        .context("decoding a signing key")?
        .try_into()
        .map_err(|_| anyhow::anyhow!("a signing key is not 32 bytes"))
}

fn build_key(
    sealing: &SealingKey,
    KeyRow {
        kid,
        private_seed,
        created_at,
        retired_at,
    }: KeyRow,
) -> anyhow::Result<Key> {
    let seed = sealing.open(&kid, &private_seed)?;
    let signing = SigningKey::from_bytes(&seed);
    let der = signing
        .to_pkcs8_der()
        .map_err(|error| anyhow::anyhow!("encoding a signing key: {error}"))?;
    let public_x = URL_SAFE_NO_PAD.encode(signing.verifying_key().to_bytes());
    Ok(Key {
        decoding: DecodingKey::from_ed_components(&public_x)
            .map_err(|error| anyhow::anyhow!("a verifying key: {error}"))?,
        encoding: EncodingKey::from_ed_der(der.as_bytes()),
        public_x,
        kid,
        created_at,
        retired_at,
    })
}

impl SigningKeys {
    /// Seals the seeds still stored in plaintext, loads the keys, and creates the first one (or
    /// a successor of one older than [`ROTATION_AGE`]). `service_secret` seals the seeds.
    pub async fn load_or_create(
        database: Database,
        config: &AuthConfig,
        service_secret: &Secret,
    ) -> anyhow::Result<Self> {
        let keys = Self {
            database,
            keys: Arc::default(),
            last_reload: Arc::default(),
            token_lifetime: config.token_lifetime,
            refresh_interval: config.signing_keys_refresh,
            sealing: Arc::new(SealingKey::new(service_secret)),
        };
        keys.seal_plaintext_seeds().await?;
        keys.reload().await?;
        let due = match keys.signing_key() {
            None => true,
            Some(key) => {
                let created = time::parse(&key.created_at)?;
                Utc::now() - created > chrono::Duration::from_std(ROTATION_AGE)?
            }
        };
        if due {
            keys.rotate().await?;
        }
        Ok(keys)
    }

    /// Replaces every seed still stored in plaintext (by an older version) with its sealed form.
    /// Idempotent, and safe with several hosts starting at once: a row is only replaced while it
    /// still holds the plaintext this host read.
    async fn seal_plaintext_seeds(&self) -> anyhow::Result<()> {
        for row in store::plaintext_seeds(&self.database).await? {
            let kid = row.kid;
            let seed = plaintext_seed(&row.private_seed)
                .with_context(|| format!("reading the plaintext signing key {kid}"))?;
            let sealed = self.sealing.seal(&kid, &seed);
            store::seal_seed(&self.database, &kid, &row.private_seed, &sealed).await?;
            tracing::info!(%kid, "sealed a signing key stored in plaintext");
        }
        Ok(())
    }

    /// Makes a new signing key; the previous one retires (it still verifies its tokens).
    pub async fn rotate(&self) -> anyhow::Result<()> {
        let seed: [u8; 32] = rand::random();
        let kid = uuid::Uuid::new_v4().simple().to_string();
        let now = time::now();
        let mut tx = self.database.begin().await?;
        store::retire_signing_key(&mut tx, &now).await?;
        store::insert_key(&mut tx, &kid, &self.sealing.seal(&kid, &seed), &now).await?;
        tx.commit().await?;
        tracing::info!(%kid, "new token signing key");
        self.reload().await
    }

    /// Ends the verification of every retired key (after a leak): tokens they signed are
    /// refused once servers reread the keys. Returns how many keys were revoked.
    pub async fn revoke_retired(&self) -> anyhow::Result<u64> {
        let revoked = store::revoke_retired_keys(&self.database).await?;
        self.reload().await?;
        Ok(revoked)
    }

    /// Reads every key still useful: the signing key and retired keys whose tokens may not have
    /// expired yet (a server that has not reread the keys since a rotation still signs with the
    /// retired key for up to `refresh_interval`, so that long is added).
    pub async fn reload(&self) -> anyhow::Result<()> {
        let oldest_useful = time::format(
            Utc::now() - chrono::Duration::from_std(self.token_lifetime + self.refresh_interval)?,
        );
        let keys = store::useful_keys(&self.database, &oldest_useful)
            .await?
            .into_iter()
            .map(|row| build_key(&self.sealing, row).map(Arc::new))
            .collect::<anyhow::Result<Vec<_>>>()?;
        *self.keys.write().expect("signing keys lock") = keys;
        *self.last_reload.lock().expect("reload lock") = Some(Instant::now());
        Ok(())
    }

    fn signing_key(&self) -> Option<Arc<Key>> {
        self.keys
            .read()
            .expect("signing keys lock")
            .iter()
            .find(|key| key.retired_at.is_none())
            .cloned()
    }

    /// The key that signs new tokens: `(kid, key)`.
    pub fn signer(&self) -> anyhow::Result<(String, EncodingKey)> {
        let key = self.signing_key().context("no signing key is loaded")?;
        Ok((key.kid.clone(), key.encoding.clone()))
    }

    /// The verifying key of `kid`, reloading once (rate-limited) when it is unknown.
    pub async fn verifier(&self, kid: &str) -> Option<DecodingKey> {
        if let Some(key) = self.find(kid) {
            return Some(key);
        }
        let may_reload = self
            .last_reload
            .lock()
            .expect("reload lock")
            .is_none_or(|at| at.elapsed() >= RELOAD_INTERVAL);
        if may_reload {
            if let Err(error) = self.reload().await {
                tracing::error!(
                    error = format!("{error:#}"),
                    "reloading signing keys failed"
                );
            }
            return self.find(kid);
        }
        None
    }

    /// Whether the key `kid` is loaded (it signs or still verifies).
    pub fn holds(&self, kid: &str) -> bool {
        self.keys
            .read()
            .expect("signing keys lock")
            .iter()
            .any(|key| key.kid == kid)
    }

    fn find(&self, kid: &str) -> Option<DecodingKey> {
        self.keys
            .read()
            .expect("signing keys lock")
            .iter()
            .find(|key| key.kid == kid)
            .map(|key| key.decoding.clone())
    }

    /// The public keys, for `/auth/.well-known/jwks.json`.
    pub fn jwks(&self) -> Jwks {
        Jwks {
            keys: self
                .keys
                .read()
                .expect("signing keys lock")
                .iter()
                .map(|key| PublicJwk {
                    kty: "OKP",
                    crv: "Ed25519",
                    alg: "EdDSA",
                    usage: "sig",
                    kid: key.kid.clone(),
                    x: key.public_x.clone(),
                })
                .collect(),
        }
    }
}
