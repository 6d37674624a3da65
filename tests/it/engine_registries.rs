//! Engines from OCI registries (CONTRACT §10): `tessera admin engine push FILE oci://…` and
//! `tessera admin engine publish oci://…` against Debian's `docker-registry` (the CNCF
//! distribution registry) on loopback over TLS with a private certificate authority, components
//! pushed by Tessera and by `skopeo`, published into a two-host cluster; a wrong digest, a
//! changed blob, an unsigned component where signatures are required and a registry that
//! answers 401 each refused by name. Keys and signatures are made with the `openssl` command,
//! as the book tells publishers to.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use crate::cluster::{Cluster, digest_of, every_host_runs, owner_token};
use crate::components;
use crate::helpers::{
    AppOptions, Backend, CertificateFile, ServeProcess, TestDatabase, eventually, run_admin_with,
    spawn_app_with,
};

/// A `docker-registry` process on a free loopback port, serving HTTPS with a new self-signed
/// certificate (optionally behind htpasswd basic auth); killed and its storage removed when
/// dropped.
struct OciRegistry {
    child: Child,
    port: u16,
    directory: PathBuf,
    certificate: CertificateFile,
    /// An HTTPS client that trusts the registry's certificate.
    client: reqwest::Client,
}

impl OciRegistry {
    async fn start(credentials: Option<(&str, &str)>) -> Self {
        let directory =
            std::env::temp_dir().join(format!("tessera-registry-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&directory).unwrap();
        let certified = rcgen::generate_simple_self_signed(vec![
            "localhost".to_owned(),
            "127.0.0.1".to_owned(),
        ])
        .unwrap();
        let certificate = CertificateFile::write(&certified.cert.pem());
        std::fs::write(
            directory.join("key.pem"),
            certified.signing_key.serialize_pem(),
        )
        .unwrap();
        // skopeo reads a certificate directory's `*.crt` as authorities.
        std::fs::create_dir_all(directory.join("certs")).unwrap();
        std::fs::write(directory.join("certs/ca.crt"), certified.cert.pem()).unwrap();
        let port = crate::helpers::loopback_listener().1;
        let mut config = format!(
            "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {storage}\nhttp:\n  addr: 127.0.0.1:{port}\n  tls:\n    certificate: {certificate}\n    key: {key}\n",
            storage = directory.join("storage").display(),
            certificate = certificate.0.display(),
            key = directory.join("key.pem").display(),
        );
        if let Some((user, password)) = credentials {
            let hash = bcrypt::hash(password, 4).unwrap();
            std::fs::write(directory.join("htpasswd"), format!("{user}:{hash}\n")).unwrap();
            config.push_str(&format!(
                "auth:\n  htpasswd:\n    realm: tessera-test\n    path: {}\n",
                directory.join("htpasswd").display()
            ));
        }
        std::fs::write(directory.join("config.yml"), config).unwrap();
        let child = Command::new(registry_binary())
            .arg("serve")
            .arg(directory.join("config.yml"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting docker-registry");
        let client = reqwest::Client::builder()
            .add_root_certificate(
                reqwest::Certificate::from_pem(certified.cert.pem().as_bytes()).unwrap(),
            )
            .build()
            .unwrap();
        let registry = Self {
            child,
            port,
            directory,
            certificate,
            client,
        };
        let probe = format!("https://127.0.0.1:{port}/v2/");
        eventually(30, "the registry to answer", || async {
            let answer = registry.client.get(&probe).send().await.ok()?;
            [200, 401].contains(&answer.status().as_u16()).then_some(())
        })
        .await;
        registry
    }

    /// `oci://127.0.0.1:PORT/<path>`.
    fn reference(&self, path: &str) -> String {
        format!("oci://127.0.0.1:{}/{path}", self.port)
    }

    /// The certificate the registry presents (its own authority), for `--ca-file`.
    fn ca_file(&self) -> &str {
        self.certificate.0.to_str().unwrap()
    }

    /// Where the registry keeps the blob `digest` (`sha256:…`).
    fn blob_file(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").unwrap();
        self.directory
            .join("storage/docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }
}

impl Drop for OciRegistry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.directory);
    }
}

/// Debian's `docker-registry` (README: the test command installs it).
fn registry_binary() -> &'static str {
    let path = "/usr/bin/docker-registry";
    assert!(
        Path::new(path).is_file(),
        "{path} is missing: apt-get install docker-registry skopeo (the README's test command does)"
    );
    path
}

/// An Ed25519 key pair made by `openssl` in `directory`: (private PKCS#8 PEM, public PEM).
fn openssl_key_pair(directory: &Path, name: &str) -> (PathBuf, PathBuf) {
    let private = directory.join(format!("{name}.pem"));
    let public = directory.join(format!("{name}.pub"));
    let made = Command::new("openssl")
        .args(["genpkey", "-algorithm", "ed25519", "-out"])
        .arg(&private)
        .status()
        .expect("running openssl");
    assert!(made.success());
    let made = Command::new("openssl")
        .args(["pkey", "-pubout", "-in"])
        .arg(&private)
        .arg("-out")
        .arg(&public)
        .status()
        .expect("running openssl");
    assert!(made.success());
    (private, public)
}

/// `tessera admin engine <arguments>` on `database`, with `environment`.
fn engine_command(
    database: &TestDatabase,
    arguments: &[&str],
    environment: &[(&str, &str)],
) -> crate::helpers::CliOutput {
    let mut all = vec!["engine"];
    all.extend_from_slice(arguments);
    run_admin_with(database, &all, environment, None)
}

/// Writes `component` as a Wasm OCI artifact in an OCI image layout (`oci:DIR:TAG` to
/// skopeo), tagged `tag`; the layout's directory and the manifest's digest.
fn oci_layout(directory: &Path, component: &[u8], tag: &str) -> (PathBuf, String) {
    let layout = directory.join(format!("layout-{tag}"));
    std::fs::create_dir_all(layout.join("blobs/sha256")).unwrap();
    let put = |bytes: &[u8]| {
        let hex = hex::encode(Sha256::digest(bytes));
        std::fs::write(layout.join("blobs/sha256").join(&hex), bytes).unwrap();
        json!({ "digest": format!("sha256:{hex}"), "size": bytes.len() })
    };
    let layer = put(component);
    let config = serde_json::to_vec(&json!({
        "architecture": "wasm",
        "os": "wasip2",
        "layerDigests": [layer["digest"]],
    }))
    .unwrap();
    let config = put(&config);
    let manifest = serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {
            "mediaType": "application/vnd.wasm.config.v0+json",
            "digest": config["digest"], "size": config["size"],
        },
        "layers": [{
            "mediaType": "application/wasm",
            "digest": layer["digest"], "size": layer["size"],
        }],
    }))
    .unwrap();
    let manifest = put(&manifest);
    std::fs::write(
        layout.join("oci-layout"),
        r#"{"imageLayoutVersion":"1.0.0"}"#,
    )
    .unwrap();
    std::fs::write(
        layout.join("index.json"),
        serde_json::to_vec(&json!({
            "schemaVersion": 2,
            "manifests": [{
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": manifest["digest"], "size": manifest["size"],
                "annotations": { "org.opencontainers.image.ref.name": tag },
            }],
        }))
        .unwrap(),
    )
    .unwrap();
    (layout, manifest["digest"].as_str().unwrap().to_owned())
}

