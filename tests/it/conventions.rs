//! The HTTP conventions every route shares: correlation ids, JSON errors for 400/404/405/413/
//! 422/500, unknown query parameters, and a panic that leaves the server serving.

use serde_json::json;

use crate::database_test;
use crate::helpers::{Backend, TEST_BODY_LIMIT, json_with_status, spawn_app};

fn correlation_id(response: &reqwest::Response) -> String {
    response
        .headers()
        .get("x-correlation-id")
        .expect("every response carries X-Correlation-Id")
        .to_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn correlation_ids_are_kept_when_well_formed_and_generated_otherwise() {
    let app = spawn_app(Backend::Sqlite).await;

    let kept = app
        .client
        .get(app.url("/core/api/health"))
        .header("x-correlation-id", "client-trace.42")
        .send()
        .await
        .unwrap();
    assert_eq!(kept.status(), 200);
    assert_eq!(correlation_id(&kept), "client-trace.42");

    let generated = app.get("/core/api/health").await;
    let id = correlation_id(&generated);
    assert!(
        uuid::Uuid::parse_str(&id).is_ok(),
        "a generated id is a UUID: {id}"
    );
    assert_ne!(
        id,
        correlation_id(&app.get("/core/api/health").await),
        "each request gets its own"
    );

    let malformed = app
        .client
        .get(app.url("/core/api/health"))
        .header("x-correlation-id", "not ok; <script>")
        .send()
        .await
        .unwrap();
    let replaced = correlation_id(&malformed);
    assert!(
        uuid::Uuid::parse_str(&replaced).is_ok(),
        "a malformed id is replaced: {replaced}"
    );
}

#[tokio::test]
async fn error_responses_carry_the_correlation_id_and_a_json_message() {
    let app = spawn_app(Backend::Sqlite).await;
    let send = |path: &'static str| {
        app.client
            .get(app.url(path))
            .header("x-correlation-id", "trace-err")
            .send()
    };

    let not_found = send("/no/such/route").await.unwrap();
    assert_eq!(correlation_id(&not_found), "trace-err");
    let body = json_with_status(not_found, 404).await;
    assert!(body["message"].is_string());

    let unprocessable = app
        .client
        .post(app.url("/test/echo"))
        .header("x-correlation-id", "trace-422")
        .json(&json!({ "count": 1 }))
        .send()
        .await
        .unwrap();
    assert_eq!(correlation_id(&unprocessable), "trace-422");
    let body = json_with_status(unprocessable, 422).await;
    assert_eq!(body["errors"], json!({ "name": ["required"] }));
    assert!(body["message"].is_string());

    let server_error = send("/test/panic").await.unwrap();
    assert_eq!(correlation_id(&server_error), "trace-err");
    let body = json_with_status(server_error, 500).await;
    assert!(
        !body["message"].as_str().unwrap().contains("deliberate"),
        "panics stay opaque: {body}"
    );

    // The server keeps serving after the panic.
    json_with_status(app.get("/core/api/health").await, 200).await;
}

#[tokio::test]
async fn validation_errors_use_rule_names_and_field_paths() {
    let app = spawn_app(Backend::Sqlite).await;
    let body = json_with_status(
        app.post_json("/test/echo", &json!({ "name": "far too long a name" }))
            .await,
        422,
    )
    .await;
    assert_eq!(body["errors"], json!({ "name": ["max:10"] }));

    let body = json_with_status(
        app.post_json("/test/echo", &json!({ "name": "ok", "count": "three" }))
            .await,
        422,
    )
    .await;
    assert_eq!(body["errors"], json!({ "count": ["integer"] }));

    let body = json_with_status(
        app.post_json("/test/echo", &json!({ "name": "ok", "count": 3 }))
            .await,
        200,
    )
    .await;
    assert_eq!(body, json!({ "data": { "name": "ok", "count": 3 } }));

    // A body must be an object: an array of the fields in order is not one.
    for not_an_object in [json!(["ok", 3]), json!("ok"), json!(null)] {
        let body = json_with_status(app.post_json("/test/echo", &not_an_object).await, 422).await;
        assert_eq!(
            body["errors"],
            json!({ "body": ["object"] }),
            "{not_an_object}"
        );
    }
    let body = json_with_status(
        app.post_json(
            "/auth/api/v1/auth/login",
            &json!(["ada@example.com", "Correct1horse"]),
        )
        .await,
        422,
    )
    .await;
    assert_eq!(body["errors"], json!({ "body": ["object"] }));
}

#[tokio::test]
async fn malformed_json_and_unknown_query_parameters_are_bad_requests() {
    let app = spawn_app(Backend::Sqlite).await;
    let response = app
        .post_raw("/test/echo", "application/json", "{\"name\": ")
        .await;
    assert!(!correlation_id(&response).is_empty());
    let body = json_with_status(response, 400).await;
    assert!(body["message"].as_str().unwrap().contains("JSON"));

    let body = json_with_status(
        app.post_raw("/test/echo", "text/plain", "name=x").await,
        400,
    )
    .await;
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("application/json")
    );

    let response = app.get("/core/api/health/extended?verbose=1").await;
    assert!(!correlation_id(&response).is_empty());
    let body = json_with_status(response, 400).await;
    assert!(
        body["message"].as_str().unwrap().contains("verbose"),
        "{body}"
    );
}

#[tokio::test]
async fn bodies_over_the_limit_are_refused_with_413() {
    let app = spawn_app(Backend::Sqlite).await;
    let oversized = format!("{{\"name\": \"{}\"}}", "x".repeat(TEST_BODY_LIMIT + 1));
    let response = app
        .post_raw("/test/echo", "application/json", oversized)
        .await;
    assert!(!correlation_id(&response).is_empty());
    let body = json_with_status(response, 413).await;
    assert!(body["message"].is_string());

    // Without a Content-Length (a streamed body) the limit holds as well.
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        (0..2).map(|_| Ok(vec![b' '; TEST_BODY_LIMIT])).collect();
    let stream = reqwest::Body::wrap_stream(futures_util::stream::iter(chunks));
    let response = app.post_raw("/test/echo", "application/json", stream).await;
    json_with_status(response, 413).await;
}

#[tokio::test]
async fn wrong_methods_get_a_json_405() {
    let app = spawn_app(Backend::Sqlite).await;
    let response = app
        .client
        .delete(app.url("/core/api/health"))
        .send()
        .await
        .unwrap();
    assert!(!correlation_id(&response).is_empty());
    assert!(
        response.headers().get("allow").is_some(),
        "405 keeps its Allow header"
    );
    let body = json_with_status(response, 405).await;
    assert!(body["message"].is_string());
}

database_test!(conventions_hold_on_every_database, |backend| async move {
    let app = spawn_app(backend).await;
    let response = app.get("/no/such/route").await;
    assert!(!correlation_id(&response).is_empty());
    json_with_status(response, 404).await;
    app.stop().await;
});
