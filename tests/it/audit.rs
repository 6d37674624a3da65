//! The audit trail of authentication events: recording through the public API (alone and in a
//! caller's transaction), the owners' endpoint (tenant scoping, newest first, cursor paging,
//! filters, refusals), and the `RequestOrigin` extractor through a real connection.

use std::net::SocketAddr;

use axum::Router;
use axum::extract::State;
use axum::routing::get;
use serde_json::{Value, json};
use tessera_host::auth::audit::{self, AuditEntry, AuditEvent, RequestOrigin};
use tessera_host::http::ApiResult;
use tessera_host::http::client_address::TrustedProxies;
use tessera_host::state::AppState;

use crate::database_test;
use crate::helpers::{AppOptions, Backend, TestApp, json_with_status, spawn_app, spawn_app_with};

fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

async fn record(app: &TestApp, entry: AuditEntry) {
    audit::record(&app.state().database, &entry)
        .await
        .expect("recording an audit entry");
}

/// Every page of `path` (which has a query already), following `next_cursor`.
async fn walk(app: &TestApp, token: &str, path: &str) -> (Vec<Value>, usize) {
    let mut items = Vec::new();
    let mut pages = 0;
    let mut cursor: Option<String> = None;
    loop {
        let url = match &cursor {
            Some(cursor) => format!("{path}&cursor={cursor}"),
            None => path.to_owned(),
        };
        let body = json_with_status(app.get_as(&url, token).await, 200).await;
        pages += 1;
        items.extend(body["data"].as_array().expect("data").iter().cloned());
        cursor = body["meta"]["next_cursor"].as_str().map(str::to_owned);
        if !body["meta"]["has_more"].as_bool().expect("has_more") {
            break;
        }
        assert!(cursor.is_some(), "has_more comes with a cursor: {body}");
    }
    (items, pages)
}

fn events(items: &[Value]) -> Vec<&str> {
    items
        .iter()
        .map(|item| item["event"].as_str().unwrap())
        .collect()
}

