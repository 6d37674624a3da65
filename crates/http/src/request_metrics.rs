//! Request metrics: every answered request counted and timed by method, route template and
//! status (`tessera_http_requests_total`, `tessera_http_request_duration_seconds`), through
//! the `metrics` facade; the binary installs the Prometheus recorder (without one these are
//! no-ops). Labels stay bounded: the route is the template the router matched
//! (`/core/api/v1/workflows/{id}`), never the path a client sent, `unmatched` when none did,
//! and a method outside the standard ones is `other`.

use std::sync::OnceLock;
use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use metrics::{Counter, Histogram};

use crate::metric_series::SeriesByName;

/// The route label of a request no route matched (404s of the fallback).
pub const UNMATCHED_ROUTE: &str = "unmatched";

/// The two series of one method, route and status.
struct RequestSeries {
    method: &'static str,
    status: StatusCode,
    requests: Counter,
    duration: Histogram,
}

/// The series by route, made once the recorder is installed ([`start_recording`]).
static SERIES: OnceLock<SeriesByName<RequestSeries>> = OnceLock::new();

/// Starts recording requests: called by the binary once it has installed the process-wide
/// recorder (handles made before would stay bound to no recorder). Until then [`record`] passes
/// requests on untouched.
pub fn start_recording() {
    SERIES.get_or_init(SeriesByName::default);
}

/// Counts and times the request once the response is ready (status included).
pub async fn record(request: Request, next: Next) -> Response {
    let Some(series) = SERIES.get() else {
        return next.run(request).await;
    };
    let method = method_label(request.method());
    let route = request.extensions().get::<MatchedPath>().cloned();
    let started = Instant::now();
    let response = next.run(request).await;
    let elapsed = started.elapsed();
    let route = route.as_ref().map_or(UNMATCHED_ROUTE, MatchedPath::as_str);
    let status = response.status();
    series.record(
        route,
        |series| series.method == method && series.status == status,
        || {
            let labels = [
                ("method", method.to_owned()),
                ("route", route.to_owned()),
                ("status", status.as_str().to_owned()),
            ];
            RequestSeries {
                method,
                status,
                requests: metrics::counter!("tessera_http_requests_total", &labels),
                duration: metrics::histogram!("tessera_http_request_duration_seconds", &labels),
            }
        },
        |series| {
            series.requests.increment(1);
            series.duration.record(elapsed);
        },
    );
    response
}

/// The method as a label: the standard methods by name, anything else `other`.
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_outside_the_standard_ones_share_one_label() {
        assert_eq!(method_label(&Method::PATCH), "PATCH");
        let custom = Method::from_bytes(b"PROPFIND").unwrap();
        assert_eq!(method_label(&custom), "other");
    }
}
