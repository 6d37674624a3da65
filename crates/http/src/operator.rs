//! The operator's credential on HTTP (CONTRACT §8): the endpoints under
//! `/core/api/operator/` answer a bearer of the operator token only. The token is derived from
//! the service secret (the host computes it, `tessera admin operator-token` prints it), so it
//! is the credential the admin CLI works with: whoever can run `tessera admin` on a host's data
//! can operate the cluster over HTTP, and nobody else. Missing or wrong: 401, compared in
//! constant time.

use axum::extract::{FromRef, FromRequestParts};
use axum::http::request::Parts;
use axum::http::{HeaderMap, header};
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;

use crate::ApiError;
use crate::config::Secret;

/// The operator token the app checks against; given by the app's state (`FromRef`).
#[derive(Clone)]
pub struct OperatorCredential(pub Secret);

/// Proof that a request carries the operator token: take it as an extractor argument.
#[derive(Debug, Clone, Copy)]
pub struct Operator;

impl<S> FromRequestParts<S> for Operator
where
    S: Send + Sync,
    OperatorCredential: FromRef<S>,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let OperatorCredential(token) = OperatorCredential::from_ref(state);
        if bearer_matches(&parts.headers, &token) {
            Ok(Operator)
        } else {
            tracing::warn!(path = parts.uri.path(), "refused an operator call");
            Err(ApiError::Unauthenticated)
        }
    }
}

/// Whether `Authorization: Bearer …` carries `token`; the digests are compared in constant
/// time, so neither the token's bytes nor its length leak through timing.
pub fn bearer_matches(headers: &HeaderMap, token: &Secret) -> bool {
    let Some(presented) = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
    else {
        return false;
    };
    let presented = Sha256::digest(presented.trim().as_bytes());
    let expected = Sha256::digest(token.expose().as_bytes());
    bool::from(presented.ct_eq(&expected))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn only_the_exact_bearer_token_matches() {
        let token = Secret::new("s3cret-token".to_owned());
        let with = |value: &'static str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::AUTHORIZATION, HeaderValue::from_static(value));
            headers
        };
        assert!(bearer_matches(&with("Bearer s3cret-token"), &token));
        assert!(!bearer_matches(&with("Bearer s3cret-toke"), &token));
        assert!(!bearer_matches(&with("Bearer s3cret-token2"), &token));
        assert!(!bearer_matches(&with("Basic s3cret-token"), &token));
        assert!(!bearer_matches(&HeaderMap::new(), &token));
    }
}
