//! W3C trace context (`traceparent`, `tracestate`) across process boundaries, for the
//! OpenTelemetry traces the binary exports when `OTEL_EXPORTER_OTLP_ENDPOINT` is set: a
//! request's span continues the caller's trace, and an outbound request carries the current
//! span's. Through the global propagator only: with tracing off (no propagator installed, no
//! OpenTelemetry layer) both are no-ops that cost a lookup.
//!
//! Sampling is decided once per trace, where this process's part of it starts (the host's
//! sampling layer, `host/src/telemetry/sampling.rs`): a span this module starts from a remote or stored
//! trace hands that trace to the layer through [`take_root_parent`] while it is created. A
//! trace left out is still passed on, with its id and the "not sampled" flag, so the callers
//! and work after it agree (see [`UnsampledTrace`]).

use std::cell::RefCell;

use axum::http::{HeaderMap, HeaderName};
use opentelemetry::Context;
use opentelemetry::trace::{SpanContext, TraceContextExt as _};
use opentelemetry_http::{HeaderExtractor, HeaderInjector};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

thread_local! {
    /// The trace the span being created on this thread continues, set only while
    /// [`span_continuing`] makes it.
    static ROOT_PARENT: RefCell<Option<Context>> = const { RefCell::new(None) };
}

/// The remote or stored trace that the span being created continues, if it is one this module
/// starts: for the sampling layer, which decides at such spans as at roots. Taken once.
pub fn take_root_parent() -> Option<Context> {
    ROOT_PARENT.with(|parent| parent.borrow_mut().take())
}

/// How the sampling layer answers for spans of a trace it left out: given the subscriber and a
/// span, the trace's context (its id, a span id, not sampled), found on the span's root.
/// Reached through `Dispatch::downcast_ref`, as `tracing-opentelemetry`'s own context is.
pub struct UnsampledTrace(pub fn(&tracing::Dispatch, &tracing::span::Id) -> Option<SpanContext>);

/// The span `make` creates, continuing `parent` when that is a valid trace: the sampling layer
/// decides for the span as for a root with that parent, and OpenTelemetry makes it a child.
fn span_continuing(parent: Context, make: impl FnOnce() -> tracing::Span) -> tracing::Span {
    if !parent.span().span_context().is_valid() {
        return make();
    }
    ROOT_PARENT.with(|slot| *slot.borrow_mut() = Some(parent.clone()));
    let span = make();
    // Not taken when nothing records spans (tracing off, or the span below the filter).
    take_root_parent();
    // Fails only when the span is disabled or left out by the sampler.
    let _ = span.set_parent(parent);
    span
}

/// Sets an attribute on `span`'s OpenTelemetry span only (a no-op without tracing or when its
/// trace is left out). A value that only traces need goes here rather than into a `tracing`
/// field: recording a field after the span is made has the JSON log layer parse and rewrite the
/// span's formatted fields (5,600 instructions per engine call, BENCHMARKS.md).
pub fn set_attribute(span: &tracing::Span, key: &'static str, value: &'static str) {
    span.set_attribute(key, value);
}

/// The W3C header naming the caller's trace; without it there is nothing to continue.
static TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");

/// The span `make` creates, continuing the trace `headers` carry, if they carry a valid one.
pub fn span_continuing_remote(
    headers: &HeaderMap,
    make: impl FnOnce() -> tracing::Span,
) -> tracing::Span {
    // Most requests carry no trace: a look-up by a prepared name, not the propagator's
    // parsing of header names.
    if !headers.contains_key(&TRACEPARENT) {
        return make();
    }
    let parent = opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.extract(&HeaderExtractor(headers))
    });
    span_continuing(parent, make)
}

/// The span `make` creates, continuing the trace a stored `traceparent` names (see
/// [`current_traceparent`]).
pub fn span_continuing_stored(
    traceparent: Option<&str>,
    make: impl FnOnce() -> tracing::Span,
) -> tracing::Span {
    let Some(value) = traceparent.and_then(|value| axum::http::HeaderValue::from_str(value).ok())
    else {
        return make();
    };
    let mut headers = HeaderMap::new();
    headers.insert("traceparent", value);
    span_continuing_remote(&headers, make)
}

/// The trace context of the current span: its OpenTelemetry span's when it is sampled, else
/// the context of the trace the sampler left out (not sampled).
fn current_context() -> Option<Context> {
    let span = tracing::Span::current();
    let context = span.context();
    if context.span().span_context().is_valid() {
        return Some(context);
    }
    let mut unsampled = None;
    span.with_subscriber(|(id, dispatch)| {
        if let Some(lookup) = dispatch.downcast_ref::<UnsampledTrace>() {
            unsampled = (lookup.0)(dispatch, id);
        }
    });
    unsampled.map(|span_context| Context::new().with_remote_span_context(span_context))
}

/// Writes the current span's trace context into `headers` (replacing any sent before).
pub fn inject_current(headers: &mut HeaderMap) {
    let Some(context) = current_context() else {
        return;
    };
    opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.inject_context(&context, &mut HeaderInjector(headers));
    });
}

/// Whether a stored or received `traceparent` (`00-<trace id>-<span id>-<flags>`) names a
/// sampled trace: its flags' lowest bit. A malformed value is not sampled.
///
/// Work that gathers several traces in one run (a pack of deliveries) continues a sampled one
/// when it holds any: the traces left out are recorded nowhere, so they need not split it.
pub fn is_sampled(traceparent: &str) -> bool {
    let Some(flags) = traceparent.rsplit('-').next() else {
        return false;
    };
    flags.len() == 2 && u8::from_str_radix(flags, 16).is_ok_and(|flags| flags & 1 == 1)
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

#[cfg(test)]
mod tests {
    use super::is_sampled;

    #[test]
    fn the_sampled_flag_is_the_lowest_bit_of_the_flags() {
        let trace = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331";
        assert!(is_sampled(&format!("{trace}-01")));
        assert!(is_sampled(&format!("{trace}-03")));
        assert!(!is_sampled(&format!("{trace}-00")));
        assert!(!is_sampled(&format!("{trace}-02")));
        assert!(!is_sampled(&format!("{trace}-1")));
        assert!(!is_sampled(&format!("{trace}-zz")));
        assert!(!is_sampled(""));
    }
}
