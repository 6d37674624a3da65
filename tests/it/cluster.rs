//! A cluster of `tessera serve` processes on one PostgreSQL database: the harness
//! ([`Cluster`]: each host its own loopback port and data dir, one service secret) and what
//! the hosts share: the list of hosts with what each runs.

use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::components;
use crate::database_test;
use crate::helpers::{
    Backend, ServeProcess, TestDatabase, eventually, on_database, postgres_available, run_admin,
    spawn_app,
};

/// Hosts on one PostgreSQL database, started by the test; each is SIGKILLed when dropped.
pub struct Cluster {
    /// The shared database, and the data dir the admin CLI works in.
    pub database: TestDatabase,
    pub hosts: Vec<ServeProcess>,
    /// Each host's own data dir (same database), kept until the cluster drops.
    host_dirs: Vec<TestDatabase>,
    environment: Vec<(String, String)>,
    plugins: Vec<&'static str>,
    /// The repository's engines each host loads (of `components::ENGINES`).
    engines: Vec<&'static str>,
}

impl Cluster {
    /// `count` hosts with `environment` and the named test components in their plugins dirs;
    /// `None` when PostgreSQL is not available to this run.
    pub async fn start(
        count: usize,
        environment: &[(&str, &str)],
        plugins: &[&'static str],
    ) -> Option<Self> {
        if !postgres_available() {
            return None;
        }
        let database = TestDatabase::new(Backend::Postgres).await;
        // One service secret for every host and the CLI: it seals the signing keys they share.
        std::fs::write(
            database.data_dir.join("service_secret"),
            hex::encode(rand::random::<[u8; 32]>()),
        )
        .unwrap();
        let mut cluster = Self {
            database,
            hosts: Vec::new(),
            host_dirs: Vec::new(),
            environment: environment
                .iter()
                .map(|(name, value)| (name.to_string(), value.to_string()))
                .collect(),
            plugins: plugins.to_vec(),
            engines: Vec::new(),
        };
        for _ in 0..count {
            cluster.add_host();
        }
        Some(cluster)
    }

    /// Like [`Cluster::start`], each host with the repository's engines `engines`.
    pub async fn start_with_engines(
        count: usize,
        environment: &[(&str, &str)],
        engines: &[&'static str],
    ) -> Option<Self> {
        let mut cluster = Self::start(0, environment, &[]).await?;
        cluster.engines = engines.to_vec();
        // The admin CLI provisions tenants on the same engines.
        components::install_engines(&cluster.database.data_dir.join("plugins"), engines);
        for _ in 0..count {
            cluster.add_host();
        }
        Some(cluster)
    }

    /// Starts one more host; its index in `hosts`.
    pub fn add_host(&mut self) -> usize {
        let host_dir = self.database.for_another_host();
        components::install(&host_dir.data_dir.join("plugins"), &self.plugins);
        components::install_engines(&host_dir.data_dir.join("plugins"), &self.engines);
        let environment = self.environment.clone();
        let host = ServeProcess::start(|command| {
            on_database(command, &host_dir)
                .env("TESSERA_RATE_LIMIT_READ", "0")
                .env("TESSERA_RATE_LIMIT_WRITE", "0")
                .envs(environment)
        });
        self.host_dirs.push(host_dir);
        self.hosts.push(host);
        self.hosts.len() - 1
    }

    /// `tessera admin hosts`, by listen address.
    pub fn hosts_by_address(&self) -> Vec<(String, Value)> {
        let listed = run_admin(&self.database, &["hosts"]).json();
        listed
            .as_array()
            .expect("an array of hosts")
            .iter()
            .map(|host| {
                (
                    host["listen_address"].as_str().unwrap().to_owned(),
                    host.clone(),
                )
            })
            .collect()
    }

    /// The status `tessera admin hosts` gives the host `index`.
    pub fn status_of(&self, index: usize) -> String {
        let address = self.hosts[index].address().to_string();
        self.hosts_by_address()
            .into_iter()
            .find(|(listed, _)| *listed == address)
            .map(|(_, host)| host["status"].as_str().unwrap().to_owned())
            .unwrap_or_else(|| panic!("host {address} is not listed"))
    }

    /// The operator token, as `tessera admin operator-token` prints it.
    pub fn operator_token(&self) -> String {
        run_admin(&self.database, &["operator-token"]).json()["operator_token"]
            .as_str()
            .unwrap()
            .to_owned()
    }
}

/// Fast heartbeats, so that a lost host shows as gone within the test's patience.
const FAST_MEMBERSHIP: [(&str, &str); 2] = [
    ("TESSERA_CLUSTER_HEARTBEAT_INTERVAL", "200ms"),
    ("TESSERA_CLUSTER_HOST_TIMEOUT", "1s"),
];

#[tokio::test]
async fn every_host_lists_itself_with_its_engines_and_departs_as_stopped_or_gone() {
    let Some(mut cluster) = Cluster::start(3, &FAST_MEMBERSHIP, &["echo"]).await else {
        return;
    };
    let echo_digest = hex::encode(Sha256::digest(
        std::fs::read(components::component("echo")).unwrap(),
    ));
    let listed = cluster.hosts_by_address();
    assert_eq!(listed.len(), 3, "{listed:?}");
    for host in &cluster.hosts {
        let address = host.address().to_string();
        let (_, record) = listed
            .iter()
            .find(|(listed, _)| *listed == address)
            .unwrap_or_else(|| panic!("{address} is not listed: {listed:?}"));
        assert_eq!(record["status"], "live", "{record}");
        assert_eq!(record["public_url"], format!("http://{address}"));
        assert_eq!(record["version"], env!("CARGO_PKG_VERSION"));
        let engines = record["engines"].as_array().unwrap();
        assert_eq!(engines.len(), 1, "{record}");
        assert_eq!(engines[0]["code"], "echo");
        assert_eq!(engines[0]["sha256"], echo_digest.as_str());
    }

    // The operator endpoint, on any host, for the operator token only.
    let client = reqwest::Client::new();
    let url = cluster.hosts[1].url("/core/api/operator/hosts");
    let anonymous = client.get(&url).send().await.unwrap();
    assert_eq!(anonymous.status(), 401);
    let wrong = client
        .get(&url)
        .bearer_auth("tessera-operator-0000")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    let answer = client
        .get(&url)
        .bearer_auth(cluster.operator_token())
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let body: Value = answer.json().await.unwrap();
    let mut addresses: Vec<&str> = body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|host| host["listen_address"].as_str().unwrap())
        .collect();
    addresses.sort_unstable();
    let mut expected: Vec<String> = cluster
        .hosts
        .iter()
        .map(|host| host.address().to_string())
        .collect();
    expected.sort_unstable();
    assert_eq!(addresses, expected);

    // Killed: gone once its heartbeat is older than the timeout; the others stay live.
    cluster.hosts[2].kill();
    eventually(10, "the killed host is listed as gone", || async {
        (cluster.status_of(2) == "gone").then_some(())
    })
    .await;
    assert_eq!(cluster.status_of(0), "live");
    // Stopped cleanly: stopped at once, with the time.
    let stopped_address = cluster.hosts[1].address().to_string();
    let stopping = cluster.hosts.remove(1);
    assert!(stopping.terminate().success());
    let (_, record) = cluster
        .hosts_by_address()
        .into_iter()
        .find(|(address, _)| *address == stopped_address)
        .unwrap();
    assert_eq!(record["status"], "stopped", "{record}");
    assert!(record["stopped_at"].is_string(), "{record}");
    // A host started later joins the list.
    let added = cluster.add_host();
    assert_eq!(cluster.status_of(added), "live");
    assert_eq!(cluster.hosts_by_address().len(), 4);
}

#[tokio::test]
async fn the_auth_limit_holds_for_the_cluster_whichever_host_a_request_reaches() {
    const LIMIT: usize = 12;
    let Some(cluster) = Cluster::start(3, &[("TESSERA_RATE_LIMIT_AUTH", "12")], &[]).await else {
        return;
    };
    let client = reqwest::Client::new();
    let config_on = |host: usize| cluster.hosts[host % 3].url("/auth/api/v1/auth/config");
    // The limit's worth, spread over the three hosts: each allowed, counting down together.
    for sent in 0..LIMIT {
        let response = client.get(config_on(sent)).send().await.unwrap();
        assert_eq!(response.status(), 200, "request {sent}");
        let remaining: usize = response.headers()["x-ratelimit-remaining"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(remaining, LIMIT - 1 - sent, "request {sent}");
    }
    // The next one is refused on whichever host receives it, with when to retry.
    for host in 0..3 {
        let response = client.get(config_on(host)).send().await.unwrap();
        assert_eq!(response.status(), 429, "host {host}");
        assert_eq!(response.headers()["x-ratelimit-remaining"], "0");
        let retry_after: u64 = response.headers()["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!((1..=5).contains(&retry_after), "{retry_after}");
    }
}

#[tokio::test]
async fn concurrent_writes_racing_over_the_hosts_get_the_limit_once_between_them() {
    const LIMIT: usize = 12;
    let Some(cluster) = Cluster::start(3, &[("TESSERA_RATE_LIMIT_WRITE", "12")], &[]).await else {
        return;
    };
    // One bearer token (not a valid one: the limiter counts before the token is checked, so
    // each allowed request is refused further in, 401, and each refused one is a 429), three
    // times the limit at once.
    let client = reqwest::Client::new();
    let mut requests = tokio::task::JoinSet::new();
    for sent in 0..LIMIT * 3 {
        let request = client
            .post(cluster.hosts[sent % 3].url("/core/api/v1/intentions"))
            .bearer_auth("one-client-s-token")
            .json(&serde_json::json!({}));
        requests.spawn(async move { request.send().await.unwrap().status().as_u16() });
    }
    let statuses = requests.join_all().await;
    let refused = statuses.iter().filter(|status| **status == 429).count();
    assert_eq!(refused, LIMIT * 2, "{statuses:?}");
    assert!(
        statuses
            .iter()
            .all(|status| *status == 429 || *status == 401),
        "{statuses:?}"
    );
}

database_test!(
    a_lone_host_lists_itself_for_the_cli_and_the_operator,
    |backend| async move {
        let app = spawn_app(backend).await;
        let listed = app.admin(&["hosts"]).json();
        let hosts = listed.as_array().expect("an array of hosts");
        assert_eq!(hosts.len(), 1, "{listed}");
        assert_eq!(hosts[0]["listen_address"], app.address.to_string());
        assert_eq!(hosts[0]["status"], "live");
        let token = app.admin(&["operator-token"]).json()["operator_token"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(token.starts_with("tessera-operator-"), "{token}");
        // The token is the service secret's, not something a caller can guess from another's.
        assert_ne!(
            token,
            app.state().service_secret.expose(),
            "the token is derived, not the secret itself"
        );
        let answer = app
            .client
            .get(app.url("/core/api/operator/hosts"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200);
        let body: Value = answer.json().await.unwrap();
        assert_eq!(body["data"][0]["id"], hosts[0]["id"]);
        // An owner's access token is not the operator's.
        let tenant_id = app.create_tenant("acme");
        let owner = app
            .token(&tenant_id, &uuid::Uuid::new_v4().to_string(), "owner")
            .await;
        let refused = app
            .client
            .get(app.url("/core/api/operator/hosts"))
            .bearer_auth(owner)
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), 401);
        app.stop().await;
    }
);

#[test]
fn cluster_settings_that_cannot_work_stop_the_start_naming_them() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let database = runtime.block_on(TestDatabase::new(Backend::Sqlite));
    let refused = |environment: &[(&str, &str)]| {
        let mut command = std::process::Command::new(crate::helpers::tessera_binary());
        command.args(["serve", "--listen", "127.0.0.1:0"]);
        on_database(&mut command, &database)
            .env_remove("TESSERA_LOG")
            .envs(environment.iter().copied());
        let output = command.output().unwrap();
        assert!(!output.status.success(), "{environment:?} started");
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    let message = refused(&[("TESSERA_RATE_LIMIT_SCOPE", "cluster")]);
    assert!(
        message.contains("TESSERA_RATE_LIMIT_SCOPE") && message.contains("PostgreSQL"),
        "{message}"
    );
    let message = refused(&[("TESSERA_RATE_LIMIT_SCOPE", "everywhere")]);
    assert!(message.contains("TESSERA_RATE_LIMIT_SCOPE"), "{message}");
    let message = refused(&[
        ("TESSERA_CLUSTER_HEARTBEAT_INTERVAL", "10s"),
        ("TESSERA_CLUSTER_HOST_TIMEOUT", "15s"),
    ]);
    assert!(
        message.contains("TESSERA_CLUSTER_HOST_TIMEOUT"),
        "{message}"
    );
}

pub(crate) fn digest_of(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// An owner of a new tenant, signed in on `url`'s host: the access token.
pub(crate) async fn owner_token(database: &TestDatabase, base_url: &str) -> String {
    run_admin(
        database,
        &["create-tenant", "--slug", "acme", "--name", "Acme"],
    )
    .json();
    crate::helpers::create_owner(database, "acme", "owner@example.com", "Correct-Horse-42");
    let response = reqwest::Client::new()
        .post(format!("{base_url}/auth/api/v1/auth/login"))
        .json(&serde_json::json!({ "login": "owner@example.com", "password": "Correct-Horse-42" }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    body["data"]["access_token"].as_str().unwrap().to_owned()
}

/// The digest of `code` each host reports running (`tessera admin hosts`), host by host.
fn digests_running(cluster: &Cluster, code: &str) -> Vec<Option<String>> {
    let listed = cluster.hosts_by_address();
    cluster
        .hosts
        .iter()
        .map(|host| {
            let address = host.address().to_string();
            listed
                .iter()
                .find(|(listed, _)| *listed == address)
                .and_then(|(_, record)| {
                    record["engines"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .find(|engine| engine["code"] == code)
                        .map(|engine| engine["sha256"].as_str().unwrap().to_owned())
                })
        })
        .collect()
}

/// `code`'s item of `GET /core/api/v1/engines` on the host at `base_url`.
async fn engine_listed(client: &reqwest::Client, base_url: &str, token: &str, code: &str) -> Value {
    let engines: Value = client
        .get(format!("{base_url}/core/api/v1/engines"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    engines["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|engine| engine["code"] == code)
        .cloned()
        .unwrap_or_else(|| panic!("{code} is not listed: {engines}"))
}

/// Waits until every host of the cluster runs `code` with `digest`; how long that took.
pub(crate) async fn every_host_runs(
    cluster: &Cluster,
    code: &str,
    digest: &str,
) -> std::time::Duration {
    let started = std::time::Instant::now();
    eventually(15, "every host to run the published version", || async {
        digests_running(cluster, code)
            .iter()
            .all(|running| running.as_deref() == Some(digest))
            .then_some(())
    })
    .await;
    started.elapsed()
}

#[tokio::test]
async fn a_published_engine_reaches_every_host_upgrades_under_load_and_rolls_back() {
    let Some(mut cluster) = Cluster::start(
        3,
        &[
            ("TESSERA_CLUSTER_HEARTBEAT_INTERVAL", "200ms"),
            ("TESSERA_CLUSTER_HOST_TIMEOUT", "2s"),
            // Longer than the test allows: the hosts must hear of a release, not poll for it.
            ("TESSERA_ENGINE_RECONCILE_INTERVAL", "60s"),
        ],
        &[],
    )
    .await
    else {
        return;
    };
    let token = owner_token(&cluster.database, &cluster.hosts[0].url("")).await;
    let client = reqwest::Client::new();
    let noop = |host: &ServeProcess| {
        client
            .get(host.url("/echo/api/v1/noop"))
            .bearer_auth(&token)
            .send()
    };
    assert_eq!(noop(&cluster.hosts[0]).await.unwrap().status(), 404);

    // Published through the CLI: every host routes it within 5 s, with the same digest.
    let first = std::fs::read(components::component("echo")).unwrap();
    let file = cluster.database.data_dir.join("echo-1.wasm");
    std::fs::write(&file, &first).unwrap();
    let published = run_admin(
        &cluster.database,
        &["engine", "publish", file.to_str().unwrap()],
    );
    assert!(published.success, "{}", published.stderr);
    let published = published.json();
    assert_eq!(published["code"], "echo");
    assert_eq!(published["version"], 1);
    assert_eq!(published["active"], true);
    assert_eq!(published["sha256"], digest_of(&first).as_str());
    let took = every_host_runs(&cluster, "echo", &digest_of(&first)).await;
    assert!(took < std::time::Duration::from_secs(5), "{took:?}");
    for host in &cluster.hosts {
        assert_eq!(noop(host).await.unwrap().status(), 204);
    }

    // A new version through the operator API while clients keep calling every host: each
    // host swaps it in, and no request fails.
    let second = components::another_build_of(&first, "2");
    let stop = tokio_util::sync::CancellationToken::new();
    let mut load = tokio::task::JoinSet::new();
    for index in 0..6 {
        let url = cluster.hosts[index % 3].url("/echo/api/v1/noop");
        let (client, token, stop) = (client.clone(), token.clone(), stop.clone());
        load.spawn(async move {
            let mut statuses = Vec::new();
            while !stop.is_cancelled() {
                let status = client.get(&url).bearer_auth(&token).send().await;
                statuses.push(status.map(|response| response.status().as_u16()).ok());
            }
            statuses
        });
    }
    let answer = client
        .post(cluster.hosts[1].url("/core/api/operator/engines"))
        .bearer_auth(cluster.operator_token())
        .header("content-type", "application/wasm")
        .body(second.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 201);
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body["data"]["version"], 2);
    let took = every_host_runs(&cluster, "echo", &digest_of(&second)).await;
    assert!(took < std::time::Duration::from_secs(5), "{took:?}");
    // A little more traffic on the new version, then the tally.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    stop.cancel();
    let statuses: Vec<Option<u16>> = load.join_all().await.into_iter().flatten().collect();
    assert!(statuses.len() > 30, "{} requests", statuses.len());
    assert!(
        statuses.iter().all(|status| *status == Some(204)),
        "requests failed during the upgrade: {:?}",
        statuses
            .iter()
            .filter(|status| **status != Some(204))
            .collect::<Vec<_>>()
    );

    // Rolled back: version 1 everywhere again.
    let rolled = run_admin(&cluster.database, &["engine", "rollback", "echo"]).json();
    assert_eq!(rolled["active_version"], 1);
    assert_eq!(rolled["previous_version"], 2);
    every_host_runs(&cluster, "echo", &digest_of(&first)).await;
    let versions = run_admin(&cluster.database, &["engine", "versions", "echo"]).json();
    let listed: Vec<(i64, bool)> = versions
        .as_array()
        .unwrap()
        .iter()
        .map(|version| {
            (
                version["version"].as_i64().unwrap(),
                version["active"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(listed, [(2, false), (1, true)]);

    // A host started now serves the active version as soon as it says it is ready.
    let added = cluster.add_host();
    let host = &cluster.hosts[added];
    eventually(30, "the new host to report ready", || async {
        let ready = client.get(host.url("/readyz")).send().await.unwrap();
        (ready.status() == 200).then_some(())
    })
    .await;
    assert_eq!(noop(host).await.unwrap().status(), 204);
    let echo = engine_listed(&client, &host.url(""), &token, "echo").await;
    assert_eq!(echo["source"], "published");
    assert_eq!(echo["published_version"], 1);
    assert_eq!(echo["sha256"], digest_of(&first).as_str());
}

database_test!(
    a_published_version_wins_over_the_plugins_file_until_deactivated,
    |backend| async move {
        let app = crate::helpers::spawn_app_with_plugins(backend, &["echo"]).await;
        let owner = app
            .token(
                &app.create_tenant("acme"),
                &uuid::Uuid::new_v4().to_string(),
                "owner",
            )
            .await;
        let operator = app.admin(&["operator-token"]).json()["operator_token"]
            .as_str()
            .unwrap()
            .to_owned();
        let file = std::fs::read(components::component("echo")).unwrap();
        let base_url = app.url("");
        let echo_listing = || engine_listed(&app.client, &base_url, &owner, "echo");
        let listed = echo_listing().await;
        assert_eq!(listed["source"], "plugins");
        assert_eq!(listed["sha256"], digest_of(&file).as_str());

        let publish = |body: Vec<u8>, token: String| {
            app.client
                .post(app.url("/core/api/operator/engines"))
                .bearer_auth(token)
                .header("content-type", "application/wasm")
                .body(body)
                .send()
        };
        // Refused: without the operator token, and what is not a loadable component.
        assert_eq!(
            publish(file.clone(), owner.clone()).await.unwrap().status(),
            401
        );
        let refused = publish(b"\0asm not really".to_vec(), operator.clone())
            .await
            .unwrap();
        assert_eq!(refused.status(), 422);
        let body: Value = refused.json().await.unwrap();
        assert!(body["errors"]["component"].is_array(), "{body}");
        let nothing: Value = app.admin(&["engine", "list"]).json();
        assert_eq!(
            nothing,
            serde_json::json!([]),
            "a refused component is not stored"
        );

        // Published: the published build serves the code on this host at once.
        let build = components::another_build_of(&file, "published");
        let answer = publish(build.clone(), operator.clone()).await.unwrap();
        assert_eq!(answer.status(), 201);
        // Publishing the same bytes again finds their version.
        let again: Value = publish(build.clone(), operator.clone())
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(again["data"]["version"], 1);
        eventually(5, "the published build to replace the file", || async {
            let listed = echo_listing().await;
            (listed["source"] == "published").then_some(listed)
        })
        .await;
        assert_eq!(echo_listing().await["sha256"], digest_of(&build).as_str());

        // Nothing to roll back to, no such version: refused in the API's shapes.
        let operator_post = |path: &str, body: Option<Value>| {
            let request = app.client.post(app.url(path)).bearer_auth(&operator);
            match body {
                Some(body) => request.json(&body).send(),
                None => request.send(),
            }
        };
        let conflict = operator_post("/core/api/operator/engines/echo/rollback", None)
            .await
            .unwrap();
        assert_eq!(conflict.status(), 409);
        let missing = operator_post(
            "/core/api/operator/engines/echo/activate",
            Some(serde_json::json!({ "version": 7 })),
        )
        .await
        .unwrap();
        assert_eq!(missing.status(), 404);

        // Deactivated: the plugins dir's file serves the code again.
        let deactivated = operator_post("/core/api/operator/engines/echo/deactivate", None)
            .await
            .unwrap();
        assert_eq!(deactivated.status(), 200);
        let body: Value = deactivated.json().await.unwrap();
        assert!(body["data"]["active_version"].is_null(), "{body}");
        let listed = eventually(5, "the file to serve the code again", || async {
            let listed = echo_listing().await;
            (listed["source"] == "plugins").then_some(listed)
        })
        .await;
        assert_eq!(listed["sha256"], digest_of(&file).as_str());
        app.stop().await;
    }
);

/// What the clients of [`a_host_killed_under_load_loses_nothing_acknowledged`] were told was
/// written.
#[derive(Default)]
struct Acknowledged {
    entities: Vec<String>,
    notes: Vec<String>,
    messages: Vec<String>,
}

#[tokio::test]
async fn a_host_killed_under_load_loses_nothing_acknowledged() {
    use axum::extract::State;
    use std::sync::{Arc, Mutex};

    // A webhook receiver over HTTPS that accepts everything and notes each message's id.
    let received: Arc<Mutex<Vec<String>>> = Arc::default();
    async fn receive(
        State(received): State<Arc<Mutex<Vec<String>>>>,
        axum::Json(delivery): axum::Json<Value>,
    ) -> axum::http::StatusCode {
        if let Some(message_id) = delivery["data"]["message_id"].as_str() {
            received.lock().unwrap().push(message_id.to_owned());
        }
        axum::http::StatusCode::NO_CONTENT
    }
    let receiver = axum::Router::new()
        .route("/{*path}", axum::routing::post(receive))
        .with_state(received.clone());
    let (port, certificate) = crate::helpers::serve_https(receiver);
    let certificate_path = certificate.0.to_str().unwrap().to_owned();
    let Some(mut cluster) = Cluster::start_with_engines(
        3,
        &[
            ("TESSERA_WEBHOOK_ALLOW_PRIVATE_TARGETS", "true"),
            ("TESSERA_WEBHOOK_EXTRA_CA", &certificate_path),
            ("TESSERA_WEBHOOK_RETRY_SCHEDULE", "1s,1s,1s,1s"),
            // A short lease for the killed host's claims: 3 × 2 s, plus the fixed margins.
            ("TESSERA_ENGINE_LIFECYCLE_TIMEOUT", "2s"),
            ("TESSERA_CLUSTER_HEARTBEAT_INTERVAL", "200ms"),
            ("TESSERA_CLUSTER_HOST_TIMEOUT", "1s"),
        ],
        &components::ENGINES,
    )
    .await
    else {
        return;
    };
    let token = owner_token(&cluster.database, &cluster.hosts[0].url("")).await;
    let client = reqwest::Client::new();
    let bases: Vec<String> = cluster.hosts.iter().map(|host| host.url("")).collect();
    let on = |host: usize, path: &str| format!("{}{path}", bases[host]);
    let created = client
        .post(on(0, "/chat/api/v1/webhooks"))
        .bearer_auth(&token)
        .json(&serde_json::json!({
            "url": format!("https://127.0.0.1:{port}/hooks"),
            "events": ["message.created"],
            "secret": "whsec_0123456789abcdef0123456789abcdef",
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let conversations: Value = client
        .get(on(0, "/chat/api/v1/conversations"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let conversation = conversations["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|conversation| conversation["is_default"] == true)
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();

    // Clients spread over the three hosts write contacts, notes and messages; host 2 is
    // SIGKILLed while they do, and its clients move on to the others.
    let acknowledged: Arc<Mutex<Acknowledged>> = Arc::default();
    let killed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop = tokio_util::sync::CancellationToken::new();
    let mut clients = tokio::task::JoinSet::new();
    for client_index in 0..6usize {
        let (client, token, stop) = (client.clone(), token.clone(), stop.clone());
        let (acknowledged, killed, bases) = (acknowledged.clone(), killed.clone(), bases.clone());
        let conversation = conversation.clone();
        clients.spawn(async move {
            let mut sent = 0usize;
            while !stop.is_cancelled() {
                let mut host = client_index % 3;
                if host == 2 && killed.load(std::sync::atomic::Ordering::SeqCst) {
                    host = sent % 2;
                }
                let base = &bases[host];
                sent += 1;
                let (path, body) = match sent % 3 {
                    0 => (
                        "/core/api/v1/intentions".to_owned(),
                        serde_json::json!({"type": "entity.create", "payload": {
                            "family": "contact", "fields": {"name": format!("Ada {client_index}-{sent}")}}}),
                    ),
                    1 => (
                        "/notes/api/v1/notes".to_owned(),
                        serde_json::json!({"title": format!("Note {client_index}-{sent}"), "body": "x"}),
                    ),
                    _ => (
                        format!("/chat/api/v1/conversations/{conversation}/messages"),
                        serde_json::json!({"body": format!("Hello {client_index}-{sent}")}),
                    ),
                };
                let Ok(response) = client
                    .post(format!("{base}{path}"))
                    .bearer_auth(&token)
                    .json(&body)
                    .send()
                    .await
                else {
                    continue;
                };
                let status = response.status().as_u16();
                let Ok(answer) = response.json::<Value>().await else {
                    continue;
                };
                let mut acknowledged = acknowledged.lock().unwrap();
                match (sent % 3, status) {
                    (0, 200) => acknowledged
                        .entities
                        .push(answer["data"]["entity_id"].as_str().unwrap().to_owned()),
                    (1, 201) => acknowledged
                        .notes
                        .push(answer["data"]["id"].as_str().unwrap().to_owned()),
                    (2, 201) => acknowledged
                        .messages
                        .push(answer["data"]["id"].as_str().unwrap().to_owned()),
                    (kind, status) => panic!("write {kind} answered {status}: {answer}"),
                }
            }
        });
    }
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    cluster.hosts[2].kill();
    killed.store(true, std::sync::atomic::Ordering::SeqCst);
    let killed_at = std::time::Instant::now();
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    stop.cancel();
    clients.join_all().await;
    let acknowledged = std::mem::take(&mut *acknowledged.lock().unwrap());
    assert!(
        acknowledged.entities.len() > 5
            && acknowledged.notes.len() > 5
            && acknowledged.messages.len() > 5,
        "too few writes: {} contacts, {} notes, {} messages",
        acknowledged.entities.len(),
        acknowledged.notes.len(),
        acknowledged.messages.len()
    );

    // Every acknowledged write is there, once.
    let database = cluster.database.connect().await;
    let tessera_host::storage::Pool::Postgres(pool) = database.pool() else {
        unreachable!("a cluster runs on PostgreSQL")
    };
    for entity_id in &acknowledged.entities {
        let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM entities WHERE id = $1")
            .bind(entity_id)
            .fetch_one(pool)
            .await
            .unwrap();
        assert_eq!(count, 1, "contact {entity_id}");
    }
    for note_id in &acknowledged.notes {
        let response = client
            .get(on(0, &format!("/notes/api/v1/notes/{note_id}")))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "note {note_id}");
    }
    // Every projection applies each event of the log once (its statistics are written in the
    // batch's transaction, so a batch the killed host had not committed counts nothing), and
    // each acknowledged contact has its one activity item and its search document.
    eventually(60, "every projection to apply every event once", || async {
        let events: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM events")
            .fetch_one(pool)
            .await
            .unwrap();
        let applied: Vec<(String, i64)> = sqlx::query_as(
            "SELECT projection, SUM(events_processed)::BIGINT FROM projection_stats GROUP BY projection",
        )
        .fetch_all(pool)
        .await
        .unwrap();
        (!applied.is_empty() && applied.iter().all(|(_, count)| *count == events)).then_some(())
    })
    .await;
    for entity_id in &acknowledged.entities {
        let indexed: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM search_documents WHERE entity_id = $1")
                .bind(entity_id)
                .fetch_one(pool)
                .await
                .unwrap();
        assert_eq!(indexed, 1, "search document of {entity_id}");
        let items = eventually(60, "the contact's activity item", || async {
            let feed: Value = client
                .get(on(
                    0,
                    &format!("/activity/api/v1/feed?entity_id={entity_id}"),
                ))
                .bearer_auth(&token)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            let items = feed["data"].as_array().unwrap().len();
            (items > 0).then_some(items)
        })
        .await;
        assert_eq!(items, 1, "activity items of {entity_id}");
    }
    // Every acknowledged message's delivery completes, and what the killed host had claimed
    // runs on the others once its lease ends (the lease: 3 × 2 s + 5 s + 30 s).
    eventually(
        90,
        "every acknowledged message's webhook delivery",
        || async {
            let received = received.lock().unwrap().clone();
            acknowledged
                .messages
                .iter()
                .all(|message| received.contains(message))
                .then_some(())
        },
    )
    .await;
    eventually(90, "no engine work due or running", || async {
        let left: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM engine_work WHERE status = 'running' OR due_at <= $1",
        )
        .bind(tessera_host::storage::time::now())
        .fetch_one(pool)
        .await
        .unwrap();
        (left == 0).then_some(())
    })
    .await;
    let failed: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM engine_work WHERE status = 'failed'")
            .fetch_one(pool)
            .await
            .unwrap();
    assert_eq!(failed, 0, "engine work failed");
    assert!(
        killed_at.elapsed() < std::time::Duration::from_secs(90),
        "{:?}",
        killed_at.elapsed()
    );
    drop(certificate);
}

/// The `/metrics` bearer of the engine-share test's hosts.
const METRICS_TOKEN: &str = "metrics-token-for-the-cluster-0123";

/// A host's engine calls running now and its tenant share now, read from its `/metrics`.
async fn engine_calls_on(client: &reqwest::Client, host: &ServeProcess) -> (usize, usize) {
    let scrape = client
        .get(host.url("/metrics"))
        .bearer_auth(METRICS_TOKEN)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let sample = |series: &str| -> usize {
        let line = scrape
            .lines()
            .find(|line| line.starts_with(series) && line[series.len()..].starts_with(' '))
            .unwrap_or_else(|| panic!("no {series} in the scrape"));
        line[series.len()..].trim().parse::<f64>().unwrap() as usize
    };
    (
        sample(r#"tessera_engine_instances{state="in_use"}"#),
        sample("tessera_engine_tenant_share"),
    )
}

/// The tenant share each of the hosts `hosts` applies now.
async fn shares_on(client: &reqwest::Client, cluster: &Cluster, hosts: &[usize]) -> Vec<usize> {
    let mut shares = Vec::new();
    for &host in hosts {
        shares.push(engine_calls_on(client, &cluster.hosts[host]).await.1);
    }
    shares
}

/// One tenant floods slow calls into the hosts `flooded` (eight clients each) for a while;
/// the most calls seen running on those hosts together, and every answer's status.
async fn flood_the_share(cluster: &Cluster, flooded: &[usize], token: &str) -> (usize, Vec<u16>) {
    let client = reqwest::Client::new();
    let stop = tokio_util::sync::CancellationToken::new();
    let mut clients = tokio::task::JoinSet::new();
    for &host in flooded {
        for _ in 0..8 {
            let url = cluster.hosts[host].url("/napper/api/v1/nap?ms=300");
            let (client, token, stop) = (client.clone(), token.to_owned(), stop.clone());
            clients.spawn(async move {
                let mut statuses = Vec::new();
                while !stop.is_cancelled() {
                    let response = client.get(&url).bearer_auth(&token).send().await.unwrap();
                    statuses.push(response.status().as_u16());
                }
                statuses
            });
        }
    }
    let mut most_running = 0;
    for _ in 0..20 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let mut running = 0;
        for &host in flooded {
            running += engine_calls_on(&client, &cluster.hosts[host]).await.0;
        }
        most_running = most_running.max(running);
    }
    stop.cancel();
    let statuses = clients.join_all().await.into_iter().flatten().collect();
    (most_running, statuses)
}

#[tokio::test]
async fn an_explicit_engine_call_share_holds_for_the_cluster_and_follows_its_live_hosts() {
    let Some(mut cluster) = Cluster::start(
        3,
        &[
            FAST_MEMBERSHIP[0],
            FAST_MEMBERSHIP[1],
            ("TESSERA_ENGINE_TENANT_CONCURRENCY", "6"),
            ("TESSERA_ENGINE_TENANT_QUEUE_TIMEOUT", "30s"),
            ("TESSERA_METRICS_TOKEN", METRICS_TOKEN),
        ],
        &["napper"],
    )
    .await
    else {
        return;
    };
    let token = owner_token(&cluster.database, &cluster.hosts[0].url("")).await;
    let client = reqwest::Client::new();
    // Six for the cluster: two on each of three hosts.
    eventually(10, "each host to take two of six", || async {
        (shares_on(&client, &cluster, &[0, 1, 2]).await == [2, 2, 2]).then_some(())
    })
    .await;
    let (most_running, statuses) = flood_the_share(&cluster, &[0, 1, 2], &token).await;
    assert_eq!(
        most_running, 6,
        "the tenant runs six calls over the cluster, no more"
    );
    assert!(statuses.len() > 20, "{} calls", statuses.len());
    assert!(statuses.iter().all(|status| *status == 200), "{statuses:?}");

    // A host lost: once it is gone, the two left take three each.
    cluster.hosts[2].kill();
    eventually(10, "the two hosts left to take three each", || async {
        (shares_on(&client, &cluster, &[0, 1]).await == [3, 3]).then_some(())
    })
    .await;
    let (most_running, statuses) = flood_the_share(&cluster, &[0, 1], &token).await;
    assert_eq!(most_running, 6, "still six over the cluster");
    assert!(statuses.iter().all(|status| *status == 200), "{statuses:?}");

    // A host joining: back to two each, the new one included.
    let joined = cluster.add_host();
    eventually(20, "the new host to be ready", || async {
        let ready = reqwest::get(cluster.hosts[joined].url("/readyz"))
            .await
            .ok()?;
        (ready.status() == 200).then_some(())
    })
    .await;
    eventually(10, "three hosts to take two each again", || async {
        (shares_on(&client, &cluster, &[0, 1, joined]).await == [2, 2, 2]).then_some(())
    })
    .await;
}
