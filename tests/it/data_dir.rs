//! The data dir and what is on disk: the SQLite write-ahead log stays bounded under steady
//! reads and writes and is truncated when idle; the data dir is private (0700, every file 0600);
//! token signing seeds are stored sealed, and plaintext ones from older versions are sealed at
//! start with their tokens still valid.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ed25519_dalek::SigningKey;
use ed25519_dalek::pkcs8::EncodePrivateKey as _;
use serde_json::json;

use crate::database_test;
use crate::helpers::{
    AppOptions, Backend, ServeProcess, TestDatabase, eventually, json_with_status, spawn_app,
    spawn_app_with,
};
use tessera_host::auth::tokens::AccessClaims;
use tessera_host::on_pool;

const ENTITIES: &str = "/core/api/v1/entities";

fn file_size(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |metadata| metadata.len())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sqlite_wal_stays_under_its_bound_under_steady_reads_and_writes_and_is_truncated_when_idle()
 {
    const WAL_MAX_BYTES: u64 = 4 * 1024 * 1024;
    let app = spawn_app_with(
        Backend::Sqlite,
        AppOptions::unlimited_and(|config| {
            config.database.sqlite_wal_max_bytes = WAL_MAX_BYTES;
        }),
    )
    .await;
    let database_path = app.database.data_dir.join("tessera.db");
    let wal_path = app.database.data_dir.join("tessera.db-wal");
    let tenant = app.create_tenant("acme");
    let token = app
        .token(&tenant, &uuid::Uuid::new_v4().to_string(), "owner")
        .await;
    let size_before = file_size(&database_path);

    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicU64::new(0));
    let app = Arc::new(app);
    let mut load = Vec::new();
    // Writers: intentions with a few KiB of fields each (entity, event, timeline, search rows).
    for writer in 0..6 {
        let (app, token, stop, written) =
            (app.clone(), token.clone(), stop.clone(), written.clone());
        load.push(tokio::spawn(async move {
            let mut index = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let text = format!("{writer}-{index} ").repeat(400);
                let response = app
                    .intention(
                        &token,
                        "entity.create",
                        json!({ "family": "task", "fields": { "title": text } }),
                    )
                    .await;
                assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
                written.fetch_add(1, Ordering::Relaxed);
                index += 1;
            }
        }));
    }
    // Readers: list entities and read the timeline all along, so some read is always open.
    for reader in 0..4 {
        let (app, token, stop) = (app.clone(), token.clone(), stop.clone());
        load.push(tokio::spawn(async move {
            let path = if reader % 2 == 0 {
                format!("{ENTITIES}?family=task&per_page=100")
            } else {
                "/core/api/v1/timeline?limit=100".to_owned()
            };
            while !stop.load(Ordering::Relaxed) {
                let response = app.get_as(&path, &token).await;
                assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
            }
        }));
    }

    // At least 12 s of load, and on until it wrote several times the bound (a machine busy
    // with other work writes more slowly), at most two minutes.
    // The database and its log together only mostly grow: a checkpoint copies the log's pages
    // into the database, some of them over pages already there, and a reset log then holds
    // less. So the load's volume is the largest sum seen, the one that ended the loop.
    let mut largest = 0;
    let mut grown = 0;
    let started = tokio::time::Instant::now();
    let written_bytes =
        || (file_size(&database_path) + file_size(&wal_path)).saturating_sub(size_before);
    while started.elapsed() < Duration::from_secs(12)
        || (grown <= 3 * WAL_MAX_BYTES && started.elapsed() < Duration::from_secs(120))
    {
        largest = largest.max(file_size(&wal_path));
        grown = grown.max(written_bytes());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    stop.store(true, Ordering::Relaxed);
    for task in load {
        task.await.unwrap();
    }
    eprintln!(
        "{} intentions, the WAL at most {largest} bytes, the database grew {grown} bytes",
        written.load(Ordering::Relaxed)
    );
    assert!(
        grown > 3 * WAL_MAX_BYTES,
        "the load wrote enough to exceed the bound several times ({} intentions, {grown} bytes)",
        written.load(Ordering::Relaxed)
    );
    assert!(
        largest <= WAL_MAX_BYTES,
        "the WAL reached {largest} bytes, over its bound of {WAL_MAX_BYTES} ({} intentions written)",
        written.load(Ordering::Relaxed)
    );
    // Once the projections have caught up and nothing writes, the WAL is truncated.
    eventually(30, "the idle WAL to be truncated", || async {
        (file_size(&wal_path) == 0).then_some(())
    })
    .await;
}

