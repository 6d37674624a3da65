//! Rate limiting of every endpoint (CONTRACT §2): `/auth` per client IP, reads and writes per
//! bearer token (else per IP) with budgets of their own, a per-IP ceiling against token
//! spraying, `X-RateLimit-Limit`/`-Remaining` on every limited response, 429 with `Retry-After`
//! beyond the limit, health and OpenAPI exempt, 0 = off. The limiter has no database part, so
//! SQLite is enough.

use serde_json::json;
use tessera_host::config::Config;
use tessera_host::http::client_address::TrustedProxies;
use tessera_host::http::rate_limit::PER_IP_CEILING_FACTOR;

use crate::helpers::{AppOptions, Backend, TestApp, json_with_status, spawn_app, spawn_app_with};

/// An app with these limits per 60 s.
async fn app_with_limits(auth: u32, read: u32, write: u32) -> TestApp {
    spawn_app_with_limits(auth, read, write, Vec::new()).await
}

async fn spawn_app_with_limits(
    auth: u32,
    read: u32,
    write: u32,
    plugins: Vec<&'static str>,
) -> TestApp {
    spawn_app_with(
        Backend::Sqlite,
        AppOptions {
            plugins,
            configure: Some(Box::new(move |config: &mut Config| {
                config.rate_limits.auth_per_minute = auth;
                config.rate_limits.read_per_minute = read;
                config.rate_limits.write_per_minute = write;
            })),
            ..AppOptions::default()
        },
    )
    .await
}

/// `(X-RateLimit-Limit, X-RateLimit-Remaining)`, `None` when the response has neither.
fn limit_headers(response: &reqwest::Response) -> Option<(u32, u32)> {
    let number = |name: &str| -> Option<u32> {
        Some(
            response
                .headers()
                .get(name)?
                .to_str()
                .unwrap()
                .parse()
                .unwrap(),
        )
    };
    match (number("x-ratelimit-limit"), number("x-ratelimit-remaining")) {
        (Some(limit), Some(remaining)) => Some((limit, remaining)),
        (None, None) => None,
        other => panic!("only one of the two rate-limit headers: {other:?}"),
    }
}

async fn write_as(app: &TestApp, token: Option<&str>) -> reqwest::Response {
    let mut request = app
        .client
        .post(app.url("/test/echo"))
        .json(&json!({"name": "ada"}));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.expect("POST")
}

async fn read_as(app: &TestApp, token: Option<&str>) -> reqwest::Response {
    let mut request = app.client.get(app.url("/core/api/v1/engines"));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.expect("GET")
}

/// Asserts the 429 of the spec's shape and returns its `X-RateLimit-Limit`.
async fn assert_too_many(response: reqwest::Response) -> u32 {
    let (limit, remaining) = limit_headers(&response).expect("a 429 carries the limit headers");
    assert_eq!(remaining, 0);
    let retry_after: u64 = response
        .headers()
        .get("retry-after")
        .expect("a 429 carries Retry-After")
        .to_str()
        .unwrap()
        .parse()
        .expect("Retry-After in seconds");
    assert!(
        (1..=60).contains(&retry_after),
        "Retry-After: {retry_after}"
    );
    assert!(response.headers().contains_key("x-correlation-id"));
    let body = json_with_status(response, 429).await;
    assert_eq!(body, json!({"message": "Too Many Attempts."}));
    limit
}

