//! Outbound HTTP from engines through the host policy: real receivers on loopback (HTTPS with a
//! freshly generated self-signed certificate, and plain HTTP) called by the `fetcher` test
//! engine, which reports the outcome of `outbound-http.fetch` as JSON.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Redirect};
use axum::routing::{any, get};
use serde_json::{Value, json};
use tessera_host::config::Config;

use crate::database_test;
use crate::helpers::{
    AppOptions, Backend, CertificateFile, TestApp, json_with_status, loopback_listener,
    serve_https, spawn_app_with,
};

/// How many requests reached the receiver's `/hook`.
#[derive(Default)]
struct Hits(AtomicUsize);

/// A receiver's routes: `/hook` echoes what arrived, `/slow` answers after 3 s, `/redirect`
/// redirects to `/hook`, `/big` answers 5 MiB.
fn receiver_routes(hits: Arc<Hits>) -> Router {
    async fn hook(
        State(hits): State<Arc<Hits>>,
        method: Method,
        headers: HeaderMap,
        body: String,
    ) -> axum::Json<Value> {
        hits.0.fetch_add(1, Ordering::SeqCst);
        let header = |name: &str| {
            headers
                .get(name)
                .map(|value| value.to_str().unwrap().to_owned())
        };
        axum::Json(json!({
            "method": method.as_str(),
            "body": body,
            "host": header("host"),
            "x_custom": header("x-custom"),
            "content_length": header("content-length"),
            "upgrade": header("upgrade"),
        }))
    }
    async fn slow() -> &'static str {
        tokio::time::sleep(Duration::from_secs(3)).await;
        "finally"
    }
    async fn big() -> impl IntoResponse {
        (StatusCode::OK, vec![b'x'; 5 * 1024 * 1024])
    }
    Router::new()
        .route("/hook", any(hook))
        .route("/slow", get(slow))
        .route("/redirect", get(|| async { Redirect::to("/hook") }))
        .route("/big", get(big))
        .with_state(hits)
}

struct Receiver {
    port: u16,
    hits: Arc<Hits>,
}

impl Receiver {
    fn hook_hits(&self) -> usize {
        self.hits.0.load(Ordering::SeqCst)
    }
}

/// A plain-HTTP receiver on 127.0.0.1.
async fn http_receiver() -> Receiver {
    let hits = Arc::new(Hits::default());
    let (listener, port) = loopback_listener();
    let listener = tokio::net::TcpListener::from_std(listener).unwrap();
    let routes = receiver_routes(hits.clone());
    tokio::spawn(async move { axum::serve(listener, routes).await });
    Receiver { port, hits }
}

/// An HTTPS receiver on 127.0.0.1 with a new self-signed certificate for `localhost` and
/// `127.0.0.1`, and the certificate's PEM file (to trust through `TESSERA_WEBHOOK_EXTRA_CA`).
async fn https_receiver() -> (Receiver, CertificateFile) {
    let hits = Arc::new(Hits::default());
    let (port, certificate) = serve_https(receiver_routes(hits.clone()));
    (Receiver { port, hits }, certificate)
}

/// A host with the fetchers whose outbound settings `configure` sets, and a token.
async fn spawn(
    backend: Backend,
    configure: impl FnOnce(&mut Config) + Send + 'static,
) -> (TestApp, String) {
    let app = spawn_app_with(
        backend,
        AppOptions {
            plugins: vec!["fetcher", "fetcher-bare"],
            configure: Some(Box::new(configure)),
            ..AppOptions::default()
        },
    )
    .await;
    let token = app
        .token(
            &uuid::Uuid::new_v4().to_string(),
            &uuid::Uuid::new_v4().to_string(),
            "editor",
        )
        .await;
    (app, token)
}

