//! The engine runtime through the real host: routing, the registry, the sandbox's limits
//! (deadline, memory cap, traps, oversized responses) and storage isolation, with the
//! purpose-built components of `tests/components/`.

use std::time::Duration;

use serde_json::Value;

use crate::database_test;
use crate::helpers::{
    AppOptions, Backend, json_with_status, spawn_app_with, spawn_app_with_plugins,
};

const MISBEHAVING: [&str; 5] = ["echo", "looper", "memory-bomb", "trapper", "oversized"];

fn tenant() -> String {
    uuid::Uuid::new_v4().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn misbehaving_engines_fail_alone_and_the_host_keeps_serving() {
    let options = AppOptions {
        plugins: MISBEHAVING.to_vec(),
        handle_timeout: Some(Duration::from_millis(1500)),
        ..AppOptions::default()
    };
    let app = spawn_app_with(Backend::Sqlite, options).await;
    let token = app
        .token(&tenant(), &uuid::Uuid::new_v4().to_string(), "editor")
        .await;

    let cases = [
        ("/looper/api/v1/spin", 504, "/looper/api/v1/ok"),
        ("/memory-bomb/api/v1/explode", 502, "/memory-bomb/api/v1/ok"),
        ("/trapper/api/v1/trap", 502, "/trapper/api/v1/ok"),
        ("/oversized/api/v1/huge", 502, "/oversized/api/v1/ok"),
    ];
    for (failing, status, healthy) in cases {
        let response = app.get_as(failing, &token).await;
        assert!(response.headers().get("x-correlation-id").is_some());
        let body = json_with_status(response, status).await;
        assert!(body["message"].is_string(), "{failing}: {body}");
        // The same engine serves its next request, and so do the others and the host.
        json_with_status(app.get_as(healthy, &token).await, 200).await;
        json_with_status(app.get_as("/echo/api/v1/echo", &token).await, 200).await;
        json_with_status(app.core_health().await, 200).await;
    }
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_routes_require_a_valid_token_and_see_the_verified_caller() {
    let app = spawn_app_with_plugins(Backend::Sqlite, &["echo"]).await;
    let tenant_id = tenant();
    let user_id = uuid::Uuid::new_v4().to_string();
    let token = app.token(&tenant_id, &user_id, "viewer").await;

    json_with_status(app.get("/echo/api/v1/echo").await, 401).await;
    json_with_status(app.get_as("/echo/api/v1/echo", "not-a-jwt").await, 401).await;
    let mut tampered = token.clone();
    tampered.pop();
    tampered.push(if token.ends_with('A') { 'B' } else { 'A' });
    json_with_status(app.get_as("/echo/api/v1/echo", &tampered).await, 401).await;

    let response = app
        .client
        .get(app.url("/echo/api/v1/echo?color=blue"))
        .bearer_auth(&token)
        .header("x-correlation-id", "trace-engine-1")
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["x-correlation-id"], "trace-engine-1");
    let body = json_with_status(response, 200).await;
    let caller = &body["data"]["caller"];
    assert_eq!(caller["tenant_id"], tenant_id);
    assert_eq!(caller["user_id"], user_id);
    assert_eq!(caller["role"], "viewer");
    assert_eq!(caller["token_type"], "user");
    assert_eq!(caller["correlation_id"], "trace-engine-1");
    assert_eq!(body["data"]["path"], "/api/v1/echo");
    assert_eq!(body["data"]["query"]["color"], "blue");

    let unknown = json_with_status(
        app.get_as("/nosuchengine/api/v1/anything", &token).await,
        404,
    )
    .await;
    assert!(unknown["message"].is_string());
    app.stop().await;
}

database_test!(
    the_engine_list_shows_loaded_engines_and_skips_broken_or_duplicate_files,
    |backend| async move {
        let database = crate::helpers::TestDatabase::new(backend).await;
        let plugins = database.data_dir.join("plugins");
        crate::components::install(&plugins, &["echo", "trapper"]);
        std::fs::write(plugins.join("broken.wasm"), b"this is not a component").unwrap();
        std::fs::copy(
            crate::components::component("echo"),
            plugins.join("zz-echo-again.wasm"),
        )
        .unwrap();
        let app = spawn_app_with(
            backend,
            AppOptions {
                database: Some(database),
                ..AppOptions::default()
            },
        )
        .await;

        let body = json_with_status(app.get("/core/api/v1/engines").await, 200).await;
        let engines = body["data"].as_array().unwrap();
        let codes: Vec<&str> = engines
            .iter()
            .map(|engine| engine["code"].as_str().unwrap())
            .collect();
        assert_eq!(codes, ["echo", "trapper"]);
        let echo = &engines[0];
        assert_eq!(echo["url"], format!("http://{}/echo", app.address));
        assert_eq!(echo["is_active"], true);
        assert_eq!(echo["requires_tenant_provision"], false);
        assert_eq!(echo["requires_user_provision"], false);
        assert!(echo["name"].is_string());

        // Removed from the plugins dir: the registry keeps it, inactive. (The folder is the
        // source of truth: the watcher would reload an engine unloaded while its file stays.)
        std::fs::remove_file(app.database.data_dir.join("plugins").join("trapper.wasm")).unwrap();
        let trapper = wait_for_engine(&app, "trapper", false).await;
        assert_eq!(trapper["is_active"], false);
        let token = app.token(&tenant(), "u", "editor").await;
        json_with_status(app.get_as("/trapper/api/v1/ok", &token).await, 404).await;
        app.stop().await;
    }
);

database_test!(
    an_engine_cannot_read_another_tenants_or_another_engines_storage,
    |backend| async move {
        let app = spawn_app_with_plugins(backend, &["probe-alpha", "probe-beta"]).await;
        let tenant_a = app.token(&tenant(), "user-a", "editor").await;
        let tenant_b = app.token(&tenant(), "user-b", "editor").await;

        let stored = app
            .put_as(
                "/probe-alpha/api/v1/kv/secret",
                &tenant_a,
                "alpha's secret for tenant a",
            )
            .await;
        assert_eq!(stored.status(), 204);
        let body = json_with_status(
            app.get_as("/probe-alpha/api/v1/kv/secret", &tenant_a).await,
            200,
        )
        .await;
        assert_eq!(body["data"], "alpha's secret for tenant a");

        // Same engine, other tenant: not there.
        json_with_status(
            app.get_as("/probe-alpha/api/v1/kv/secret", &tenant_b).await,
            404,
        )
        .await;
        // Same tenant, other engine, same key: not there.
        json_with_status(
            app.get_as("/probe-beta/api/v1/kv/secret", &tenant_a).await,
            404,
        )
        .await;
        let listed =
            json_with_status(app.get_as("/probe-beta/api/v1/kv", &tenant_a).await, 200).await;
        assert_eq!(listed["data"], Value::Array(vec![]));

        // Each tenant's list holds only its own keys.
        assert_eq!(
            app.put_as("/probe-alpha/api/v1/kv/other", &tenant_b, "b's")
                .await
                .status(),
            204
        );
        let listed =
            json_with_status(app.get_as("/probe-alpha/api/v1/kv", &tenant_a).await, 200).await;
        assert_eq!(listed["data"], serde_json::json!(["secret"]));
        app.stop().await;
    }
);

database_test!(
    get_many_answers_each_call_its_own_keys_in_order_even_when_reads_are_batched,
    |backend| async move {
        let app = spawn_app_with_plugins(backend, &["probe-alpha", "probe-beta"]).await;
        let tenant_a = app.token(&tenant(), "user-a", "editor").await;
        let tenant_b = app.token(&tenant(), "user-b", "editor").await;
        for (path, token, value) in [
            ("/probe-alpha/api/v1/kv/one", &tenant_a, "alpha a one"),
            ("/probe-alpha/api/v1/kv/two", &tenant_a, "alpha a two"),
            ("/probe-alpha/api/v1/kv/one", &tenant_b, "alpha b one"),
            ("/probe-beta/api/v1/kv/two", &tenant_a, "beta a two"),
        ] {
            assert_eq!(app.put_as(path, token, value).await.status(), 204);
        }

        // In the order asked, absent keys as null, a key asked twice answered twice.
        let read = |engine: &'static str, token: String| {
            let app = &app;
            async move {
                json_with_status(
                    app.get_as(
                        &format!("/{engine}/api/v1/kv-many?keys=two,absent,one,two"),
                        &token,
                    )
                    .await,
                    200,
                )
                .await["data"]
                    .clone()
            }
        };
        let alpha_a = serde_json::json!(["alpha a two", null, "alpha a one", "alpha a two"]);
        let alpha_b = serde_json::json!([null, null, "alpha b one", null]);
        let beta_a = serde_json::json!(["beta a two", null, null, "beta a two"]);
        assert_eq!(read("probe-alpha", tenant_a.clone()).await, alpha_a);

        // Many calls at once, of two engines and two tenants: the host reads them together,
        // and each call still gets exactly its own engine's and tenant's values.
        let calls = (0..48).map(|index| {
            let (engine, token, expected) = match index % 3 {
                0 => ("probe-alpha", tenant_a.clone(), &alpha_a),
                1 => ("probe-alpha", tenant_b.clone(), &alpha_b),
                _ => ("probe-beta", tenant_a.clone(), &beta_a),
            };
            let read = &read;
            async move { (read(engine, token).await, expected.clone()) }
        });
        for (answer, expected) in futures_util::future::join_all(calls).await {
            assert_eq!(answer, expected);
        }
        app.stop().await;
    }
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compiled_components_are_cached_across_restarts() {
    let app = spawn_app_with(
        Backend::Sqlite,
        AppOptions {
            plugins: vec!["echo"],
            private_artifact_cache: true,
            ..AppOptions::default()
        },
    )
    .await;
    let cache_dir = app.database.data_dir.join("cache").join("components");
    let cached = |dir: &std::path::Path| -> Vec<(std::path::PathBuf, std::time::SystemTime)> {
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|entry| {
                let entry = entry.unwrap();
                (entry.path(), entry.metadata().unwrap().modified().unwrap())
            })
            .collect();
        files.sort();
        files
    };
    let before = cached(&cache_dir);
    assert_eq!(
        before.len(),
        1,
        "one artifact for one component: {before:?}"
    );
    let database = app.stop_keeping_database().await;

    let restarted = spawn_app_with(
        Backend::Sqlite,
        AppOptions {
            database: Some(database),
            private_artifact_cache: true,
            ..AppOptions::default()
        },
    )
    .await;
    assert_eq!(
        cached(&cache_dir),
        before,
        "the restart reused the artifact instead of recompiling"
    );
    let token = restarted.token(&tenant(), "u", "owner").await;
    json_with_status(restarted.get_as("/echo/api/v1/echo", &token).await, 200).await;
    restarted.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_component_dropped_into_the_plugins_dir_is_loaded_and_unloaded_live() {
    let app = spawn_app_with_plugins(Backend::Sqlite, &["echo"]).await;
    let plugins = app.database.data_dir.join("plugins");
    let token = app.token(&tenant(), "u", "editor").await;
    json_with_status(app.get_as("/trapper/api/v1/ok", &token).await, 404).await;

    // Copy under a temporary name, then rename: what a careful operator (or `install`) does.
    let staging = app.database.data_dir.join("trapper.wasm.partial");
    std::fs::copy(crate::components::component("trapper"), &staging).unwrap();
    std::fs::rename(&staging, plugins.join("trapper.wasm")).unwrap();
    let listed = wait_for_engine(&app, "trapper", true).await;
    assert_eq!(listed["is_active"], true);
    json_with_status(app.get_as("/trapper/api/v1/ok", &token).await, 200).await;

    std::fs::remove_file(plugins.join("trapper.wasm")).unwrap();
    let listed = wait_for_engine(&app, "trapper", false).await;
    assert_eq!(listed["is_active"], false);
    json_with_status(app.get_as("/trapper/api/v1/ok", &token).await, 404).await;
    json_with_status(app.get_as("/echo/api/v1/echo", &token).await, 200).await;
    app.stop().await;
}

/// Polls the engine list until `code` has the wanted `is_active` (at most 90 s: compiling a
/// component on a loaded 2-core machine beside the rest of the suite can take a while).
pub(crate) async fn wait_for_engine(
    app: &crate::helpers::TestApp,
    code: &str,
    active: bool,
) -> Value {
    for _ in 0..900 {
        let body = json_with_status(app.get("/core/api/v1/engines").await, 200).await;
        if let Some(engine) = body["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|engine| engine["code"] == code)
            && engine["is_active"] == active
        {
            return engine.clone();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{code} never became is_active={active}");
}

database_test!(
    engine_internal_endpoints_are_signed_and_reach_the_lifecycle_exports,
    |backend| async move {
        use tessera_host::http::signature::sign_request;
        let app = spawn_app_with_plugins(backend, &["flaky-provision"]).await;
        let tenant_id = tenant();
        let body = serde_json::json!({ "tenant_id": tenant_id, "tenant_short_id": "acme", "name": "Acme" }).to_string();
        let path = "/flaky-provision/api/internal/flaky-provision/provision/tenant";
        let post = |signature: Option<String>, body: String| {
            let mut request = app
                .client
                .post(app.url(path))
                .header("content-type", "application/json")
                .body(body);
            if let Some(signature) = signature {
                request = request.header("x-service-signature", signature);
            }
            request.send()
        };
        let now = chrono::Utc::now().timestamp();
        let secret = app.state().service_secret.expose().as_bytes().to_vec();

        json_with_status(post(None, body.clone()).await.unwrap(), 401).await;
        json_with_status(
            post(
                Some(sign_request(
                    b"not the secret",
                    now,
                    "POST",
                    path,
                    body.as_bytes(),
                )),
                body.clone(),
            )
            .await
            .unwrap(),
            401,
        )
        .await;
        json_with_status(
            post(
                Some(sign_request(
                    &secret,
                    now - 301,
                    "POST",
                    path,
                    body.as_bytes(),
                )),
                body.clone(),
            )
            .await
            .unwrap(),
            401,
        )
        .await;
        json_with_status(
            post(
                Some(sign_request(&secret, now, "POST", path, b"{}")),
                body.clone(),
            )
            .await
            .unwrap(),
            401,
        )
        .await;
        let invalid = json_with_status(
            post(
                Some(sign_request(&secret, now, "POST", path, b"{}")),
                "{}".into(),
            )
            .await
            .unwrap(),
            422,
        )
        .await;
        assert_eq!(
            invalid["errors"]["tenant_id"],
            serde_json::json!(["required"])
        );

        // The component fails its first attempt for a tenant and succeeds afterwards.
        let failed = json_with_status(
            post(
                Some(sign_request(&secret, now, "POST", path, body.as_bytes())),
                body.clone(),
            )
            .await
            .unwrap(),
            502,
        )
        .await;
        assert!(
            failed["message"].as_str().unwrap().contains("simulated"),
            "{failed}"
        );
        let done = json_with_status(
            post(
                Some(sign_request(&secret, now, "POST", path, body.as_bytes())),
                body.clone(),
            )
            .await
            .unwrap(),
            200,
        )
        .await;
        assert_eq!(
            done["data"],
            serde_json::json!({ "status": "provisioned", "engine": "flaky-provision" })
        );
        let token = app.token(&tenant_id, "u", "viewer").await;
        let attempts = json_with_status(
            app.get_as("/flaky-provision/api/v1/attempts", &token).await,
            200,
        )
        .await;
        assert_eq!(attempts["data"]["attempts"], 2);

        let deprovision = serde_json::json!({ "tenant_id": tenant_id }).to_string();
        let deprovision_path = "/flaky-provision/api/internal/flaky-provision/deprovision/tenant";
        let response = app
            .client
            .post(app.url(deprovision_path))
            .header("content-type", "application/json")
            .header(
                "x-service-signature",
                sign_request(
                    &secret,
                    now,
                    "POST",
                    deprovision_path,
                    deprovision.as_bytes(),
                ),
            )
            .body(deprovision)
            .send()
            .await
            .unwrap();
        let done = json_with_status(response, 200).await;
        assert_eq!(done["data"]["status"], "deprovisioned");
        let attempts = json_with_status(
            app.get_as("/flaky-provision/api/v1/attempts", &token).await,
            200,
        )
        .await;
        assert_eq!(
            attempts["data"]["attempts"], 0,
            "deprovisioning removed the tenant's data"
        );
        app.stop().await;
    }
);

database_test!(
    the_seven_engines_load_describe_themselves_and_provision_real_state,
    |backend| async move {
        let database = crate::helpers::TestDatabase::new(backend).await;
        crate::components::install_engines(
            &database.data_dir.join("plugins"),
            &crate::components::ENGINES,
        );
        let app = spawn_app_with(
            backend,
            AppOptions {
                database: Some(database),
                ..AppOptions::default()
            },
        )
        .await;

        let body = json_with_status(app.get("/core/api/v1/engines").await, 200).await;
        let listed: Vec<(String, bool, bool, bool)> = body["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|engine| {
                (
                    engine["code"].as_str().unwrap().to_owned(),
                    engine["is_active"].as_bool().unwrap(),
                    engine["requires_tenant_provision"].as_bool().unwrap(),
                    engine["requires_user_provision"].as_bool().unwrap(),
                )
            })
            .collect();
        let expected: Vec<(String, bool, bool, bool)> = crate::components::ENGINES
            .iter()
            .map(|code| (code.to_string(), true, true, true))
            .collect();
        assert_eq!(listed, expected);

        let tenant_id = tenant();
        let user_id = uuid::Uuid::new_v4().to_string();
        let token = app.token(&tenant_id, &user_id, "viewer").await;
        for code in crate::components::ENGINES {
            let status = json_with_status(
                app.get_as(&format!("/{code}/api/v1/status"), &token).await,
                200,
            )
            .await;
            assert_eq!(
                status["data"]["tenant_provisioned"], false,
                "{code} before provisioning"
            );

            for (action, body) in [
                (
                    "provision/tenant",
                    serde_json::json!({ "tenant_id": tenant_id, "tenant_short_id": "acme", "name": "Acme" }),
                ),
                (
                    "provision/user",
                    serde_json::json!({ "tenant_id": tenant_id, "user_id": user_id, "email": "ada@example.com", "first_name": "Ada", "last_name": "L", "type": "user" }),
                ),
            ] {
                let response = app
                    .post_signed(&format!("/{code}/api/internal/{code}/{action}"), &body)
                    .await;
                let done = json_with_status(response, 200).await;
                assert_eq!(
                    done["data"],
                    serde_json::json!({ "status": "provisioned", "engine": code })
                );
            }
            let status = json_with_status(
                app.get_as(&format!("/{code}/api/v1/status"), &token).await,
                200,
            )
            .await;
            assert_eq!(
                status["data"]["tenant_provisioned"], true,
                "{code} after provisioning"
            );
            assert_eq!(
                status["data"]["user_provisioned"], true,
                "{code} after user provisioning"
            );

            let response = app
                .post_signed(
                    &format!("/{code}/api/internal/{code}/deprovision/tenant"),
                    &serde_json::json!({ "tenant_id": tenant_id }),
                )
                .await;
            json_with_status(response, 200).await;
            let status = json_with_status(
                app.get_as(&format!("/{code}/api/v1/status"), &token).await,
                200,
            )
            .await;
            assert_eq!(
                status["data"]["tenant_provisioned"], false,
                "{code} after deprovisioning"
            );
            assert_eq!(
                status["data"]["user_provisioned"], false,
                "{code}: deprovisioning the tenant removed its users"
            );
        }
        app.stop().await;
    }
);

database_test!(
    a_new_tenant_and_user_are_provisioned_on_all_seven_engines,
    |backend| async move {
        let database = crate::helpers::TestDatabase::new(backend).await;
        crate::components::install_engines(
            &database.data_dir.join("plugins"),
            &crate::components::ENGINES,
        );
        let app = spawn_app_with(
            backend,
            AppOptions {
                database: Some(database),
                ..AppOptions::default()
            },
        )
        .await;
        let every_engine_provisioned: serde_json::Map<String, Value> = crate::components::ENGINES
            .iter()
            .map(|code| {
                (
                    code.to_string(),
                    serde_json::json!({ "status": "provisioned" }),
                )
            })
            .collect();

        let tenant_id = tenant();
        let provisioned = json_with_status(
            app.post_signed(
                "/core/api/internal/orchestration/provision/tenant",
                &serde_json::json!({ "tenant_id": tenant_id, "tenant_short_id": "acme", "name": "Acme" }),
            )
            .await,
            202,
        )
        .await;
        assert_eq!(provisioned["data"]["status"], "completed", "{provisioned}");
        assert_eq!(
            provisioned["data"]["engines"],
            Value::Object(every_engine_provisioned.clone())
        );

        let user_id = uuid::Uuid::new_v4().to_string();
        let user = json_with_status(
            app.post_signed(
                "/core/api/internal/orchestration/provision/user",
                &serde_json::json!({
                    "tenant_id": tenant_id, "tenant_short_id": "acme", "user_id": user_id,
                    "email": "ada@example.com", "first_name": "Ada", "last_name": "Lovelace",
                    "type": "user",
                }),
            )
            .await,
            202,
        )
        .await;
        assert_eq!(user["data"]["status"], "completed", "{user}");
        assert_eq!(
            user["data"]["engines"],
            Value::Object(every_engine_provisioned)
        );

        let token = app.token(&tenant_id, &user_id, "editor").await;
        for code in crate::components::ENGINES {
            let status = json_with_status(
                app.get_as(&format!("/{code}/api/v1/status"), &token).await,
                200,
            )
            .await;
            assert_eq!(status["data"]["tenant_provisioned"], true, "{code}");
            assert_eq!(status["data"]["user_provisioned"], true, "{code}");
        }
        app.stop().await;
    }
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_component_of_the_0_1_world_still_loads_and_routes() {
    let app = spawn_app_with_plugins(Backend::Sqlite, &["legacy"]).await;
    let tenant_id = tenant();
    let token = app.token(&tenant_id, "u", "editor").await;
    // Its imports reach the host through the 0.1 interfaces: storage keeps the counter, and
    // the host's settings answer.
    for counter in [1, 2] {
        let hello = json_with_status(app.get_as("/legacy/api/v1/hello", &token).await, 200).await;
        assert_eq!(
            hello["data"],
            serde_json::json!({
                "world": "0.1.0",
                "tenant_id": tenant_id,
                "counter": counter,
                "scan_page": "1000",
            })
        );
    }
    json_with_status(app.get_as("/legacy/api/v1/nope", &token).await, 404).await;

    let owner = app
        .token(&tenant_id, &uuid::Uuid::new_v4().to_string(), "owner")
        .await;
    let details =
        json_with_status(app.get_as("/core/api/v1/engines/legacy", &owner).await, 200).await;
    assert_eq!(details["data"]["world"], "0.1.0");
    assert_eq!(details["data"]["operations"], 0);
    assert_eq!(details["data"]["settings"], serde_json::json!([]));
    // It describes no API: the document has only the generic engine route for it.
    let document = json_with_status(app.get("/api/openapi.json").await, 200).await;
    let paths = document["paths"].as_object().unwrap();
    assert!(!paths.keys().any(|path| path.starts_with("/legacy/")));
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_component_of_the_0_2_world_still_loads_and_routes() {
    let app = spawn_app_with_plugins(Backend::Sqlite, &["legacy-v0-2"]).await;
    let tenant_id = tenant();
    let token = app.token(&tenant_id, "u", "editor").await;
    // Its imports reach the host through the 0.2 interfaces: storage keeps the counter, and
    // its own setting answers with the declared default.
    for counter in [1, 2] {
        let hello =
            json_with_status(app.get_as("/legacy-v0-2/api/v1/hello", &token).await, 200).await;
        assert_eq!(
            hello["data"],
            serde_json::json!({
                "world": "0.2.0",
                "tenant_id": tenant_id,
                "counter": counter,
                "greeting": "hello",
            })
        );
    }
    json_with_status(app.get_as("/legacy-v0-2/api/v1/nope", &token).await, 404).await;

    let owner = app
        .token(&tenant_id, &uuid::Uuid::new_v4().to_string(), "owner")
        .await;
    let details = json_with_status(
        app.get_as("/core/api/v1/engines/legacy-v0-2", &owner).await,
        200,
    )
    .await;
    assert_eq!(details["data"]["world"], "0.2.0");
    assert_eq!(details["data"]["operations"], 1);
    assert_eq!(details["data"]["settings"][0]["name"], "greeting");
    assert_eq!(details["data"]["settings"][0]["value"], "hello");
    // Its description is merged into the document as a 0.3 engine's is.
    let document = json_with_status(app.get("/api/openapi.json").await, 200).await;
    assert!(document["paths"]["/legacy-v0-2/api/v1/hello"]["get"].is_object());
    app.stop().await;
}
