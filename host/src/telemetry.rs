//! Logging and traces: `tracing` to stderr (stdout belongs to the admin CLI's JSON), filtered by
//! `TESSERA_LOG`, as text or JSON (`TESSERA_LOG_FORMAT=json`); `tessera serve` writes its lines
//! from a thread of their own in batches (a request never waits for a `write` to stderr unless
//! 128,000 lines are waiting; none is dropped); and, for `tessera serve` when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set and
//! `OTEL_SDK_DISABLED` is not `true`, the same spans exported as OpenTelemetry traces over
//! OTLP/HTTP (protobuf) in batches, with the W3C trace context propagated (see
//! `tessera_http::trace_context`). The exporter follows the OTel environment conventions
//! (`OTEL_SERVICE_NAME`, default `tessera`; `OTEL_RESOURCE_ATTRIBUTES`;
//! `OTEL_EXPORTER_OTLP_HEADERS`, `…_TIMEOUT`, `…_COMPRESSION`; `OTEL_BSP_*` for batching).

use std::io::IsTerminal as _;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use tracing_subscriber::fmt::writer::BoxMakeWriter;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer};

mod sampling;

use sampling::SampledTraces;

/// What must outlive the process's work: the trace exporter and the log writer's thread, both
/// flushed by [`Telemetry::shutdown`].
#[must_use]
pub struct Telemetry {
    traces: Option<SdkTracerProvider>,
    log_writer: tracing_appender::non_blocking::WorkerGuard,
}

impl Telemetry {
    /// Whether spans are exported.
    pub fn exports_traces(&self) -> bool {
        self.traces.is_some()
    }

    /// Exports the spans still buffered and stops the exporter, then writes the last log
    /// lines; nothing is logged after it.
    pub fn shutdown(self) {
        if let Some(provider) = self.traces
            && let Err(error) = provider.shutdown()
        {
            tracing::warn!(error = %error, "flushing the last traces failed");
        }
        drop(self.log_writer);
    }
}

/// Installs the global subscriber (logs only); `default_filter` applies when `TESSERA_LOG` is
/// unset.
pub fn init(default_filter: &str) {
    install(default_filter, None, BoxMakeWriter::new(std::io::stderr));
}

/// [`init`], plus OpenTelemetry traces when the environment asks for them; the exporter sends
/// on `runtime`.
pub fn init_serving(default_filter: &str, runtime: tokio::runtime::Handle) -> Telemetry {
    let traces = match trace_provider(runtime) {
        Ok(provider) => provider,
        Err(error) => {
            eprintln!("warning: OpenTelemetry traces are off: {error:#}");
            None
        }
    };
    // Batches of lines, one `write` each, from the `tessera-log` thread; a full queue makes
    // the logging thread wait (lossy: false) rather than drop lines.
    let (writer, log_writer) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .lossy(false)
        .thread_name("tessera-log")
        .finish(std::io::BufWriter::new(std::io::stderr()));
    install(default_filter, traces.clone(), BoxMakeWriter::new(writer));
    if traces.is_some() {
        tracing::info!("exporting traces over OTLP/HTTP");
    }
    Telemetry { traces, log_writer }
}

