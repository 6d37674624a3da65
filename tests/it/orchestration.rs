//! Orchestration: provisioning tenants and users across engines, statuses, retry, deprovision.

use serde_json::{Value, json};

use crate::database_test;
use crate::helpers::{
    AppOptions, TestApp, TestDatabase, json_with_status, run_admin, spawn_app_with,
};

const BASE: &str = "/core/api/internal/orchestration";

fn uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// A host serving the `flaky-provision` test component (fails a tenant's first provisioning)
/// and the real `notes` engine (tenant and user provisioning).
async fn spawn_flaky_and_notes(backend: crate::helpers::Backend) -> TestApp {
    let database = TestDatabase::new(backend).await;
    crate::components::install_engines(&database.data_dir.join("plugins"), &["notes"]);
    spawn_app_with(
        backend,
        AppOptions {
            plugins: vec!["flaky-provision"],
            database: Some(database),
            ..AppOptions::default()
        },
    )
    .await
}

/// The tenant's engine storage entries, and (once it has none) its scope numbers too: a
/// removed tenant leaves neither.
async fn engine_kv_rows(app: &TestApp, tenant_id: &str) -> i64 {
    let database = &app.state().database;
    tessera_host::on_pool!(database, pool => sqlx::query_scalar::<_, i64>(
        "SELECT CASE WHEN entries > 0 THEN entries ELSE scopes END
         FROM (SELECT (SELECT COUNT(*) FROM engine_kv WHERE tenant_id = $1) AS entries,
                      (SELECT COUNT(*) FROM engine_scopes WHERE tenant_id = $1) AS scopes)
              AS counted",
    )
    .bind(tenant_id)
    .fetch_one(pool)
    .await)
    .unwrap()
}

database_test!(
    a_failing_engine_gives_partial_failure_and_retry_completes_it,
    |backend| async move {
        let app = spawn_flaky_and_notes(backend).await;
        let tenant_id = uuid();
        let other_tenant = uuid();

        let provisioned = json_with_status(
            app.post_signed(
                &format!("{BASE}/provision/tenant"),
                &json!({ "tenant_id": tenant_id, "tenant_short_id": "acme", "name": "Acme" }),
            )
            .await,
            202,
        )
        .await;
        let data = &provisioned["data"];
        assert_eq!(data["tenant_id"], tenant_id);
        assert_eq!(data["status"], "partial_failure");
        assert_eq!(data["engines"]["notes"], json!({ "status": "provisioned" }));
        assert_eq!(data["engines"]["flaky-provision"]["status"], "failed");
        assert!(
            data["engines"]["flaky-provision"]["error"]
                .as_str()
                .unwrap()
                .contains("simulated provisioning failure"),
            "{provisioned}"
        );

        // The failure stopped nothing: the other engine provisioned and the host serves.
        let token = app.token(&tenant_id, &uuid(), "viewer").await;
        let notes = json_with_status(app.get_as("/notes/api/v1/status", &token).await, 200).await;
        assert_eq!(notes["data"]["tenant_provisioned"], true);

        let status = json_with_status(
            app.get_signed(&format!("{BASE}/provision/tenant/{tenant_id}/status"))
                .await,
            200,
        )
        .await;
        let data = &status["data"];
        assert_eq!(data["status"], "partial_failure");
        assert_eq!(data["engines"]["notes"]["status"], "provisioned");
        assert!(data["engines"]["notes"]["provisioned_at"].is_string());
        assert_eq!(data["engines"]["flaky-provision"]["status"], "failed");
        assert!(data["engines"]["flaky-provision"]["error"].is_string());
        assert!(data["engines"]["flaky-provision"]["failed_at"].is_string());

        let retried = json_with_status(
            app.post_signed(
                &format!("{BASE}/provision/tenant/{tenant_id}/retry"),
                &json!({}),
            )
            .await,
            202,
        )
        .await;
        let data = &retried["data"];
        assert_eq!(data["tenant_id"], tenant_id);
        assert_eq!(data["status"], "completed");
        assert_eq!(data["retried_engines"], json!(["flaky-provision"]));
        let engines = data["engines"].as_object().unwrap();
        assert_eq!(engines.len(), 1, "only the retried engine is reported");
        assert_eq!(engines["flaky-provision"]["status"], "provisioned");
        assert!(engines["flaky-provision"]["provisioned_at"].is_string());

        let status = json_with_status(
            app.get_signed(&format!("{BASE}/provision/tenant/{tenant_id}/status"))
                .await,
            200,
        )
        .await;
        assert_eq!(status["data"]["status"], "completed");
        assert_eq!(
            status["data"]["engines"]["flaky-provision"]["status"],
            "provisioned"
        );
        let attempts = json_with_status(
            app.get_as("/flaky-provision/api/v1/attempts", &token).await,
            200,
        )
        .await;
        assert_eq!(attempts["data"]["attempts"], 2, "notes was not run again");

        // Nothing left to retry.
        let again = json_with_status(
            app.post_signed(
                &format!("{BASE}/provision/tenant/{tenant_id}/retry"),
                &json!({}),
            )
            .await,
            202,
        )
        .await;
        assert_eq!(again["data"]["retried_engines"], json!([]));
        assert_eq!(again["data"]["status"], "completed");

        // A user, then a second tenant whose data must survive the first one's removal.
        let user_id = uuid();
        let user = json_with_status(
            app.post_signed(
                &format!("{BASE}/provision/user"),
                &json!({
                    "tenant_id": tenant_id, "tenant_short_id": "acme", "user_id": user_id,
                    "email": "ada@example.com", "first_name": "Ada", "last_name": "Lovelace",
                    "type": "user",
                }),
            )
            .await,
            202,
        )
        .await;
        assert_eq!(user["data"]["user_id"], user_id);
        assert_eq!(user["data"]["status"], "completed");
        assert_eq!(
            user["data"]["engines"],
            json!({ "notes": { "status": "provisioned" } })
        );
        let user_token = app.token(&tenant_id, &user_id, "editor").await;
        let notes =
            json_with_status(app.get_as("/notes/api/v1/status", &user_token).await, 200).await;
        assert_eq!(notes["data"]["user_provisioned"], true);

        let removed = json_with_status(
            app.post_signed(
                &format!("{BASE}/deprovision/user"),
                &json!({ "tenant_id": tenant_id, "user_id": user_id }),
            )
            .await,
            202,
        )
        .await;
        assert_eq!(
            removed["data"],
            json!({ "user_id": user_id, "status": "completed" })
        );
        let notes =
            json_with_status(app.get_as("/notes/api/v1/status", &user_token).await, 200).await;
        assert_eq!(notes["data"]["user_provisioned"], false);

        json_with_status(
            app.post_signed(
                &format!("{BASE}/provision/tenant"),
                &json!({ "tenant_id": other_tenant, "tenant_short_id": "globex", "name": "Globex" }),
            )
            .await,
            202,
        )
        .await;
        assert!(engine_kv_rows(&app, &tenant_id).await > 0);
        let other_rows = engine_kv_rows(&app, &other_tenant).await;
        assert!(other_rows > 0);

        let deprovisioned = json_with_status(
            app.post_signed(
                &format!("{BASE}/deprovision/tenant"),
                &json!({ "tenant_id": tenant_id }),
            )
            .await,
            202,
        )
        .await;
        assert_eq!(
            deprovisioned["data"],
            json!({ "tenant_id": tenant_id, "status": "completed" })
        );
        assert_eq!(
            engine_kv_rows(&app, &tenant_id).await,
            0,
            "host storage of the tenant is gone"
        );
        assert_eq!(
            engine_kv_rows(&app, &other_tenant).await,
            other_rows,
            "other tenants keep theirs"
        );
        json_with_status(
            app.get_signed(&format!("{BASE}/provision/tenant/{tenant_id}/status"))
                .await,
            404,
        )
        .await;
        let notes = json_with_status(app.get_as("/notes/api/v1/status", &token).await, 200).await;
        assert_eq!(notes["data"]["tenant_provisioned"], false);
        app.stop().await;
    }
);

