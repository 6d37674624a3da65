//! "Writing an engine", end to end: `cargo xtask new-engine` scaffolds a crate in an engine
//! workspace, cargo builds it for `wasm32-wasip2`, a running host loads the component from its
//! plugins dir, routes to it and provisions a tenant and a user on it.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;

use crate::helpers::{AppOptions, Backend, TestDatabase, json_with_status, spawn_app_with};

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repository().join("target"))
}

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

/// An engine workspace like `engines/` with no member yet, using the repository's SDK.
fn empty_engine_workspace(root: &Path) -> PathBuf {
    let engines = root.join("engines");
    std::fs::create_dir_all(&engines).unwrap();
    let manifest = std::fs::read_to_string(repository().join("engines/Cargo.toml")).unwrap();
    let members_start = manifest.find("members = [").unwrap();
    let members_end = members_start + manifest[members_start..].find(']').unwrap();
    let sdk = repository().join("engines/sdk");
    let manifest = format!(
        "{}members = [\n{}",
        &manifest[..members_start],
        &manifest[members_end..]
    )
    .replace(
        "tessera-sdk = { path = \"sdk\" }",
        &format!("tessera-sdk = {{ path = {:?} }}", sdk.display().to_string()),
    );
    std::fs::write(engines.join("Cargo.toml"), manifest).unwrap();
    // The same dependency versions as the real engines, so the build reuses their artifacts.
    std::fs::copy(
        repository().join("engines/Cargo.lock"),
        engines.join("Cargo.lock"),
    )
    .unwrap();
    engines
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scaffolded_engine_builds_loads_routes_and_provisions() {
    let database = TestDatabase::new(Backend::Sqlite).await;
    let engines = empty_engine_workspace(&database.data_dir.join("workspace"));
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());

    let printed = run(Command::new(&cargo)
        .args(["run", "--quiet", "--manifest-path"])
        .arg(repository().join("xtask/Cargo.toml"))
        .arg("--target-dir")
        .arg(target_dir().join("xtask-scaffold"))
        .args(["--", "new-engine", "hello-world", "--engines-dir"])
        .arg(&engines));
    assert!(printed.contains("hello-world"), "{printed}");
    let manifest = std::fs::read_to_string(engines.join("Cargo.toml")).unwrap();
    assert!(manifest.contains("\"hello-world\""), "{manifest}");

    // Built exactly as `cargo xtask build-engines` and the test harness build engines.
    run(Command::new(&cargo)
        .args([
            "build",
            "--release",
            "--quiet",
            "--target",
            "wasm32-wasip2",
            "--manifest-path",
        ])
        .arg(engines.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(target_dir().join("engines")));
    let built = target_dir().join("engines/wasm32-wasip2/release/hello_world.wasm");
    let plugins = database.data_dir.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::copy(&built, plugins.join("hello-world.wasm")).unwrap();

    let app = spawn_app_with(
        Backend::Sqlite,
        AppOptions {
            database: Some(database),
            ..AppOptions::default()
        },
    )
    .await;
    let listed = json_with_status(app.get("/core/api/v1/engines").await, 200).await;
    assert_eq!(listed["data"][0]["code"], "hello-world", "{listed}");
    assert_eq!(listed["data"][0]["is_active"], true);

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
        json!({ "greeting": "hello, Ada", "user_id": user_id })
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
    app.stop().await;
}
