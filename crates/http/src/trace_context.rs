//! W3C trace context (`traceparent`, `tracestate`) across process boundaries, for the
//! OpenTelemetry traces the binary exports when `OTEL_EXPORTER_OTLP_ENDPOINT` is set: a
//! request's span continues the caller's trace, and an outbound request carries the current
//! span's. Through the global propagator only: with tracing off (no propagator installed, no
//! OpenTelemetry layer) both are no-ops that cost a lookup.

use axum::http::HeaderMap;
use opentelemetry::trace::TraceContextExt as _;
use opentelemetry_http::{HeaderExtractor, HeaderInjector};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// Makes `span` a child of the trace `headers` carry, if they carry a valid one.
pub fn continue_remote_trace(span: &tracing::Span, headers: &HeaderMap) {
    let parent = opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.extract(&HeaderExtractor(headers))
    });
    if parent.span().span_context().is_valid() {
        // Fails only when the span is disabled or already started its OpenTelemetry twin.
        let _ = span.set_parent(parent);
    }
}

/// Writes the current span's trace context into `headers` (replacing any sent before).
pub fn inject_current(headers: &mut HeaderMap) {
    let context = tracing::Span::current().context();
    if !context.span().span_context().is_valid() {
        return;
    }
    opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.inject_context(&context, &mut HeaderInjector(headers));
    });
}

/// The current span's `traceparent`, to keep with work that runs later; `None` when tracing is
/// off or nothing is traced.
pub fn current_traceparent() -> Option<String> {
    let mut headers = HeaderMap::new();
    inject_current(&mut headers);
    headers
        .get("traceparent")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
}

/// Makes `span` a child of the trace a stored `traceparent` names (see
/// [`current_traceparent`]).
pub fn continue_stored_trace(span: &tracing::Span, traceparent: &str) {
    let Ok(value) = axum::http::HeaderValue::from_str(traceparent) else {
        return;
    };
    let mut headers = HeaderMap::new();
    headers.insert("traceparent", value);
    continue_remote_trace(span, &headers);
}