/// Has `engine` fetch `request` (the fetcher's input) and returns its report.
async fn fetch_as(app: &TestApp, token: &str, engine: &str, request: Value) -> Value {
    let response = app
        .client
        .post(app.url(&format!("/{engine}/api/v1/fetch")))
        .bearer_auth(token)
        .json(&request)
        .send()
        .await
        .expect("POST");
    json_with_status(response, 200).await["data"].clone()
}

async fn fetch(app: &TestApp, token: &str, request: Value) -> Value {
    fetch_as(app, token, "fetcher", request).await
}

fn error_of(report: &Value) -> &str {
    assert_eq!(report["ok"], false, "expected a failure: {report}");
    report["error"].as_str().expect("an error message")
}

fn success_of(report: &Value) -> &Value {
    assert_eq!(report["ok"], true, "expected a response: {report}");
    report
}

database_test!(
    a_trusted_https_receiver_answers_when_private_targets_are_allowed,
    |backend| async move {
        let (receiver, certificate) = https_receiver().await;
        let ca = certificate.0.clone();
        let (app, token) = spawn(backend, move |config| {
            config.outbound.extra_ca = Some(ca);
            config.outbound.allow_private_targets = true;
        })
        .await;

        let report = fetch(
            &app,
            &token,
            json!({
                "url": format!("https://localhost:{}/hook?token=secret", receiver.port),
                "method": "post",
                "headers": {
                    "x-custom": "kept",
                    "host": "evil.example",
                    "content-length": "999",
                    "upgrade": "websocket",
                },
                "body": "hello",
            }),
        )
        .await;
        let report = success_of(&report);
        assert_eq!(report["status"], 200);
        assert!(report["elapsed_ms"].is_u64(), "{report}");
        assert!(
            report["headers"]
                .as_array()
                .unwrap()
                .iter()
                .any(|pair| pair[0] == "content-type" && pair[1] == "application/json"),
            "{report}"
        );
        let seen: Value = serde_json::from_str(report["body"].as_str().unwrap()).unwrap();
        assert_eq!(seen["method"], "POST");
        assert_eq!(seen["body"], "hello");
        assert_eq!(seen["x_custom"], "kept");
        // The host sets Host and Content-Length itself and drops hop-by-hop headers.
        assert_eq!(seen["host"], format!("localhost:{}", receiver.port));
        assert_eq!(seen["content_length"], "5");
        assert_eq!(seen["upgrade"], Value::Null);

        // The IP address in the certificate works too.
        let report = fetch(
            &app,
            &token,
            json!({ "url": format!("https://127.0.0.1:{}/hook", receiver.port) }),
        )
        .await;
        assert_eq!(success_of(&report)["status"], 200);
        assert_eq!(receiver.hook_hits(), 2);
        app.stop().await;
    }
);

database_test!(
    private_targets_are_refused_by_default,
    |backend| async move {
        let (receiver, certificate) = https_receiver().await;
        let plain = http_receiver().await;
        let ca = certificate.0.clone();
        let (app, token) = spawn(backend, move |config| {
            config.outbound.extra_ca = Some(ca);
            assert!(!config.outbound.allow_private_targets, "the default");
        })
        .await;

        for url in [
            format!("https://localhost:{}/hook", receiver.port),
            format!("https://127.0.0.1:{}/hook", receiver.port),
            format!("http://127.0.0.1:{}/hook", plain.port),
            format!("http://localhost:{}/hook", plain.port),
            format!("http://[::1]:{}/hook", plain.port),
            "http://10.0.0.1/hook".to_owned(),
        ] {
            let report = fetch(&app, &token, json!({ "url": url })).await;
            let error = error_of(&report);
            assert!(
                error.starts_with("refused by policy:") && error.contains("private targets"),
                "{url}: {error}"
            );
        }
        assert_eq!(receiver.hook_hits() + plain.hook_hits(), 0);
        app.stop().await;
    }
);

