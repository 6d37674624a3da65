//! Tessera's `X-Service-Signature` header: `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, …)>`,
//! in two forms (CONTRACT §5):
//!
//! - **internal calls** between services sign `"<t>.<METHOD>.<path>.<raw body>"`
//!   ([`sign_request`] / [`verify_request`]): `<METHOD>` upper case, `<path>` the request target
//!   as sent from its first `/`, with the query string when there is one. A signature made for
//!   one operation (method and path) is never accepted for another, so a captured provision call
//!   replayed against a deprovision path, or one tenant's status call against another tenant's,
//!   does not verify.
//! - **webhook deliveries** sign `"<t>.<raw body>"` ([`sign`] / [`verify`], also named
//!   [`sign_body`] / [`verify_body`]): a delivery has one destination. During a secret rotation
//!   a delivery carries one `v1=` entry per secret ([`v1_entry`]); a receiver accepts the
//!   request when any entry matches.
//!
//! Webhook deliveries also carry the [Standard Webhooks](https://www.standardwebhooks.com)
//! headers (CONTRACT §10): `webhook-signature` holds one [`standard_v1_entry`] per signing
//! secret, `v1,<base64 HMAC-SHA256(secret, "<webhook-id>.<webhook-timestamp>.<raw body>")>`,
//! separated by spaces, the key being the secret's UTF-8 bytes.
//!
//! Both forms refuse a `t` more than [`TOLERANCE_SECONDS`] from now and compare in constant
//! time. For webhook receivers: verify the raw body exactly as received, before parsing it.
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
//!
//! An internal call, bound to its method and path:
//!
//! ```
//! use tessera_signature::{SignatureError, sign_request, verify_request};
//! let secret = b"the service secret";
//! let body = br#"{"tenant_id":"0b6a","user_id":"5f1e"}"#;
//! let now = 1_767_225_600;
//! let path = "/core/api/internal/orchestration/provision/user";
//! let header = sign_request(secret, now, "POST", path, body);
//! assert_eq!(verify_request(secret, &header, "POST", path, body, now), Ok(()));
//! // The same header and body on another operation do not verify.
//! assert_eq!(
//!     verify_request(
//!         secret,
//!         &header,
//!         "POST",
//!         "/core/api/internal/orchestration/deprovision/user",
//!         body,
//!         now
//!     ),
//!     Err(SignatureError::Mismatch)
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

/// What a signature covers after `"<t>."`.
#[derive(Clone, Copy)]
enum Signed<'a> {
    /// `<raw body>` (webhook deliveries).
    Body(&'a [u8]),
    /// `<METHOD>.<path>.<raw body>` (internal calls).
    Request {
        method: &'a str,
        path: &'a str,
        body: &'a [u8],
    },
}

fn mac(secret: &[u8], timestamp: i64, signed: Signed<'_>) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes keys of any length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    match signed {
        Signed::Body(body) => mac.update(body),
        Signed::Request { method, path, body } => {
            mac.update(method.to_ascii_uppercase().as_bytes());
            mac.update(b".");
            mac.update(path.as_bytes());
            mac.update(b".");
            mac.update(body);
        }
    }
    mac
}

fn entry(secret: &[u8], timestamp: i64, signed: Signed<'_>) -> String {
    format!(
        "v1={}",
        hex::encode(mac(secret, timestamp, signed).finalize().into_bytes())
    )
}

/// The header value of a webhook delivery: `body` signed with `secret` at `timestamp` (unix
/// seconds) over `"<t>.<raw body>"`.
pub fn sign(secret: &[u8], timestamp: i64, body: &[u8]) -> String {
    format!("t={timestamp},{}", v1_entry(secret, timestamp, body))
}

/// The same as [`sign`]: the body form, for webhook deliveries.
pub fn sign_body(secret: &[u8], timestamp: i64, body: &[u8]) -> String {
    sign(secret, timestamp, body)
}

/// One `v1=<hex>` entry of the body form, for delivery headers that carry several (secret
/// rotation).
pub fn v1_entry(secret: &[u8], timestamp: i64, body: &[u8]) -> String {
    entry(secret, timestamp, Signed::Body(body))
}

/// One `webhook-signature` entry of Standard Webhooks: `v1,<base64 HMAC-SHA256(secret,
/// "<id>.<timestamp>.<raw body>")>`, `id` being the `webhook-id` header and `timestamp` the
/// `webhook-timestamp` one (unix seconds). A delivery signed with several secrets (a rotation)
/// carries one entry per secret, separated by spaces.
pub fn standard_v1_entry(secret: &[u8], id: &str, timestamp: i64, body: &[u8]) -> String {
    use base64::Engine as _;
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes a key of any length");
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
    )
}

/// The header value of an internal call: `"<t>.<METHOD>.<path>.<raw body>"` signed with
/// `secret` at `timestamp` (unix seconds). `method` is upper-cased; `path` is the request target
/// as sent, from its first `/`, with its query string when there is one
/// (`/core/api/internal/orchestration/provision/tenant`, `/x/y?z=1`).
pub fn sign_request(
    secret: &[u8],
    timestamp: i64,
    method: &str,
    path: &str,
    body: &[u8],
) -> String {
    format!(
        "t={timestamp},{}",
        entry(secret, timestamp, Signed::Request { method, path, body })
    )
}

/// Why a signature was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignatureError {
    /// No `t=`, no `v1=`, or a value that is not a number / hex.
    Malformed,
    /// `t` is more than [`TOLERANCE_SECONDS`] away from now.
    Expired,
    /// No `v1=` entry matches what was signed (the body, or the method, path and body) and the
    /// secret.
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

