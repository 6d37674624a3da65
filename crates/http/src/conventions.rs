//! The conventions every route gets as one layer: the correlation id (kept when well-formed,
//! else a new UUID; on every response and in every log line of the request), JSON bodies for
//! errors that no handler wrote (axum's 405, the body-limit 413, a caught panic), the body
//! limit, and the fallback 404.

use std::any::Any;
use std::time::Instant;

use axum::Json;
use axum::extract::{FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderName, HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tracing::Instrument as _;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use super::error::{ApiError, ErrorBody, default_message};

pub static X_CORRELATION_ID: HeaderName = HeaderName::from_static("x-correlation-id");

/// The correlation id of the current request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorrelationId(pub String);

impl<S: Send + Sync> FromRequestParts<S> for CorrelationId {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<CorrelationId>()
            .cloned()
            .ok_or_else(|| ApiError::Internal(anyhow::anyhow!("the conventions layer is missing")))
    }
}

/// A correlation id a client may choose: 1 to 128 characters of letters, digits, `-`, `_`,
/// `.` and `:`. Anything else is replaced so logs and headers stay clean.
pub fn is_well_formed_correlation_id(candidate: &str) -> bool {
    (1..=128).contains(&candidate.len())
        && candidate
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b':'))
}

/// The outermost middleware: correlation id, request span and completion log line, and JSON
/// error bodies for responses that have none.
pub async fn request_conventions(mut request: Request, next: Next) -> Response {
    let correlation_id = request
        .headers()
        .get(&X_CORRELATION_ID)
        .and_then(|value| value.to_str().ok())
        .filter(|value| is_well_formed_correlation_id(value))
        .map(str::to_owned)
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    request
        .extensions_mut()
        .insert(CorrelationId(correlation_id.clone()));

    let client = request
        .extensions()
        .get::<crate::client_address::ClientAddress>()
        .map(|crate::client_address::ClientAddress(address)| *address);
    let span = crate::trace_context::span_continuing_remote(request.headers(), || {
        tracing::info_span!(
            "request",
            correlation_id = %correlation_id,
            method = %request.method(),
            path = %request.uri().path(),
            client = client.map(tracing::field::display),
        )
    });
    let started = Instant::now();
    let response = next.run(request).instrument(span.clone()).await;
    let mut response = ensure_json_error_body(response);
    response.headers_mut().insert(
        X_CORRELATION_ID.clone(),
        HeaderValue::from_str(&correlation_id)
            .expect("a well-formed correlation id is a valid header"),
    );
    // The status on the trace's span, set on its OpenTelemetry data directly: recorded as a
    // `tracing` field it would also make the JSON log layer parse and rewrite the span's
    // fields (18,000 instructions a request, BENCHMARKS.md), and the completion line below
    // already logs it. A no-op without tracing or when the trace is left out.
    span.set_attribute("status", i64::from(response.status().as_u16()));
    span.in_scope(|| {
        tracing::info!(
            status = response.status().as_u16(),
            elapsed_ms = started.elapsed().as_secs_f64() * 1000.0,
            "request completed"
        );
    });
    response
}

/// Marks a response whose body is passed on as written (a `wasi:http` component's own answer,
/// an HTML error page say): [`ensure_json_error_body`] leaves it alone.
#[derive(Debug, Clone, Copy)]
pub struct VerbatimBody;

/// Gives an error response without a JSON body the `{message}` body of its status, keeping its
/// other headers (`Allow`, `Retry-After`).
fn ensure_json_error_body(response: Response) -> Response {
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error())
        || response.extensions().get::<VerbatimBody>().is_some()
    {
        return response;
    }
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/json"));
    if is_json {
        return response;
    }
    let (mut parts, _body) = response.into_parts();
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.remove(header::CONTENT_TYPE);
    let replacement = Json(ErrorBody {
        message: default_message(status).to_owned(),
    })
    .into_response();
    let (replacement_parts, body) = replacement.into_parts();
    parts.headers.extend(replacement_parts.headers);
    Response::from_parts(parts, body)
}

/// The 404 for every path no router claims.
pub async fn fallback() -> ApiError {
    ApiError::NotFound("The requested resource was not found.".into())
}

/// A panic in a handler: logged (inside the request span, so with its correlation id) and
/// answered with an opaque 500; the server keeps serving.
pub fn panic_response(panic: Box<dyn Any + Send + 'static>) -> Response {
    let detail = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("(non-string panic payload)");
    tracing::error!(panic = detail, "a handler panicked");
    ApiError::Internal(anyhow::anyhow!("handler panicked: {detail}")).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn correlation_ids_are_checked_for_shape() {
        assert!(is_well_formed_correlation_id(
            "3f2c8a4e-0b7d-4a51-9d0c-2a6f8d1e7b90"
        ));
        assert!(is_well_formed_correlation_id("trace:abc.123_x"));
        assert!(!is_well_formed_correlation_id(""));
        assert!(!is_well_formed_correlation_id("has space"));
        assert!(!is_well_formed_correlation_id("line\nbreak"));
        assert!(!is_well_formed_correlation_id(&"a".repeat(129)));
    }
}