fn install(default_filter: &str, traces: Option<SdkTracerProvider>, writer: BoxMakeWriter) {
    // Read as every setting is (flag, environment, config file); a malformed value falls back
    // to the default, since nothing can log the error yet.
    let (filter, directives) = crate::config::env_var::<String>("TESSERA_LOG")
        .ok()
        .flatten()
        .and_then(|directives| Some((EnvFilter::try_new(&directives).ok()?, directives)))
        .unwrap_or_else(|| (EnvFilter::new(default_filter), default_filter.to_owned()));
    // Exactly `info`: every info callsite is enabled and nothing below, as traces want.
    let logs_exactly_at_info = directives.trim().eq_ignore_ascii_case("info");
    let json = crate::config::env_var::<String>("TESSERA_LOG_FORMAT")
        .ok()
        .flatten()
        .is_some_and(|format| format.eq_ignore_ascii_case("json"));
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(writer)
        .with_ansi(std::io::stderr().is_terminal());
    let logs = if json {
        logs.json().boxed()
    } else {
        logs.boxed()
    };
    // Each its own filter: `TESSERA_LOG` chooses the log lines, and traces hold the
    // info-level spans (requests, engine calls, outbound requests, engine work) whatever it is.
    let traces = traces.map(|provider| {
        let tracer = provider.tracer("tessera");
        // What a span costs is paid on every poll of an instrumented future: no busy/idle
        // timing, no OpenTelemetry context activation on entry (the crates read a span's
        // context from the span itself), and no source location, thread or target attributes.
        let layer = tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_tracked_inactivity(false)
            .with_context_activation(false)
            .with_location(false)
            .with_threads(false)
            .with_target(false);
        if logs_exactly_at_info {
            SampledTraces::at_info(layer).boxed()
        } else {
            SampledTraces::new(layer)
                .with_filter(tracing_subscriber::filter::LevelFilter::INFO)
                .boxed()
        }
    });
    // A second init (tests) keeps the first subscriber.
    let _ = tracing_subscriber::registry()
        .with(logs.with_filter(filter))
        .with(traces)
        .try_init();
}

/// The OTLP/HTTP trace pipeline, when `OTEL_EXPORTER_OTLP_ENDPOINT` or
/// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set (and `OTEL_SDK_DISABLED` is not `true`); it
/// also installs the W3C trace-context propagator.
fn trace_provider(runtime: tokio::runtime::Handle) -> anyhow::Result<Option<SdkTracerProvider>> {
    let configured = [
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    ]
    .iter()
    .any(|name| std::env::var(name).is_ok_and(|value| !value.trim().is_empty()));
    let disabled =
        std::env::var("OTEL_SDK_DISABLED").is_ok_and(|value| value.eq_ignore_ascii_case("true"));
    if !configured || disabled {
        return Ok(None);
    }
    let http = reqwest::Client::builder()
        .build()
        .map_err(|error| anyhow::anyhow!("building the trace exporter's HTTP client: {error}"))?;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_http_client(ExportClient { http, runtime })
        .build()
        .map_err(|error| anyhow::anyhow!("building the OTLP trace exporter: {error}"))?;
    let mut resource = opentelemetry_sdk::Resource::builder();
    if std::env::var("OTEL_SERVICE_NAME").is_err() {
        resource = resource.with_service_name("tessera");
    }
    // The sampler of `OTEL_TRACES_SAMPLER` decides in `SampledTraces`, before any span of a
    // trace is built; what reaches the SDK is sampled.
    let provider = SdkTracerProvider::builder()
        .with_sampler(Sampler::AlwaysOn)
        .with_batch_exporter(exporter)
        .with_resource(resource.build())
        .build();
    opentelemetry::global::set_text_map_propagator(
        opentelemetry_sdk::propagation::TraceContextPropagator::new(),
    );
    Ok(Some(provider))
}

/// The exporter's HTTP client: the host's reqwest, its requests run on the host's runtime (the
/// batch processor exports from a thread of its own).
#[derive(Debug)]
struct ExportClient {
    http: reqwest::Client,
    runtime: tokio::runtime::Handle,
}

#[async_trait::async_trait]
impl HttpClient for ExportClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let (parts, body) = request.into_parts();
        let request = self
            .http
            .request(parts.method, parts.uri.to_string())
            .headers(parts.headers)
            .body(body);
        let (status, headers, body) = self
            .runtime
            .spawn(async move {
                let response = request.send().await?;
                let status = response.status();
                let headers = response.headers().clone();
                let body = response.bytes().await?;
                Ok::<_, reqwest::Error>((status, headers, body))
            })
            .await??;
        let mut response = Response::new(body);
        *response.status_mut() = status;
        *response.headers_mut() = headers;
        Ok(response)
    }
}