/// Checks a webhook delivery's header value against the raw `body` at `now` (unix seconds):
/// the timestamp within [`TOLERANCE_SECONDS`], and any `v1=` entry equal to the MAC of
/// `"<t>.<raw body>"`, compared in constant time.
pub fn verify(secret: &[u8], header: &str, body: &[u8], now: i64) -> Result<(), SignatureError> {
    check(secret, header, Signed::Body(body), now)
}

/// The same as [`verify`]: the body form, for webhook deliveries.
pub fn verify_body(
    secret: &[u8],
    header: &str,
    body: &[u8],
    now: i64,
) -> Result<(), SignatureError> {
    verify(secret, header, body, now)
}

/// Checks an internal call's header value at `now` (unix seconds) against its `method`, its
/// `path` (the request target as received, from its first `/`, with the query string when there
/// is one) and its raw `body`: the timestamp within [`TOLERANCE_SECONDS`], and any `v1=` entry
/// equal to the MAC of `"<t>.<METHOD>.<path>.<raw body>"`, compared in constant time.
pub fn verify_request(
    secret: &[u8],
    header: &str,
    method: &str,
    path: &str,
    body: &[u8],
    now: i64,
) -> Result<(), SignatureError> {
    check(secret, header, Signed::Request { method, path, body }, now)
}

fn check(secret: &[u8], header: &str, signed: Signed<'_>, now: i64) -> Result<(), SignatureError> {
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
    let expected = mac(secret, timestamp, signed).finalize().into_bytes();
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

    const PATH: &str = "/core/api/internal/orchestration/provision/tenant?dry=1";
    const REQUEST_BODY: &[u8] = br#"{"tenant_id":"t1"}"#;
    /// HMAC-SHA256(SECRET, "1767225600.POST./core/api/internal/orchestration/provision/tenant?dry=1.{\"tenant_id\":\"t1\"}"),
    /// computed independently (Python's `hmac`).
    const KNOWN_REQUEST_V1: &str =
        "44f136e62996720cf72553c74b19900737e489702c9bd0f69c98b312a476cafd";

    #[test]
    fn request_signing_matches_the_known_vector() {
        assert_eq!(
            sign_request(SECRET, T, "POST", PATH, REQUEST_BODY),
            format!("t={T},v1={KNOWN_REQUEST_V1}")
        );
        // The method is signed upper case whatever the caller wrote.
        assert_eq!(
            sign_request(SECRET, T, "post", PATH, REQUEST_BODY),
            format!("t={T},v1={KNOWN_REQUEST_V1}")
        );
        // An empty body: "1.GET./…/t1/status." (Python's `hmac`).
        assert_eq!(
            sign_request(
                b"secret",
                1,
                "GET",
                "/core/api/internal/orchestration/provision/tenant/t1/status",
                b""
            ),
            "t=1,v1=cb593ae02d706a9d7bdd99e560b3c74b73c61817d5ea750ab528359f0e7b498b"
        );
    }

    #[test]
    fn a_request_signature_is_bound_to_its_method_path_query_and_body() {
        let header = format!("t={T},v1={KNOWN_REQUEST_V1}");
        assert_eq!(
            verify_request(SECRET, &header, "POST", PATH, REQUEST_BODY, T + 300),
            Ok(())
        );
        assert_eq!(
            verify_request(SECRET, &header, "post", PATH, REQUEST_BODY, T),
            Ok(())
        );
        for (method, path, body) in [
            ("PUT", PATH, REQUEST_BODY),
            (
                "POST",
                "/core/api/internal/orchestration/deprovision/tenant?dry=1",
                REQUEST_BODY,
            ),
            (
                "POST",
                "/core/api/internal/orchestration/provision/tenant",
                REQUEST_BODY,
            ),
            (
                "POST",
                "/core/api/internal/orchestration/provision/tenant?dry=2",
                REQUEST_BODY,
            ),
            ("POST", PATH, br#"{"tenant_id":"t2"}"#),
        ] {
            assert_eq!(
                verify_request(SECRET, &header, method, path, body, T),
                Err(SignatureError::Mismatch),
                "{method} {path}"
            );
        }
        assert_eq!(
            verify_request(SECRET, &header, "POST", PATH, REQUEST_BODY, T + 301),
            Err(SignatureError::Expired)
        );
        assert_eq!(
            verify_request(SECRET, "t=1", "POST", PATH, REQUEST_BODY, 1),
            Err(SignatureError::Malformed)
        );
    }

    #[test]
    fn the_two_forms_never_verify_each_other() {
        let body_form = sign_body(SECRET, T, REQUEST_BODY);
        assert_eq!(verify_body(SECRET, &body_form, REQUEST_BODY, T), Ok(()));
        assert_eq!(
            verify_request(SECRET, &body_form, "POST", PATH, REQUEST_BODY, T),
            Err(SignatureError::Mismatch)
        );
        let request_form = sign_request(SECRET, T, "POST", PATH, REQUEST_BODY);
        assert_eq!(
            verify(SECRET, &request_form, REQUEST_BODY, T),
            Err(SignatureError::Mismatch)
        );
    }

    #[test]
    fn a_standard_webhooks_entry_matches_an_independent_computation() {
        // base64(HMAC-SHA256(SECRET, "msg_9f2c.1767225600." + BODY)), Python's `hmac`.
        assert_eq!(
            standard_v1_entry(SECRET, "msg_9f2c", T, BODY),
            "v1,jUDJ+YsAf10GhiP+dpWi2WQqpCMRHcYdfsNqsHY9S/E="
        );
        assert_ne!(
            standard_v1_entry(SECRET, "msg_9f2d", T, BODY),
            standard_v1_entry(SECRET, "msg_9f2c", T, BODY),
            "the id is signed"
        );
    }
}
