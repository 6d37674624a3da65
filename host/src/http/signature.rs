//! `X-Service-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`:
//! the signature of internal calls (CONTRACT §5) and of webhook deliveries. Verification is
//! constant-time and refuses timestamps more than five minutes from now.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq as _;

pub const SIGNATURE_HEADER: &str = "x-service-signature";

/// How far `t` may be from now, in seconds.
pub const TOLERANCE_SECONDS: i64 = 300;

fn mac(secret: &[u8], timestamp: i64, body: &[u8]) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes keys of any length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    mac
}

/// The header value for `body` signed at `timestamp`.
pub fn sign(secret: &[u8], timestamp: i64, body: &[u8]) -> String {
    format!(
        "t={timestamp},v1={}",
        hex::encode(mac(secret, timestamp, body).finalize().into_bytes())
    )
}

/// Why a signature was refused.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("the signature header is malformed")]
    Malformed,
    #[error("the signature timestamp is outside the allowed window")]
    Expired,
    #[error("the signature does not match")]
    Mismatch,
}

/// Checks a header value against `body`; any of several `v1=` entries may match (secret
/// rotation sends two).
pub fn verify(secret: &[u8], header: &str, body: &[u8], now: i64) -> Result<(), SignatureError> {
    let mut timestamp = None;
    let mut candidates = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", value)) => {
                timestamp = Some(
                    value
                        .parse::<i64>()
                        .map_err(|_| SignatureError::Malformed)?,
                )
            }
            Some(("v1", value)) => {
                candidates.push(hex::decode(value).map_err(|_| SignatureError::Malformed)?)
            }
            Some(_) => {}
            None => return Err(SignatureError::Malformed),
        }
    }
    let timestamp = timestamp.ok_or(SignatureError::Malformed)?;
    if candidates.is_empty() {
        return Err(SignatureError::Malformed);
    }
    if (now - timestamp).abs() > TOLERANCE_SECONDS {
        return Err(SignatureError::Expired);
    }
    let expected = mac(secret, timestamp, body).finalize().into_bytes();
    let matched = candidates
        .iter()
        .fold(subtle::Choice::from(0), |any, candidate| {
            any | expected.as_slice().ct_eq(candidate)
        });
    if bool::from(matched) {
        Ok(())
    } else {
        Err(SignatureError::Mismatch)
    }
}

/// A JSON body whose `X-Service-Signature` verified against the service secret: the extractor
/// of every internal endpoint. Missing, malformed, wrong or stale signatures are 401.
pub struct SignedJson<T>(pub T);

impl<T> axum::extract::FromRequest<crate::state::AppState> for SignedJson<T>
where
    T: serde::de::DeserializeOwned,
{
    type Rejection = crate::http::ApiError;

    async fn from_request(
        request: axum::extract::Request,
        state: &crate::state::AppState,
    ) -> Result<Self, Self::Rejection> {
        use crate::http::ApiError;
        let header = request
            .headers()
            .get(SIGNATURE_HEADER)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned)
            .ok_or(ApiError::Unauthenticated)?;
        let body = axum::body::to_bytes(request.into_body(), state.config.http.max_body_bytes)
            .await
            .map_err(|_| ApiError::PayloadTooLarge)?;
        let now = chrono::Utc::now().timestamp();
        verify(
            state.service_secret.expose().as_bytes(),
            &header,
            &body,
            now,
        )
        .map_err(|error| {
            tracing::warn!(%error, "refused an internal call");
            ApiError::Unauthenticated
        })?;
        let body = if body.is_empty() {
            &b"{}"[..]
        } else {
            &body[..]
        };
        crate::http::extract::parse_json(body).map(SignedJson)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_round_trip_and_refuse_tampering_age_and_garbage() {
        let secret = b"a-shared-secret";
        let header = sign(secret, 1_700_000_000, b"{\"a\":1}");
        assert!(header.starts_with("t=1700000000,v1="));
        assert_eq!(verify(secret, &header, b"{\"a\":1}", 1_700_000_100), Ok(()));
        assert_eq!(
            verify(secret, &header, b"{\"a\":2}", 1_700_000_100),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify(b"other", &header, b"{\"a\":1}", 1_700_000_100),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify(secret, &header, b"{\"a\":1}", 1_700_000_301),
            Err(SignatureError::Expired)
        );
        assert_eq!(
            verify(secret, "v1=abcd", b"", 0),
            Err(SignatureError::Malformed)
        );
        assert_eq!(
            verify(secret, "t=1,v1=zz", b"", 1),
            Err(SignatureError::Malformed)
        );
        let rotated = format!("{header},v1={}", "00".repeat(32));
        assert_eq!(
            verify(secret, &rotated, b"{\"a\":1}", 1_700_000_000),
            Ok(())
        );
    }

    #[test]
    fn a_known_vector() {
        // HMAC-SHA256("secret", "1.body"), computed independently with openssl.
        assert_eq!(
            sign(b"secret", 1, b"body"),
            "t=1,v1=842b24d9575dee4b6ec460b7e3af7d683501d84fe6279102340787c79d2e2bab"
        );
    }
}
