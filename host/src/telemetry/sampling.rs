//! Head sampling before OpenTelemetry: [`SampledTraces`] wraps the OpenTelemetry layer and
//! decides, where a trace starts in this process, whether it is sampled (the sampler
//! `OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG` configure, the OTel conventions'
//! default `parentbased_always_on`); the spans of a trace left out never reach the
//! OpenTelemetry layer, so they cost what a plain `tracing` span costs, not the builder,
//! attributes and timestamps the layer makes for every span it sees.
//!
//! - A root span (no parent span), or one `tessera_http::trace_context` starts from a remote or
//!   stored trace (`take_root_parent`): the sampler decides, with that trace as its parent.
//! - Any other span: as its parent span was decided.
//! - A trace left out keeps a context on its root span (its trace id, a span id, the "not
//!   sampled" flag), which `tessera_http::trace_context` passes on to outbound requests and
//!   queued work through [`UnsampledTrace`], so what follows honours the decision.
//!
//! Traces hold the info-level spans whatever the logs' filter is. When the logs' filter is
//! exactly `info` (the default), the layer is a plain layer that keeps that level itself
//! ([`SampledTraces::at_info`]): no per-layer filter, whose look-up of the span on every entry
//! and exit of every poll was most of what an unsampled request cost (BENCHMARKS.md, issue
//! 28). Under any other filter it sits behind a per-layer `LevelFilter::INFO`
//! ([`SampledTraces::new`]): a plain layer cannot see a span that no per-layer filter enables
//! (`TESSERA_LOG=warn`), nor ignore debug spans without hiding them from the logs.

use std::any::TypeId;

use opentelemetry::Context;
use opentelemetry::trace::{
    SpanContext, SpanKind, TraceContextExt as _, TraceFlags, TraceId, TraceState,
};
use opentelemetry_sdk::trace::{Config, IdGenerator, SamplingDecision, ShouldSample};
use tessera_http::trace_context::{UnsampledTrace, take_root_parent};
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Dispatch, Event, Level, Metadata, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::Context as LayerContext;
use tracing_subscriber::registry::{LookupSpan, SpanRef};

/// On a span whose trace is sampled: the wrapped layer sees it.
struct Sampled;

/// On the root span of a trace left out: the context passed on in its stead.
struct Unsampled(SpanContext);

/// The wrapped layer, seeing only the spans (and their events) of sampled traces, and no span
/// entries or exits: it must not need them (`tracing-opentelemetry` without context activation
/// and inactivity tracking, as `telemetry.rs` builds it).
pub struct SampledTraces<L> {
    inner: L,
    sampler: Box<dyn ShouldSample>,
    ids: Box<dyn IdGenerator>,
    unsampled: UnsampledTrace,
    levels: Levels,
}

/// Who keeps the traces to info-level spans and above.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Levels {
    /// A per-layer filter around the layer.
    FilteredOutside,
    /// The layer: callsites below info are never enabled by it. Right only when nothing else
    /// in the subscriber enables them either, and something enables every info callsite.
    Itself,
}

impl<L> SampledTraces<L> {
    /// `inner` behind the sampler of the OTel environment variables, for use behind a
    /// per-layer `LevelFilter::INFO`.
    pub fn new(inner: L) -> Self {
        Self::with_levels(inner, Levels::FilteredOutside)
    }

    /// `inner` behind the sampler, as a plain layer that keeps to info-level callsites
    /// itself: only in a subscriber whose logs' filter is exactly `info`.
    pub fn at_info(inner: L) -> Self {
        Self::with_levels(inner, Levels::Itself)
    }

    fn with_levels(inner: L, levels: Levels) -> Self {
        let Config {
            sampler,
            id_generator,
            ..
        } = Config::default();
        Self {
            inner,
            sampler,
            ids: id_generator,
            unsampled: UnsampledTrace(unsampled_context),
            levels,
        }
    }

    /// Whether the level of `metadata` is one this layer leaves out itself.
    fn below_its_level(&self, metadata: &Metadata<'_>) -> bool {
        self.levels == Levels::Itself && *metadata.level() > Level::INFO
    }

    /// The sampler's decision for a trace starting here, `parent` being the remote or stored
    /// trace it continues: `None` when sampled, else the context to pass on.
    fn decide(&self, parent: Option<&Context>, name: &str) -> Option<SpanContext> {
        let parent_span = parent.map(|parent| parent.span().span_context().clone());
        let trace_id = parent_span
            .as_ref()
            .map(SpanContext::trace_id)
            .filter(|trace_id| *trace_id != TraceId::INVALID)
            .unwrap_or_else(|| self.ids.new_trace_id());
        let result =
            self.sampler
                .should_sample(parent, trace_id, name, &SpanKind::Internal, &[], &[]);
        match result.decision {
            SamplingDecision::RecordAndSample => None,
            SamplingDecision::Drop | SamplingDecision::RecordOnly => Some(SpanContext::new(
                trace_id,
                self.ids.new_span_id(),
                TraceFlags::default(),
                false,
                parent_span.map_or_else(TraceState::default, |span| span.trace_state().clone()),
            )),
        }
    }
}