database_test!(
    owners_read_their_tenants_trail_newest_first_in_pages,
    |backend| async move {
        let app = spawn_app(backend).await;
        let (tenant, other_tenant) = (new_id(), new_id());
        let (owner, ada, bob) = (new_id(), new_id(), new_id());

        let trail = [
            (AuditEvent::LoginFailed, &ada),
            (AuditEvent::LoginSucceeded, &ada),
            (AuditEvent::LoginFailed, &bob),
            (AuditEvent::MfaEnabled, &bob),
            (AuditEvent::LoggedOut, &ada),
        ];
        for (event, user) in trail {
            record(
                &app,
                AuditEntry::new(event)
                    .tenant(&tenant)
                    .user(user)
                    .detail("seq", 1),
            )
            .await;
            // Another tenant's entries and a failed login of an unknown account in between.
            record(
                &app,
                AuditEntry::new(AuditEvent::LoginSucceeded)
                    .tenant(&other_tenant)
                    .user(new_id()),
            )
            .await;
        }
        record(
            &app,
            AuditEntry::new(AuditEvent::LoginFailed)
                .login("nobody@example.com")
                .detail("reason", "unknown_account"),
        )
        .await;

        let token = app.token(&tenant, &owner, "owner").await;
        let (items, pages) = walk(&app, &token, "/auth/api/v1/audit?limit=2").await;
        assert_eq!(pages, 3);
        assert_eq!(
            events(&items),
            [
                "session.logged_out",
                "mfa.enabled",
                "login.failed",
                "login.succeeded",
                "login.failed",
            ],
            "only the tenant's entries, newest first"
        );
        let users: Vec<&str> = items
            .iter()
            .map(|item| item["user_id"].as_str().unwrap())
            .collect();
        assert_eq!(users, [&ada, &bob, &bob, &ada, &ada]);
        let mut keys: Vec<&str> = items[0]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "client_ip",
                "correlation_id",
                "created_at",
                "details",
                "engine",
                "event",
                "id",
                "login",
                "user_id"
            ]
        );
        assert_eq!(items[0]["details"], json!({"seq": 1}));
        let created: Vec<&str> = items
            .iter()
            .map(|item| item["created_at"].as_str().unwrap())
            .collect();
        assert!(created.windows(2).all(|pair| pair[0] >= pair[1]));
        assert_eq!(created[0].len(), "2026-11-21T17:19:00.000000Z".len());

        // The last page still hands out a cursor; polling it later finds nothing older.
        let first =
            json_with_status(app.get_as("/auth/api/v1/audit?limit=5", &token).await, 200).await;
        assert_eq!(first["meta"]["has_more"], false);
        let cursor = first["meta"]["next_cursor"].as_str().expect("a cursor");
        let after = json_with_status(
            app.get_as(&format!("/auth/api/v1/audit?cursor={cursor}"), &token)
                .await,
            200,
        )
        .await;
        assert_eq!(after["data"], json!([]));
        assert_eq!(after["meta"]["has_more"], false);
        assert_eq!(after["meta"]["next_cursor"], cursor);

        // Filters, also while paging.
        let (failed, _) = walk(
            &app,
            &token,
            "/auth/api/v1/audit?event=login.failed&limit=1",
        )
        .await;
        assert_eq!(events(&failed), ["login.failed", "login.failed"]);
        assert_eq!(failed[0]["user_id"], bob.as_str());
        let (bobs, _) = walk(&app, &token, &format!("/auth/api/v1/audit?user_id={bob}")).await;
        assert_eq!(events(&bobs), ["mfa.enabled", "login.failed"]);
        let (bobs_failures, _) = walk(
            &app,
            &token,
            &format!("/auth/api/v1/audit?user_id={bob}&event=login.failed"),
        )
        .await;
        assert_eq!(events(&bobs_failures), ["login.failed"]);

        // The other tenant's owner sees its own five only.
        let other_token = app.token(&other_tenant, &new_id(), "owner").await;
        let (others, _) = walk(&app, &other_token, "/auth/api/v1/audit?limit=100").await;
        assert_eq!(others.len(), 5);
        assert!(others.iter().all(|item| item["event"] == "login.succeeded"));
    }
);

database_test!(only_owners_read_the_trail, |backend| async move {
    let app = spawn_app(backend).await;
    let tenant = new_id();
    record(
        &app,
        AuditEntry::new(AuditEvent::LoginSucceeded)
            .tenant(&tenant)
            .user(new_id()),
    )
    .await;

    for role in ["editor", "viewer"] {
        let token = app.token(&tenant, &new_id(), role).await;
        let body = json_with_status(app.get_as("/auth/api/v1/audit", &token).await, 403).await;
        assert_eq!(body, json!({"message": "This action is unauthorized."}));
        // Authorization comes before the query is read.
        json_with_status(
            app.get_as("/auth/api/v1/audit?colour=red", &token).await,
            403,
        )
        .await;
    }
    let body = json_with_status(app.get("/auth/api/v1/audit").await, 401).await;
    assert_eq!(body, json!({"message": "Unauthenticated."}));
    json_with_status(app.get_as("/auth/api/v1/audit", "not-a-token").await, 401).await;

    let owner = app.token(&tenant, &new_id(), "owner").await;
    let body = json_with_status(
        app.get_as("/auth/api/v1/audit?colour=red", &owner).await,
        400,
    )
    .await;
    assert!(
        body["message"].as_str().unwrap().contains("colour"),
        "{body}"
    );
    let body = json_with_status(
        app.get_as("/auth/api/v1/audit?event=login", &owner).await,
        422,
    )
    .await;
    assert_eq!(body["errors"], json!({"event": ["in"]}));
    let body = json_with_status(
        app.get_as("/auth/api/v1/audit?cursor=garbage!", &owner)
            .await,
        422,
    )
    .await;
    assert_eq!(body["errors"], json!({"cursor": ["invalid"]}));
    let body = json_with_status(app.get_as("/auth/api/v1/audit?limit=0", &owner).await, 422).await;
    assert_eq!(body["errors"], json!({"limit": ["min:1"]}));
    // An empty filter is no filter; a page size above the maximum is clamped.
    let body = json_with_status(
        app.get_as("/auth/api/v1/audit?event=&limit=1000", &owner)
            .await,
        200,
    )
    .await;
    assert_eq!(body["data"].as_array().unwrap().len(), 1);
    assert_eq!(body["meta"]["has_more"], false);
});