#[tokio::test]
async fn components_pushed_by_tessera_and_by_skopeo_reach_both_hosts_of_a_cluster() {
    let registry = OciRegistry::start(None).await;
    let Some(cluster) = Cluster::start(
        2,
        &[
            ("TESSERA_CLUSTER_HEARTBEAT_INTERVAL", "200ms"),
            ("TESSERA_CLUSTER_HOST_TIMEOUT", "2s"),
        ],
        &[],
    )
    .await
    else {
        return;
    };
    let database = &cluster.database;
    let token = owner_token(database, &cluster.hosts[0].url("")).await;
    let client = reqwest::Client::new();
    let noop = |host: &ServeProcess| {
        client
            .get(host.url("/echo/api/v1/noop"))
            .bearer_auth(&token)
            .send()
    };

    // Pushed by Tessera: the digest it prints names the push.
    let first = std::fs::read(components::component("echo")).unwrap();
    let file = database.data_dir.join("echo.wasm");
    std::fs::write(&file, &first).unwrap();
    let tagged = registry.reference("engines/echo:1");
    let ca = ["--ca-file", registry.ca_file()];
    let pushed = engine_command(
        database,
        &[&["push", file.to_str().unwrap(), &tagged], &ca[..]].concat(),
        &[],
    )
    .json();
    assert_eq!(pushed["signed"], false);
    assert_eq!(
        pushed["layer_digest"],
        format!("sha256:{}", digest_of(&first)).as_str()
    );
    let digest = pushed["digest"].as_str().unwrap().to_owned();
    // What a registry client sees: the Wasm OCI artifact layout.
    let manifest: Value = registry
        .client
        .get(format!(
            "https://127.0.0.1:{}/v2/engines/echo/manifests/{digest}",
            registry.port
        ))
        .header("accept", "application/vnd.oci.image.manifest.v1+json")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        manifest["config"]["mediaType"],
        "application/vnd.wasm.config.v0+json"
    );
    assert_eq!(manifest["layers"][0]["mediaType"], "application/wasm");

    // Published by digest into the cluster: both hosts route it.
    let pinned = registry.reference(&format!("engines/echo@{digest}"));
    let published = engine_command(database, &[&["publish", &pinned], &ca[..]].concat(), &[]);
    let published = published.json();
    assert_eq!(published["code"], "echo");
    assert_eq!(published["version"], 1);
    assert_eq!(published["oci_digest"], digest.as_str());
    every_host_runs(&cluster, "echo", &digest_of(&first)).await;
    for host in &cluster.hosts {
        assert_eq!(noop(host).await.unwrap().status(), 204);
    }

    // Pushed by skopeo from an OCI image layout, published by tag: version 2 on both hosts.
    let second = components::another_build_of(&first, "2");
    let (layout, skopeo_digest) = oci_layout(&database.data_dir, &second, "2");
    let copied = Command::new("skopeo")
        .arg("copy")
        .arg("--dest-cert-dir")
        .arg(registry.directory.join("certs"))
        .arg(format!("oci:{}:2", layout.display()))
        .arg(format!(
            "docker://127.0.0.1:{}/engines/echo:2",
            registry.port
        ))
        .output()
        .expect("running skopeo (apt-get install skopeo)");
    assert!(
        copied.status.success(),
        "{}",
        String::from_utf8_lossy(&copied.stderr)
    );
    let published = engine_command(
        database,
        &[&["publish", &registry.reference("engines/echo:2")], &ca[..]].concat(),
        &[],
    )
    .json();
    assert_eq!(published["version"], 2);
    assert_eq!(published["oci_digest"], skopeo_digest.as_str());
    every_host_runs(&cluster, "echo", &digest_of(&second)).await;
    for host in &cluster.hosts {
        assert_eq!(noop(host).await.unwrap().status(), 204);
    }
}

