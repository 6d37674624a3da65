//! Prometheus metrics, through the real binary: `/metrics` denied without the
//! operator's token, served to its bearer and, without one, on `TESSERA_METRICS_LISTEN`; the
//! scrape parsed by an exposition-format parser (`prometheus-parse`) and checked for the series
//! a request, an engine call that answers, one that traps, an outbound request and a failed
//! login leave behind, with no tenant or user id in any label.

use prom_text_format_parser::{Sample, Scrape, ValueType};
use serde_json::{Value, json};

use crate::helpers::{
    AppOptions, Backend, ServeProcess, eventually, on_database, spawn_app, spawn_app_with,
};

const METRICS_TOKEN: &str = "metrics-token-for-the-scraper-0123";

/// One scrape, parsed (a line that is not valid exposition format fails the test).
fn parse(text: &str) -> Scrape {
    Scrape::parse(text).unwrap_or_else(|error| panic!("exposition format: {error:?}\n{text}"))
}

/// The samples of `metric` (a histogram's `_count` is the histogram's name with
/// [`ValueType::Count`]) whose labels include all of `labels`.
fn matching<'s>(
    scrape: &'s Scrape,
    metric: &'s str,
    value_type: ValueType,
    labels: &'s [(&'s str, &'s str)],
) -> impl Iterator<Item = &'s Sample> {
    scrape
        .metrics
        .iter()
        .filter(move |family| family.name == metric)
        .flat_map(|family| family.samples.iter())
        .filter(move |sample| {
            sample.value.value_type == value_type
                && labels.iter().all(|(name, value)| {
                    sample
                        .labels
                        .iter()
                        .any(|label| label.key == *name && label.value == *value)
                })
        })
}

/// The sum of the values of `metric`'s samples matching `labels` (0 when none does).
fn total(scrape: &Scrape, metric: &str, labels: &[(&str, &str)]) -> f64 {
    matching(scrape, metric, ValueType::Sample, labels)
        .map(|sample| sample.value.value.as_f64())
        .sum()
}

/// How many observations `histogram`'s series matching `labels` hold.
fn observations(scrape: &Scrape, histogram: &str, labels: &[(&str, &str)]) -> f64 {
    matching(scrape, histogram, ValueType::Count, labels)
        .map(|sample| sample.value.value.as_f64())
        .sum()
}

/// The label sets of `metric`'s series, for failure messages.
fn series(scrape: &Scrape, metric: &str) -> Vec<String> {
    matching(scrape, metric, ValueType::Sample, &[])
        .map(|sample| sample.labels.to_string())
        .collect()
}

