//! OpenTelemetry traces (issue 28, part 3), through the real binary: with
//! `OTEL_EXPORTER_OTLP_ENDPOINT` set, a request carrying a W3C `traceparent` is one trace with
//! the engine call it makes and the engine's outbound request, and with the job that call
//! scheduled when it runs later and that job's outbound request; all exported over OTLP/HTTP
//! to a real receiver in this test (which decodes the protobuf with OTLP's own messages), and
//! each outbound request carries the trace on to its target. Without the variable nothing is
//! sent.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::http::HeaderMap;
use axum::routing::{get, post};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message as _;
use serde_json::{Value, json};

use crate::helpers::{
    AppOptions, Backend, ServeProcess, eventually, loopback_listener, on_database, spawn_app_with,
};

/// A span as exported: trace id, span id and parent span id (hex), and name.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ExportedSpan {
    trace_id: String,
    span_id: String,
    parent_span_id: String,
    name: String,
}

/// What the receiver got: exported spans, and the `traceparent` of each request to `/target`.
#[derive(Default)]
struct Received {
    spans: Mutex<Vec<ExportedSpan>>,
    traceparents: Mutex<Vec<Option<String>>>,
}

/// An OTLP/HTTP collector (`POST /v1/traces`) and an outbound target (`GET /target`) on one
/// loopback port.
async fn receiver() -> (u16, Arc<Received>) {
    let received = Arc::new(Received::default());
    let (listener, port) = loopback_listener();
    let listener = tokio::net::TcpListener::from_std(listener).unwrap();
    let spans = received.clone();
    let target = received.clone();
    let routes = Router::new()
        .route(
            "/v1/traces",
            post(move |body: Bytes| {
                let spans = spans.clone();
                async move {
                    let request = ExportTraceServiceRequest::decode(body).expect("OTLP protobuf");
                    let mut spans = spans.spans.lock().unwrap();
                    for resource in request.resource_spans {
                        for scope in resource.scope_spans {
                            for span in scope.spans {
                                spans.push(ExportedSpan {
                                    trace_id: hex::encode(&span.trace_id),
                                    span_id: hex::encode(&span.span_id),
                                    parent_span_id: hex::encode(&span.parent_span_id),
                                    name: span.name,
                                });
                            }
                        }
                    }
                    ""
                }
            }),
        )
        .route(
            "/target",
            get(move |headers: HeaderMap| {
                let target = target.clone();
                async move {
                    target.traceparents.lock().unwrap().push(
                        headers
                            .get("traceparent")
                            .and_then(|value| value.to_str().ok())
                            .map(str::to_owned),
                    );
                    "ok"
                }
            }),
        );
    tokio::spawn(async move { axum::serve(listener, routes).await });
    (port, received)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_its_engine_calls_their_outbound_requests_and_the_jobs_they_queue_are_one_trace()
{
    let app = spawn_app_with(
        Backend::Sqlite,
        AppOptions {
            plugins: vec!["fetcher"],
            ..AppOptions::default()
        },
    )
    .await;
    let token = app
        .token(
            &uuid::Uuid::new_v4().to_string(),
            &uuid::Uuid::new_v4().to_string(),
            "editor",
        )
        .await;
    let database = app.stop_keeping_database().await;
    let (port, received) = receiver().await;
    let served = ServeProcess::start(|command| {
        command
            .env(
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                format!("http://127.0.0.1:{port}"),
            )
            .env("OTEL_BSP_SCHEDULE_DELAY", "100")
            .env("TESSERA_OUTBOUND_ALLOW_PRIVATE_TARGETS", "true");
        on_database(command, &database)
    });

    // The caller's trace: its id and the span the request is a child of.
    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let caller_span = "00f067aa0ba902b7";
    let fetched: Value = reqwest::Client::new()
        .post(served.url("/fetcher/api/v1/fetch"))
        .bearer_auth(&token)
        .header("traceparent", format!("00-{trace_id}-{caller_span}-01"))
        .json(&json!({ "url": format!("http://127.0.0.1:{port}/target") }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(fetched["data"]["status"], 200, "{fetched}");

    // The spans arrive in the batch processor's next export.
    let spans = eventually(20, "the request's spans exported", || async {
        let spans: Vec<ExportedSpan> = received
            .spans
            .lock()
            .unwrap()
            .iter()
            .filter(|span| span.trace_id == trace_id)
            .cloned()
            .collect();
        let names: Vec<&str> = spans.iter().map(|span| span.name.as_str()).collect();
        (["request", "engine call", "outbound request"]
            .iter()
            .all(|name| names.contains(name)))
        .then_some(spans)
    })
    .await;
    let named = |name: &str| {
        spans
            .iter()
            .find(|span| span.name == name)
            .unwrap_or_else(|| panic!("no {name} span in {spans:?}"))
            .clone()
    };
    let request = named("request");
    let engine_call = named("engine call");
    let outbound = named("outbound request");
    assert_eq!(request.parent_span_id, caller_span, "{spans:?}");
    assert_eq!(engine_call.parent_span_id, request.span_id, "{spans:?}");
    assert_eq!(outbound.parent_span_id, engine_call.span_id, "{spans:?}");

    // The target was called as a child of the outbound request's span.
    let traceparents = received.traceparents.lock().unwrap().clone();
    assert_eq!(
        traceparents,
        [Some(format!("00-{trace_id}-{}-01", outbound.span_id))]
    );

    // Work queued by a call continues its trace when it runs: a job scheduled by the engine
    // runs later, and the request it sends carries the same trace.
    let later_trace = "5bf92f3577b34da6a3ce929d0e0e4737";
    let scheduled = reqwest::Client::new()
        .post(served.url("/fetcher/api/v1/fetch-later"))
        .bearer_auth(&token)
        .header("traceparent", format!("00-{later_trace}-{caller_span}-01"))
        .json(&json!({ "url": format!("http://127.0.0.1:{port}/target") }))
        .send()
        .await
        .unwrap();
    assert_eq!(scheduled.status(), 202);
    let spans = eventually(20, "the job's spans exported", || async {
        let spans: Vec<ExportedSpan> = received
            .spans
            .lock()
            .unwrap()
            .iter()
            .filter(|span| span.trace_id == later_trace)
            .cloned()
            .collect();
        let calls = spans
            .iter()
            .filter(|span| span.name == "engine call")
            .count();
        let done = calls == 2
            && spans.iter().any(|span| span.name == "engine work")
            && spans.iter().any(|span| span.name == "outbound request");
        done.then_some(spans)
    })
    .await;
    let named = |name: &str| {
        spans
            .iter()
            .find(|span| span.name == name)
            .unwrap_or_else(|| panic!("no {name} span in {spans:?}"))
            .clone()
    };
    let request = named("request");
    let work = named("engine work");
    let scheduling_call = spans
        .iter()
        .find(|span| span.name == "engine call" && span.parent_span_id == request.span_id)
        .unwrap_or_else(|| panic!("no engine call under the request: {spans:?}"));
    let job_call = spans
        .iter()
        .find(|span| span.name == "engine call" && span.parent_span_id == work.span_id)
        .unwrap_or_else(|| panic!("no engine call under the work: {spans:?}"));
    let outbound = named("outbound request");
    assert_eq!(work.parent_span_id, scheduling_call.span_id, "{spans:?}");
    assert_eq!(outbound.parent_span_id, job_call.span_id, "{spans:?}");
    let traceparents = received.traceparents.lock().unwrap().clone();
    assert_eq!(
        traceparents.last().cloned().flatten(),
        Some(format!("00-{later_trace}-{}-01", outbound.span_id))
    );
    assert_eq!(served.terminate().code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_endpoint_nothing_is_exported_and_no_trace_is_passed_on() {
    let app = spawn_app_with(
        Backend::Sqlite,
        AppOptions {
            plugins: vec!["fetcher"],
            ..AppOptions::default()
        },
    )
    .await;
    let token = app
        .token(
            &uuid::Uuid::new_v4().to_string(),
            &uuid::Uuid::new_v4().to_string(),
            "editor",
        )
        .await;
    let database = app.stop_keeping_database().await;
    let (port, received) = receiver().await;
    let served = ServeProcess::start(|command| {
        command
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            .env("TESSERA_OUTBOUND_ALLOW_PRIVATE_TARGETS", "true");
        on_database(command, &database)
    });
    let fetched: Value = reqwest::Client::new()
        .post(served.url("/fetcher/api/v1/fetch"))
        .bearer_auth(&token)
        .header(
            "traceparent",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        )
        .json(&json!({ "url": format!("http://127.0.0.1:{port}/target") }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(fetched["data"]["status"], 200, "{fetched}");
    assert_eq!(served.terminate().code(), Some(0));
    // Stopped (so anything buffered would have been flushed): nothing reached the collector.
    assert!(received.spans.lock().unwrap().is_empty());
    assert_eq!(*received.traceparents.lock().unwrap(), [None]);
}