#[tokio::test]
async fn a_wrong_digest_a_changed_blob_or_an_untrusted_registry_is_refused_by_name() {
    let registry = OciRegistry::start(None).await;
    let database = TestDatabase::new(Backend::Sqlite).await;
    let component = std::fs::read(components::component("echo")).unwrap();
    let file = database.data_dir.join("echo.wasm");
    std::fs::write(&file, &component).unwrap();
    let ca = ["--ca-file", registry.ca_file()];
    let tagged = registry.reference("engines/echo:1");

    // Without the registry's authority, TLS fails, and the message says what to give.
    let refused = engine_command(&database, &["push", file.to_str().unwrap(), &tagged], &[]);
    assert!(!refused.success);
    assert!(refused.stderr.contains("--ca-file"), "{}", refused.stderr);

    let pushed = engine_command(
        &database,
        &[&["push", file.to_str().unwrap(), &tagged], &ca[..]].concat(),
        &[],
    )
    .json();

    // A digest the registry does not hold.
    let unknown = registry.reference(&format!("engines/echo@sha256:{}", "0".repeat(64)));
    let refused = engine_command(&database, &[&["publish", &unknown], &ca[..]].concat(), &[]);
    assert!(!refused.success);
    assert!(
        refused.stderr.contains("is not in the registry"),
        "{}",
        refused.stderr
    );

    // The registry's copy of the component changed after the push (same size): refused, and
    // nothing is published.
    let blob = registry.blob_file(pushed["layer_digest"].as_str().unwrap());
    let mut changed = std::fs::read(&blob).unwrap();
    let last = changed.len() - 1;
    changed[last] ^= 0xff;
    std::fs::write(&blob, &changed).unwrap();
    for reference in [
        tagged.clone(),
        registry.reference(&format!(
            "engines/echo@{}",
            pushed["digest"].as_str().unwrap()
        )),
    ] {
        let refused = engine_command(
            &database,
            &[&["publish", &reference], &ca[..]].concat(),
            &[],
        );
        assert!(!refused.success);
        assert!(
            refused.stderr.contains("does not match its digest"),
            "{}",
            refused.stderr
        );
    }
    let listed = engine_command(&database, &["list"], &[]).json();
    assert_eq!(listed, json!([]));
}

