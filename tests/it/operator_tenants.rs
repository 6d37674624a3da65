//! The operator's tenants over HTTP: only the operator token may list, create,
//! disable, enable and delete them; answers and refusals match `tessera admin`'s, and a
//! deletion must name the slug twice.

use serde_json::{Value, json};

use crate::database_test;
use crate::helpers::{TestApp, json_with_status, spawn_app_with_engines};

fn operator_token(app: &TestApp) -> String {
    app.admin(&["operator-token"]).json()["operator_token"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn send(
    app: &TestApp,
    method: reqwest::Method,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> reqwest::Response {
    let request = app.client.request(method, app.url(path)).bearer_auth(token);
    match body {
        Some(body) => request.json(&body),
        None => request,
    }
    .send()
    .await
    .unwrap()
}

database_test!(
    the_operator_creates_disables_and_deletes_tenants_and_nobody_else_may,
    |backend| async move {
        use reqwest::Method;
        let app = spawn_app_with_engines(backend, &["usermanager"], |_| {}).await;
        let operator = operator_token(&app);

        // Not the operator: 401, nothing created.
        let created_by_nobody = send(
            &app,
            Method::POST,
            "/core/api/operator/tenants",
            "not-the-token",
            Some(json!({ "slug": "acme", "name": "Acme" })),
        )
        .await;
        assert_eq!(created_by_nobody.status(), 401);

        // Refusals in the API's shapes.
        let invalid = send(
            &app,
            Method::POST,
            "/core/api/operator/tenants",
            &operator,
            Some(json!({ "slug": "A", "name": "" })),
        )
        .await;
        let invalid = json_with_status(invalid, 422).await;
        assert!(
            invalid["errors"]["slug"].is_array() && invalid["errors"]["name"].is_array(),
            "{invalid}"
        );

        let created = send(
            &app,
            Method::POST,
            "/core/api/operator/tenants",
            &operator,
            Some(json!({ "slug": "acme", "name": "Acme" })),
        )
        .await;
        let created = json_with_status(created, 201).await;
        assert_eq!(created["data"]["slug"], "acme");
        assert_eq!(created["data"]["provisioning"]["status"], "completed");
        assert_eq!(
            created["data"]["provisioning"]["engines"]["usermanager"]["status"],
            "provisioned"
        );
        let again = send(
            &app,
            Method::POST,
            "/core/api/operator/tenants",
            &operator,
            Some(json!({ "slug": "acme", "name": "Other" })),
        )
        .await;
        assert_eq!(again.status(), 409);

        // Listed as the CLI lists it; disabled and enabled.
        let listed = json_with_status(
            send(
                &app,
                Method::GET,
                "/core/api/operator/tenants",
                &operator,
                None,
            )
            .await,
            200,
        )
        .await;
        let cli = app.admin(&["list-tenants"]).json();
        assert_eq!(listed["data"], cli);
        assert_eq!(listed["data"][0]["disabled_at"], Value::Null);
        let disabled = json_with_status(
            send(
                &app,
                Method::POST,
                "/core/api/operator/tenants/acme/disable",
                &operator,
                None,
            )
            .await,
            200,
        )
        .await;
        assert_eq!(disabled["data"]["disabled"], true);
        assert_eq!(disabled["data"]["changed"], true);
        let listed = json_with_status(
            send(
                &app,
                Method::GET,
                "/core/api/operator/tenants",
                &operator,
                None,
            )
            .await,
            200,
        )
        .await;
        assert!(listed["data"][0]["disabled_at"].is_string());
        let enabled = json_with_status(
            send(
                &app,
                Method::POST,
                "/core/api/operator/tenants/acme/enable",
                &operator,
                None,
            )
            .await,
            200,
        )
        .await;
        assert_eq!(enabled["data"]["disabled"], false);
        assert_eq!(
            send(
                &app,
                Method::POST,
                "/core/api/operator/tenants/nobody/disable",
                &operator,
                None
            )
            .await
            .status(),
            404
        );

        // Deleting needs the slug again; then everything of it is gone.
        for path in [
            "/core/api/operator/tenants/acme",
            "/core/api/operator/tenants/acme?confirm=acme-corp",
        ] {
            let refused =
                json_with_status(send(&app, Method::DELETE, path, &operator, None).await, 422)
                    .await;
            assert!(refused["errors"]["confirm"].is_array(), "{refused}");
        }
        assert_eq!(
            app.admin(&["list-tenants"])
                .json()
                .as_array()
                .unwrap()
                .len(),
            1
        );
        let deleted = json_with_status(
            send(
                &app,
                Method::DELETE,
                "/core/api/operator/tenants/acme?confirm=acme",
                &operator,
                None,
            )
            .await,
            200,
        )
        .await;
        assert_eq!(deleted["data"]["slug"], "acme");
        assert!(
            app.admin(&["list-tenants"])
                .json()
                .as_array()
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            send(
                &app,
                Method::DELETE,
                "/core/api/operator/tenants/acme?confirm=acme",
                &operator,
                None
            )
            .await
            .status(),
            404
        );
    }
);
