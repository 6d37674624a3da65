//! Tessera's `X-Service-Signature` header: `t=<unix seconds>,v1=<hex HMAC-SHA256(secret,
//! "<t>.<raw body>")>`, the signature of internal calls and of webhook deliveries. During a
//! secret rotation a delivery carries one `v1=` entry per secret; a receiver accepts the request
//! when any entry matches.
//!
//! For webhook receivers: verify the raw body exactly as received, before parsing it.
//!
//! ```
//! let secret = b"whsec_0123456789abcdef0123456789abcdef";
//! let body = br#"{"id":"9f2c","event_type":"message.created"}"#;
//! let now = 1_767_225_600;
//! let header = tessera_signature::sign(secret, now, body);
//! assert_eq!(tessera_signature::verify(secret, &header, body, now + 10), Ok(()));
//! assert_eq!(
//!     tessera_signature::verify(secret, &header, body, now + 301),
//!     Err(tessera_signature::SignatureError::Expired)
//! );
//! ```

#![deny(missing_docs)]

use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq as _;

/// The header's name (HTTP header names are case-insensitive).
pub const SIGNATURE_HEADER: &str = "x-service-signature";

/// How far `t` may be from now, in seconds, either way (replay protection).
pub const TOLERANCE_SECONDS: i64 = 300;

fn mac(secret: &[u8], timestamp: i64, body: &[u8]) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes keys of any length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    mac
}

/// The header value for `body` signed with `secret` at `timestamp` (unix seconds).
pub fn sign(secret: &[u8], timestamp: i64, body: &[u8]) -> String {
    format!("t={timestamp},{}", v1_entry(secret, timestamp, body))
}

/// One `v1=<hex>` entry, for headers that carry several (secret rotation).
pub fn v1_entry(secret: &[u8], timestamp: i64, body: &[u8]) -> String {
    format!(
        "v1={}",
        hex::encode(mac(secret, timestamp, body).finalize().into_bytes())
    )
}

/// Why a signature was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignatureError {
    /// No `t=`, no `v1=`, or a value that is not a number / hex.
    Malformed,
    /// `t` is more than [`TOLERANCE_SECONDS`] away from now.
    Expired,
    /// No `v1=` entry matches the body and secret.
    Mismatch,
}

impl std::fmt::Display for SignatureError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            Self::Malformed => "the signature header is malformed",
            Self::Expired => "the signature timestamp is outside the allowed window",
            Self::Mismatch => "the signature does not match",
        })
    }
}

impl std::error::Error for SignatureError {}

/// Checks a header value against the raw `body` at `now` (unix seconds): the timestamp within
/// [`TOLERANCE_SECONDS`], and any `v1=` entry equal to the expected MAC, compared in constant
/// time.
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
                );
            }
            Some(("v1", value)) => {
                candidates.push(hex::decode(value).map_err(|_| SignatureError::Malformed)?);
            }
            Some(_) => {}
            None => return Err(SignatureError::Malformed),
        }
    }
    let timestamp = timestamp.ok_or(SignatureError::Malformed)?;
    if candidates.is_empty() {
        return Err(SignatureError::Malformed);
    }
    if now.abs_diff(timestamp) > TOLERANCE_SECONDS.unsigned_abs() {
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

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"whsec_0123456789abcdef0123456789abcdef";
    const T: i64 = 1_767_225_600;
    const BODY: &[u8] = br#"{"id":"9f2c","event_type":"message.created","tenant_id":"t1","occurred_at":"2026-01-01T00:00:00Z","data":{"conversation_id":"c1","message_id":"m1"}}"#;
    /// HMAC-SHA256(SECRET, "1767225600." + BODY), computed independently (Python's `hmac`).
    const KNOWN_V1: &str = "bf4bdd6977914c6886a199a3fb36064ba815b60a7f9553116272beeac1ecc169";

    #[test]
    fn signing_matches_the_known_vector() {
        assert_eq!(sign(SECRET, T, BODY), format!("t={T},v1={KNOWN_V1}"));
    }

    #[test]
    fn the_known_vector_verifies_inside_the_window_only() {
        let header = format!("t={T},v1={KNOWN_V1}");
        assert_eq!(verify(SECRET, &header, BODY, T), Ok(()));
        assert_eq!(verify(SECRET, &header, BODY, T + 300), Ok(()));
        assert_eq!(verify(SECRET, &header, BODY, T - 300), Ok(()));
        assert_eq!(
            verify(SECRET, &header, BODY, T + 301),
            Err(SignatureError::Expired)
        );
        assert_eq!(
            verify(SECRET, &header, BODY, T - 301),
            Err(SignatureError::Expired)
        );
    }

    #[test]
    fn a_changed_body_secret_or_timestamp_does_not_verify() {
        let header = format!("t={T},v1={KNOWN_V1}");
        let mut body = BODY.to_vec();
        body[10] ^= 1;
        assert_eq!(
            verify(SECRET, &header, &body, T),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify(b"another secret of enough length!!", &header, BODY, T),
            Err(SignatureError::Mismatch)
        );
        let moved = format!("t={},v1={KNOWN_V1}", T + 1);
        assert_eq!(
            verify(SECRET, &moved, BODY, T),
            Err(SignatureError::Mismatch)
        );
    }

    #[test]
    fn any_of_several_v1_entries_may_match_during_a_rotation() {
        let old = v1_entry(b"the old secret, at least 32 chars", T, BODY);
        let header = format!("t={T},{old},v1={KNOWN_V1}");
        assert_eq!(verify(SECRET, &header, BODY, T), Ok(()));
        assert_eq!(
            verify(b"the old secret, at least 32 chars", &header, BODY, T),
            Ok(())
        );
    }

    #[test]
    fn malformed_headers_are_refused() {
        for header in [
            "",
            "v1=00",
            &format!("t={T}"),
            &format!("t=soon,v1={KNOWN_V1}"),
            &format!("t={T},v1=zz"),
            "garbage",
        ] {
            assert_eq!(
                verify(SECRET, header, BODY, T),
                Err(SignatureError::Malformed),
                "{header:?}"
            );
        }
    }
}