#[tokio::test]
async fn where_signatures_are_required_only_a_trusted_publishers_component_is_published() {
    let registry = OciRegistry::start(None).await;
    let database = TestDatabase::new(Backend::Sqlite).await;
    let keys = &database.data_dir;
    let (publisher, publisher_public) = openssl_key_pair(keys, "publisher");
    let (stranger, _) = openssl_key_pair(keys, "stranger");
    let trusted = [(
        "TESSERA_ENGINE_TRUSTED_KEYS",
        publisher_public.to_str().unwrap(),
    )];
    let component = std::fs::read(components::component("echo")).unwrap();
    let file = keys.join("echo.wasm");
    std::fs::write(&file, &component).unwrap();
    let ca = ["--ca-file", registry.ca_file()];
    let push = |tag: &str, key: Option<&Path>| {
        let reference = registry.reference(&format!("engines/echo:{tag}"));
        let mut arguments = vec!["push", file.to_str().unwrap(), &reference];
        arguments.extend_from_slice(&ca);
        if let Some(key) = key {
            arguments.extend_from_slice(&["--signing-key", key.to_str().unwrap()]);
        }
        let pushed = engine_command(&database, &arguments, &[]).json();
        assert_eq!(pushed["signed"], key.is_some());
        reference
    };
    let publish = |reference: &str| {
        engine_command(
            &database,
            &[&["publish", reference], &ca[..]].concat(),
            &trusted,
        )
    };

    let unsigned = publish(&push("unsigned", None));
    assert!(!unsigned.success);
    assert!(
        unsigned.stderr.contains("is not signed"),
        "{}",
        unsigned.stderr
    );
    let by_stranger = publish(&push("stranger", Some(&stranger)));
    assert!(!by_stranger.success);
    assert!(
        by_stranger
            .stderr
            .contains("not by any key of TESSERA_ENGINE_TRUSTED_KEYS"),
        "{}",
        by_stranger.stderr
    );
    assert_eq!(engine_command(&database, &["list"], &[]).json(), json!([]));
    let signed = publish(&push("signed", Some(&publisher))).json();
    assert_eq!(signed["code"], "echo");
    assert_eq!(signed["version"], 1);

    // A file signed with `openssl pkeyutl` is published with --signature; unsigned, refused.
    let second = components::another_build_of(&component, "2");
    let second_file = keys.join("echo-2.wasm");
    std::fs::write(&second_file, &second).unwrap();
    let refused = engine_command(
        &database,
        &["publish", second_file.to_str().unwrap()],
        &trusted,
    );
    assert!(!refused.success);
    assert!(
        refused.stderr.contains("is not signed"),
        "{}",
        refused.stderr
    );
    let signature = keys.join("echo-2.wasm.sig");
    let signed = Command::new("openssl")
        .args(["pkeyutl", "-sign", "-rawin", "-inkey"])
        .arg(&publisher)
        .arg("-in")
        .arg(&second_file)
        .arg("-out")
        .arg(&signature)
        .status()
        .expect("running openssl");
    assert!(signed.success());
    let published = engine_command(
        &database,
        &[
            "publish",
            second_file.to_str().unwrap(),
            "--signature",
            signature.to_str().unwrap(),
        ],
        &trusted,
    )
    .json();
    assert_eq!(published["version"], 2);
}