database_test!(
    an_untrusted_certificate_is_a_tls_error,
    |backend| async move {
        let (receiver, _certificate) = https_receiver().await;
        let (app, token) = spawn(backend, |config| {
            config.outbound.allow_private_targets = true;
        })
        .await;

        let report = fetch(
            &app,
            &token,
            json!({ "url": format!("https://localhost:{}/hook", receiver.port) }),
        )
        .await;
        let error = error_of(&report);
        assert!(error.starts_with("TLS failed:"), "{error}");
        assert!(error.contains("certificate"), "{error}");
        assert_eq!(receiver.hook_hits(), 0);
        app.stop().await;
    }
);

database_test!(
    engines_without_outbound_hosts_are_refused,
    |backend| async move {
        let receiver = http_receiver().await;
        let (app, token) = spawn(backend, |config| {
            config.outbound.allow_private_targets = true;
        })
        .await;
        let hook = format!("http://127.0.0.1:{}/hook", receiver.port);

        let report = fetch_as(&app, &token, "fetcher-bare", json!({ "url": hook })).await;
        assert_eq!(
            error_of(&report),
            "refused by policy: outbound HTTP is not allowed for the engine fetcher-bare (it has no outbound hosts)"
        );
        // An engine with an allow-list reaches what it lists, and only that.
        let report = fetch(&app, &token, json!({ "url": hook })).await;
        assert_eq!(success_of(&report)["status"], 200);
        for url in [
            "http://example.com/".to_owned(),
            "http://hooks.example.com:8080/".to_owned(),
            format!("http://127.0.0.2:{}/hook", receiver.port),
            "http://10.0.0.1:8080/".to_owned(),
        ] {
            let report = fetch(&app, &token, json!({ "url": url })).await;
            let error = error_of(&report);
            assert!(
                error.starts_with("refused by policy:")
                    && error
                        .contains("is not among the outbound hosts allowed for the engine fetcher"),
                "{url}: {error}"
            );
        }
        assert_eq!(receiver.hook_hits(), 1);
        app.stop().await;
    }
);

database_test!(
    the_operator_list_replaces_the_declared_one,
    |backend| async move {
        let receiver = http_receiver().await;
        let (app, token) = spawn(backend, |config| {
            config.outbound.allow_private_targets = true;
            config.engine_outbound_hosts = [
                (
                    "fetcher-bare".to_owned(),
                    vec!["http://127.0.0.1:*".to_owned()],
                ),
                ("fetcher".to_owned(), vec![]),
            ]
            .into();
        })
        .await;
        let hook = format!("http://127.0.0.1:{}/hook", receiver.port);

        let report = fetch_as(&app, &token, "fetcher-bare", json!({ "url": hook })).await;
        assert_eq!(success_of(&report)["status"], 200);
        let report = fetch(&app, &token, json!({ "url": hook })).await;
        assert!(
            error_of(&report).contains("not allowed for the engine fetcher "),
            "{report}"
        );
        assert_eq!(receiver.hook_hits(), 1);
        app.stop().await;
    }
);

