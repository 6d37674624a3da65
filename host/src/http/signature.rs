//! `X-Service-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`:
//! the signature of internal calls (CONTRACT §5) and of webhook deliveries, from the
//! `tessera-signature` crate (which receivers can use too), and the extractor that checks it on
//! internal endpoints.

pub use tessera_signature::{
    SIGNATURE_HEADER, SignatureError, TOLERANCE_SECONDS, sign, v1_entry, verify,
};

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
