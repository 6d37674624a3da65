//! Internal-call signatures bound to the operation (point 1; CONTRACT §5): a signed
//! call captured on one method and path is refused (401) on any other, and changes nothing;
//! bodies of internal calls refuse unknown fields (422). Real notes engine, real host, both
//! databases.

use serde_json::{Value, json};

use crate::database_test;
use crate::helpers::{
    AppOptions, Backend, TestApp, TestDatabase, json_with_status, spawn_app_with,
};

const ORCHESTRATION: &str = "/core/api/internal/orchestration";
const NOTES_INTERNAL: &str = "/notes/api/internal/notes";

fn uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// A host serving the real notes engine (tenant and user provisioning).
async fn notes_host(backend: Backend) -> TestApp {
    let database = TestDatabase::new(backend).await;
    crate::components::install_engines(&database.data_dir.join("plugins"), &["notes"]);
    spawn_app_with(
        backend,
        AppOptions {
            database: Some(database),
            ..AppOptions::default()
        },
    )
    .await
}

/// Sends `body` with a given `X-Service-Signature` (a captured one, replayed), expecting
/// `status`; returns the JSON answer.
async fn send(
    app: &TestApp,
    method: reqwest::Method,
    path: &str,
    signature: &str,
    body: &str,
    status: u16,
) -> Value {
    let mut request = app
        .client
        .request(method, app.url(path))
        .header("x-service-signature", signature);
    if !body.is_empty() {
        request = request
            .header("content-type", "application/json")
            .body(body.to_owned());
    }
    let response = request.send().await.expect("sending an internal call");
    json_with_status(response, status).await
}

/// Sends `body` to `path` signed for that very call, and returns the signature used: what an
/// attacker on the path could capture.
async fn signed_call(
    app: &TestApp,
    method: reqwest::Method,
    path: &str,
    body: &str,
    status: u16,
) -> (String, Value) {
    let signature = app.internal_signature(method.as_str(), path, body.as_bytes());
    let answer = send(app, method, path, &signature, body, status).await;
    (signature, answer)
}

/// A tenant provisioned through the orchestrator, a user of it on notes, and one note of that
/// user. Returns (tenant id, user id, token, note id, the user provisioning body).
async fn tenant_with_a_note(app: &TestApp) -> (String, String, String, String, String) {
    let tenant_id = uuid();
    let user_id = uuid();
    signed_call(
        app,
        reqwest::Method::POST,
        &format!("{ORCHESTRATION}/provision/tenant"),
        &json!({ "tenant_id": tenant_id, "tenant_short_id": "acme", "name": "Acme" }).to_string(),
        202,
    )
    .await;
    let user_body = json!({
        "tenant_id": tenant_id, "user_id": user_id, "email": "ada@example.com",
        "first_name": "Ada", "last_name": "Lovelace", "type": "user",
    })
    .to_string();
    signed_call(
        app,
        reqwest::Method::POST,
        &format!("{ORCHESTRATION}/provision/user"),
        &user_body,
        202,
    )
    .await;
    let token = app.token(&tenant_id, &user_id, "editor").await;
    let note = json_with_status(
        app.post_as("/notes/api/v1/notes", &token, &json!({ "title": "Kept" }))
            .await,
        201,
    )
    .await;
    let note_id = note["data"]["id"].as_str().unwrap().to_owned();
    (tenant_id, user_id, token, note_id, user_body)
}

/// The note is still there for its owner, who is still provisioned.
async fn assert_untouched(app: &TestApp, token: &str, note_id: &str) {
    json_with_status(
        app.get_as(&format!("/notes/api/v1/notes/{note_id}"), token)
            .await,
        200,
    )
    .await;
    let status = json_with_status(app.get_as("/notes/api/v1/status", token).await, 200).await;
    assert_eq!(status["data"]["tenant_provisioned"], true, "{status}");
    assert_eq!(status["data"]["user_provisioned"], true, "{status}");
}

database_test!(
    a_captured_provision_user_call_replayed_to_deprovision_user_is_refused,
    |backend| async move {
        let app = notes_host(backend).await;
        let (_, _, token, note_id, user_body) = tenant_with_a_note(&app).await;

        // The user is provisioned again (idempotent) and the call captured, at the host's
        // orchestration endpoint and at the engine's own internal endpoint.
        for (provision, deprovision) in [
            (
                format!("{ORCHESTRATION}/provision/user"),
                format!("{ORCHESTRATION}/deprovision/user"),
            ),
            (
                format!("{NOTES_INTERNAL}/provision/user"),
                format!("{NOTES_INTERNAL}/deprovision/user"),
            ),
        ] {
            let status = if provision.starts_with(ORCHESTRATION) {
                202
            } else {
                200
            };
            let (captured, _) =
                signed_call(&app, reqwest::Method::POST, &provision, &user_body, status).await;
            let replayed = send(
                &app,
                reqwest::Method::POST,
                &deprovision,
                &captured,
                &user_body,
                401,
            )
            .await;
            assert!(replayed["message"].is_string(), "{replayed}");
            assert_untouched(&app, &token, &note_id).await;
        }
        app.stop().await;
    }
);

