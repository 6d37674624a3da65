//! "Writing an engine" outside the repository, end to end: `cargo xtask package-sdk` packages
//! the SDK (`cargo package`), `cargo xtask new-engine --path` scaffolds a standalone crate in a
//! temp dir depending on the packaged copy, plain cargo builds it for `wasm32-wasip2`, and
//! dropped into a running host's plugins dir the component is loaded, routed to, provisioned,
//! documented (its operations, schemas and settings) and, once removed, gone from the document
//! again.

use std::process::Command;

use serde_json::json;

use tessera_host::config::Secret;

use crate::components::{self, repository, target_dir};
use crate::helpers::{AppOptions, Backend, TestDatabase, json_with_status, spawn_app_with};

fn run(command: &mut Command) -> String {
    let output = command.output().expect("running a command");
    assert!(
        output.status.success(),
        "{command:?} failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_engine_scaffolded_outside_the_repository_on_the_packaged_sdk_builds_loads_and_serves() {
    let database = TestDatabase::new(Backend::Sqlite).await;
    let outside = database.data_dir.join("outside");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let xtask = |arguments: &[&str]| run(&mut components::xtask(arguments));

    // The SDK as `cargo package` packs it, unpacked outside the repository.
    let packaged = outside.join("sdk");
    let printed = xtask(&["package-sdk", packaged.to_str().unwrap(), "--no-verify"]);
    assert!(printed.contains("tessera-sdk"), "{printed}");
    for name in ["tessera-sdk", "tessera-wire"] {
        let manifest = std::fs::read_to_string(packaged.join(name).join("Cargo.toml")).unwrap();
        // Normalized by `cargo package`: dependencies by version, no path out of the crate.
        assert!(!manifest.contains(".."), "{name} is packaged: {manifest}");
    }
    assert_eq!(
        std::fs::read_to_string(packaged.join("tessera-sdk/wit/engine.wit")).unwrap(),
        std::fs::read_to_string(repository().join("wit/engine.wit")).unwrap(),
        "the packaged SDK carries the engine world"
    );

    // A standalone crate in a folder of its own, on the packaged SDK.
    let crate_dir = outside.join("hello-world");
    let printed = xtask(&[
        "new-engine",
        "hello-world",
        "--path",
        crate_dir.to_str().unwrap(),
        "--sdk",
        packaged.to_str().unwrap(),
    ]);
    assert!(printed.contains("hello-world"), "{printed}");
    let manifest = std::fs::read_to_string(crate_dir.join("Cargo.toml")).unwrap();
    assert!(manifest.contains("[workspace]"), "{manifest}");
    assert!(
        !manifest.contains(repository().to_str().unwrap()),
        "{manifest}"
    );
    // The same dependency versions as the real engines, so the build reuses their artifacts.
    std::fs::copy(
        repository().join("engines/Cargo.lock"),
        crate_dir.join("Cargo.lock"),
    )
    .unwrap();

    // Its own tests run natively against the packaged SDK's test kit: no host, no wasm.
    let tested = run(Command::new(&cargo)
        .current_dir(&crate_dir)
        .args(["test", "--target-dir"])
        .arg(target_dir().join("scaffold-native")));
    assert!(tested.contains("2 passed"), "{tested}");

    // Built with plain cargo, as its README says.
    run(Command::new(&cargo)
        .current_dir(&crate_dir)
        .args([
            "build",
            "--release",
            "--quiet",
            "--target",
            "wasm32-wasip2",
            "--target-dir",
        ])
        .arg(target_dir().join("engines")));
    let built = target_dir().join("engines/wasm32-wasip2/release/hello_world.wasm");
    let plugins = database.data_dir.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();

    // The operator sets the engine's declared setting, as TESSERA_ENGINES__HELLO_WORLD__GREETING.
    let app = spawn_app_with(
        Backend::Sqlite,
        AppOptions {
            database: Some(database),
            configure: Some(Box::new(|config| {
                config
                    .engine_settings
                    .entry("hello-world".into())
                    .or_default()
                    .insert("greeting".into(), Secret::new("hi".into()));
            })),
            ..AppOptions::default()
        },
    )
    .await;
    let document = json_with_status(app.get("/api/openapi.json").await, 200).await;
    assert!(document["paths"]["/hello-world/api/v1/hello"].is_null());

    // Dropped into the running host (copied aside, then renamed in, as an operator would).
    let staging = app.database.data_dir.join("hello-world.wasm.partial");
    std::fs::copy(&built, &staging).unwrap();
    std::fs::rename(&staging, plugins.join("hello-world.wasm")).unwrap();
    let listed = crate::engines::wait_for_engine(&app, "hello-world", true).await;
    assert_eq!(listed["is_active"], true);

    // Its operations and schemas are in the document, under its prefix.
    let document = json_with_status(app.get("/api/openapi.json").await, 200).await;
    let hello = &document["paths"]["/hello-world/api/v1/hello"]["get"];
    assert_eq!(hello["summary"], "Greet the caller", "{hello}");
    assert_eq!(hello["operationId"], "hello-world.get_api_v1_hello");
    assert_eq!(hello["tags"], json!(["hello-world"]));
    assert_eq!(hello["parameters"][0]["name"], "name");
    assert_eq!(hello["parameters"][0]["in"], "query");
    assert_eq!(
        hello["responses"]["200"]["content"]["application/json"]["schema"]["properties"]["data"]["$ref"],
        "#/components/schemas/hello-world.Greeting"
    );
    for status in ["401", "404", "422", "429", "502", "503", "504"] {
        assert!(hello["responses"][status].is_object(), "{status}: {hello}");
    }
    let greeting_schema = &document["components"]["schemas"]["hello-world.Greeting"];
    assert_eq!(greeting_schema["properties"]["greeting"]["type"], "string");
    assert!(document["paths"]["/hello-world/api/v1/status"]["get"].is_object());
    assert!(
        document["tags"]
            .as_array()
            .unwrap()
            .iter()
            .any(|tag| tag["name"] == "hello-world")
    );

    // Its settings: the operator's value reaches the engine, and owners see it.
    let tenant_id = uuid::Uuid::new_v4().to_string();
    let user_id = uuid::Uuid::new_v4().to_string();
    let token = app.token(&tenant_id, &user_id, "viewer").await;
    let greeting = json_with_status(
        app.get_as("/hello-world/api/v1/hello?name=Ada", &token)
            .await,
        200,
    )
    .await;
    assert_eq!(
        greeting["data"],
        json!({ "greeting": "hi, Ada", "user_id": user_id })
    );
    json_with_status(
        app.get_as("/core/api/v1/engines/hello-world", &token).await,
        403,
    )
    .await;
    let owner = app
        .token(&tenant_id, &uuid::Uuid::new_v4().to_string(), "owner")
        .await;
    let details = json_with_status(
        app.get_as("/core/api/v1/engines/hello-world", &owner).await,
        200,
    )
    .await;
    assert_eq!(details["data"]["world"], "0.3.0");
    assert_eq!(details["data"]["operations"], 2);
    assert_eq!(
        details["data"]["settings"],
        json!([{
            "name": "greeting",
            "kind": "text",
            "description": "The word greetings start with.",
            "secret": false,
            "variable": "TESSERA_ENGINES__HELLO_WORLD__GREETING",
            "is_set": true,
            "value": "hi",
            "default_value": "hello",
        }])
    );
    json_with_status(app.get("/hello-world/api/v1/hello").await, 401).await;

    let provisioned = json_with_status(
        app.post_signed(
            "/core/api/internal/orchestration/provision/tenant",
            &json!({ "tenant_id": tenant_id, "tenant_short_id": "acme", "name": "Acme" }),
        )
        .await,
        202,
    )
    .await;
    assert_eq!(provisioned["data"]["status"], "completed");
    assert_eq!(
        provisioned["data"]["engines"]["hello-world"]["status"],
        "provisioned"
    );
    json_with_status(
        app.post_signed(
            "/core/api/internal/orchestration/provision/user",
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
    let status =
        json_with_status(app.get_as("/hello-world/api/v1/status", &token).await, 200).await;
    assert_eq!(status["data"]["tenant_provisioned"], true);
    assert_eq!(status["data"]["user_provisioned"], true);

    // Removed: its operations, schemas and settings are gone.
    std::fs::remove_file(plugins.join("hello-world.wasm")).unwrap();
    crate::engines::wait_for_engine(&app, "hello-world", false).await;
    let document = json_with_status(app.get("/api/openapi.json").await, 200).await;
    assert!(document["paths"]["/hello-world/api/v1/hello"].is_null());
    assert!(document["components"]["schemas"]["hello-world.Greeting"].is_null());
    json_with_status(
        app.get_as("/core/api/v1/engines/hello-world", &owner).await,
        404,
    )
    .await;
    app.stop().await;
}