/// [`UnsampledTrace`]'s look-up: the context kept on the span's root, if its trace was left out.
fn unsampled_context(dispatch: &Dispatch, id: &Id) -> Option<SpanContext> {
    let registry = dispatch.downcast_ref::<tracing_subscriber::Registry>()?;
    let span = registry.span(id)?;
    span.scope().find_map(|span| {
        span.extensions()
            .get::<Unsampled>()
            .map(|kept| kept.0.clone())
    })
}

fn is_sampled<S>(span: Option<&SpanRef<'_, S>>) -> bool
where
    S: for<'lookup> LookupSpan<'lookup>,
{
    span.is_some_and(|span| span.extensions().get::<Sampled>().is_some())
}

/// Whether the span `id` belongs to a sampled trace.
fn is_sampled_span<S>(id: &Id, ctx: &LayerContext<'_, S>) -> bool
where
    S: Subscriber + for<'lookup> LookupSpan<'lookup>,
{
    is_sampled(ctx.span(id).as_ref())
}

impl<S, L> Layer<S> for SampledTraces<L>
where
    S: Subscriber + for<'lookup> LookupSpan<'lookup>,
    L: Layer<S>,
{
    fn on_register_dispatch(&self, subscriber: &Dispatch) {
        self.inner.on_register_dispatch(subscriber);
    }

    fn on_layer(&mut self, subscriber: &mut S) {
        self.inner.on_layer(subscriber);
    }

    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
        if self.below_its_level(metadata) {
            return Interest::never();
        }
        self.inner.register_callsite(metadata)
    }

    fn enabled(&self, metadata: &Metadata<'_>, ctx: LayerContext<'_, S>) -> bool {
        !self.below_its_level(metadata) && self.inner.enabled(metadata, ctx)
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        match self.levels {
            Levels::Itself => Some(LevelFilter::INFO),
            Levels::FilteredOutside => self.inner.max_level_hint(),
        }
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: LayerContext<'_, S>) {
        let name = attrs.metadata().name();
        let left_out = match take_root_parent() {
            Some(parent) => self.decide(Some(&parent), name).map(Unsampled),
            None => {
                let parent = match attrs.parent() {
                    Some(parent) => ctx.span(parent),
                    None if attrs.is_contextual() => ctx.lookup_current(),
                    None => None,
                };
                match parent {
                    Some(parent) if is_sampled(Some(&parent)) => None,
                    // Its root keeps the trace's context.
                    Some(_) => {
                        return;
                    }
                    None => self.decide(None, name).map(Unsampled),
                }
            }
        };
        {
            let span = ctx.span(id).expect("a new span is registered");
            let mut extensions = span.extensions_mut();
            match left_out {
                Some(unsampled) => {
                    extensions.insert(unsampled);
                    return;
                }
                None => extensions.insert(Sampled),
            }
        }
        self.inner.on_new_span(attrs, id, ctx);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: LayerContext<'_, S>) {
        if is_sampled_span(id, &ctx) {
            self.inner.on_record(id, values, ctx);
        }
    }

    fn on_follows_from(&self, id: &Id, follows: &Id, ctx: LayerContext<'_, S>) {
        if is_sampled_span(id, &ctx) {
            self.inner.on_follows_from(id, follows, ctx);
        }
    }

    // Traces carry warnings and errors as span events; info events are log lines (what one
    // says of a span, such as a request's status, is recorded on the span itself).
    fn on_event(&self, event: &Event<'_>, ctx: LayerContext<'_, S>) {
        if *event.metadata().level() > Level::WARN {
            return;
        }
        let sampled = match event.parent() {
            Some(parent) => is_sampled(ctx.span(parent).as_ref()),
            None if event.is_contextual() => is_sampled(ctx.lookup_current().as_ref()),
            None => false,
        };
        if sampled {
            self.inner.on_event(event, ctx);
        }
    }

    // Entries and exits happen on every poll of an instrumented future, and the binary's
    // OpenTelemetry layer needs neither (no context activation, no busy/idle timing; a span
    // ends when it closes), so they are not passed on, nor looked up.
    fn on_enter(&self, _id: &Id, _ctx: LayerContext<'_, S>) {}

    fn on_exit(&self, _id: &Id, _ctx: LayerContext<'_, S>) {}

    fn on_close(&self, id: Id, ctx: LayerContext<'_, S>) {
        if is_sampled_span(&id, &ctx) {
            self.inner.on_close(id, ctx);
        }
    }

    fn on_id_change(&self, old: &Id, new: &Id, ctx: LayerContext<'_, S>) {
        self.inner.on_id_change(old, new, ctx);
    }

    // SAFETY: each pointer is to a value of the type asked for, alive as long as `self`.
    unsafe fn downcast_raw(&self, id: TypeId) -> Option<*const ()> {
        if id == TypeId::of::<Self>() {
            Some(self as *const Self as *const ())
        } else if id == TypeId::of::<UnsampledTrace>() {
            Some(&self.unsampled as *const UnsampledTrace as *const ())
        } else {
            // SAFETY: forwarded as is.
            unsafe { self.inner.downcast_raw(id) }
        }
    }
}