database_test!(
    entries_are_normalized_and_never_hold_secrets,
    |backend| async move {
        let app = spawn_app(backend).await;
        let tenant = new_id();
        record(
            &app,
            AuditEntry::new(AuditEvent::MfaFailed)
                .tenant(&tenant)
                .user(new_id())
                .login("  Ada.Lovelace@Example.COM ")
                .details(json!({
                    "method": "totp",
                    "code": "123456",
                    "mfa_token": "eyJ…",
                    "attempt": {"password": "hunter2", "n": 3},
                })),
        )
        .await;
        // A password typed into the login field is not stored.
        record(
            &app,
            AuditEntry::new(AuditEvent::LoginFailed)
                .tenant(&tenant)
                .login("correct horse battery staple"),
        )
        .await;

        let token = app.token(&tenant, &new_id(), "owner").await;
        let body = json_with_status(app.get_as("/auth/api/v1/audit", &token).await, 200).await;
        let items = body["data"].as_array().unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(items[0]["event"], "login.failed");
        assert_eq!(items[0]["login"], Value::Null);
        assert_eq!(items[0]["user_id"], Value::Null);
        assert_eq!(items[0]["details"], json!({}));
        assert_eq!(items[1]["login"], "ada.lovelace@example.com");
        assert_eq!(
            items[1]["details"],
            json!({"method": "totp", "attempt": {"n": 3}})
        );
        assert_eq!(items[1]["client_ip"], Value::Null);
        assert_eq!(items[1]["correlation_id"], Value::Null);
    }
);

database_test!(
    recording_in_a_transaction_commits_with_it,
    |backend| async move {
        let app = spawn_app(backend).await;
        let tenant = new_id();
        let database = &app.state().database;

        let mut rolled_back = database.begin().await.unwrap();
        audit::record_in(
            &mut rolled_back,
            &AuditEntry::new(AuditEvent::LoggedOutEverywhere).tenant(&tenant),
        )
        .await
        .unwrap();
        drop(rolled_back);

        let mut committed = database.begin().await.unwrap();
        audit::record_in(
            &mut committed,
            &AuditEntry::new(AuditEvent::RefreshReused)
                .tenant(&tenant)
                .detail("session_id", "s-1"),
        )
        .await
        .unwrap();
        committed.commit().await.unwrap();

        let token = app.token(&tenant, &new_id(), "owner").await;
        let body = json_with_status(app.get_as("/auth/api/v1/audit", &token).await, 200).await;
        assert_eq!(
            events(body["data"].as_array().unwrap()),
            ["token.refresh_reused"]
        );
        assert_eq!(body["data"][0]["details"], json!({"session_id": "s-1"}));
    }
);

