//! Access tokens: JWTs with the claims of CONTRACT §4 (`sub`, `tid`, `wid`, `role`, `typ`,
//! `sid`, `jti`, `iat`, `exp`), signed with a key generated into the data dir on first start.
//! Verification accepts exactly the host's algorithm, so `alg: none` and foreign keys fail.

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

use crate::config::Secret;

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

/// Signs and verifies access tokens.
#[derive(Clone)]
pub struct AccessTokens {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
}

impl AccessTokens {
    pub fn new(signing_key: &Secret) -> Self {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.leeway = 0;
        validation.set_required_spec_claims(&["exp", "iat", "sub"]);
        Self {
            encoding: EncodingKey::from_secret(signing_key.expose().as_bytes()),
            decoding: DecodingKey::from_secret(signing_key.expose().as_bytes()),
            validation,
        }
    }

    pub fn issue(&self, claims: &AccessClaims) -> anyhow::Result<String> {
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), claims, &self.encoding)
            .map_err(|error| anyhow::anyhow!("signing an access token: {error}"))
    }

    /// The claims of a valid, unexpired token signed by this host; `None` otherwise.
    pub fn verify(&self, token: &str) -> Option<AccessClaims> {
        jsonwebtoken::decode::<AccessClaims>(token, &self.decoding, &self.validation)
            .ok()
            .map(|data| data.claims)
    }
}