/// Every entry under `dir` (recursively) with its permission bits.
fn modes_under(dir: &Path) -> Vec<(PathBuf, bool, u32)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let metadata = std::fs::symlink_metadata(entry.path()).unwrap();
        found.push((
            entry.path(),
            metadata.is_dir(),
            metadata.permissions().mode() & 0o777,
        ));
        if metadata.is_dir() {
            found.extend(modes_under(&entry.path()));
        }
    }
    found
}

/// Serves once on `data_dir` (with an engine, so compiled artifacts are cached there) and
/// asserts that the data dir is 0700 and everything in it private, while the host runs.
async fn assert_private_after_serving(data_dir: &Path) {
    let plugins_dir =
        std::env::temp_dir().join(format!("tessera-test-plugins-{}", uuid::Uuid::new_v4()));
    crate::components::install(&plugins_dir, &["echo"]);
    let host = ServeProcess::start(|command| {
        command
            .arg("--data-dir")
            .arg(data_dir)
            .arg("--plugins-dir")
            .arg(&plugins_dir)
            .env_remove("TESSERA_DATABASE_URL")
            .env_remove("TESSERA_SERVICE_SECRET")
    });
    let client = reqwest::Client::new();
    let live = client.get(host.url("/livez")).send().await.unwrap();
    assert_eq!(live.status(), 200);

    let root_mode = std::fs::metadata(data_dir).unwrap().permissions().mode() & 0o777;
    assert_eq!(root_mode, 0o700, "the data dir is private");
    let entries = modes_under(data_dir);
    let names: Vec<String> = entries
        .iter()
        .map(|(path, _, _)| path.strip_prefix(data_dir).unwrap().display().to_string())
        .collect();
    for expected in [
        "tessera.db",
        "tessera.db-wal",
        "tessera.db-shm",
        "service_secret",
    ] {
        assert!(
            names.iter().any(|name| name == expected),
            "{expected} in {names:?}"
        );
    }
    assert!(
        names.iter().any(|name| name.ends_with(".cwasm")),
        "a compiled artifact is cached in the data dir: {names:?}"
    );
    for (path, is_dir, mode) in entries {
        let expected = if is_dir { 0o700 } else { 0o600 };
        assert_eq!(
            mode,
            expected,
            "{} is {mode:o}, expected {expected:o}",
            path.display()
        );
    }
    drop(host);
    let _ = std::fs::remove_dir_all(&plugins_dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_creates_a_private_data_dir_with_private_files() {
    let parent = std::env::temp_dir().join(format!("tessera-test-{}", uuid::Uuid::new_v4()));
    let data_dir = parent.join("data");
    assert_private_after_serving(&data_dir).await;
    std::fs::remove_dir_all(&parent).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_tightens_an_existing_data_dir_and_database_file() {
    let data_dir = std::env::temp_dir().join(format!("tessera-test-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&data_dir).unwrap();
    std::fs::set_permissions(&data_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    // A database file as an older version (or an operator's `touch`) left it: world-readable.
    let database = data_dir.join("tessera.db");
    std::fs::write(&database, b"").unwrap();
    std::fs::set_permissions(&database, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_private_after_serving(&data_dir).await;
    std::fs::remove_dir_all(&data_dir).unwrap();
}

/// The stored `private_seed` of every signing key.
async fn stored_seeds(database: &TestDatabase) -> Vec<(String, String)> {
    let handle = database.connect().await;
    let rows: Vec<(String, String)> = on_pool!(handle, pool => sqlx::query_as(
        "SELECT kid, private_seed FROM signing_keys ORDER BY created_at",
    )
    .fetch_all(pool)
    .await)
    .unwrap();
    handle.close().await;
    rows
}

/// The public key (JWK `x`) of a stored value if it were a plaintext seed.
fn public_x_if_plaintext(stored: &str) -> Option<String> {
    let seed: [u8; 32] = STANDARD.decode(stored).ok()?.try_into().ok()?;
    Some(URL_SAFE_NO_PAD.encode(SigningKey::from_bytes(&seed).verifying_key().to_bytes()))
}

database_test!(signing_seeds_are_stored_sealed, |backend| async move {
    let app = spawn_app(backend).await;
    let jwks = json_with_status(app.get("/auth/.well-known/jwks.json").await, 200).await;
    let published: Vec<String> = jwks["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|key| key["x"].as_str().unwrap().to_owned())
        .collect();
    assert!(!published.is_empty());
    let rows = stored_seeds(&app.database).await;
    assert!(!rows.is_empty());
    for (kid, stored) in rows {
        assert!(
            public_x_if_plaintext(&stored).is_none(),
            "the key {kid} is stored as a plaintext seed"
        );
        for x in &published {
            assert!(!stored.contains(x.as_str()));
        }
    }
});

database_test!(
    a_plaintext_signing_key_is_sealed_at_start_and_its_tokens_still_verify,
    |backend| async move {
        // A host of this version makes its own key and a session; then the database is made to
        // look as an older version left it: the signing key a plaintext seed.
        let first = spawn_app(backend).await;
        let tenant = first.create_tenant("acme");
        let user = uuid::Uuid::new_v4().to_string();
        let issued = first.token(&tenant, &user, "owner").await;
        let mut database = first.stop_keeping_database().await;

        let seed: [u8; 32] = rand::random();
        let kid = uuid::Uuid::new_v4().simple().to_string();
        let handle = database.connect().await;
        let now = tessera_host::storage::time::now();
        on_pool!(handle, pool => sqlx::query(
            "UPDATE signing_keys SET retired_at = $1 WHERE retired_at IS NULL",
        )
        .bind(&now)
        .execute(pool)
        .await
        .map(drop))
        .unwrap();
        on_pool!(handle, pool => sqlx::query(
            "INSERT INTO signing_keys (kid, algorithm, private_seed, created_at) VALUES ($1, 'EdDSA', $2, $3)",
        )
        .bind(&kid)
        .bind(STANDARD.encode(seed))
        .bind(&now)
        .execute(pool)
        .await
        .map(drop))
        .unwrap();
        handle.close().await;

        // A token the plaintext key signed (the session's claims, re-signed by that key).
        let payload = issued.split('.').nth(1).unwrap();
        let claims: AccessClaims =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap();
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::EdDSA);
        header.kid = Some(kid.clone());
        let der = SigningKey::from_bytes(&seed).to_pkcs8_der().unwrap();
        let old_token = jsonwebtoken::encode(
            &header,
            &claims,
            &jsonwebtoken::EncodingKey::from_ed_der(der.as_bytes()),
        )
        .unwrap();

        for start in 0..2 {
            let app = spawn_app_with(
                backend,
                AppOptions {
                    database: Some(database),
                    ..AppOptions::default()
                },
            )
            .await;
            let rows = stored_seeds(&app.database).await;
            let (_, stored) = rows
                .iter()
                .find(|(stored_kid, _)| *stored_kid == kid)
                .expect("the old key is kept");
            assert!(
                public_x_if_plaintext(stored).is_none(),
                "start {start}: the plaintext seed was sealed"
            );
            assert!(!stored.contains(&STANDARD.encode(seed)));
            for (other, stored) in &rows {
                assert!(
                    public_x_if_plaintext(stored).is_none(),
                    "start {start}: {other} is sealed"
                );
            }
            json_with_status(app.get_as(ENTITIES, &old_token).await, 200).await;
            // The key still signs: a new token carries its kid and verifies.
            let fresh = app.token(&tenant, &user, "owner").await;
            let header = jsonwebtoken::decode_header(&fresh).unwrap();
            assert_eq!(header.kid.as_deref(), Some(kid.as_str()));
            json_with_status(app.get_as(ENTITIES, &fresh).await, 200).await;
            let jwks = json_with_status(app.get("/auth/.well-known/jwks.json").await, 200).await;
            let expected_x =
                URL_SAFE_NO_PAD.encode(SigningKey::from_bytes(&seed).verifying_key().to_bytes());
            assert!(
                jwks["keys"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|key| key["kid"] == kid.as_str() && key["x"] == expected_x.as_str())
            );
            database = app.stop_keeping_database().await;
        }
    }
);