/// A route recording like a login handler would, served with the host's conventions and
/// `ConnectInfo`, as `tessera serve` does.
async fn serve_recording_route(
    app: &TestApp,
    tenant: &str,
) -> (SocketAddr, tokio::task::JoinHandle<()>) {
    let tenant = tenant.to_owned();
    let route = Router::new().route(
        "/test/audit-origin",
        get(
            move |State(state): State<AppState>, origin: RequestOrigin| {
                let tenant = tenant.clone();
                async move {
                    let result: ApiResult<axum::Json<Value>> = async {
                        audit::record(
                            &state.database,
                            &AuditEntry::new(AuditEvent::LoginFailed)
                                .tenant(tenant)
                                .login("ada@example.com")
                                .origin(&origin)
                                .detail("reason", "wrong_password"),
                        )
                        .await?;
                        Ok(axum::Json(json!({
                            "client_ip": origin.client_ip.map(|ip| ip.to_string()),
                            "correlation_id": origin.correlation_id,
                        })))
                    }
                    .await;
                    result
                }
            },
        ),
    );
    let router = tessera_host::app::router(app.state().clone(), route);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        axum::serve(
            listener,
            router.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await
        .unwrap();
    });
    (address, server)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_origin_gives_the_peer_ip_and_correlation_id_to_recorded_entries() {
    let app = spawn_app(Backend::Sqlite).await;
    let tenant = new_id();
    let (address, server) = serve_recording_route(&app, &tenant).await;
    let url = format!("http://{address}/test/audit-origin");

    // No proxy is trusted by default: a forwarding header is the client's own word, ignored.
    let response = app
        .client
        .get(&url)
        .header("x-correlation-id", "login-attempt-42")
        .header("x-forwarded-for", "203.0.113.9")
        .send()
        .await
        .unwrap();
    let body = json_with_status(response, 200).await;
    assert_eq!(
        body,
        json!({"client_ip": "127.0.0.1", "correlation_id": "login-attempt-42"})
    );
    // Without a usable client id the conventions layer's own id is used.
    let response = app.client.get(&url).send().await.unwrap();
    let generated = response.headers()["x-correlation-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let body = json_with_status(response, 200).await;
    assert_eq!(body["correlation_id"], generated.as_str());
    server.abort();

    let token = app.token(&tenant, &new_id(), "owner").await;
    let body = json_with_status(app.get_as("/auth/api/v1/audit", &token).await, 200).await;
    let items = body["data"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    assert_eq!(items[0]["correlation_id"], generated.as_str());
    assert_eq!(items[1]["correlation_id"], "login-attempt-42");
    for item in items {
        assert_eq!(item["client_ip"], "127.0.0.1");
        assert_eq!(item["login"], "ada@example.com");
        assert_eq!(item["details"], json!({"reason": "wrong_password"}));
        assert_eq!(item["user_id"], Value::Null);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_endpoint_is_documented() {
    let app = spawn_app(Backend::Sqlite).await;
    let document = app.openapi().await;
    let operation = &document["paths"]["/auth/api/v1/audit"]["get"];
    assert_eq!(operation["tags"], json!(["auth"]), "{operation}");
    assert_eq!(operation["operationId"], "auth_audit_list");
    let parameters: Vec<&str> = operation["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|parameter| parameter["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        parameters,
        ["cursor", "limit", "event", "user_id", "engine"]
    );
    assert!(operation["responses"]["403"].is_object());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_a_trusted_proxy_the_trail_records_the_client_it_forwarded_for() {
    let app = spawn_app_with(
        Backend::Sqlite,
        AppOptions {
            configure: Some(Box::new(|config| {
                config.http.trusted_proxies =
                    TrustedProxies::parse("127.0.0.0/8, 10.0.0.0/8").unwrap();
            })),
            ..AppOptions::default()
        },
    )
    .await;
    let tenant = new_id();
    let (address, server) = serve_recording_route(&app, &tenant).await;
    let url = format!("http://{address}/test/audit-origin");
    let origin = |forwarded_for: &'static str| {
        let request = app
            .client
            .get(&url)
            .header("x-forwarded-for", forwarded_for);
        async move { json_with_status(request.send().await.unwrap(), 200).await["client_ip"].clone() }
    };
    // The loopback peer is a trusted proxy: the hop it added is the client, past other trusted
    // hops, and a hop the client wrote further left is not believed.
    assert_eq!(origin("203.0.113.9").await, "203.0.113.9");
    assert_eq!(
        origin("198.51.100.1, 203.0.113.9, 10.0.0.2").await,
        "203.0.113.9"
    );
    server.abort();
    let token = app.token(&tenant, &new_id(), "owner").await;
    let body = json_with_status(app.get_as("/auth/api/v1/audit", &token).await, 200).await;
    let recorded: Vec<&str> = body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["client_ip"].as_str().unwrap())
        .collect();
    assert_eq!(recorded, ["203.0.113.9", "203.0.113.9"]);
}