database_test!(
    a_provision_tenant_body_replayed_to_an_engine_deprovision_path_is_refused,
    |backend| async move {
        let app = notes_host(backend).await;
        let (tenant_id, _, token, note_id, _) = tenant_with_a_note(&app).await;

        let body = json!({ "tenant_id": tenant_id, "tenant_short_id": "acme", "name": "Acme" })
            .to_string();
        let (captured, _) = signed_call(
            &app,
            reqwest::Method::POST,
            &format!("{ORCHESTRATION}/provision/tenant"),
            &body,
            202,
        )
        .await;
        for path in [
            format!("{NOTES_INTERNAL}/deprovision/tenant"),
            format!("{ORCHESTRATION}/deprovision/tenant"),
            // The same path with a query string added is another request target.
            format!("{ORCHESTRATION}/provision/tenant?again=1"),
        ] {
            send(&app, reqwest::Method::POST, &path, &captured, &body, 401).await;
        }
        assert_untouched(&app, &token, &note_id).await;
        app.stop().await;
    }
);

database_test!(
    an_empty_body_status_signature_works_for_its_own_tenant_and_path_only,
    |backend| async move {
        let app = notes_host(backend).await;
        let (tenant_id, ..) = tenant_with_a_note(&app).await;
        let (other_tenant, ..) = tenant_with_a_note(&app).await;

        let status_path = format!("{ORCHESTRATION}/provision/tenant/{tenant_id}/status");
        let (captured, status) =
            signed_call(&app, reqwest::Method::GET, &status_path, "", 200).await;
        assert_eq!(status["data"]["tenant_id"], tenant_id);

        // Not for another tenant's status, not as a retry of the same tenant.
        send(
            &app,
            reqwest::Method::GET,
            &format!("{ORCHESTRATION}/provision/tenant/{other_tenant}/status"),
            &captured,
            "",
            401,
        )
        .await;
        send(
            &app,
            reqwest::Method::POST,
            &format!("{ORCHESTRATION}/provision/tenant/{tenant_id}/retry"),
            &captured,
            "",
            401,
        )
        .await;
        // Its own call still verifies (within the window).
        send(&app, reqwest::Method::GET, &status_path, &captured, "", 200).await;
        app.stop().await;
    }
);

database_test!(
    internal_call_bodies_refuse_unknown_fields,
    |backend| async move {
        let app = notes_host(backend).await;
        let tenant_id = uuid();
        let user_id = uuid();
        let tenant_body = json!({
            "tenant_id": tenant_id, "tenant_short_id": "acme", "name": "Acme", "plan": "gold",
        });
        let user_body = json!({
            "tenant_id": tenant_id, "user_id": user_id, "email": "ada@example.com",
            "first_name": "Ada", "last_name": "Lovelace", "type": "user", "role": "owner",
        });
        for (path, body, field) in [
            (
                format!("{ORCHESTRATION}/provision/tenant"),
                tenant_body.clone(),
                "plan",
            ),
            (
                format!("{NOTES_INTERNAL}/provision/tenant"),
                tenant_body.clone(),
                "plan",
            ),
            (
                format!("{ORCHESTRATION}/provision/user"),
                user_body.clone(),
                "role",
            ),
            (
                format!("{NOTES_INTERNAL}/provision/user"),
                user_body.clone(),
                "role",
            ),
            (
                format!("{ORCHESTRATION}/deprovision/user"),
                json!({ "tenant_id": tenant_id, "user_id": user_id, "email": "x@example.com" }),
                "email",
            ),
            (
                format!("{NOTES_INTERNAL}/deprovision/tenant"),
                json!({ "tenant_id": tenant_id, "name": "Acme" }),
                "name",
            ),
            (
                format!("{ORCHESTRATION}/provision/tenant/{tenant_id}/retry"),
                json!({ "force": true }),
                "force",
            ),
        ] {
            let answer = json_with_status(app.post_signed(&path, &body).await, 422).await;
            assert!(answer["message"].is_string(), "{path}: {answer}");
            assert_eq!(
                answer["errors"][field],
                json!(["unknown"]),
                "{path}: {answer}"
            );
        }
        // Nothing was provisioned.
        json_with_status(
            app.get_signed(&format!(
                "{ORCHESTRATION}/provision/tenant/{tenant_id}/status"
            ))
            .await,
            404,
        )
        .await;
        app.stop().await;
    }
);
