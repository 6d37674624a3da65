//! OpenTelemetry traces, through the real binary: with
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
use opentelemetry_proto::tonic::common::v1::{KeyValue, any_value};
use prost::Message as _;
use serde_json::{Value, json};

use crate::helpers::{
    AppOptions, Backend, ServeProcess, TestDatabase, create_owner, eventually, loopback_listener,
    on_database, spawn_app_with,
};

/// A span as exported: trace id, span id and parent span id (hex), and name.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ExportedSpan {
    trace_id: String,
    span_id: String,
    parent_span_id: String,
    name: String,
    /// The `status` attribute, if the span has an integer one (a request's).
    status: Option<i64>,
    /// The `outcome` attribute, if the span has a string one (an engine call's).
    outcome: Option<String>,
}

/// What the receiver got: exported spans, and the `traceparent` of each request to `/target`.
#[derive(Default)]
struct Received {
    spans: Mutex<Vec<ExportedSpan>>,
    traceparents: Mutex<Vec<Option<String>>>,
}

/// The value of the attribute `key` of an exported span, if it has one.
fn attribute<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a any_value::Value> {
    attributes
        .iter()
        .find(|attribute| attribute.key == key)
        .and_then(|attribute| attribute.value.as_ref()?.value.as_ref())
}

/// The integer attribute `key` of an exported span, if it has one.
fn integer_attribute(attributes: &[KeyValue], key: &str) -> Option<i64> {
    match attribute(attributes, key)? {
        any_value::Value::IntValue(value) => Some(*value),
        _ => None,
    }
}