#[tokio::test]
async fn a_registry_that_answers_401_is_refused_until_given_credentials() {
    let registry = OciRegistry::start(Some(("publisher", "Registry-Secret-7"))).await;
    let database = TestDatabase::new(Backend::Sqlite).await;
    let file = database.data_dir.join("echo.wasm");
    std::fs::copy(components::component("echo"), &file).unwrap();
    let reference = registry.reference("engines/echo:1");
    let ca = ["--ca-file", registry.ca_file()];
    let push = [&["push", file.to_str().unwrap(), &reference], &ca[..]].concat();

    let refused = engine_command(&database, &push, &[]);
    assert!(!refused.success);
    assert!(
        refused
            .stderr
            .contains("refused the credentials (401 Unauthorized)"),
        "{}",
        refused.stderr
    );
    let push_as_publisher = |password: &str| {
        run_admin_with(
            &database,
            &[
                &["engine"],
                &push[..],
                &["--username", "publisher", "--password-stdin"],
            ]
            .concat(),
            &[],
            Some(&format!("{password}\n")),
        )
    };
    let wrong = push_as_publisher("not-the-password");
    assert!(!wrong.success);
    assert!(wrong.stderr.contains("401"), "{}", wrong.stderr);
    let pushed = push_as_publisher("Registry-Secret-7");
    assert!(pushed.success, "{}", pushed.stderr);
    // The password is never printed.
    assert!(
        !pushed.stdout.contains("Registry-Secret-7")
            && !pushed.stderr.contains("Registry-Secret-7")
    );

    // Publishing: refused anonymously; the standard Docker config's credentials are used.
    let publish = [&["publish", &reference], &ca[..]].concat();
    let refused = engine_command(&database, &publish, &[]);
    assert!(!refused.success);
    assert!(refused.stderr.contains("401"), "{}", refused.stderr);
    let docker_config = database.data_dir.join("docker");
    std::fs::create_dir_all(&docker_config).unwrap();
    use base64::Engine as _;
    let auth = base64::engine::general_purpose::STANDARD.encode("publisher:Registry-Secret-7");
    std::fs::write(
        docker_config.join("config.json"),
        json!({ "auths": { format!("127.0.0.1:{}", registry.port): { "auth": auth } } })
            .to_string(),
    )
    .unwrap();
    let published = engine_command(
        &database,
        &publish,
        &[("DOCKER_CONFIG", docker_config.to_str().unwrap())],
    )
    .json();
    assert_eq!(published["code"], "echo");
}

#[tokio::test]
async fn the_operator_endpoint_takes_the_signature_as_a_header_where_signatures_are_required() {
    let keys = std::env::temp_dir().join(format!("tessera-keys-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&keys).unwrap();
    let (publisher, publisher_public) = openssl_key_pair(&keys, "publisher");
    let (stranger, _) = openssl_key_pair(&keys, "stranger");
    let trusted =
        tessera_host::distribution::signature::TrustedKeys::read(&[publisher_public]).unwrap();
    let app = spawn_app_with(
        Backend::Sqlite,
        AppOptions {
            configure: Some(Box::new(move |config| {
                config.runtime.trusted_keys = trusted;
            })),
            ..AppOptions::default()
        },
    )
    .await;
    let operator = app.admin(&["operator-token"]).json()["operator_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let component = std::fs::read(components::component("echo")).unwrap();
    let sign = |key: &Path| {
        let signature = tessera_host::distribution::signature::PublisherKey::read(key)
            .unwrap()
            .sign(&component);
        signature.to_base64()
    };
    let publish = |signature: Option<String>| {
        let mut request = app
            .client
            .post(app.url("/core/api/operator/engines"))
            .bearer_auth(&operator)
            .header("content-type", "application/wasm")
            .body(component.clone());
        if let Some(signature) = signature {
            request = request.header("tessera-component-signature", signature);
        }
        request.send()
    };

    for (signature, says) in [
        (None, "is not signed"),
        (Some(sign(&stranger)), "not by any key"),
        (Some("not a signature".to_owned()), "64 bytes"),
    ] {
        let refused = publish(signature).await.unwrap();
        assert_eq!(refused.status(), 422);
        let body: Value = refused.json().await.unwrap();
        let reason = body["errors"]["signature"][0].as_str().unwrap_or_default();
        assert!(reason.contains(says), "{body}");
    }
    assert_eq!(app.admin(&["engine", "list"]).json(), json!([]));
    let published = publish(Some(sign(&publisher))).await.unwrap();
    assert_eq!(published.status(), 201);
    let body: Value = published.json().await.unwrap();
    assert_eq!(body["data"]["code"], "echo");
    let _ = std::fs::remove_dir_all(&keys);
}