database_test!(
    orchestration_requires_a_signature_and_valid_input_and_changes_nothing_otherwise,
    |backend| async move {
        let app = spawn_flaky_and_notes(backend).await;
        let tenant_id = uuid();
        let body = json!({ "tenant_id": tenant_id, "tenant_short_id": "acme", "name": "Acme" });

        let unsigned = app
            .post_json(&format!("{BASE}/provision/tenant"), &body)
            .await;
        json_with_status(unsigned, 401).await;
        let unsigned_status = app
            .get(&format!("{BASE}/provision/tenant/{tenant_id}/status"))
            .await;
        json_with_status(unsigned_status, 401).await;

        let invalid = json_with_status(
            app.post_signed(
                &format!("{BASE}/provision/tenant"),
                &json!({ "tenant_id": "not-a-uuid", "name": "" }),
            )
            .await,
            422,
        )
        .await;
        assert_eq!(invalid["errors"]["tenant_id"], json!(["uuid"]));
        assert_eq!(invalid["errors"]["tenant_short_id"], json!(["required"]));
        assert_eq!(invalid["errors"]["name"], json!(["required"]));
        assert!(invalid["message"].is_string());

        let invalid_user = json_with_status(
            app.post_signed(
                &format!("{BASE}/provision/user"),
                &json!({ "tenant_id": tenant_id, "user_id": uuid(), "email": "nope", "first_name": "A", "last_name": "B", "type": "robot" }),
            )
            .await,
            422,
        )
        .await;
        assert_eq!(invalid_user["errors"]["email"], json!(["email"]));
        assert_eq!(invalid_user["errors"]["type"], json!(["in"]));

        for path in [
            format!("{BASE}/deprovision/tenant"),
            format!("{BASE}/deprovision/user"),
        ] {
            let response = app.post_signed(&path, &json!({})).await;
            let body: Value = json_with_status(response, 422).await;
            assert_eq!(body["errors"]["tenant_id"], json!(["required"]), "{path}");
        }

        // Nothing was recorded and no engine ran.
        json_with_status(
            app.get_signed(&format!("{BASE}/provision/tenant/{tenant_id}/status"))
                .await,
            404,
        )
        .await;
        json_with_status(
            app.post_signed(
                &format!("{BASE}/provision/tenant/{tenant_id}/retry"),
                &json!({}),
            )
            .await,
            404,
        )
        .await;
        assert_eq!(engine_kv_rows(&app, &tenant_id).await, 0);
        app.stop().await;
    }
);