#[tokio::test]
async fn the_scrape_counts_requests_engine_calls_outbound_requests_and_logins_without_ids() {
    // A tenant with an editor, the `trapper` and `fetcher` engines, served by the binary.
    let app = spawn_app_with(
        Backend::Sqlite,
        AppOptions {
            plugins: vec!["trapper", "fetcher"],
            ..AppOptions::default()
        },
    )
    .await;
    let tenant_id = uuid::Uuid::new_v4().to_string();
    let user_id = uuid::Uuid::new_v4().to_string();
    let token = app.token(&tenant_id, &user_id, "editor").await;
    let database = app.stop_keeping_database().await;
    let served = ServeProcess::start(|command| {
        command
            .env("TESSERA_METRICS_TOKEN", METRICS_TOKEN)
            .env("TESSERA_METRICS_LISTEN", "127.0.0.1:0")
            .env("TESSERA_OUTBOUND_ALLOW_PRIVATE_TARGETS", "true");
        on_database(command, &database)
    });
    let client = reqwest::Client::new();
    let get = |path: &str| client.get(served.url(path)).bearer_auth(&token).send();

    // Traffic: an engine call that answers, one that traps, an outbound request, a failed
    // login.
    assert_eq!(get("/trapper/api/v1/ok").await.unwrap().status(), 200);
    assert_eq!(get("/trapper/api/v1/trap").await.unwrap().status(), 502);
    let fetched: Value = client
        .post(served.url("/fetcher/api/v1/fetch"))
        .bearer_auth(&token)
        .json(&json!({ "url": served.url("/livez") }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(fetched["data"]["status"], 200, "{fetched}");
    let login = client
        .post(served.url("/auth/api/v1/auth/login"))
        .json(&json!({ "login": "nobody@example.com", "password": "wrong password" }))
        .send()
        .await
        .unwrap();
    assert_eq!(login.status(), 401);

    // On the main listener: the operator's bearer only.
    let metrics_url = served.url("/metrics");
    let refused = client.get(&metrics_url).send().await.unwrap();
    assert_eq!(refused.status(), 401);
    let user_token = client
        .get(&metrics_url)
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(
        user_token.status(),
        401,
        "a user's token is not the operator's"
    );

    // The backlog sampler sets its gauges within a few seconds of the start.
    let scrape = eventually(20, "the backlog gauges", || {
        let (client, metrics_url) = (client.clone(), metrics_url.clone());
        async move {
            let response = client
                .get(&metrics_url)
                .bearer_auth(METRICS_TOKEN)
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 200);
            assert!(
                response.headers()["content-type"]
                    .to_str()
                    .unwrap()
                    .starts_with("text/plain; version=0.0.4")
            );
            let scrape = parse(&response.text().await.unwrap());
            (matching(
                &scrape,
                "tessera_backlog_items",
                ValueType::Sample,
                &[("kind", "events")],
            )
            .count()
                == 1)
                .then_some(scrape)
        }
    })
    .await;

    let requests = series(&scrape, "tessera_http_requests_total");
    for status in ["200", "502"] {
        let engine_route = [
            ("route", "/{code}/api/v1/{*path}"),
            ("method", "GET"),
            ("status", status),
        ];
        assert!(
            total(&scrape, "tessera_http_requests_total", &engine_route) >= 1.0,
            "{requests:#?}"
        );
    }
    assert!(
        total(
            &scrape,
            "tessera_http_requests_total",
            &[("route", "/auth/api/v1/auth/login"), ("status", "401")]
        ) >= 1.0
    );
    assert!(
        observations(
            &scrape,
            "tessera_http_request_duration_seconds",
            &[("route", "/auth/api/v1/auth/login")]
        ) >= 1.0
    );
    let calls = |engine: &str, outcome: &str| {
        total(
            &scrape,
            "tessera_engine_calls_total",
            &[("engine", engine), ("outcome", outcome)],
        )
    };
    assert!(calls("trapper", "ok") >= 1.0);
    assert!(calls("trapper", "trap") >= 1.0);
    assert!(calls("fetcher", "ok") >= 1.0);
    assert!(
        observations(
            &scrape,
            "tessera_engine_call_duration_seconds",
            &[("engine", "trapper"), ("outcome", "trap")]
        ) >= 1.0
    );
    assert!(
        total(
            &scrape,
            "tessera_outbound_requests_total",
            &[("engine", "fetcher"), ("outcome", "2xx")]
        ) >= 1.0
    );
    assert!(
        total(
            &scrape,
            "tessera_auth_events_total",
            &[("event", "login.failed")]
        ) >= 1.0
    );
    assert_eq!(
        matching(
            &scrape,
            "tessera_projection_lag_seconds",
            ValueType::Sample,
            &[("projection", "projector")]
        )
        .count(),
        1
    );
    assert!(
        total(
            &scrape,
            "tessera_engine_instances",
            &[("state", "capacity")]
        ) >= 1.0
    );
    assert_eq!(total(&scrape, "tessera_engines_loaded", &[]), 2.0);
    assert!(total(&scrape, "tessera_database_connections", &[]) >= 1.0);
    assert_eq!(total(&scrape, "tessera_backlog_refusing_writes", &[]), 0.0);
    // Every series is described and typed, and no label names a tenant, a user or a raw path.
    let calls_family = scrape
        .metrics
        .iter()
        .find(|family| family.name == "tessera_engine_calls_total")
        .expect("the engine calls' family");
    assert!(calls_family.help_desc.is_some());
    assert_eq!(calls_family.kind, prom_text_format_parser::Type::Counter);
    for family in &scrape.metrics {
        for label in family
            .samples
            .iter()
            .flat_map(|sample| sample.labels.iter())
        {
            assert!(
                !["tenant", "tenant_id", "user", "user_id", "path"].contains(&label.key.as_str()),
                "{} has the label {}",
                family.name,
                label.key
            );
            assert!(
                label.value != tenant_id
                    && label.value != user_id
                    && !label.value.contains("/api/v1/trap"),
                "{} has the label {}={}",
                family.name,
                label.key,
                label.value
            );
        }
    }

    // The dedicated listener serves the same series without a token, and nothing else.
    let dedicated = served.metrics_url("/metrics");
    let open = client.get(&dedicated).send().await.unwrap();
    assert_eq!(open.status(), 200);
    let open = parse(&open.text().await.unwrap());
    assert!(
        total(
            &open,
            "tessera_auth_events_total",
            &[("event", "login.failed")]
        ) >= 1.0
    );
    let elsewhere = client
        .get(served.metrics_url("/readyz"))
        .send()
        .await
        .unwrap();
    assert_eq!(elsewhere.status(), 404);
}

#[tokio::test]
async fn without_a_token_or_a_listener_the_metrics_are_not_served() {
    let app = spawn_app(Backend::Sqlite).await;
    let response = app.get("/metrics").await;
    assert_eq!(response.status(), 404);
    let body: Value = response.json().await.unwrap();
    assert!(
        body["message"]
            .as_str()
            .is_some_and(|message| message.contains("TESSERA_METRICS_TOKEN")),
        "{body}"
    );
}
