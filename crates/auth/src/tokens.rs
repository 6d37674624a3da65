//! Access tokens: JWTs with the claims of CONTRACT §4 (`sub`, `tid`, `wid`, `role`, `typ`,
//! `sid`, `jti`, `iat`, `exp`), signed with the Ed25519 keys of `keys.rs`.

use std::sync::Arc;

use jsonwebtoken::{Algorithm, Header, Validation};
use serde::{Deserialize, Serialize};

use super::keys::SigningKeys;

/// The claims of an access token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessClaims {
    /// User id.
    pub sub: String,
    /// Tenant id.
    pub tid: String,
    /// Workspace id, when the token is scoped to one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wid: Option<String>,
    /// `owner`, `editor` or `viewer`.
    pub role: String,
    /// `user`, `guest` or `agent`.
    pub typ: String,
    /// Session id.
    pub sid: String,
    pub jti: String,
    pub iat: i64,
    pub exp: i64,
}

/// Signs and verifies access tokens with the signing keys (EdDSA). Verification accepts only
/// `EdDSA` with a known `kid`, so `alg: none`, HMAC confusion and foreign keys fail.
#[derive(Clone)]
pub struct AccessTokens {
    keys: SigningKeys,
    validation: Validation,
    /// Tokens this host verified recently, by SHA-256 of the whole token, with the `kid` that
    /// signed them: a repeated bearer costs a hash and a lookup instead of an Ed25519
    /// verification. Entries live at most [`VERIFIED_CACHE_TTL`], never past the token's
    /// `exp`, and count only while their key is still loaded (a revoked key's tokens are
    /// refused from the reload that drops it).
    verified: moka::future::Cache<[u8; 32], (Arc<str>, AccessClaims)>,
}

/// How long a verified token is remembered.
pub const VERIFIED_CACHE_TTL: std::time::Duration = std::time::Duration::from_secs(60);

impl AccessTokens {
    pub fn new(keys: SigningKeys) -> Self {
        let mut validation = Validation::new(Algorithm::EdDSA);
        validation.leeway = 0;
        validation.set_required_spec_claims(&["exp", "iat", "sub"]);
        Self {
            keys,
            validation,
            verified: moka::future::Cache::builder()
                .max_capacity(100_000)
                .time_to_live(VERIFIED_CACHE_TTL)
                .build(),
        }
    }

    pub fn keys(&self) -> &SigningKeys {
        &self.keys
    }

    pub fn issue(&self, claims: &AccessClaims) -> anyhow::Result<String> {
        let (kid, key) = self.keys.signer()?;
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = Some(kid);
        jsonwebtoken::encode(&header, claims, &key)
            .map_err(|error| anyhow::anyhow!("signing an access token: {error}"))
    }

    /// The claims of a valid, unexpired token signed by one of the keys; `None` otherwise.
    pub async fn verify(&self, token: &str) -> Option<AccessClaims> {
        let digest: [u8; 32] = <sha2::Sha256 as sha2::Digest>::digest(token.as_bytes()).into();
        if let Some((kid, claims)) = self.verified.get(&digest).await {
            return (claims.exp > chrono::Utc::now().timestamp() && self.keys.holds(&kid))
                .then_some(claims);
        }
        let (kid, claims) = self.verify_uncached(token).await?;
        self.verified
            .insert(digest, (Arc::from(kid), claims.clone()))
            .await;
        Some(claims)
    }

    /// The claims of a token this host verified within [`VERIFIED_CACHE_TTL`] and that is
    /// still valid, from the cache alone (no signature check: `None` for any other token).
    pub async fn verified_recently(&self, token: &str) -> Option<AccessClaims> {
        let digest: [u8; 32] = <sha2::Sha256 as sha2::Digest>::digest(token.as_bytes()).into();
        let (kid, claims) = self.verified.get(&digest).await?;
        (claims.exp > chrono::Utc::now().timestamp() && self.keys.holds(&kid)).then_some(claims)
    }

    /// The signing `kid` and the claims of a token verified now.
    async fn verify_uncached(&self, token: &str) -> Option<(String, AccessClaims)> {
        let header = jsonwebtoken::decode_header(token).ok()?;
        if header.alg != Algorithm::EdDSA {
            return None;
        }
        let kid = header.kid?;
        let key = self.keys.verifier(&kid).await?;
        jsonwebtoken::decode::<AccessClaims>(token, &key, &self.validation)
            .ok()
            .map(|data| (kid, data.claims))
    }
}
