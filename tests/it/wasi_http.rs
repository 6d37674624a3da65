//! `wasi:http` components as engines (CONTRACT §10): components nobody in this project wrote,
//! built unedited from their published sources (`cargo xtask wasi-http-examples`), answer
//! under `/<code>/…` behind the host's authentication with the host's identity headers; the
//! test component `kvcounter` (`tests/components/kvcounter`) keeps tenant-scoped state in
//! `wasi:keyvalue`, in the request's unit of work, and reads its settings through `wasi:config`.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::components::{WASI_HTTP_EXAMPLES, install, install_wasi_http_examples};
use crate::database_test;
use crate::helpers::{
    AppOptions, Backend, TestApp, TestDatabase, eventually, json_with_status, spawn_app_with,
};
use tessera_host::config::Secret;
use tessera_host::storage::engine_kv::{self, KvScope};

fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// The manifest the tests give `kvcounter`: a public health path and a declared setting.
const KVCOUNTER_MANIFEST: &str = r#"
name = "Key-value counter"
version = "1.0.0"
public-paths = ["/health", "/count/*"]

[[settings]]
name = "greeting"
default = "hello"
description = "What the component greets with."

[[settings]]
name = "limit"
kind = "integer"
description = "Set by the operator."
"#;

/// A host with `kvcounter` (and its manifest), its `limit` setting set by the operator.
async fn kvcounter_host(backend: Backend) -> TestApp {
    let database = TestDatabase::new(backend).await;
    let plugins = database.data_dir.join("plugins");
    install(&plugins, &["kvcounter"]);
    std::fs::write(plugins.join("kvcounter.toml"), KVCOUNTER_MANIFEST).unwrap();
    spawn_app_with(
        backend,
        AppOptions {
            database: Some(database),
            ..AppOptions::unlimited_and(|config| {
                config
                    .engine_settings
                    .entry("kvcounter".to_owned())
                    .or_default()
                    .insert("limit".to_owned(), Secret::new("42".to_owned()));
            })
        },
    )
    .await
}

async fn text(response: reqwest::Response, status: u16) -> String {
    let actual = response.status().as_u16();
    let body = response.text().await.unwrap();
    assert_eq!(actual, status, "{body}");
    body
}

