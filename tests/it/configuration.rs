//! The settings' sources, through the real binary (CONTRACT §8): `serve --config
//! FILE`, a flag for every setting, and the order flag, else environment, else file, else
//! default; a file with an unknown key, a bad value or a secret others may read stops the start.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::helpers::{Backend, ServeProcess, TestDatabase, on_database, tessera_binary};

/// Writes `text` to `name` in the test database's data dir with `mode`; returns its path.
fn config_file(database: &TestDatabase, name: &str, text: &str, mode: u32) -> PathBuf {
    let path = database.data_dir.join(name);
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    path
}

/// `tessera serve` with `arguments` that must stop at start: its error message.
fn refused_start(database: &TestDatabase, arguments: &[&str], config: Option<&Path>) -> String {
    let mut command = std::process::Command::new(tessera_binary());
    command
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(arguments);
    if let Some(config) = config {
        command.arg("--config").arg(config);
    }
    let output = on_database(&mut command, database)
        .env_remove("TESSERA_LOG")
        .output()
        .unwrap();
    assert!(!output.status.success(), "{arguments:?} started");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[tokio::test]
async fn a_setting_comes_from_the_flag_else_the_environment_else_the_file() {
    let database = TestDatabase::new(Backend::Sqlite).await;
    // The auth policy and the metrics token from the file alone; the session cap from all
    // three; the body limit from the environment and the file.
    let file = config_file(
        &database,
        "tessera.toml",
        r#"
        metrics_token = "from-the-file-0123456789"
        max_body_bytes = 100

        [auth]
        token_lifetime = "20m"
        max_sessions = 4

        [password]
        min_length = 10
        require_special = true
        "#,
        0o600,
    );
    let served = ServeProcess::start(|command| {
        command
            .arg("--config")
            .arg(&file)
            .args(["--auth-max-sessions", "7"])
            .env("TESSERA_AUTH_MAX_SESSIONS", "6")
            .env("TESSERA_MAX_BODY_BYTES", "2000")
            .env("TESSERA_RATE_LIMIT_AUTH", "0");
        on_database(command, &database)
    });
    let client = reqwest::Client::new();
    let config: Value = client
        .get(served.url("/auth/api/v1/auth/config"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let data = &config["data"];
    assert_eq!(
        data["session"]["max_active_sessions"], 7,
        "the flag: {data}"
    );
    assert_eq!(data["session"]["token_lifetime"], 1200, "the file: {data}");
    assert_eq!(data["password_policy"]["min_length"], 10, "{data}");
    assert_eq!(data["password_policy"]["require_special"], true, "{data}");
    assert_eq!(
        data["lockout"]["max_attempts"], 5,
        "set nowhere: the default: {data}"
    );

    // The body limit is the environment's 2000 bytes, not the file's 100.
    let post = |bytes: usize| {
        client
            .post(served.url("/core/api/v1/intentions"))
            .header("content-type", "application/json")
            .body(format!("{{\"pad\":\"{}\"}}", "x".repeat(bytes)))
            .send()
    };
    assert_eq!(post(1000).await.unwrap().status(), 401, "within the limit");
    assert_eq!(post(3000).await.unwrap().status(), 413, "beyond it");

    // Metrics are on, for the file's token.
    let metrics = served.url("/metrics");
    assert_eq!(client.get(&metrics).send().await.unwrap().status(), 401);
    let scraped = client
        .get(&metrics)
        .bearer_auth("from-the-file-0123456789")
        .send()
        .await
        .unwrap();
    assert_eq!(scraped.status(), 200);
    assert_eq!(served.terminate().code(), Some(0));
}

#[tokio::test]
async fn a_bad_config_file_or_flag_stops_the_start_naming_it() {
    let database = TestDatabase::new(Backend::Sqlite).await;
    let unknown = config_file(&database, "unknown.toml", "[rate_limit]\nauht = 5\n", 0o600);
    let message = refused_start(&database, &[], Some(&unknown));
    assert!(message.contains("rate_limit_auht"), "{message}");

    let bad_value = config_file(&database, "bad.toml", "[auth]\nmax_sessions = 0\n", 0o600);
    let message = refused_start(&database, &[], Some(&bad_value));
    assert!(message.contains("TESSERA_AUTH_MAX_SESSIONS"), "{message}");

    // A secret in a file others may read: refused, and the secret is not printed.
    let readable = config_file(
        &database,
        "readable.toml",
        "service_secret = \"a-secret-of-forty-characters-0123456789\"\n",
        0o644,
    );
    let message = refused_start(&database, &[], Some(&readable));
    assert!(
        message.contains("TESSERA_SERVICE_SECRET") && message.contains("chmod 600"),
        "{message}"
    );
    assert!(!message.contains("a-secret-of-forty"), "{message}");

    let missing = database.data_dir.join("missing.toml");
    let message = refused_start(&database, &[], Some(&missing));
    assert!(message.contains("missing.toml"), "{message}");

    // The families' flags name the variable they set.
    let message = refused_start(
        &database,
        &["--engine-limit", "notes.handle_timeout=forever"],
        None,
    );
    assert!(
        message.contains("TESSERA_ENGINE_LIMITS__NOTES__HANDLE_TIMEOUT"),
        "{message}"
    );
    let message = refused_start(&database, &["--engine-limit", "notes"], None);
    assert!(message.contains("CODE.NAME=VALUE"), "{message}");
}

#[test]
fn serve_has_a_flag_for_every_setting_and_hides_secret_values() {
    let output = std::process::Command::new(tessera_binary())
        .args(["serve", "--help"])
        .env("TESSERA_METRICS_TOKEN", "do-not-show-this-token")
        .output()
        .unwrap();
    assert!(output.status.success());
    let help = String::from_utf8_lossy(&output.stdout);
    for setting in tessera_host::settings::SETTINGS {
        assert!(
            help.contains(&format!("--{} ", setting.flag())),
            "--{} missing from serve --help",
            setting.flag()
        );
        assert!(help.contains(setting.variable), "{}", setting.variable);
    }
    for family in tessera_host::settings::FAMILIES {
        assert!(
            help.contains(&format!("--{} ", family.flag)),
            "{}",
            family.flag
        );
    }
    assert!(help.contains("--config "));
    assert!(!help.contains("do-not-show-this-token"), "{help}");
}
