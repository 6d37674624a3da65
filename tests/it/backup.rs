//! Backups: `tessera admin backup` copies a served SQLite data dir while clients
//! write, into one private archive; `tessera admin restore` unpacks it into a new data dir,
//! checking it first and overwriting nothing; a server on the restored dir serves every write
//! acknowledged before the backup began and signs in with the TOTP enrolled before it.
//! PostgreSQL is refused with the pg_dump procedure named.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tessera_host::auth::totp::{TotpSecret, code_at, step_at};

use crate::helpers::{
    Backend, ServeProcess, TestDatabase, create_owner, on_database, postgres_available, run_admin,
};

const PASSWORD: &str = "Correct1horse";
const WRITERS: usize = 4;

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// A client of a served host.
struct Client {
    http: reqwest::Client,
    base: String,
}

impl Client {
    fn of(served: &ServeProcess) -> Self {
        Self {
            http: reqwest::Client::new(),
            base: served.url(""),
        }
    }

    async fn post(&self, path: &str, token: Option<&str>, body: &Value) -> (u16, Value) {
        let mut request = self.http.post(format!("{}{path}", self.base)).json(body);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    async fn get(&self, path: &str, token: &str) -> (u16, Value) {
        let response = self
            .http
            .get(format!("{}{path}", self.base))
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    async fn login(&self) -> (u16, Value) {
        self.post(
            "/auth/api/v1/auth/login",
            None,
            &json!({ "login": "ada@example.com", "password": PASSWORD }),
        )
        .await
    }
}

/// Serves `database` with the binary, limits off (the writers are many).
fn serve(database: &TestDatabase) -> ServeProcess {
    ServeProcess::start(|command| {
        command
            .env("TESSERA_RATE_LIMIT_READ", "0")
            .env("TESSERA_RATE_LIMIT_WRITE", "0")
            .env_remove("TESSERA_SERVICE_SECRET");
        on_database(command, database)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_under_write_load_restores_every_acknowledged_write_and_the_totp_sign_in() {
    let original = TestDatabase::new(Backend::Sqlite).await;
    run_admin(
        &original,
        &["create-tenant", "--slug", "acme", "--name", "Acme"],
    )
    .json();
    create_owner(&original, "acme", "ada@example.com", PASSWORD);
    let served = serve(&original);
    let client = Client::of(&served);

    // Ada enrols TOTP: from now on signing in takes a code.
    let (status, signed_in) = client.login().await;
    assert_eq!(status, 200, "{signed_in}");
    let token = signed_in["data"]["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, setup) = client
        .post("/auth/api/v1/auth/mfa/totp/setup", Some(&token), &json!({}))
        .await;
    assert_eq!(status, 200, "{setup}");
    let secret = TotpSecret::from_base32(setup["data"]["secret"].as_str().unwrap()).unwrap();
    // Confirmed with the previous step's code (still accepted), so the restored server can be
    // signed in to with the current one whatever second this runs at.
    let step = step_at(chrono::Utc::now().timestamp()) - 1;
    let (status, confirmed) = client
        .post(
            "/auth/api/v1/auth/mfa/totp/confirm",
            Some(&token),
            &json!({ "code": code_at(&secret, step) }),
        )
        .await;
    assert_eq!(status, 200, "{confirmed}");

    // Writers create contacts all along; each acknowledgement is noted with its time.
    let stop = Arc::new(AtomicBool::new(false));
    let client = Arc::new(client);
    let writers: Vec<_> = (0..WRITERS)
        .map(|writer| {
            let (client, token, stop) = (client.clone(), token.clone(), stop.clone());
            tokio::spawn(async move {
                let mut acknowledged = Vec::new();
                let mut index = 0;
                while !stop.load(Ordering::Relaxed) {
                    let (status, body) = client
                        .post(
                            "/core/api/v1/intentions",
                            Some(&token),
                            &json!({ "type": "entity.create", "payload": {
                                "family": "contact",
                                "fields": { "name": format!("writer {writer} contact {index}") },
                            }}),
                        )
                        .await;
                    assert_eq!(status, 200, "{body}");
                    let entity_id = body["data"]["entity_id"].as_str().unwrap().to_owned();
                    acknowledged.push((entity_id, Instant::now()));
                    index += 1;
                }
                acknowledged
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(1500)).await;

    let backup_file = original.data_dir.join("backups").join("tessera.tar.gz");
    std::fs::create_dir_all(backup_file.parent().unwrap()).unwrap();
    let began = Instant::now();
    // The CLI runs beside the writers (its own process, off the test's async workers).
    let backed_up = {
        let mut command = std::process::Command::new(crate::helpers::tessera_binary());
        command
            .args(["admin", "backup", "--to", backup_file.to_str().unwrap()])
            .env_remove("TESSERA_SERVICE_SECRET");
        on_database(&mut command, &original);
        tokio::task::spawn_blocking(move || command.output().unwrap())
            .await
            .unwrap()
    };
    let ended = Instant::now();
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, Ordering::Relaxed);
    let mut acknowledged = Vec::new();
    for writer in writers {
        acknowledged.extend(writer.await.unwrap());
    }
    assert!(
        backed_up.status.success(),
        "{}",
        String::from_utf8_lossy(&backed_up.stderr)
    );
    let report: Value = serde_json::from_slice(&backed_up.stdout).unwrap();
    assert_eq!(report["backup"], backup_file.to_str().unwrap(), "{report}");
    assert_eq!(mode(&backup_file), 0o600);
    assert!(report["database_bytes"].as_u64().unwrap() > 0, "{report}");
    let before: Vec<&String> = acknowledged
        .iter()
        .filter(|(_, at)| *at < began)
        .map(|(entity_id, _)| entity_id)
        .collect();
    let during = acknowledged
        .iter()
        .filter(|(_, at)| *at >= began && *at <= ended)
        .count();
    assert!(
        before.len() >= WRITERS,
        "{} writes before the backup",
        before.len()
    );
    assert!(during > 0, "no write was acknowledged while the backup ran");

    // A second backup to the same file is refused and leaves the first as it was.
    let first_bytes = std::fs::read(&backup_file).unwrap();
    let again = run_admin(
        &original,
        &["backup", "--to", backup_file.to_str().unwrap()],
    );
    assert!(!again.success);
    assert!(again.stderr.contains("already exists"), "{}", again.stderr);
    assert_eq!(std::fs::read(&backup_file).unwrap(), first_bytes);
    assert_eq!(served.terminate().code(), Some(0));

    // Restored into a new data dir: private, with the database and the service secret.
    let restored = TestDatabase::new(Backend::Sqlite).await;
    let restore = |database: &TestDatabase| {
        let mut command = std::process::Command::new(crate::helpers::tessera_binary());
        command
            .args(["admin", "restore", "--from", backup_file.to_str().unwrap()])
            .env_remove("TESSERA_SERVICE_SECRET");
        let output = on_database(&mut command, database).output().unwrap();
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let (success, stdout, stderr) = restore(&restored);
    assert!(success, "{stderr}");
    let report: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(
        report["database"],
        restored.data_dir.join("tessera.db").to_str().unwrap()
    );
    for file in ["tessera.db", "service_secret"] {
        assert_eq!(mode(&restored.data_dir.join(file)), 0o600, "{file}");
    }
    assert_eq!(
        std::fs::read(restored.data_dir.join("service_secret")).unwrap(),
        std::fs::read(original.data_dir.join("service_secret")).unwrap()
    );
    // Restoring again over it is refused, and changes nothing.
    let database_before = std::fs::read(restored.data_dir.join("tessera.db")).unwrap();
    let (success, _, stderr) = restore(&restored);
    assert!(!success);
    assert!(stderr.contains("already exists"), "{stderr}");
    assert_eq!(
        std::fs::read(restored.data_dir.join("tessera.db")).unwrap(),
        database_before
    );

    // A server on the restored dir (the engines' folder of the original) signs Ada in with
    // her TOTP and serves every write acknowledged before the backup began.
    let served = ServeProcess::start(|command| {
        command
            .env("TESSERA_RATE_LIMIT_READ", "0")
            .env("TESSERA_RATE_LIMIT_WRITE", "0")
            .env_remove("TESSERA_SERVICE_SECRET")
            .arg("--data-dir")
            .arg(&restored.data_dir)
            .arg("--database-url")
            .arg(&restored.url)
            .arg("--plugins-dir")
            .arg(original.data_dir.join("plugins"))
    });
    let client = Client::of(&served);
    let (status, challenge) = client.login().await;
    assert_eq!(status, 202, "{challenge}");
    assert_eq!(challenge["data"]["methods"], json!(["totp"]));
    let mfa_token = challenge["data"]["mfa_token"].as_str().unwrap();
    let now_step = step_at(chrono::Utc::now().timestamp());
    assert!(now_step > step);
    let (status, verified) = client
        .post(
            "/auth/api/v1/auth/mfa/verify",
            None,
            &json!({ "mfa_token": mfa_token, "method": "totp", "code": code_at(&secret, now_step) }),
        )
        .await;
    assert_eq!(status, 200, "{verified}");
    let token = verified["data"]["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    for entity_id in before {
        let (status, entity) = client
            .get(&format!("/core/api/v1/entities/{entity_id}"), &token)
            .await;
        assert_eq!(status, 200, "{entity_id}: {entity}");
        assert_eq!(entity["data"]["id"], entity_id.as_str(), "{entity}");
    }
    assert_eq!(served.terminate().code(), Some(0));
}

#[tokio::test]
async fn a_damaged_backup_or_a_foreign_secret_restores_nothing() {
    let original = TestDatabase::new(Backend::Sqlite).await;
    run_admin(
        &original,
        &["create-tenant", "--slug", "acme", "--name", "Acme"],
    )
    .json();
    // Without the service secret a backup could not be used: it is refused, not made up.
    let secret_file = original.data_dir.join("service_secret");
    let secret = std::fs::read(&secret_file).unwrap();
    std::fs::remove_file(&secret_file).unwrap();
    let backup_file = original.data_dir.join("backup.tar.gz");
    let backup = || {
        run_admin(
            &original,
            &["backup", "--to", backup_file.to_str().unwrap()],
        )
    };
    let refused = backup();
    assert!(!refused.success);
    assert!(
        refused.stderr.contains("service secret"),
        "{}",
        refused.stderr
    );
    assert!(!backup_file.exists());
    assert!(!secret_file.exists());
    std::fs::write(&secret_file, &secret).unwrap();
    backup().json();

    let restore = |database: &TestDatabase, from: &Path, secret: Option<&str>| {
        let mut command = std::process::Command::new(crate::helpers::tessera_binary());
        command.args(["admin", "restore", "--from", from.to_str().unwrap()]);
        match secret {
            Some(secret) => command.env("TESSERA_SERVICE_SECRET", secret),
            None => command.env_remove("TESSERA_SERVICE_SECRET"),
        };
        let output = on_database(&mut command, database).output().unwrap();
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let target = TestDatabase::new(Backend::Sqlite).await;
    let nothing_written = |target: &TestDatabase| {
        let entries: Vec<_> = std::fs::read_dir(&target.data_dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert!(entries.is_empty(), "{entries:?}");
    };

    // A truncated archive.
    let bytes = std::fs::read(&backup_file).unwrap();
    let truncated = original.data_dir.join("truncated.tar.gz");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let (success, stderr) = restore(&target, &truncated, None);
    assert!(!success, "a truncated backup was restored");
    assert!(!stderr.is_empty());
    nothing_written(&target);

    // Not a backup at all.
    let (success, stderr) = restore(&target, &original.data_dir.join("service_secret"), None);
    assert!(!success);
    assert!(stderr.contains("backup"), "{stderr}");
    nothing_written(&target);

    // The servers would be started with another secret: the data could not be unsealed.
    let (success, stderr) = restore(&target, &backup_file, Some(&"b".repeat(64)));
    assert!(!success);
    assert!(stderr.contains("TESSERA_SERVICE_SECRET"), "{stderr}");
    nothing_written(&target);

    // The same backup, untouched and without the conflicting secret, restores.
    let (success, stderr) = restore(&target, &backup_file, None);
    assert!(success, "{stderr}");
}

#[tokio::test]
async fn postgresql_backups_are_left_to_pg_dump() {
    if !postgres_available() {
        return;
    }
    let database = TestDatabase::new(Backend::Postgres).await;
    let backup_file = database.data_dir.join("backup.tar.gz");
    let refused = run_admin(
        &database,
        &["backup", "--to", backup_file.to_str().unwrap()],
    );
    assert!(!refused.success);
    assert!(refused.stderr.contains("pg_dump"), "{}", refused.stderr);
    assert!(!backup_file.exists());
}