database_test!(a_slow_receiver_times_out, |backend| async move {
    let receiver = http_receiver().await;
    let (app, token) = spawn(backend, |config| {
        config.outbound.allow_private_targets = true;
    })
    .await;

    let started = Instant::now();
    let report = fetch(
        &app,
        &token,
        json!({ "url": format!("http://127.0.0.1:{}/slow", receiver.port), "timeout_ms": 300 }),
    )
    .await;
    assert_eq!(
        error_of(&report),
        "timed out after 300 ms without a complete response"
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    app.stop().await;
});

database_test!(redirects_are_not_followed, |backend| async move {
    let receiver = http_receiver().await;
    let (app, token) = spawn(backend, |config| {
        config.outbound.allow_private_targets = true;
    })
    .await;

    let report = fetch(
        &app,
        &token,
        json!({ "url": format!("http://127.0.0.1:{}/redirect", receiver.port) }),
    )
    .await;
    let report = success_of(&report);
    assert_eq!(report["status"], 303);
    assert!(
        report["headers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|pair| pair[0] == "location" && pair[1] == "/hook"),
        "{report}"
    );
    assert_eq!(receiver.hook_hits(), 0);
    app.stop().await;
});

database_test!(
    malformed_requests_and_oversized_responses_are_errors,
    |backend| async move {
        let receiver = http_receiver().await;
        let (app, token) = spawn(backend, |config| {
            config.outbound.allow_private_targets = true;
        })
        .await;
        let base = format!("http://127.0.0.1:{}", receiver.port);

        let report = fetch(&app, &token, json!({ "url": format!("{base}/big") })).await;
        assert_eq!(
            error_of(&report),
            "the exchange failed: the response body exceeds 4194304 bytes"
        );
        let cases = [
            json!({ "url": format!("{base}/hook"), "method": "TRACE" }),
            json!({ "url": format!("{base}/hook"), "method": "CONNECT" }),
            json!({ "url": format!("{base}/hook"), "headers": { "bad name": "x" } }),
            json!({ "url": format!("{base}/hook"), "headers": { "x-ok": "line\nbreak" } }),
            json!({ "url": "file:///etc/passwd" }),
            json!({ "url": "ftp://127.0.0.1/" }),
            json!({ "url": "not a url" }),
        ];
        for case in cases {
            let report = fetch(&app, &token, case.clone()).await;
            let error = error_of(&report);
            assert!(
                error.starts_with("invalid outbound request:"),
                "{case}: {error}"
            );
        }
        assert_eq!(receiver.hook_hits(), 0);
        app.stop().await;
    }
);

database_test!(
    tunnelled_and_translated_ranges_are_refused_like_private_ones,
    |backend| async move {
        let (app, token) = spawn(backend, |config| {
            assert!(!config.outbound.allow_private_targets, "the default");
        })
        .await;

        for url in [
            // 6to4 (2002::/16) embedding 127.0.0.1, 10.0.0.1 and a public 8.8.8.8: the whole
            // range is refused (tunnelled through relays nobody controls).
            "https://[2002:7f00:1::]/",
            "https://[2002:a00:1::1]/",
            "https://[2002:808:808::1]/",
            // Teredo (2001::/32).
            "https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/",
            "https://[2001::1]/",
            // NAT64 local-use (64:ff9b:1::/48), and the well-known prefix embedding a private
            // address.
            "https://[64:ff9b:1::a00:1]/",
            "https://[64:ff9b:1:ffff::8.8.8.8]/",
            "https://[64:ff9b::127.0.0.1]/",
            // The 6to4 relay anycast range.
            "https://192.88.99.1/",
            "https://192.88.99.254:8443/",
        ] {
            let report = fetch(&app, &token, json!({ "url": url, "timeout_ms": 300 })).await;
            let error = error_of(&report);
            assert!(
                error.starts_with("refused by policy:") && error.contains("private targets"),
                "{url}: {error}"
            );
        }
        app.stop().await;
    }
);

database_test!(
    a_name_resolving_to_a_private_address_does_not_reveal_it,
    |backend| async move {
        let plain = http_receiver().await;
        let (app, token) = spawn(backend, |_| {}).await;

        // `localhost` resolves to 127.0.0.1 (and ::1): the engine learns that it is private,
        // never which address it is.
        let report = fetch(
            &app,
            &token,
            json!({ "url": format!("http://localhost:{}/hook", plain.port) }),
        )
        .await;
        let error = error_of(&report);
        assert_eq!(
            error,
            "refused by policy: localhost resolves only to private (non-public) addresses, and this host does not allow private targets"
        );
        for address in ["127.0.0.1", "::1", "loopback"] {
            assert!(!error.contains(address), "{error}");
        }
        assert_eq!(plain.hook_hits(), 0);
        app.stop().await;
    }
);