fn random_token() -> String {
    format!("not-a-jwt-{}", uuid::Uuid::new_v4())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_count_down_per_token_and_the_one_beyond_the_limit_is_a_429() {
    let app = app_with_limits(60, 600, 3).await;
    let token = app.token("tenant-a", "user-a", "member").await;

    for expected_remaining in [2, 1, 0] {
        let response = write_as(&app, Some(&token)).await;
        assert_eq!(limit_headers(&response), Some((3, expected_remaining)));
        json_with_status(response, 200).await;
    }
    assert_eq!(assert_too_many(write_as(&app, Some(&token)).await).await, 3);
    // Still refused: a refusal does not give the budget back.
    assert_eq!(assert_too_many(write_as(&app, Some(&token)).await).await, 3);

    // Another token, and a client without any, have budgets of their own.
    let other = app.token("tenant-a", "user-b", "member").await;
    let response = write_as(&app, Some(&other)).await;
    assert_eq!(limit_headers(&response), Some((3, 2)));
    json_with_status(response, 200).await;
    let response = write_as(&app, None).await;
    assert_eq!(limit_headers(&response), Some((3, 2)));
    json_with_status(response, 200).await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_have_their_own_budget() {
    let app = app_with_limits(60, 2, 5).await;
    let token = app.token("tenant-a", "user-a", "member").await;

    for expected_remaining in [1, 0] {
        let response = read_as(&app, Some(&token)).await;
        assert_eq!(limit_headers(&response), Some((2, expected_remaining)));
        json_with_status(response, 200).await;
    }
    assert_eq!(assert_too_many(read_as(&app, Some(&token)).await).await, 2);
    // HEAD is a read too.
    let head = app
        .client
        .head(app.url("/core/api/v1/engines"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(head.status(), 429);

    // Writes of the same token are untouched.
    let response = write_as(&app, Some(&token)).await;
    assert_eq!(limit_headers(&response), Some((5, 4)));
    json_with_status(response, 200).await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_without_a_token_are_counted_per_address() {
    let app = app_with_limits(60, 2, 5).await;
    for expected_remaining in [1, 0] {
        let response = read_as(&app, None).await;
        assert_eq!(limit_headers(&response), Some((2, expected_remaining)));
    }
    assert_eq!(assert_too_many(read_as(&app, None).await).await, 2);
    // A token gets its own bucket, even from the same address.
    let token = app.token("tenant-a", "user-a", "member").await;
    assert_eq!(
        limit_headers(&read_as(&app, Some(&token)).await),
        Some((2, 1))
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_responses_carry_the_headers_and_count() {
    let app = spawn_app_with_limits(60, 3, 3, vec!["echo"]).await;
    let token = random_token();

    // Neither the 401 of an unverifiable token nor a 404 or a 422 escapes the count.
    let unauthenticated = app.get_as("/echo/api/v1/echo", &token).await;
    assert_eq!(limit_headers(&unauthenticated), Some((3, 2)));
    json_with_status(unauthenticated, 401).await;
    let unknown = app.get_as("/core/api/v1/no-such-route", &token).await;
    assert_eq!(limit_headers(&unknown), Some((3, 1)));
    json_with_status(unknown, 404).await;
    let invalid = app
        .client
        .post(app.url("/test/echo"))
        .bearer_auth(&token)
        .json(&json!({"name": ""}))
        .send()
        .await
        .unwrap();
    assert_eq!(limit_headers(&invalid), Some((3, 2)));
    json_with_status(invalid, 422).await;

    // Engine routes are limited like native ones.
    let valid = app.token("tenant-a", "user-a", "member").await;
    let response = app.get_as("/echo/api/v1/echo", &valid).await;
    assert_eq!(limit_headers(&response), Some((3, 2)));
    json_with_status(response, 200).await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fresh_tokens_from_one_address_hit_its_ceiling() {
    let app = app_with_limits(60, 600, 1).await;
    for _ in 0..PER_IP_CEILING_FACTOR {
        let response = write_as(&app, Some(&random_token())).await;
        assert_eq!(limit_headers(&response), Some((1, 0)));
        json_with_status(response, 200).await;
    }
    let limit = assert_too_many(write_as(&app, Some(&random_token())).await).await;
    assert_eq!(limit, PER_IP_CEILING_FACTOR);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_is_limited_per_address_whatever_the_token() {
    let app = app_with_limits(3, 600, 120).await;
    let path = "/auth/api/v1/no-such-endpoint";
    let first = app.get(path).await;
    assert_eq!(limit_headers(&first), Some((3, 2)));
    json_with_status(first, 404).await;
    let second = app.get_as(path, &random_token()).await;
    assert_eq!(limit_headers(&second), Some((3, 1)));
    let third = app
        .client
        .post(app.url(path))
        .bearer_auth(random_token())
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(limit_headers(&third), Some((3, 0)));
    assert_eq!(assert_too_many(app.get(path).await).await, 3);

    // The read and write budgets of the same address are untouched.
    assert_eq!(limit_headers(&read_as(&app, None).await), Some((600, 599)));
    assert_eq!(limit_headers(&write_as(&app, None).await), Some((120, 119)));
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_and_openapi_are_neither_limited_nor_counted() {
    let app = app_with_limits(1, 2, 1).await;
    for _ in 0..3 {
        for response in [
            app.auth_health().await,
            app.core_health().await,
            app.get("/api/openapi.json").await,
            app.liveness().await,
        ] {
            assert_eq!(limit_headers(&response), None);
            assert_eq!(response.status(), 200);
        }
        // Ready or not yet (before the workers' first report: 503), never limited.
        assert_eq!(limit_headers(&app.extended_health().await), None);
        assert_eq!(limit_headers(&app.readiness().await), None);
    }
    assert_eq!(limit_headers(&read_as(&app, None).await), Some((2, 1)));
    assert_eq!(
        limit_headers(&app.get("/auth/api/v1/no-such-endpoint").await),
        Some((1, 0))
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_limit_of_zero_turns_a_class_off() {
    let app = app_with_limits(0, 0, 2).await;
    for _ in 0..20 {
        let response = read_as(&app, None).await;
        assert_eq!(limit_headers(&response), None);
        json_with_status(response, 200).await;
        let response = app.get("/auth/api/v1/no-such-endpoint").await;
        assert_eq!(limit_headers(&response), None);
        json_with_status(response, 404).await;
    }
    assert_eq!(limit_headers(&write_as(&app, None).await), Some((2, 1)));
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_contract_defaults_apply_without_configuration() {
    let app = spawn_app(Backend::Sqlite).await;
    let token = app.token("tenant-a", "user-a", "member").await;
    assert_eq!(
        limit_headers(&read_as(&app, Some(&token)).await),
        Some((600, 599))
    );
    assert_eq!(
        limit_headers(&write_as(&app, Some(&token)).await),
        Some((120, 119))
    );
    assert_eq!(
        limit_headers(&app.get("/auth/api/v1/no-such-endpoint").await),
        Some((60, 59))
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_a_trusted_proxy_each_forwarded_client_has_its_own_budget() {
    let path = "/auth/api/v1/no-such-endpoint";
    let from = |app: &TestApp, client: &'static str| {
        app.client
            .get(app.url(path))
            .header("x-forwarded-for", client)
            .send()
    };
    // Without a trusted proxy the header is ignored: both "clients" share the peer's budget.
    let app = app_with_limits(2, 600, 120).await;
    assert_eq!(
        limit_headers(&from(&app, "203.0.113.1").await.unwrap()),
        Some((2, 1))
    );
    assert_eq!(
        limit_headers(&from(&app, "203.0.113.2").await.unwrap()),
        Some((2, 0))
    );
    assert_too_many(from(&app, "203.0.113.3").await.unwrap()).await;
    app.stop().await;

    // With the loopback peer trusted, each forwarded client counts on its own.
    let app = spawn_app_with(
        Backend::Sqlite,
        AppOptions {
            configure: Some(Box::new(|config: &mut Config| {
                config.rate_limits.auth_per_minute = 2;
                config.http.trusted_proxies = TrustedProxies::parse("127.0.0.1").unwrap();
            })),
            ..AppOptions::default()
        },
    )
    .await;
    for _ in 0..2 {
        json_with_status(from(&app, "203.0.113.1").await.unwrap(), 404).await;
    }
    assert_too_many(from(&app, "203.0.113.1").await.unwrap()).await;
    let other = from(&app, "203.0.113.2").await.unwrap();
    assert_eq!(
        limit_headers(&other),
        Some((2, 1)),
        "another client's own budget"
    );
    // A client cannot escape its bucket by writing another address before its own.
    assert_too_many(from(&app, "198.51.100.7, 203.0.113.1").await.unwrap()).await;
    app.stop().await;
}