async fn send(
    app: &TestApp,
    method: reqwest::Method,
    path: &str,
    token: &str,
    body: &str,
) -> reqwest::Response {
    app.client
        .request(method, app.url(path))
        .bearer_auth(token)
        .body(body.to_owned())
        .send()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn components_nobody_here_wrote_answer_under_their_code_with_the_hosts_identity() {
    let app = spawn_app_with(Backend::Sqlite, AppOptions::unlimited()).await;
    let (tenant_id, user_id) = (new_id(), new_id());
    let token = app.token(&tenant_id, &user_id, "viewer").await;

    // Dropped into the running host's plugins dir, each is loaded without a restart.
    install_wasi_http_examples(&app.database.data_dir.join("plugins"), &WASI_HTTP_EXAMPLES);
    for code in WASI_HTTP_EXAMPLES {
        eventually(120, &format!("{code} to load"), || async {
            let status = app.get(&format!("/{code}/")).await.status().as_u16();
            (status == 401).then_some(())
        })
        .await;
    }

    // Every route needs a bearer token: 401 in the spec's shape, without one or with a bad one.
    for path in [
        "/wstd-http-server/",
        "/wasip2-http-proxy",
        "/componentize-py-http/echo",
    ] {
        let body = json_with_status(app.get(path).await, 401).await;
        assert!(body["message"].is_string(), "{path}: {body}");
        json_with_status(app.get_as(path, "not-a-jwt").await, 401).await;
    }

    // wstd's example (Rust): its home, its echo, its streamed body, a status it is told.
    assert_eq!(
        text(app.get_as("/wstd-http-server/", &token).await, 200).await,
        "Hello, wasi:http/proxy world!\n"
    );
    assert_eq!(
        text(app.get_as("/wstd-http-server", &token).await, 200).await,
        "Hello, wasi:http/proxy world!\n",
        "the bare prefix is the component's /"
    );
    let echoed = send(
        &app,
        reqwest::Method::POST,
        "/wstd-http-server/echo",
        &token,
        "ping pong",
    )
    .await;
    assert_eq!(text(echoed, 200).await, "ping pong");
    let streamed = text(
        app.get_as("/wstd-http-server/stream-body", &token).await,
        200,
    )
    .await;
    assert_eq!(streamed.lines().count(), 5, "{streamed}");
    let told = app
        .client
        .get(app.url("/wstd-http-server/response-status"))
        .bearer_auth(&token)
        .header("x-response-status", "418")
        .send()
        .await
        .unwrap();
    assert_eq!(told.status().as_u16(), 418);
    text(
        app.get_as("/wstd-http-server/no-such-page", &token).await,
        404,
    )
    .await;

    // Forged identity headers are replaced by the host's (wstd echoes request headers back).
    let echoed = app
        .client
        .get(app.url("/wstd-http-server/echo-headers"))
        .bearer_auth(&token)
        .header("x-tessera-tenant-id", "forged-tenant")
        .header("x-tessera-user-id", "forged-user")
        .header("x-tessera-role", "owner")
        .header("x-tessera-user-type", "service")
        .header("x-tessera-anything", "forged")
        .header("x-correlation-id", "trace-wasi-http-1")
        .header("cookie", "session=secret")
        .send()
        .await
        .unwrap();
    assert_eq!(echoed.status().as_u16(), 200);
    let headers = echoed.headers();
    let all = |name: &str| -> Vec<String> {
        headers
            .get_all(name)
            .iter()
            .map(|value| value.to_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(all("x-tessera-tenant-id"), [tenant_id.as_str()]);
    assert_eq!(all("x-tessera-user-id"), [user_id.as_str()]);
    assert_eq!(all("x-tessera-role"), ["viewer"]);
    assert_eq!(all("x-tessera-user-type"), ["user"]);
    assert!(all("x-tessera-anything").is_empty(), "{headers:?}");
    assert!(
        all("authorization").is_empty(),
        "credentials stay with the host"
    );
    assert!(all("cookie").is_empty(), "credentials stay with the host");
    assert!(all("x-correlation-id").contains(&"trace-wasi-http-1".to_owned()));

    // wasip2's example (Rust, the bare bindings).
    assert_eq!(
        text(app.get_as("/wasip2-http-proxy/anything", &token).await, 200).await,
        "Hello, WASI!"
    );

    // componentize-py's example (Python): its echo streams the body back.
    let echoed = app
        .client
        .post(app.url("/componentize-py-http/echo"))
        .bearer_auth(&token)
        .header("content-type", "text/plain")
        .body("from python")
        .send()
        .await
        .unwrap();
    assert_eq!(text(echoed, 200).await, "from python");

    // The registry and the served document know them.
    let details = json_with_status(
        app.get_as(
            "/core/api/v1/engines/wstd-http-server",
            &app.token(&new_id(), &new_id(), "owner").await,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(details["data"]["world"], "wasi:http@0.2");
    let openapi = app.openapi().await;
    for code in WASI_HTTP_EXAMPLES {
        let item = &openapi["paths"][format!("/{code}/{{path}}")];
        assert!(
            item["get"]["responses"]["401"].is_object(),
            "{code}: {item}"
        );
    }
    // A path outside /api/v1/ of no wasi:http component is not found, as before.
    json_with_status(app.get_as("/no-such-engine/x", &token).await, 404).await;
    app.stop().await;
}

database_test!(
    keyvalue_state_belongs_to_its_tenant_and_to_requests_that_succeed,
    |backend| async move {
        let app = kvcounter_host(backend).await;
        let (tenant_a, tenant_b) = (new_id(), new_id());
        let alice = app.token(&tenant_a, &new_id(), "editor").await;
        let bob = app.token(&tenant_b, &new_id(), "editor").await;
        let post = reqwest::Method::POST;
        let put = reqwest::Method::PUT;

        // Counters (`atomics.increment`) per tenant.
        for expected in ["1", "2", "3"] {
            assert_eq!(
                text(
                    send(&app, post.clone(), "/kvcounter/count/visits", &alice, "").await,
                    200
                )
                .await,
                expected
            );
        }
        assert_eq!(
            text(
                send(&app, post.clone(), "/kvcounter/count/visits", &bob, "").await,
                200
            )
            .await,
            "1"
        );
        assert_eq!(
            text(app.get_as("/kvcounter/count/visits", &alice).await, 200).await,
            "3"
        );

        // Notes (`store`): tenant B sees none of tenant A's.
        text(
            send(
                &app,
                put.clone(),
                "/kvcounter/notes/plan",
                &alice,
                "ship it",
            )
            .await,
            200,
        )
        .await;
        assert_eq!(
            text(app.get_as("/kvcounter/notes/plan", &alice).await, 200).await,
            "ship it"
        );
        text(app.get_as("/kvcounter/notes/plan", &bob).await, 404).await;
        assert_eq!(
            text(app.get_as("/kvcounter/notes", &bob).await, 200).await,
            ""
        );

        // A request answered with an error leaves nothing of its writes.
        text(
            send(
                &app,
                put.clone(),
                "/kvcounter/notes/draft?fail",
                &alice,
                "half",
            )
            .await,
            500,
        )
        .await;
        text(app.get_as("/kvcounter/notes/draft", &alice).await, 404).await;

        // `batch`: set-many, get-many; and every key over list-keys' pages.
        text(
            send(&app, put.clone(), "/kvcounter/many?keys=a,b,c", &alice, "v").await,
            200,
        )
        .await;
        assert_eq!(
            text(
                app.get_as("/kvcounter/many?keys=a,plan,zzz", &alice).await,
                200
            )
            .await,
            "a=v\nplan=ship it\nzzz\n"
        );
        assert_eq!(
            text(app.get_as("/kvcounter/notes", &alice).await, 200).await,
            "a\nb\nc\nplan\n"
        );
        text(app.delete_as("/kvcounter/notes/b", &alice).await, 200).await;
        assert_eq!(
            text(app.get_as("/kvcounter/notes", &alice).await, 200).await,
            "a\nc\nplan\n"
        );

        // The stored keys are the engine's, in tenant A's storage only, under the bucket's prefix.
        assert_eq!(stored_keys(&app, &tenant_a).await, 4, "visits, a, c, plan");
        assert_eq!(stored_keys(&app, &tenant_b).await, 1);
        app.stop().await;
    }
);

/// How many `wasi:keyvalue` keys of `kvcounter` tenant `tenant_id` holds.
async fn stored_keys(app: &TestApp, tenant_id: &str) -> u64 {
    let database = app.database.connect().await;
    let scope = KvScope {
        engine_code: "kvcounter",
        tenant_id,
    };
    engine_kv::count_prefix(&database, &scope, "kv/")
        .await
        .unwrap()
}

database_test!(increments_race_to_exact_counts, |backend| async move {
    let app = kvcounter_host(backend).await;
    let token = app.token(&new_id(), &new_id(), "editor").await;
    let mut requests = Vec::new();
    for _ in 0..20 {
        let client = app.client.clone();
        let url = app.url("/kvcounter/count/race");
        let token = token.clone();
        requests.push(tokio::spawn(async move {
            let response = client.post(url).bearer_auth(token).send().await.unwrap();
            assert_eq!(response.status().as_u16(), 200);
            response.text().await.unwrap().parse::<u64>().unwrap()
        }));
    }
    let mut counts = Vec::new();
    for request in requests {
        counts.push(request.await.unwrap());
    }
    counts.sort_unstable();
    assert_eq!(
        counts,
        (1..=20).collect::<Vec<u64>>(),
        "each increment saw its own count"
    );
    assert_eq!(
        text(app.get_as("/kvcounter/count/race", &token).await, 200).await,
        "20"
    );
    app.stop().await;
});

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manifests_name_public_paths_and_settings() {
    let app = kvcounter_host(Backend::Sqlite).await;
    let token = app.token(&new_id(), &new_id(), "viewer").await;

    // A public path answers without a token, and with no identity headers.
    assert_eq!(text(app.get("/kvcounter/health").await, 200).await, "ok");
    for unlisted in [
        "/kvcounter/whoami",
        "/kvcounter/health/x",
        "/kvcounter/health/../whoami",
        "/kvcounter/%68ealth",
    ] {
        json_with_status(app.get(unlisted).await, 401).await;
    }
    // Anonymous requests run outside any tenant: no storage (`open` is denied). With a token,
    // the same public path is the caller's.
    assert_eq!(
        text(app.get("/kvcounter/count/visits").await, 500).await,
        "access-denied"
    );
    assert_eq!(
        text(app.get_as("/kvcounter/count/visits", &token).await, 200).await,
        "0"
    );
    json_with_status(
        app.get_as("/kvcounter/count/visits", "not-a-jwt").await,
        401,
    )
    .await;

    // wasi:config reads the declared settings: the default, the operator's value.
    assert_eq!(
        text(app.get_as("/kvcounter/config/greeting", &token).await, 200).await,
        "hello"
    );
    assert_eq!(
        text(app.get_as("/kvcounter/config/limit", &token).await, 200).await,
        "42"
    );
    text(
        app.get_as("/kvcounter/config/undeclared", &token).await,
        404,
    )
    .await;
    let all: BTreeMap<String, String> = text(app.get_as("/kvcounter/config", &token).await, 200)
        .await
        .lines()
        .filter_map(|line| line.split_once('='))
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect();
    assert_eq!(all.len(), 2, "{all:?}");

    // The manifest names it; the identity it receives is the token's.
    let owner = app.token(&new_id(), &new_id(), "owner").await;
    let details: Value = json_with_status(
        app.get_as("/core/api/v1/engines/kvcounter", &owner).await,
        200,
    )
    .await;
    assert_eq!(details["data"]["name"], "Key-value counter");
    assert_eq!(details["data"]["version"], "1.0.0");
    let names: Vec<&str> = details["data"]["settings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|setting| setting["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["greeting", "limit"]);
    let whoami = text(app.get_as("/kvcounter/whoami", &token).await, 200).await;
    assert!(whoami.contains("x-tessera-role: viewer"), "{whoami}");
    app.stop().await;
}

#[tokio::test]
async fn a_wasi_http_component_is_published_with_its_manifest() {
    let app = spawn_app_with(Backend::Sqlite, AppOptions::default()).await;
    let owner = app
        .token(&app.create_tenant("acme"), &new_id(), "owner")
        .await;
    let file = app.database.data_dir.join("counter.wasm");
    std::fs::copy(crate::components::component("kvcounter"), &file).unwrap();
    let file = file.to_str().unwrap();
    let manifest = app.database.data_dir.join("counter.toml");
    std::fs::write(
        &manifest,
        format!("code = \"counter\"\nversion = \"2.0.0\"\n{KVCOUNTER_MANIFEST_PATHS}"),
    )
    .unwrap();
    let manifest = manifest.to_str().unwrap();

    // Without a manifest there is no code to publish it under.
    let refused = app.admin(&["engine", "publish", file]);
    assert!(!refused.success);
    assert!(refused.stderr.contains("--manifest"), "{}", refused.stderr);
    let operator = app.admin(&["operator-token"]).json()["operator_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let over_http = app
        .client
        .post(app.url("/core/api/operator/engines"))
        .bearer_auth(&operator)
        .body(std::fs::read(file).unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(over_http.status(), 422);

    // With one: its code, its version and its public paths, on the host that serves.
    let published = app
        .admin(&["engine", "publish", file, "--manifest", manifest])
        .json();
    assert_eq!(published["code"], "counter");
    assert_eq!(published["engine_version"], "2.0.0");
    assert_eq!(published["version"], 1);
    app.state().engines.releases_changed();
    eventually(15, "the host to serve the published component", || async {
        let health = app
            .client
            .get(app.url("/counter/health"))
            .send()
            .await
            .ok()?;
        (health.status() == 200).then_some(())
    })
    .await;
    let counted = send(
        &app,
        reqwest::Method::POST,
        "/counter/count/visits",
        &owner,
        "",
    )
    .await;
    assert_eq!(text(counted, 200).await, "1");
    let private = app
        .client
        .get(app.url("/counter/whoami"))
        .send()
        .await
        .unwrap();
    assert_eq!(private.status(), 401);

    // The same bytes with another manifest are another version; with the same, the same one.
    let again = app
        .admin(&["engine", "publish", file, "--manifest", manifest])
        .json();
    assert_eq!(again["version"], 1);
    let wider = app.database.data_dir.join("counter-wider.toml");
    std::fs::write(
        &wider,
        "code = \"counter\"\nversion = \"2.0.0\"\npublic-paths = [\"/health\", \"/whoami\"]\n",
    )
    .unwrap();
    let second = app
        .admin(&[
            "engine",
            "publish",
            file,
            "--manifest",
            wider.to_str().unwrap(),
        ])
        .json();
    assert_eq!(second["version"], 2);
    app.state().engines.releases_changed();
    eventually(15, "the host to serve the second version", || async {
        let whoami = app
            .client
            .get(app.url("/counter/whoami"))
            .send()
            .await
            .ok()?;
        (whoami.status() == 200).then_some(())
    })
    .await;

    // A manifest is refused for a component that describes itself.
    let echo = crate::components::component("echo");
    let refused = app.admin(&[
        "engine",
        "publish",
        echo.to_str().unwrap(),
        "--manifest",
        manifest,
    ]);
    assert!(!refused.success);
    assert!(
        refused.stderr.contains("takes no manifest"),
        "{}",
        refused.stderr
    );
}

/// The public paths the publishing test's manifests start from.
const KVCOUNTER_MANIFEST_PATHS: &str = "public-paths = [\"/health\"]\n";
