//! Guests in core (CONTRACT §4): a guest token reads its own inbox (and marks its items read)
//! and nothing else; every other core route, read or write, is a 403, including any route the
//! OpenAPI document lists that this test does not name. Public endpoints stay public.

use serde_json::{Value, json};

use crate::database_test;
use crate::helpers::{AppOptions, Backend, TestApp, eventually, json_with_status, spawn_app_with};

const INBOX: &str = "/core/api/v1/inbox";

async fn spawn(backend: Backend) -> TestApp {
    spawn_app_with(backend, AppOptions::unlimited()).await
}

/// A guest of `acme`, logged in; returns (user_id, access token).
async fn guest(app: &TestApp) -> (String, String) {
    let user = app
        .admin(&[
            "create-user",
            "--tenant",
            "acme",
            "--email",
            "gus@example.com",
            "--password",
            "Correct1horse",
            "--role",
            "viewer",
            "--type",
            "guest",
        ])
        .json();
    let login = json_with_status(
        app.post_json(
            "/auth/api/v1/auth/login",
            &json!({ "login": "gus@example.com", "password": "Correct1horse" }),
        )
        .await,
        200,
    )
    .await;
    (
        user["user_id"].as_str().unwrap().to_owned(),
        login["data"]["access_token"].as_str().unwrap().to_owned(),
    )
}

async fn send(
    app: &TestApp,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: &Value,
) -> reqwest::Response {
    let method = reqwest::Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
    let mut request = app.client.request(method.clone(), app.url(path));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    if method != reqwest::Method::GET && method != reqwest::Method::DELETE {
        request = request.json(body);
    }
    request.send().await.expect("request")
}

database_test!(
    a_guest_reads_its_own_inbox_and_nothing_else_in_core,
    |backend| async move {
        let app = spawn(backend).await;
        let tenant = app.create_tenant("acme");
        let (guest_id, guest_token) = guest(&app).await;
        let editor = app
            .token(&tenant, &uuid::Uuid::new_v4().to_string(), "editor")
            .await;
        let owner = app
            .token(&tenant, &uuid::Uuid::new_v4().to_string(), "owner")
            .await;
        // A task assigned to the guest (its inbox item), and a workflow.
        let task = app
            .create_entity(
                &editor,
                "task",
                json!({"title": "Ship", "assignee_id": guest_id}),
            )
            .await;
        let entity_id = task["entity_id"].as_str().unwrap().to_owned();
        let workflow = json_with_status(
            app.post_as(
                "/core/api/v1/workflows",
                &owner,
                &json!({
                    "name": "Close",
                    "trigger_event": "entity.created",
                    "actions": [{ "type": "update_field", "config": { "field": "closed", "value": true } }],
                }),
            )
            .await,
            201,
        )
        .await;
        let workflow_id = workflow["data"]["id"].as_str().unwrap().to_owned();
        let item: Value = eventually(20, "the guest's inbox item", || async {
            let inbox = json_with_status(app.get_as(INBOX, &guest_token).await, 200).await;
            inbox["data"].as_array().unwrap().first().cloned()
        })
        .await;
        let item_id = item["id"].as_str().unwrap().to_owned();

        // Every core route the API documents, with the guest's token.
        let openapi = app.openapi().await;
        let mut checked = Vec::new();
        for (template, operations) in openapi["paths"].as_object().unwrap() {
            if !template.starts_with("/core/api/v1/") && template != "/core/api/metrics" {
                continue;
            }
            for method in operations.as_object().unwrap().keys() {
                let path = template
                    .replace("/search", "/search?q=ship")
                    .replace("{code}", "task")
                    .replace(
                        "{id}",
                        if template.starts_with(INBOX) {
                            &item_id
                        } else if template.contains("workflows") {
                            &workflow_id
                        } else {
                            &entity_id
                        },
                    );
                let body = json!({ "type": "entity.create", "payload": { "family": "task", "fields": {} } });
                let status = send(&app, method, &path, Some(&guest_token), &body)
                    .await
                    .status()
                    .as_u16();
                let expected = match (method.as_str(), template.as_str()) {
                    // Its own inbox.
                    ("get", INBOX) | ("post", "/core/api/v1/inbox/{id}/read") => 200,
                    // The engine registry is public, with a token or without.
                    ("get", "/core/api/v1/engines") => 200,
                    // Realtime lets a guest in for its inbox topic alone (the topic rules are
                    // `realtime::refusals_answer_in_the_contracts_shapes`): a ticket is issued,
                    // a plain GET is no WebSocket upgrade, an event stream names no topic.
                    ("post", "/core/api/v1/realtime/tickets") => 201,
                    ("get", "/core/api/v1/realtime") => 400,
                    ("get", "/core/api/v1/realtime/events") => 422,
                    _ => 403,
                };
                assert_eq!(status, expected, "{method} {path}");
                checked.push(format!("{method} {template}"));
            }
        }
        // The routes of the issue are among those checked.
        for route in [
            "get /core/api/v1/entities",
            "get /core/api/v1/entities/{id}",
            "get /core/api/v1/families",
            "post /core/api/v1/intentions",
            "get /core/api/v1/timeline",
            "get /core/api/v1/search",
            "get /core/api/v1/workflows",
            "get /core/api/metrics",
            "post /core/api/v1/inbox/{id}/read",
        ] {
            assert!(
                checked.iter().any(|checked| checked == route),
                "{route}: {checked:?}"
            );
        }
        // Marking its own item read worked; nothing leaked in the meantime.
        let inbox = json_with_status(app.get_as(INBOX, &guest_token).await, 200).await;
        assert!(inbox["data"][0]["read_at"].is_string());
        assert_eq!(
            app.get_as("/core/api/v1/entities", &editor).await.status(),
            200,
            "members still read"
        );

        // Public endpoints stay public.
        for path in [
            "/core/api/health",
            "/core/api/metrics",
            "/core/api/v1/engines",
        ] {
            assert_eq!(app.get(path).await.status(), 200, "{path}");
        }
        // The guest is still itself outside core.
        let me =
            json_with_status(app.get_as("/auth/api/v1/auth/me", &guest_token).await, 200).await;
        assert_eq!(me["data"]["type"], "guest");
        app.stop().await;
    }
);