database_test!(
    the_cli_provisions_through_the_orchestrator_and_a_server_retries,
    |backend| async move {
        let app = spawn_flaky_and_notes(backend).await;

        let created = run_admin(
            &app.database,
            &["create-tenant", "--slug", "acme", "--name", "Acme"],
        );
        let created = created.json();
        let tenant_id = created["tenant_id"].as_str().unwrap().to_owned();
        assert_eq!(created["provisioning"]["status"], "partial_failure");
        assert_eq!(
            created["provisioning"]["engines"]["notes"],
            json!({ "status": "provisioned" })
        );
        assert_eq!(
            created["provisioning"]["engines"]["flaky-provision"]["status"],
            "failed"
        );

        // The server sees what the CLI recorded, and its retry completes it.
        let status = json_with_status(
            app.get_signed(&format!("{BASE}/provision/tenant/{tenant_id}/status"))
                .await,
            200,
        )
        .await;
        assert_eq!(status["data"]["status"], "partial_failure");
        let retried = json_with_status(
            app.post_signed(
                &format!("{BASE}/provision/tenant/{tenant_id}/retry"),
                &json!({}),
            )
            .await,
            202,
        )
        .await;
        assert_eq!(retried["data"]["status"], "completed");
        assert_eq!(
            retried["data"]["retried_engines"],
            json!(["flaky-provision"])
        );

        let user = run_admin(
            &app.database,
            &[
                "create-user",
                "--tenant",
                "acme",
                "--email",
                "grace@example.com",
                "--password",
                "Correct-Horse-7-Battery",
            ],
        )
        .json();
        let user_id = user["user_id"].as_str().unwrap();
        let token = app.token(&tenant_id, user_id, "editor").await;
        let notes = json_with_status(app.get_as("/notes/api/v1/status", &token).await, 200).await;
        assert_eq!(notes["data"]["tenant_provisioned"], true);
        assert_eq!(notes["data"]["user_provisioned"], true);

        // The CLI borrowed the engines; the engine list is still the server's.
        let engines = json_with_status(app.get("/core/api/v1/engines").await, 200).await;
        assert!(
            engines["data"]
                .as_array()
                .unwrap()
                .iter()
                .all(|engine| engine["is_active"] == true)
        );
        app.stop().await;
    }
);

database_test!(
    operators_see_each_tenants_state_per_engine_and_retry_from_the_cli,
    |backend| async move {
        let app = spawn_flaky_and_notes(backend).await;
        app.admin(&["create-tenant", "--slug", "acme", "--name", "Acme"])
            .json();
        let engine = |listing: &Value, code: &str| -> Value {
            listing
                .as_array()
                .unwrap()
                .iter()
                .find(|engine| engine["code"] == code)
                .unwrap_or_else(|| panic!("{code} is not listed: {listing}"))
                .clone()
        };

        // The flaky engine failed acme's first provisioning; notes provisioned it.
        let listing = app.admin(&["list-engines"]).json();
        let flaky = engine(&listing, "flaky-provision");
        assert_eq!(flaky["requires_tenant_provision"], true);
        assert_eq!(flaky["tenants"]["acme"]["status"], "failed", "{listing}");
        assert!(flaky["tenants"]["acme"]["error"].is_string(), "{listing}");
        let notes = engine(&listing, "notes");
        assert_eq!(notes["tenants"]["acme"], json!({ "status": "provisioned" }));
        assert!(notes["world"].is_string() && notes["version"].is_string());

        let retried = app
            .admin(&["retry-provisioning", "--tenant", "acme"])
            .json();
        assert_eq!(retried["slug"], "acme");
        assert_eq!(retried["status"], "completed");
        assert_eq!(
            retried["retried"],
            json!({ "flaky-provision": { "status": "provisioned" } })
        );
        let listing = app.admin(&["list-engines"]).json();
        assert_eq!(
            engine(&listing, "flaky-provision")["tenants"]["acme"],
            json!({ "status": "provisioned" })
        );
        // Nothing left to retry; an unknown tenant is an error.
        let again = app
            .admin(&["retry-provisioning", "--tenant", "acme"])
            .json();
        assert_eq!(again["retried"], json!({}));
        let unknown = app.admin(&["retry-provisioning", "--tenant", "nope"]);
        assert!(!unknown.success);
        assert!(unknown.stderr.contains("nope"), "{}", unknown.stderr);

        // For people: one line per engine.
        let table = app.admin(&["list-engines", "--format", "table"]);
        assert!(table.success, "{}", table.stderr);
        let lines: Vec<&str> = table.stdout.lines().collect();
        assert!(
            lines[0].trim_start().starts_with("CODE"),
            "{}",
            table.stdout
        );
        assert_eq!(lines.len(), 3, "{}", table.stdout);
        app.stop().await;
    }
);