/// The string attribute `key` of an exported span, if it has one.
fn string_attribute(attributes: &[KeyValue], key: &str) -> Option<String> {
    match attribute(attributes, key)? {
        any_value::Value::StringValue(value) => Some(value.clone()),
        _ => None,
    }
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
                                    status: integer_attribute(&span.attributes, "status"),
                                    outcome: string_attribute(&span.attributes, "outcome"),
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

/// A database served with the `fetcher` test component, and an editor's token for it.
async fn fetcher_database() -> (TestDatabase, String) {
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
    (app.stop_keeping_database().await, token)
}

/// The span of the test's caller that its `traceparent` headers name.
const CALLER_SPAN: &str = "00f067aa0ba902b7";

/// Lets engines' outbound requests reach the test's receiver on loopback.
const OUTBOUND_TO_LOOPBACK: (&str, &str) = ("TESSERA_OUTBOUND_ALLOW_PRIVATE_TARGETS", "true");

/// `tessera serve` on `database`, exporting its spans to the receiver on `port` (a batch every
/// 100 ms), with `environment` added.
fn traced_host(database: &TestDatabase, port: u16, environment: &[(&str, &str)]) -> ServeProcess {
    ServeProcess::start(|command| {
        command
            .env(
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                format!("http://127.0.0.1:{port}"),
            )
            .env("OTEL_BSP_SCHEDULE_DELAY", "100");
        for (name, value) in environment {
            command.env(name, value);
        }
        on_database(command, database)
    })
}

/// The first span of `spans` called `name`.
fn span_named(spans: &[ExportedSpan], name: &str) -> ExportedSpan {
    spans
        .iter()
        .find(|span| span.name == name)
        .unwrap_or_else(|| panic!("no {name} span in {spans:?}"))
        .clone()
}

impl Received {
    /// The spans of `trace_id` exported so far.
    fn spans_of(&self, trace_id: &str) -> Vec<ExportedSpan> {
        self.spans
            .lock()
            .unwrap()
            .iter()
            .filter(|span| span.trace_id == trace_id)
            .cloned()
            .collect()
    }
}

/// A fetch through the `fetcher` engine, called with a `traceparent`, is one trace: the
/// request a child of the caller's span, the engine call of the request, the outbound request
/// of the engine call, and the target called with the outbound request's span.
async fn fetch_is_one_trace(
    served: &ServeProcess,
    token: &str,
    port: u16,
    received: &Received,
    trace_id: &str,
) {
    let before = received.traceparents.lock().unwrap().len();
    let fetched: Value = reqwest::Client::new()
        .post(served.url("/fetcher/api/v1/fetch"))
        .bearer_auth(token)
        .header("traceparent", format!("00-{trace_id}-{CALLER_SPAN}-01"))
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
        let spans = received.spans_of(trace_id);
        let names: Vec<&str> = spans.iter().map(|span| span.name.as_str()).collect();
        (["request", "engine call", "outbound request"]
            .iter()
            .all(|name| names.contains(name)))
        .then_some(spans)
    })
    .await;
    let named = |name: &str| span_named(&spans, name);
    let request = named("request");
    let engine_call = named("engine call");
    let outbound = named("outbound request");
    assert_eq!(request.parent_span_id, CALLER_SPAN, "{spans:?}");
    assert_eq!(request.status, Some(200), "the request's status: {spans:?}");
    assert_eq!(engine_call.parent_span_id, request.span_id, "{spans:?}");
    assert_eq!(engine_call.outcome.as_deref(), Some("ok"), "{spans:?}");
    assert_eq!(outbound.parent_span_id, engine_call.span_id, "{spans:?}");

    // The target was called as a child of the outbound request's span.
    let traceparents = received.traceparents.lock().unwrap()[before..].to_vec();
    assert_eq!(
        traceparents,
        [Some(format!("00-{trace_id}-{}-01", outbound.span_id))]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_its_engine_calls_their_outbound_requests_and_the_jobs_they_queue_are_one_trace()
{
    let (database, token) = fetcher_database().await;
    let (port, received) = receiver().await;
    let served = traced_host(&database, port, &[OUTBOUND_TO_LOOPBACK]);
    fetch_is_one_trace(
        &served,
        &token,
        port,
        &received,
        "4bf92f3577b34da6a3ce929d0e0e4736",
    )
    .await;

    // Work queued by a call continues its trace when it runs: a job scheduled by the engine
    // runs later, and the request it sends carries the same trace.
    let later_trace = "5bf92f3577b34da6a3ce929d0e0e4737";
    let scheduled = reqwest::Client::new()
        .post(served.url("/fetcher/api/v1/fetch-later"))
        .bearer_auth(&token)
        .header("traceparent", format!("00-{later_trace}-{CALLER_SPAN}-01"))
        .json(&json!({ "url": format!("http://127.0.0.1:{port}/target") }))
        .send()
        .await
        .unwrap();
    assert_eq!(scheduled.status(), 202);
    let spans = eventually(20, "the job's spans exported", || async {
        let spans = received.spans_of(later_trace);
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
    let named = |name: &str| span_named(&spans, name);
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

/// Traces hold the info-level spans whatever `TESSERA_LOG` keeps: under a stricter filter than
/// `info` (no request span in the logs; the layer behind its own level filter) and under a
/// looser one (debug spans between them change no parent).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn traces_hold_the_info_spans_whatever_the_logs_keep() {
    let (database, token) = fetcher_database().await;
    let (port, received) = receiver().await;
    for (filter, trace_id) in [
        ("warn,tessera_host=info", "6bf92f3577b34da6a3ce929d0e0e4738"),
        ("debug", "7bf92f3577b34da6a3ce929d0e0e4739"),
    ] {
        let served = traced_host(
            &database,
            port,
            &[OUTBOUND_TO_LOOPBACK, ("TESSERA_LOG", filter)],
        );
        fetch_is_one_trace(&served, &token, port, &received, trace_id).await;
        assert_eq!(served.terminate().code(), Some(0), "TESSERA_LOG={filter}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_endpoint_nothing_is_exported_and_no_trace_is_passed_on() {
    let (database, token) = fetcher_database().await;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_message_and_its_webhook_delivery_are_one_trace_that_the_receiver_continues() {
    // An HTTPS webhook receiver that keeps the `traceparent` of each delivery.
    let delivered: Arc<Mutex<Vec<Option<String>>>> = Arc::default();
    let seen = delivered.clone();
    let (webhook_port, certificate) = crate::helpers::serve_https(Router::new().route(
        "/hook",
        post(move |headers: HeaderMap| {
            let seen = seen.clone();
            async move {
                seen.lock().unwrap().push(
                    headers
                        .get("traceparent")
                        .and_then(|value| value.to_str().ok())
                        .map(str::to_owned),
                );
                axum::http::StatusCode::NO_CONTENT
            }
        }),
    ));
    // A tenant on the chat engine with an owner and a webhook for new messages.
    let database = TestDatabase::new(Backend::Sqlite).await;
    crate::components::install_engines(&database.data_dir.join("plugins"), &["chat"]);
    let ca = certificate.0.clone();
    let app = spawn_app_with(
        Backend::Sqlite,
        AppOptions {
            database: Some(database),
            configure: Some(Box::new(move |config| {
                config.outbound.allow_private_targets = true;
                config.outbound.extra_ca = Some(ca);
            })),
            ..AppOptions::default()
        },
    )
    .await;
    let tenant = app.create_tenant("acme");
    let owner = create_owner(&app.database, "acme", "ada@example.com", "Correct1horse");
    let token = app
        .token(&tenant, owner["user_id"].as_str().unwrap(), "owner")
        .await;
    crate::helpers::json_with_status(
        app.post_as(
            "/chat/api/v1/webhooks",
            &token,
            &json!({
                "url": format!("https://127.0.0.1:{webhook_port}/hook"),
                "events": ["message.created"],
                "secret": "whsec_0123456789abcdef0123456789abcdef",
            }),
        )
        .await,
        201,
    )
    .await;
    let conversation = crate::chat::general_conversation(&app, &token).await;
    let database = app.stop_keeping_database().await;

    let (port, received) = receiver().await;
    let served = traced_host(
        &database,
        port,
        &[
            OUTBOUND_TO_LOOPBACK,
            ("TESSERA_OUTBOUND_EXTRA_CA", certificate.0.to_str().unwrap()),
        ],
    );
    let trace_id = "6bf92f3577b34da6a3ce929d0e0e4738";
    let posted = reqwest::Client::new()
        .post(served.url(&format!(
            "/chat/api/v1/conversations/{conversation}/messages"
        )))
        .bearer_auth(&token)
        .header("traceparent", format!("00-{trace_id}-{CALLER_SPAN}-01"))
        .json(&json!({ "body": "traced" }))
        .send()
        .await
        .unwrap();
    assert_eq!(posted.status(), 201);

    // The delivery reached the receiver within the caller's trace…
    let delivery_traceparent = eventually(20, "the webhook delivered", || async {
        delivered.lock().unwrap().first().cloned()
    })
    .await
    .expect("the delivery carries a traceparent");
    assert!(
        delivery_traceparent.starts_with(&format!("00-{trace_id}-")),
        "{delivery_traceparent}"
    );
    // …as a child of the delivering outbound request's span, itself under the engine work
    // the message's call queued.
    let spans = eventually(20, "the delivery's spans exported", || async {
        let spans = received.spans_of(trace_id);
        spans
            .iter()
            .any(|span| span.name == "outbound request")
            .then_some(spans)
    })
    .await;
    let outbound = spans
        .iter()
        .find(|span| span.name == "outbound request")
        .unwrap();
    assert_eq!(
        delivery_traceparent,
        format!("00-{trace_id}-{}-01", outbound.span_id)
    );
    let parent_of = |span: &ExportedSpan| {
        spans
            .iter()
            .find(|candidate| candidate.span_id == span.parent_span_id)
            .unwrap_or_else(|| panic!("the parent of {span:?} is not exported: {spans:?}"))
            .clone()
    };
    let delivering_call = parent_of(outbound);
    assert_eq!(delivering_call.name, "engine call");
    let work = parent_of(&delivering_call);
    assert_eq!(work.name, "engine work");
    let posting_call = parent_of(&work);
    assert_eq!(posting_call.name, "engine call");
    assert_eq!(parent_of(&posting_call).name, "request");
    assert_eq!(served.terminate().code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_intention_and_the_engine_deliveries_of_its_events_are_one_trace() {
    // A tenant on the activity engine, which subscribes to the core's `entity.*` events.
    let database = TestDatabase::new(Backend::Sqlite).await;
    crate::components::install_engines(&database.data_dir.join("plugins"), &["activity"]);
    let app = spawn_app_with(
        Backend::Sqlite,
        AppOptions {
            database: Some(database),
            ..AppOptions::default()
        },
    )
    .await;
    let tenant = app.create_tenant("acme");
    let owner = create_owner(&app.database, "acme", "ada@example.com", "Correct1horse");
    let token = app
        .token(&tenant, owner["user_id"].as_str().unwrap(), "owner")
        .await;
    let database = app.stop_keeping_database().await;

    let (port, received) = receiver().await;
    let served = traced_host(&database, port, &[]);
    let trace_id = "0af7651916cd43dd8448eb211c80319c";
    let created = reqwest::Client::new()
        .post(served.url("/core/api/v1/intentions"))
        .bearer_auth(&token)
        .header("traceparent", format!("00-{trace_id}-b7ad6b7169203331-01"))
        .json(&json!({
            "type": "entity.create",
            "payload": { "family": "contact", "fields": { "name": "Grace" } },
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 200, "{:?}", created.text().await);

    // Activity's delivery of the contact's events ran in the request's trace, as its child.
    let spans = eventually(20, "the delivery's span exported", || async {
        let spans = received.spans_of(trace_id);
        spans
            .iter()
            .any(|span| span.name == "engine work")
            .then_some(spans)
    })
    .await;
    let work = span_named(&spans, "engine work");
    let request = span_named(&spans, "request");
    assert_eq!(work.parent_span_id, request.span_id, "{spans:?}");
    assert_eq!(request.parent_span_id, "b7ad6b7169203331");
    assert_eq!(served.terminate().code(), Some(0));
}

/// Trace id and flags of a `traceparent` (`00-<trace>-<span>-<flags>`).
fn trace_and_flags(traceparent: &str) -> (String, String) {
    let parts: Vec<&str> = traceparent.split('-').collect();
    assert_eq!(parts.len(), 4, "{traceparent}");
    (parts[1].to_owned(), parts[3].to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampling_is_decided_where_a_trace_starts_and_what_is_left_out_is_passed_on_unsampled() {
    let (database, token) = fetcher_database().await;
    let (port, received) = receiver().await;
    // Traces starting here are never sampled; a caller's decision is followed.
    let served = traced_host(
        &database,
        port,
        &[
            ("OTEL_TRACES_SAMPLER", "parentbased_always_off"),
            OUTBOUND_TO_LOOPBACK,
        ],
    );
    let client = reqwest::Client::new();
    let target = json!({ "url": format!("http://127.0.0.1:{port}/target") });
    let fetch = |path: &str, traceparent: Option<String>| {
        let mut request = client
            .post(served.url(path))
            .bearer_auth(&token)
            .json(&target);
        if let Some(traceparent) = traceparent {
            request = request.header("traceparent", traceparent);
        }
        request.send()
    };
    let last_traceparent = || {
        received
            .traceparents
            .lock()
            .unwrap()
            .last()
            .cloned()
            .flatten()
            .expect("the target was called with a traceparent")
    };

    // A caller's trace with its flags: the fetch answers, and the target got the same trace id
    // with the same flags.
    let continued = |trace_id: &'static str, flags: &'static str| {
        let answer = fetch(
            "/fetcher/api/v1/fetch",
            Some(format!("00-{trace_id}-{CALLER_SPAN}-{flags}")),
        );
        async move {
            assert_eq!(answer.await.unwrap().status(), 200);
            assert_eq!(
                trace_and_flags(&last_traceparent()),
                (trace_id.to_owned(), flags.to_owned())
            );
        }
    };
    // A caller that samples: exported, and passed on sampled.
    let sampled = "1bf92f3577b34da6a3ce929d0e0e4731";
    continued(sampled, "01").await;
    // A caller that does not: nothing exported, passed on with its trace id, unsampled.
    continued("2bf92f3577b34da6a3ce929d0e0e4732", "00").await;

    // No caller's trace: a new one, left out by this sampler, and passed on unsampled.
    let answer = fetch("/fetcher/api/v1/fetch", None).await.unwrap();
    assert_eq!(answer.status(), 200);
    let (started_here, flags) = trace_and_flags(&last_traceparent());
    assert_eq!(flags, "00");
    assert_ne!(started_here, "0".repeat(32));

    // Work queued in an unsampled trace runs in it, still unsampled: the job's request carries
    // the same trace id.
    let later = "3bf92f3577b34da6a3ce929d0e0e4733";
    let answer = fetch(
        "/fetcher/api/v1/fetch-later",
        Some(format!("00-{later}-{CALLER_SPAN}-00")),
    )
    .await
    .unwrap();
    assert_eq!(answer.status(), 202);
    let job_traceparent = eventually(20, "the job's request", || async {
        let traceparents = received.traceparents.lock().unwrap().clone();
        (traceparents.len() == 4)
            .then(|| traceparents.last().cloned().flatten())
            .flatten()
    })
    .await;
    assert_eq!(
        trace_and_flags(&job_traceparent),
        (later.to_owned(), "00".to_owned())
    );

    // Stopped, so every buffered span was flushed: only the sampled caller's trace was
    // exported, whole.
    assert_eq!(served.terminate().code(), Some(0));
    let spans = received.spans.lock().unwrap().clone();
    let names: Vec<&str> = spans.iter().map(|span| span.name.as_str()).collect();
    assert!(
        spans.iter().all(|span| span.trace_id == sampled),
        "{spans:?}"
    );
    for name in ["request", "engine call", "outbound request"] {
        assert!(names.contains(&name), "no {name} span in {spans:?}");
    }
}
