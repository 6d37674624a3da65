//! `X-Service-Signature` (CONTRACT §5), from the `tessera-signature` crate (which receivers can
//! use too): internal calls sign `"<t>.<METHOD>.<path>.<raw body>"` (path as sent, with its
//! query string), so a signature made for one operation is never accepted for another; webhook
//! deliveries sign `"<t>.<raw body>"`. Here: the extractor that checks internal calls, whose
//! bodies refuse unknown fields.

pub use tessera_signature::{
    SIGNATURE_HEADER, SignatureError, TOLERANCE_SECONDS, sign, sign_body, sign_request, v1_entry,
    verify, verify_body, verify_request,
};

/// A JSON body whose `X-Service-Signature` verified against the service secret, the request's
/// method and path (with its query string) and its raw body: the extractor of every internal
/// endpoint. Missing, malformed, wrong or stale signatures are 401; an empty body reads as `{}`;
/// give `T` `#[serde(deny_unknown_fields)]`: a field it does not know is then 422
/// (`errors.<field>: ["unknown"]`).
pub struct SignedJson<T>(pub T);

/// The body of internal calls that take none (`{}` or nothing at all).
#[derive(Debug, Clone, Copy, Default, serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EmptyBody {}

/// What checking an internal call needs from the app's state: the service secret and the
/// largest body to read. The app provides it with `FromRef`.
#[derive(Clone)]
pub struct InternalCalls {
    pub service_secret: crate::config::Secret,
    pub max_body_bytes: usize,
}

impl<S, T> axum::extract::FromRequest<S> for SignedJson<T>
where
    S: Send + Sync,
    InternalCalls: axum::extract::FromRef<S>,
    T: serde::de::DeserializeOwned,
{
    type Rejection = crate::ApiError;

    async fn from_request(
        request: axum::extract::Request,
        state: &S,
    ) -> Result<Self, Self::Rejection> {
        use crate::ApiError;
        let state = <InternalCalls as axum::extract::FromRef<S>>::from_ref(state);
        let header = request
            .headers()
            .get(SIGNATURE_HEADER)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned)
            .ok_or(ApiError::Unauthenticated)?;
        let method = request.method().as_str().to_owned();
        // The target as the client sent it: the router may have rewritten the URI of a nested
        // service, never the original one.
        let target = request
            .extensions()
            .get::<axum::extract::OriginalUri>()
            .map(|original| &original.0)
            .unwrap_or(request.uri())
            .path_and_query()
            .map(|target| target.as_str().to_owned())
            .unwrap_or_else(|| "/".to_owned());
        let body = axum::body::to_bytes(request.into_body(), state.max_body_bytes)
            .await
            .map_err(|_| ApiError::PayloadTooLarge)?;
        let now = chrono::Utc::now().timestamp();
        verify_request(
            state.service_secret.expose().as_bytes(),
            &header,
            &method,
            &target,
            &body,
            now,
        )
        .map_err(|error| {
            tracing::warn!(%error, method, "refused an internal call");
            ApiError::Unauthenticated
        })?;
        let body = if body.is_empty() {
            &b"{}"[..]
        } else {
            &body[..]
        };
        parse_body(body).map(SignedJson)
    }
}

/// The body as `T`: an unknown field is `errors.<field>: ["unknown"]`, anything else as every
/// JSON body of the API.
fn parse_body<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, crate::ApiError> {
    let deserializer = &mut serde_json::Deserializer::from_slice(body);
    match serde_path_to_error::deserialize::<_, T>(deserializer) {
        Ok(value) => Ok(value),
        Err(error) => {
            let message = error.inner().to_string();
            match message
                .strip_prefix("unknown field `")
                .and_then(|rest| rest.split('`').next())
            {
                Some(field) => Err(crate::ApiError::Validation(
                    crate::ValidationErrors::single(field, "unknown"),
                )),
                None => crate::extract::parse_json(body),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_signatures_round_trip_and_refuse_another_operation_age_and_garbage() {
        let secret = b"a-shared-secret";
        let path = "/notes/api/internal/notes/provision/user";
        let header = sign_request(secret, 1_700_000_000, "POST", path, b"{\"a\":1}");
        assert!(header.starts_with("t=1700000000,v1="));
        let check = |header: &str, method: &str, path: &str, body: &[u8], now: i64| {
            verify_request(secret, header, method, path, body, now)
        };
        assert_eq!(
            check(&header, "POST", path, b"{\"a\":1}", 1_700_000_100),
            Ok(())
        );
        assert_eq!(
            check(&header, "POST", path, b"{\"a\":2}", 1_700_000_100),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            check(
                &header,
                "POST",
                "/notes/api/internal/notes/deprovision/user",
                b"{\"a\":1}",
                1_700_000_100
            ),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            check(&header, "GET", path, b"{\"a\":1}", 1_700_000_100),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            check(&header, "POST", path, b"{\"a\":1}", 1_700_000_301),
            Err(SignatureError::Expired)
        );
        assert_eq!(
            verify_request(b"other", &header, "POST", path, b"{\"a\":1}", 1_700_000_100),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            check("v1=abcd", "POST", path, b"", 0),
            Err(SignatureError::Malformed)
        );
        let rotated = format!("{header},v1={}", "00".repeat(32));
        assert_eq!(
            check(&rotated, "POST", path, b"{\"a\":1}", 1_700_000_000),
            Ok(())
        );
    }

    #[test]
    fn a_known_vector_of_each_form() {
        // HMAC-SHA256("secret", "1.body"), computed independently with openssl.
        assert_eq!(
            sign_body(b"secret", 1, b"body"),
            "t=1,v1=842b24d9575dee4b6ec460b7e3af7d683501d84fe6279102340787c79d2e2bab"
        );
        // HMAC-SHA256("secret", "1.GET./core/api/internal/orchestration/provision/tenant/t1/status."),
        // computed independently with Python's `hmac`.
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

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Body {
        tenant_id: Option<String>,
    }

    #[test]
    fn unknown_fields_are_named_as_unknown() {
        match parse_body::<Body>(br#"{"tenant_id":"t","extra":1}"#) {
            Err(crate::ApiError::Validation(errors)) => {
                assert_eq!(errors, crate::ValidationErrors::single("extra", "unknown"))
            }
            other => panic!("expected a validation error, got {:?}", other.map(|_| ())),
        }
        assert!(parse_body::<EmptyBody>(b"{}").is_ok());
        assert!(parse_body::<EmptyBody>(br#"{"x":1}"#).is_err());
    }
}
