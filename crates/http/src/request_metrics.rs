//! Request metrics: every answered request counted and timed by method, route template and
//! status (`tessera_http_requests_total`, `tessera_http_request_duration_seconds`), through
//! the `metrics` facade; the binary installs the Prometheus recorder (without one these are
//! no-ops). Labels stay bounded: the route is the template the router matched
//! (`/core/api/v1/workflows/{id}`), never the path a client sent, `unmatched` when none did,
//! and a method outside the standard ones is `other`.

use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;

/// The route label of a request no route matched (404s of the fallback).
pub const UNMATCHED_ROUTE: &str = "unmatched";

/// Counts and times the request once the response is ready (status included).
pub async fn record(request: Request, next: Next) -> Response {
    let method = method_label(request.method());
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or(UNMATCHED_ROUTE.to_owned(), |path| path.as_str().to_owned());
    let started = Instant::now();
    let response = next.run(request).await;
    let labels = [
        ("method", method.to_owned()),
        ("route", route),
        ("status", response.status().as_str().to_owned()),
    ];
    metrics::counter!("tessera_http_requests_total", &labels).increment(1);
    metrics::histogram!("tessera_http_request_duration_seconds", &labels).record(started.elapsed());
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
