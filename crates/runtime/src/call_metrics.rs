//! Engine call metrics through the `metrics` facade (the binary installs the Prometheus
//! recorder): `tessera_engine_calls_total` and `tessera_engine_call_duration_seconds` by engine
//! and outcome, and `tessera_outbound_requests_total` by engine and outcome. Engine codes are
//! those of loaded components, so the label sets stay bounded; no tenant or user id is ever a
//! label.

use std::sync::OnceLock;
use std::time::Duration;

use metrics::{Counter, Histogram};
use tessera_http::metric_series::SeriesByName;

/// How an engine call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallOutcome {
    /// The engine answered and its answer stands (its writes committed).
    Ok,
    /// The engine answered with a failure, or its writes could not be committed.
    Error,
    /// The engine trapped.
    Trap,
    /// The call ran past its deadline.
    Timeout,
    /// No slot was free in time: the call never started.
    Rejected,
}

impl CallOutcome {
    /// The label value.
    pub fn label(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Error => "error",
            Self::Trap => "trap",
            Self::Timeout => "timeout",
            Self::Rejected => "rejected",
        }
    }
}

/// The label of calls outside any engine (`describe` before the code is known).
const NO_ENGINE: &str = "none";

fn engine_label(engine_code: &str) -> &str {
    if engine_code.is_empty() {
        NO_ENGINE
    } else {
        engine_code
    }
}

/// The series of one engine and call outcome.
struct CallSeries {
    outcome: CallOutcome,
    calls: Counter,
    /// `None` for refused calls: they are counted, not timed (no empty histogram is shown).
    duration: Option<Histogram>,
}

/// The series of one engine and outbound outcome.
struct OutboundSeries {
    outcome: &'static str,
    requests: Counter,
}

/// What the recording functions record into, made once the recorder is installed.
struct Series {
    calls: SeriesByName<CallSeries>,
    outbound: SeriesByName<OutboundSeries>,
}

static SERIES: OnceLock<Series> = OnceLock::new();

/// Starts recording engine calls and outbound requests: called by the binary once it has
/// installed the process-wide recorder (handles made before would stay bound to no recorder).
/// Until then the recording functions do nothing.
pub fn start_recording() {
    SERIES.get_or_init(|| Series {
        calls: SeriesByName::default(),
        outbound: SeriesByName::default(),
    });
}

fn call_series(engine_code: &str, outcome: CallOutcome, record: impl FnOnce(&CallSeries)) {
    let Some(series) = SERIES.get() else {
        return;
    };
    let engine = engine_label(engine_code);
    series.calls.record(
        engine,
        |series| series.outcome == outcome,
        || {
            let labels = [
                ("engine", engine.to_owned()),
                ("outcome", outcome.label().to_owned()),
            ];
            CallSeries {
                outcome,
                calls: metrics::counter!("tessera_engine_calls_total", &labels),
                duration: (outcome != CallOutcome::Rejected)
                    .then(|| metrics::histogram!("tessera_engine_call_duration_seconds", &labels)),
            }
        },
        record,
    );
}

/// One call that ran (admitted), with how long it took, commit included.
pub fn record_call(engine_code: &str, outcome: CallOutcome, elapsed: Duration) {
    call_series(engine_code, outcome, |series| {
        series.calls.increment(1);
        if let Some(duration) = &series.duration {
            duration.record(elapsed);
        }
    });
}

/// One call refused for capacity (it never started, so it has no duration).
pub fn record_refused(engine_code: &str) {
    call_series(engine_code, CallOutcome::Rejected, |series| {
        series.calls.increment(1);
    });
}

/// One outbound HTTP request of an engine (a webhook delivery among them): `outcome` is the
/// response's status class (`2xx` … `5xx`) or why there was none (`refused`, `dns`,
/// `connect`, `tls`, `timeout`, `invalid`, `failed`).
pub fn record_outbound(engine_code: &str, outcome: &'static str) {
    let Some(series) = SERIES.get() else {
        return;
    };
    let engine = engine_label(engine_code);
    series.outbound.record(
        engine,
        |series| series.outcome == outcome,
        || {
            let labels = [
                ("engine", engine.to_owned()),
                ("outcome", outcome.to_owned()),
            ];
            OutboundSeries {
                outcome,
                requests: metrics::counter!("tessera_outbound_requests_total", &labels),
            }
        },
        |series| series.requests.increment(1),
    );
}

/// The status class label of an HTTP status code.
pub fn status_class(status: u16) -> &'static str {
    match status {
        100..=199 => "1xx",
        200..=299 => "2xx",
        300..=399 => "3xx",
        400..=499 => "4xx",
        _ => "5xx",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_labelled_by_class() {
        assert_eq!(status_class(204), "2xx");
        assert_eq!(status_class(302), "3xx");
        assert_eq!(status_class(429), "4xx");
        assert_eq!(status_class(503), "5xx");
    }
}
