//! The chat engine (the real `chat.wasm` built by the harness) through the real host:
//! conversations, messages and members and the events they cause, and chat webhooks delivered
//! to a real HTTPS receiver on loopback (a fresh self-signed certificate trusted through
//! `TESSERA_WEBHOOK_EXTRA_CA`, private targets allowed, a short retry schedule): signatures,
//! the retry schedule into the dead letter queue, manual and DLQ retries, auto-disable,
//! deletion, secret rotation, and a SIGKILLed host that loses nothing.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::routing::post;
use serde_json::{Value, json};
use tessera_host::config::{Config, parse_retry_schedule};

use crate::database_test;
use crate::helpers::{
    AppOptions, Backend, CertificateFile, TestApp, TestDatabase, eventually, json_with_status,
    serve, serve_https, spawn_app_with, without_rate_limits,
};

// ---------------------------------------------------------------------------------------------
// The receiver
// ---------------------------------------------------------------------------------------------

/// One request the receiver got.
#[derive(Debug, Clone)]
struct Received {
    path: String,
    signature: String,
    /// `webhook-id`, `webhook-timestamp`, `webhook-signature` (Standard Webhooks).
    standard: [String; 3],
    event: String,
    delivery_id: String,
    content_type: String,
    body: String,
    /// What the receiver answered.
    answered: u16,
    at: Instant,
}

impl Received {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).expect("a JSON delivery body")
    }
}

#[derive(Default)]
struct ReceiverState {
    /// The status answered on paths other than `/ok/…` (which always get 204).
    answer: AtomicU16,
    requests: Mutex<Vec<Received>>,
}

/// An HTTPS receiver on 127.0.0.1.
struct Receiver {
    port: u16,
    state: Arc<ReceiverState>,
    certificate: CertificateFile,
}

impl Receiver {
    async fn start(answer: u16) -> Self {
        async fn receive(
            State(state): State<Arc<ReceiverState>>,
            uri: Uri,
            headers: HeaderMap,
            body: String,
        ) -> StatusCode {
            let header = |name: &str| {
                headers
                    .get_all(name)
                    .iter()
                    .map(|value| value.to_str().unwrap().to_owned())
                    .collect::<Vec<_>>()
                    .join("|")
            };
            let answered = if uri.path().starts_with("/ok/") {
                204
            } else {
                state.answer.load(Ordering::SeqCst)
            };
            state.requests.lock().unwrap().push(Received {
                path: uri.path().to_owned(),
                signature: header("x-service-signature"),
                standard: [
                    header("webhook-id"),
                    header("webhook-timestamp"),
                    header("webhook-signature"),
                ],
                event: header("x-webhook-event"),
                delivery_id: header("x-webhook-delivery"),
                content_type: header("content-type"),
                body,
                answered,
                at: Instant::now(),
            });
            StatusCode::from_u16(answered).unwrap()
        }
        let state = Arc::new(ReceiverState::default());
        state.answer.store(answer, Ordering::SeqCst);
        let routes = Router::new()
            .route("/{*path}", post(receive))
            .with_state(state.clone());
        let (port, certificate) = serve_https(routes);
        Self {
            port,
            state,
            certificate,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }

    fn answer(&self, status: u16) {
        self.state.answer.store(status, Ordering::SeqCst);
    }

    fn requests(&self) -> Vec<Received> {
        self.state.requests.lock().unwrap().clone()
    }

    fn count(&self) -> usize {
        self.state.requests.lock().unwrap().len()
    }

    /// Requests per delivery id, and how many of them were accepted (2xx).
    fn by_delivery(&self) -> BTreeMap<String, (usize, usize)> {
        let mut counts = BTreeMap::new();
        for request in self.requests() {
            let entry = counts.entry(request.delivery_id).or_insert((0, 0));
            entry.0 += 1;
            if (200..300).contains(&request.answered) {
                entry.1 += 1;
            }
        }
        counts
    }

    fn ca(&self) -> PathBuf {
        self.certificate.0.clone()
    }
}

// ---------------------------------------------------------------------------------------------
// The host and a tenant
// ---------------------------------------------------------------------------------------------

/// How a test's host treats webhooks.
struct WebhookSettings {
    /// `TESSERA_WEBHOOK_RETRY_SCHEDULE`.
    schedule: &'static str,
    /// `TESSERA_WEBHOOK_ALLOW_PRIVATE_TARGETS`.
    allow_private: bool,
    /// `TESSERA_WEBHOOK_EXTRA_CA`.
    extra_ca: Option<PathBuf>,
}

impl WebhookSettings {
    fn for_receiver(receiver: &Receiver, schedule: &'static str) -> Self {
        Self {
            schedule,
            allow_private: true,
            extra_ca: Some(receiver.ca()),
        }
    }
}

/// A host with the chat engine, on `database` (fresh when `None`).
async fn chat_host(
    backend: Backend,
    settings: WebhookSettings,
    database: Option<TestDatabase>,
) -> TestApp {
    let database = match database {
        Some(database) => database,
        None => {
            let database = TestDatabase::new(backend).await;
            crate::components::install_engines(&database.data_dir.join("plugins"), &["chat"]);
            database
        }
    };
    let configure = move |config: &mut Config| {
        without_rate_limits(config);
        config.webhook.retry_schedule = parse_retry_schedule(settings.schedule).unwrap();
        config.outbound.allow_private_targets = settings.allow_private;
        config.outbound.extra_ca = settings.extra_ca;
    };
    spawn_app_with(
        backend,
        AppOptions {
            database: Some(database),
            configure: Some(Box::new(configure)),
            ..AppOptions::default()
        },
    )
    .await
}

/// A tenant provisioned on the chat engine with an owner, an editor and a viewer.
pub(crate) struct Tenant {
    pub(crate) id: String,
    pub(crate) owner: String,
    pub(crate) owner_id: String,
    pub(crate) editor: String,
    pub(crate) editor_id: String,
    pub(crate) viewer: String,
}

pub(crate) async fn provision_user(app: &TestApp, tenant_id: &str, user_id: &str) {
    let body = json!({
        "tenant_id": tenant_id, "user_id": user_id, "email": format!("{user_id}@example.com"),
        "first_name": "Test", "last_name": "User", "type": "user",
    });
    let response = app
        .post_signed("/chat/api/internal/chat/provision/user", &body)
        .await;
    json_with_status(response, 200).await;
}

pub(crate) async fn tenant(app: &TestApp) -> Tenant {
    let id = uuid::Uuid::new_v4().to_string();
    let response = app
        .post_signed(
            "/chat/api/internal/chat/provision/tenant",
            &json!({ "tenant_id": id, "tenant_short_id": "acme", "name": "Acme" }),
        )
        .await;
    json_with_status(response, 200).await;
    let owner_id = uuid::Uuid::new_v4().to_string();
    let editor_id = uuid::Uuid::new_v4().to_string();
    let viewer_id = uuid::Uuid::new_v4().to_string();
    for user_id in [&owner_id, &editor_id, &viewer_id] {
        provision_user(app, &id, user_id).await;
    }
    Tenant {
        owner: app.token(&id, &owner_id, "owner").await,
        editor: app.token(&id, &editor_id, "editor").await,
        viewer: app.token(&id, &viewer_id, "viewer").await,
        id,
        owner_id,
        editor_id,
    }
}

const SECRET: &str = "whsec_0123456789abcdef0123456789abcdef";

async fn create_webhook(app: &TestApp, token: &str, url: &str, events: &[&str]) -> Value {
    let body = json!({ "url": url, "events": events, "secret": SECRET });
    json_with_status(
        app.post_as("/chat/api/v1/webhooks", token, &body).await,
        201,
    )
    .await["data"]
        .clone()
}

pub(crate) async fn general_conversation(app: &TestApp, token: &str) -> String {
    let body = json_with_status(app.get_as("/chat/api/v1/conversations", token).await, 200).await;
    body["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|conversation| conversation["is_default"] == true)
        .expect("the default conversation")["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

pub(crate) async fn post_message(
    app: &TestApp,
    token: &str,
    conversation_id: &str,
    text: &str,
) -> Value {
    let response = app
        .post_as(
            &format!("/chat/api/v1/conversations/{conversation_id}/messages"),
            token,
            &json!({ "body": text }),
        )
        .await;
    json_with_status(response, 201).await["data"].clone()
}

async fn deliveries(app: &TestApp, token: &str, webhook_id: &str, query: &str) -> Vec<Value> {
    let response = app
        .get_as(
            &format!("/chat/api/v1/webhooks/{webhook_id}/deliveries{query}"),
            token,
        )
        .await;
    json_with_status(response, 200).await["data"]
        .as_array()
        .unwrap()
        .clone()
}

async fn dead_letters(app: &TestApp, token: &str) -> Vec<Value> {
    json_with_status(app.get_as("/chat/api/v1/webhooks/dlq", token).await, 200).await["data"]
        .as_array()
        .unwrap()
        .clone()
}

async fn webhook(app: &TestApp, token: &str, id: &str) -> Value {
    json_with_status(
        app.get_as(&format!("/chat/api/v1/webhooks/{id}"), token)
            .await,
        200,
    )
    .await["data"]
        .clone()
}

/// Asserts a 204 with an empty body.
async fn no_content(response: reqwest::Response) {
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    assert_eq!((status, text.as_str()), (204, ""));
}

fn now_unix() -> i64 {
    chrono::Utc::now().timestamp()
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

database_test!(
    chat_changes_deliver_signed_identifier_only_events,
    |backend| async move {
        let receiver = Receiver::start(204).await;
        let app = chat_host(
            backend,
            WebhookSettings::for_receiver(&receiver, "1h"),
            None,
        )
        .await;
        let tenant = tenant(&app).await;
        let hook = create_webhook(
            &app,
            &tenant.owner,
            &receiver.url("/hooks/all"),
            &[
                "message.created",
                "message.updated",
                "message.deleted",
                "notification.created",
                "conversation.created",
                "conversation.updated",
                "member.added",
                "member.removed",
            ],
        )
        .await;
        assert_eq!(hook["secret"], SECRET);
        assert_eq!(hook["is_active"], true);

        // A conversation with the editor, a message mentioning the owner, an edit, a delete,
        // a member added and removed, a new title.
        let created = json_with_status(
            app.post_as(
                "/chat/api/v1/conversations",
                &tenant.owner,
                &json!({ "title": "Launch", "member_ids": [tenant.editor_id] }),
            )
            .await,
            201,
        )
        .await["data"]
            .clone();
        let conversation_id = created["id"].as_str().unwrap().to_owned();
        assert_eq!(
            created["member_ids"],
            json!([tenant.owner_id, tenant.editor_id])
        );
        let marker = format!("TOP-SECRET-{}", uuid::Uuid::new_v4());
        let message = post_message(
            &app,
            &tenant.editor,
            &conversation_id,
            &format!("{marker} ping @{} about it", tenant.owner_id),
        )
        .await;
        let message_id = message["id"].as_str().unwrap().to_owned();
        let path = format!("/chat/api/v1/conversations/{conversation_id}/messages/{message_id}");
        json_with_status(
            app.patch_as(
                &path,
                &tenant.editor,
                &json!({ "body": format!("{marker} edited") }),
            )
            .await,
            200,
        )
        .await;
        // Only the author edits; a viewer writes nothing.
        json_with_status(
            app.patch_as(&path, &tenant.owner, &json!({ "body": "not mine" }))
                .await,
            403,
        )
        .await;
        let listed = json_with_status(
            app.get_as(
                &format!("/chat/api/v1/conversations/{conversation_id}/messages"),
                &tenant.owner,
            )
            .await,
            200,
        )
        .await;
        assert_eq!(listed["data"][0]["body"], format!("{marker} edited"));
        no_content(app.delete_as(&path, &tenant.editor).await).await;
        let third_user = uuid::Uuid::new_v4().to_string();
        provision_user(&app, &tenant.id, &third_user).await;
        let members = format!("/chat/api/v1/conversations/{conversation_id}/members");
        json_with_status(
            app.post_as(&members, &tenant.owner, &json!({ "user_id": third_user }))
                .await,
            201,
        )
        .await;
        json_with_status(
            app.post_as(&members, &tenant.owner, &json!({ "user_id": third_user }))
                .await,
            409,
        )
        .await;
        json_with_status(
            app.post_as(&members, &tenant.owner, &json!({ "user_id": "nobody" }))
                .await,
            422,
        )
        .await;
        no_content(
            app.delete_as(&format!("{members}/{third_user}"), &tenant.owner)
                .await,
        )
        .await;
        json_with_status(
            app.patch_as(
                &format!("/chat/api/v1/conversations/{conversation_id}"),
                &tenant.owner,
                &json!({ "title": "Launch v2" }),
            )
            .await,
            200,
        )
        .await;
        // Refused writes cause no event.
        json_with_status(
            app.post_as(
                &format!("/chat/api/v1/conversations/{conversation_id}/messages"),
                &tenant.viewer,
                &json!({ "body": "viewer" }),
            )
            .await,
            403,
        )
        .await;
        json_with_status(
            app.post_as(
                &format!("/chat/api/v1/conversations/{conversation_id}/messages"),
                &tenant.owner,
                &json!({ "body": "" }),
            )
            .await,
            422,
        )
        .await;

        let expected = [
            (
                "conversation.created",
                json!({ "conversation_id": conversation_id, "user_id": tenant.owner_id }),
            ),
            (
                "message.created",
                json!({ "conversation_id": conversation_id, "message_id": message_id, "user_id": tenant.editor_id }),
            ),
            (
                "notification.created",
                json!({ "conversation_id": conversation_id, "message_id": message_id, "user_id": tenant.owner_id }),
            ),
            (
                "message.updated",
                json!({ "conversation_id": conversation_id, "message_id": message_id, "user_id": tenant.editor_id }),
            ),
            (
                "message.deleted",
                json!({ "conversation_id": conversation_id, "message_id": message_id, "user_id": tenant.editor_id }),
            ),
            (
                "member.added",
                json!({ "conversation_id": conversation_id, "user_id": third_user }),
            ),
            (
                "member.removed",
                json!({ "conversation_id": conversation_id, "user_id": third_user }),
            ),
            (
                "conversation.updated",
                json!({ "conversation_id": conversation_id, "user_id": tenant.owner_id }),
            ),
        ];
        eventually(30, "eight deliveries", || async {
            (receiver.count() >= expected.len()).then_some(())
        })
        .await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let mut received = receiver.requests();
        assert_eq!(received.len(), expected.len(), "{received:#?}");
        received.sort_by_key(|request| request.json()["id"].as_str().unwrap().to_owned());
        for (request, (event_type, data)) in received.iter().zip(&expected) {
            let body = request.json();
            assert_eq!(request.path, "/hooks/all");
            assert_eq!(request.content_type, "application/json");
            assert_eq!(request.event, *event_type);
            assert_eq!(body["event_type"], *event_type);
            assert_eq!(body["id"], request.delivery_id);
            assert_eq!(body["tenant_id"], tenant.id);
            assert!(body["occurred_at"].as_str().unwrap().ends_with('Z'));
            assert_eq!(body["data"], *data, "{event_type}");
            assert_eq!(
                body.as_object().unwrap().keys().collect::<Vec<_>>(),
                ["id", "event_type", "tenant_id", "occurred_at", "data"]
            );
            // Identifiers only: the text never leaves the engine.
            assert!(!request.body.contains(&marker), "{}", request.body);
            assert!(!request.body.contains("edited"));
            tessera_signature::verify(
                SECRET.as_bytes(),
                &request.signature,
                request.body.as_bytes(),
                now_unix(),
            )
            .expect("the signature verifies");
            assert!(
                tessera_signature::verify(
                    b"another-secret-another-secret-xx",
                    &request.signature,
                    request.body.as_bytes(),
                    now_unix(),
                )
                .is_err()
            );
            assert!(
                tessera_signature::verify(
                    SECRET.as_bytes(),
                    &request.signature,
                    request.body.as_bytes(),
                    now_unix() + 301,
                )
                .is_err(),
                "older than 5 minutes is refused"
            );
        }
        // The history lists them delivered, newest first.
        let history = deliveries(&app, &tenant.owner, hook["id"].as_str().unwrap(), "").await;
        assert_eq!(history.len(), expected.len());
        assert!(
            history
                .iter()
                .all(|delivery| delivery["status"] == "delivered"
                    && delivery["response_code"] == 204
                    && delivery["attempt"] == 1
                    && delivery["next_retry_at"].is_null())
        );
        assert_eq!(history[0]["event"], "conversation.updated");
        app.stop().await;
    }
);

database_test!(
    webhooks_are_managed_by_owners_and_validated,
    |backend| async move {
        let receiver = Receiver::start(204).await;
        let app = chat_host(
            backend,
            WebhookSettings::for_receiver(&receiver, "1h"),
            None,
        )
        .await;
        let tenant = tenant(&app).await;
        let url = receiver.url("/hooks/a");
        let created = create_webhook(&app, &tenant.owner, &url, &["message.created"]).await;
        let id = created["id"].as_str().unwrap().to_owned();
        assert_eq!(created["url"], url);
        assert_eq!(created["events"], json!(["message.created"]));
        assert_eq!(created["created_at"], created["updated_at"]);

        let listed = json_with_status(
            app.get_as("/chat/api/v1/webhooks", &tenant.owner).await,
            200,
        )
        .await;
        assert_eq!(listed["data"].as_array().unwrap().len(), 1);
        assert!(listed["data"][0].get("secret").is_none());
        let shown = webhook(&app, &tenant.owner, &id).await;
        assert!(shown.get("secret").is_none());
        assert_eq!(shown["is_active"], true);

        let patched = json_with_status(
            app.patch_as(
                &format!("/chat/api/v1/webhooks/{id}"),
                &tenant.owner,
                &json!({ "events": ["message.created", "member.added"], "url": receiver.url("/hooks/b") }),
            )
            .await,
            200,
        )
        .await["data"]
            .clone();
        assert!(patched.get("secret").is_none());
        assert_eq!(
            patched["events"],
            json!(["message.created", "member.added"])
        );
        assert_eq!(patched["url"], receiver.url("/hooks/b"));
        assert!(patched["updated_at"].as_str() > created["updated_at"].as_str());
        assert_eq!(patched["created_at"], created["created_at"]);

        // The secret is stored sealed, never as given.
        let stored: Vec<Vec<u8>> = {
            let database = &app.state().database;
            tessera_host::on_pool!(database, pool => sqlx::query_scalar(
                "SELECT value FROM engine_kv WHERE engine_code = 'chat' AND key LIKE 'webhooks/%'",
            )
            .fetch_all(pool)
            .await
            .unwrap())
        };
        assert_eq!(stored.len(), 1);
        let stored = String::from_utf8_lossy(&stored[0]);
        assert!(
            !stored.contains(SECRET) && !stored.contains("0123456789abcdef0123"),
            "{stored}"
        );

        // Validation: 422 with the field, nothing written.
        let invalid = [
            (
                json!({ "url": "http://127.0.0.1/x", "events": ["message.created"], "secret": SECRET }),
                "url",
                "https",
            ),
            (
                json!({ "events": ["message.created"], "secret": SECRET }),
                "url",
                "required",
            ),
            (
                json!({ "url": "https://", "events": ["message.created"], "secret": SECRET }),
                "url",
                "url",
            ),
            (
                json!({ "url": url, "events": ["message.exploded"], "secret": SECRET }),
                "events.0",
                "in",
            ),
            (
                json!({ "url": url, "events": ["test.ping"], "secret": SECRET }),
                "events.0",
                "in",
            ),
            (
                json!({ "url": url, "events": [], "secret": SECRET }),
                "events",
                "required",
            ),
            (
                json!({ "url": url, "events": ["message.created"], "secret": "short" }),
                "secret",
                "min:32",
            ),
            (
                json!({ "url": url, "events": ["message.created"] }),
                "secret",
                "required",
            ),
        ];
        for (body, field, rule) in invalid {
            let answer = json_with_status(
                app.post_as("/chat/api/v1/webhooks", &tenant.owner, &body)
                    .await,
                422,
            )
            .await;
            assert_eq!(answer["message"], "The given data was invalid.");
            assert_eq!(answer["errors"][field], json!([rule]), "{body}: {answer}");
        }
        json_with_status(
            app.patch_as(
                &format!("/chat/api/v1/webhooks/{id}"),
                &tenant.owner,
                &json!({ "secret": "short" }),
            )
            .await,
            422,
        )
        .await;
        json_with_status(
            app.patch_as(
                &format!("/chat/api/v1/webhooks/{id}"),
                &tenant.owner,
                &json!({ "is_active": "yes" }),
            )
            .await,
            422,
        )
        .await;
        assert_eq!(webhook(&app, &tenant.owner, &id).await, patched);

        // Owners only; another tenant's id is not found.
        for token in [&tenant.editor, &tenant.viewer] {
            json_with_status(app.get_as("/chat/api/v1/webhooks", token).await, 403).await;
            json_with_status(
                app.post_as(
                    "/chat/api/v1/webhooks",
                    token,
                    &json!({ "url": url, "events": ["message.created"], "secret": SECRET }),
                )
                .await,
                403,
            )
            .await;
            json_with_status(
                app.delete_as(&format!("/chat/api/v1/webhooks/{id}"), token)
                    .await,
                403,
            )
            .await;
        }
        let other = tenant_for_other(&app).await;
        json_with_status(
            app.get_as(&format!("/chat/api/v1/webhooks/{id}"), &other)
                .await,
            404,
        )
        .await;
        json_with_status(
            app.delete_as(&format!("/chat/api/v1/webhooks/{id}"), &other)
                .await,
            404,
        )
        .await;
        json_with_status(
            app.post_as(
                &format!("/chat/api/v1/webhooks/{id}/test"),
                &other,
                &json!({}),
            )
            .await,
            404,
        )
        .await;

        no_content(
            app.delete_as(&format!("/chat/api/v1/webhooks/{id}"), &tenant.owner)
                .await,
        )
        .await;
        json_with_status(
            app.get_as(&format!("/chat/api/v1/webhooks/{id}"), &tenant.owner)
                .await,
            404,
        )
        .await;
        app.stop().await;
    }
);

database_test!(
    an_owners_webhook_actions_are_in_the_tenants_audit_trail,
    |backend| async move {
        let receiver = Receiver::start(204).await;
        let app = chat_host(
            backend,
            WebhookSettings::for_receiver(&receiver, "1h"),
            None,
        )
        .await;
        let tenant = tenant(&app).await;
        let other = tenant_for_other(&app).await;
        let url = receiver.url("/hooks/audited");

        // Refusals are not operations that happened: no entry.
        let refused = json!({ "url": "http://example.com/x", "events": ["message.created"], "secret": SECRET });
        json_with_status(
            app.post_as("/chat/api/v1/webhooks", &tenant.owner, &refused)
                .await,
            422,
        )
        .await;
        let body = json!({ "url": url, "events": ["message.created"], "secret": SECRET });
        json_with_status(
            app.post_as("/chat/api/v1/webhooks", &tenant.viewer, &body)
                .await,
            403,
        )
        .await;

        let created = create_webhook(&app, &tenant.owner, &url, &["message.created"]).await;
        let id = created["id"].as_str().unwrap().to_owned();
        let ping = json_with_status(
            app.post_as(
                &format!("/chat/api/v1/webhooks/{id}/test"),
                &tenant.owner,
                &json!({}),
            )
            .await,
            200,
        )
        .await;
        assert_eq!(ping["data"]["status"], "delivered", "{ping}");
        no_content(
            app.delete_as(&format!("/chat/api/v1/webhooks/{id}"), &tenant.owner)
                .await,
        )
        .await;

        let trail = |query: &'static str| {
            let app = &app;
            let owner = tenant.owner.clone();
            async move {
                json_with_status(
                    app.get_as(&format!("/auth/api/v1/audit{query}"), &owner)
                        .await,
                    200,
                )
                .await["data"]
                    .as_array()
                    .unwrap()
                    .clone()
            }
        };
        let engine_entries = trail("?engine=chat").await;
        let names: Vec<&str> = engine_entries
            .iter()
            .map(|entry| entry["event"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "chat.webhook.deleted",
                "chat.webhook.tested",
                "chat.webhook.created"
            ],
            "newest first, one per operation that succeeded"
        );
        let creation = &trail("?event=chat.webhook.created").await[0];
        assert_eq!(creation["engine"], "chat");
        assert_eq!(creation["user_id"], tenant.owner_id.as_str());
        assert_eq!(creation["client_ip"], "127.0.0.1");
        assert!(creation["correlation_id"].is_string(), "{creation}");
        assert_eq!(
            creation["details"],
            json!({
                "method": "POST",
                "path": "/chat/api/v1/webhooks",
                "parameters": {},
                "status": 201,
                "created_id": id,
            })
        );
        let tested = &engine_entries[1];
        assert_eq!(tested["details"]["parameters"], json!({ "id": id }));
        assert_eq!(
            tested["details"]["path"],
            format!("/chat/api/v1/webhooks/{id}/test")
        );
        // A host event's filter never shows an engine's entries, and the secret never shows.
        assert!(
            trail("?event=session.logged_out")
                .await
                .iter()
                .all(|entry| entry["engine"].is_null())
        );
        let everything = trail("?limit=100").await.to_vec();
        assert!(!serde_json::to_string(&everything).unwrap().contains(SECRET));
        // Another tenant's owner sees none of it.
        let theirs = json_with_status(
            app.get_as("/auth/api/v1/audit?engine=chat", &other).await,
            200,
        )
        .await;
        assert_eq!(theirs["data"], json!([]));
        // A malformed event name is refused; a well-formed unknown one matches nothing.
        let malformed = json_with_status(
            app.get_as("/auth/api/v1/audit?event=chat.Webhook", &tenant.owner)
                .await,
            422,
        )
        .await;
        assert_eq!(malformed["errors"]["event"][0], "in", "{malformed}");
        assert!(trail("?event=chat.webhook.exploded").await.is_empty());

        // The engine's audited operations are listed for owners and shown in the document.
        let details = json_with_status(
            app.get_as("/core/api/v1/engines/chat", &tenant.owner).await,
            200,
        )
        .await;
        let audited = details["data"]["audited_operations"].as_array().unwrap();
        assert!(
            audited.contains(&json!({
                "event": "chat.dead_letter.replayed",
                "method": "POST",
                "path": "/chat/api/v1/webhooks/dlq/{id}/retry",
            })),
            "{audited:?}"
        );
        let document = app.openapi().await;
        assert_eq!(
            document["paths"]["/chat/api/v1/webhooks"]["post"]["x-tessera-audit"],
            "chat.webhook.created"
        );
        app.stop().await;
    }
);

/// An owner token of another provisioned tenant.
async fn tenant_for_other(app: &TestApp) -> String {
    tenant(app).await.owner
}

database_test!(
    private_targets_are_refused_by_default,
    |backend| async move {
        let app = chat_host(
            backend,
            WebhookSettings {
                schedule: "30s,2m,10m,30m",
                allow_private: false,
                extra_ca: None,
            },
            None,
        )
        .await;
        let tenant = tenant(&app).await;
        for url in [
            "https://127.0.0.1/hook",
            "https://127.0.0.1:8443/hook",
            "https://localhost/hook",
            "https://169.254.169.254/latest/meta-data",
            "https://10.1.2.3/hook",
            "https://[::1]/hook",
            // 6to4 embedding 127.0.0.1, Teredo, NAT64 local-use, the 6to4 relay range.
            "https://[2002:7f00:1::]/hook",
            "https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/hook",
            "https://[64:ff9b:1::a00:1]/hook",
            "https://192.88.99.1/hook",
        ] {
            let body = json!({ "url": url, "events": ["message.created"], "secret": SECRET });
            let answer = json_with_status(
                app.post_as("/chat/api/v1/webhooks", &tenant.owner, &body)
                    .await,
                422,
            )
            .await;
            assert_eq!(answer["errors"]["url"], json!(["not_private"]), "{url}");
        }
        let listed = json_with_status(
            app.get_as("/chat/api/v1/webhooks", &tenant.owner).await,
            200,
        )
        .await;
        assert_eq!(listed["data"], json!([]));
        app.stop().await;
    }
);

/// A name server on loopback that never answers: a UDP socket and a TCP listener on one port
/// that take queries and connections and say nothing. Dropped with the returned handles.
async fn silent_name_server() -> (
    std::net::SocketAddr,
    tokio::net::UdpSocket,
    tokio::task::JoinHandle<()>,
) {
    // The UDP port the system picks may be taken for TCP: pick again until both bind.
    let (udp, address, tcp) = loop {
        let udp = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let address = udp.local_addr().unwrap();
        match tokio::net::TcpListener::bind(address).await {
            Ok(tcp) => break (udp, address, tcp),
            Err(error) if error.kind() == std::io::ErrorKind::AddrInUse => continue,
            Err(error) => panic!("binding the silent name server's TCP side: {error}"),
        }
    };
    let silent = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((connection, _)) = tcp.accept().await {
            held.push(connection);
        }
    });
    (address, udp, silent)
}

database_test!(
    webhooks_are_created_and_updated_when_dns_does_not_answer,
    |backend| async move {
        let (name_server, _udp, silent) = silent_name_server().await;
        let database = TestDatabase::new(backend).await;
        crate::components::install_engines(&database.data_dir.join("plugins"), &["chat"]);
        let configure = move |config: &mut Config| {
            without_rate_limits(config);
            assert!(!config.outbound.allow_private_targets, "the default");
            config.outbound.dns_servers = vec![name_server];
        };
        let app = spawn_app_with(
            backend,
            AppOptions {
                database: Some(database),
                configure: Some(Box::new(configure)),
                ..AppOptions::default()
            },
        )
        .await;
        let tenant = tenant(&app).await;

        // The lookup at creation gives up on the silent server (TESSERA_WEBHOOK_CHECK_DNS_TIMEOUT)
        // before the engine's deadline: the name is accepted, each delivery checks it again.
        let hook = create_webhook(
            &app,
            &tenant.owner,
            "https://hooks.unanswered.example/in",
            &["message.created"],
        )
        .await;
        let hook_id = hook["id"].as_str().unwrap().to_owned();
        let patched = json_with_status(
            app.patch_as(
                &format!("/chat/api/v1/webhooks/{hook_id}"),
                &tenant.owner,
                &json!({ "url": "https://other.unanswered.example/in" }),
            )
            .await,
            200,
        )
        .await;
        assert_eq!(
            patched["data"]["url"],
            "https://other.unanswered.example/in"
        );
        // Addresses still refuse at once, whatever DNS does.
        let body = json!({
            "url": "https://[2002:7f00:1::]/in", "events": ["message.created"], "secret": SECRET,
        });
        let refused = json_with_status(
            app.post_as("/chat/api/v1/webhooks", &tenant.owner, &body)
                .await,
            422,
        )
        .await;
        assert_eq!(refused["errors"]["url"], json!(["not_private"]));
        app.stop().await;
        silent.abort();
    }
);

database_test!(
    failed_deliveries_follow_the_schedule_into_the_dead_letter_queue,
    |backend| async move {
        let receiver = Receiver::start(500).await;
        let app = chat_host(
            backend,
            WebhookSettings::for_receiver(&receiver, "300ms,300ms,300ms,300ms"),
            None,
        )
        .await;
        let tenant = tenant(&app).await;
        let hook = create_webhook(
            &app,
            &tenant.owner,
            &receiver.url("/hooks/failing"),
            &["message.created"],
        )
        .await;
        let hook_id = hook["id"].as_str().unwrap().to_owned();
        let conversation = general_conversation(&app, &tenant.editor).await;
        let message = post_message(&app, &tenant.editor, &conversation, "hello").await;

        // After the first failure: failed, a retry scheduled.
        let first = eventually(20, "the first failed attempt", || async {
            deliveries(&app, &tenant.owner, &hook_id, "")
                .await
                .into_iter()
                .find(|delivery| delivery["attempt"] == 1)
        })
        .await;
        assert_eq!(first["status"], "failed");
        assert_eq!(first["response_code"], 500);
        assert!(first["next_retry_at"].is_string(), "{first}");

        let dead = eventually(30, "the delivery in the dead letter queue", || async {
            dead_letters(&app, &tenant.owner).await.into_iter().next()
        })
        .await;
        let requests = receiver.requests();
        assert_eq!(requests.len(), 5, "five automatic attempts");
        assert!(
            requests
                .iter()
                .all(|request| request.delivery_id == first["id"].as_str().unwrap())
        );
        for pair in requests.windows(2) {
            assert!(
                pair[1].at - pair[0].at >= Duration::from_millis(300),
                "attempts follow the schedule"
            );
        }
        assert_eq!(dead["id"], first["id"]);
        assert_eq!(dead["webhook_id"], hook_id);
        assert_eq!(dead["event"], "message.created");
        assert_eq!(dead["attempts"], 5);
        assert_eq!(dead["last_response_code"], 500);
        assert_eq!(dead["last_error"], "the receiver answered HTTP 500");
        assert_eq!(
            dead["payload_summary"],
            json!({ "event_type": "message.created", "conversation_id": conversation })
        );
        assert!(dead["failed_at"].is_string() && dead["created_at"].is_string());
        let history = deliveries(&app, &tenant.owner, &hook_id, "?status=failed").await;
        assert_eq!(history.len(), 1);
        assert_eq!(history[0]["attempt"], 5);
        assert!(history[0]["next_retry_at"].is_null());
        assert_eq!(
            deliveries(&app, &tenant.owner, &hook_id, "?status=delivered")
                .await
                .len(),
            0
        );
        json_with_status(
            app.get_as(
                &format!("/chat/api/v1/webhooks/{hook_id}/deliveries?status=lost"),
                &tenant.owner,
            )
            .await,
            422,
        )
        .await;
        tokio::time::sleep(Duration::from_millis(800)).await;
        assert_eq!(
            receiver.count(),
            5,
            "no attempt after the dead letter queue"
        );
        let body = receiver.requests()[0].json();
        assert_eq!(body["data"]["message_id"], message["id"]);

        // A DLQ retry that fails leaves it there; one that succeeds takes it out.
        let dead_id = dead["id"].as_str().unwrap();
        let retried = json_with_status(
            app.post_as(
                &format!("/chat/api/v1/webhooks/dlq/{dead_id}/retry"),
                &tenant.owner,
                &json!({}),
            )
            .await,
            200,
        )
        .await["data"]
            .clone();
        assert_eq!(retried["id"], dead["id"]);
        assert_eq!(retried["status"], "failed");
        assert_eq!(retried["response_code"], 500);
        assert!(retried["response_time_ms"].is_u64());
        assert_eq!(dead_letters(&app, &tenant.owner).await.len(), 1);
        assert_eq!(dead_letters(&app, &tenant.owner).await[0]["attempts"], 6);
        receiver.answer(200);
        let retried = json_with_status(
            app.post_as(
                &format!("/chat/api/v1/webhooks/dlq/{dead_id}/retry"),
                &tenant.owner,
                &json!({}),
            )
            .await,
            200,
        )
        .await["data"]
            .clone();
        assert_eq!(retried["status"], "delivered");
        assert_eq!(retried["response_code"], 200);
        assert_eq!(dead_letters(&app, &tenant.owner).await, Vec::<Value>::new());
        let history = deliveries(&app, &tenant.owner, &hook_id, "?status=delivered").await;
        assert_eq!(history.len(), 1);
        assert_eq!(history[0]["attempt"], 7);
        json_with_status(
            app.post_as(
                &format!("/chat/api/v1/webhooks/dlq/{dead_id}/retry"),
                &tenant.owner,
                &json!({}),
            )
            .await,
            404,
        )
        .await;
        app.stop().await;
    }
);

database_test!(
    manual_retries_and_test_pings_are_immediate,
    |backend| async move {
        let receiver = Receiver::start(503).await;
        let app = chat_host(
            backend,
            WebhookSettings::for_receiver(&receiver, "1h"),
            None,
        )
        .await;
        let tenant = tenant(&app).await;
        let hook = create_webhook(
            &app,
            &tenant.owner,
            &receiver.url("/hooks/x"),
            &["message.created"],
        )
        .await;
        let hook_id = hook["id"].as_str().unwrap().to_owned();
        let conversation = general_conversation(&app, &tenant.editor).await;
        post_message(&app, &tenant.editor, &conversation, "hello").await;
        let failed = eventually(20, "the failed attempt", || async {
            deliveries(&app, &tenant.owner, &hook_id, "?status=failed")
                .await
                .into_iter()
                .next()
        })
        .await;
        assert_eq!(failed["response_code"], 503);
        assert!(failed["next_retry_at"].is_string());

        receiver.answer(202);
        let path = format!(
            "/chat/api/v1/webhooks/{hook_id}/deliveries/{}/retry",
            failed["id"].as_str().unwrap()
        );
        let retried = json_with_status(app.post_as(&path, &tenant.owner, &json!({})).await, 200)
            .await["data"]
            .clone();
        assert_eq!(retried["delivery_id"], failed["id"]);
        assert_eq!(retried["status"], "delivered");
        assert_eq!(retried["response_code"], 202);
        let delivered = deliveries(&app, &tenant.owner, &hook_id, "?status=delivered").await;
        assert_eq!(delivered.len(), 1);
        assert_eq!(delivered[0]["attempt"], 2);
        assert!(delivered[0]["next_retry_at"].is_null());
        let requests = receiver.requests();
        assert_eq!(requests.len(), 2);
        assert_eq!(
            requests[0].body, requests[1].body,
            "a retry resends the same body"
        );
        assert_eq!(requests[1].delivery_id, failed["id"].as_str().unwrap());
        json_with_status(
            app.post_as(
                &format!(
                    "/chat/api/v1/webhooks/{hook_id}/deliveries/{}/retry",
                    uuid::Uuid::new_v4()
                ),
                &tenant.owner,
                &json!({}),
            )
            .await,
            404,
        )
        .await;
        json_with_status(app.post_as(&path, &tenant.editor, &json!({})).await, 403).await;

        // A test ping: synchronous, recorded, `test.ping`.
        let ping = json_with_status(
            app.post_as(
                &format!("/chat/api/v1/webhooks/{hook_id}/test"),
                &tenant.owner,
                &json!({}),
            )
            .await,
            200,
        )
        .await["data"]
            .clone();
        assert_eq!(ping["status"], "delivered");
        assert_eq!(ping["response_code"], 202);
        assert!(ping["response_time_ms"].is_u64());
        let request = receiver.requests().pop().unwrap();
        assert_eq!(request.event, "test.ping");
        assert_eq!(request.delivery_id, ping["delivery_id"].as_str().unwrap());
        assert_eq!(request.json()["data"], json!({ "conversation_id": null }));
        let latest = deliveries(&app, &tenant.owner, &hook_id, "?limit=1").await;
        assert_eq!(latest[0]["id"], ping["delivery_id"]);
        assert_eq!(latest[0]["event"], "test.ping");

        // No HTTP answer at all: response_code 0.
        let closed = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let refused = create_webhook(
            &app,
            &tenant.owner,
            &format!("https://127.0.0.1:{closed}/gone"),
            &["member.added"],
        )
        .await;
        let ping = json_with_status(
            app.post_as(
                &format!(
                    "/chat/api/v1/webhooks/{}/test",
                    refused["id"].as_str().unwrap()
                ),
                &tenant.owner,
                &json!({}),
            )
            .await,
            200,
        )
        .await["data"]
            .clone();
        assert_eq!(ping["status"], "failed");
        assert_eq!(ping["response_code"], 0);

        // Cursor paging of the history.
        for _ in 0..3 {
            json_with_status(
                app.post_as(
                    &format!("/chat/api/v1/webhooks/{hook_id}/test"),
                    &tenant.owner,
                    &json!({}),
                )
                .await,
                200,
            )
            .await;
        }
        let first_page = json_with_status(
            app.get_as(
                &format!("/chat/api/v1/webhooks/{hook_id}/deliveries?limit=2"),
                &tenant.owner,
            )
            .await,
            200,
        )
        .await;
        assert_eq!(first_page["data"].as_array().unwrap().len(), 2);
        assert_eq!(first_page["meta"]["has_more"], true);
        let cursor = first_page["meta"]["next_cursor"].as_str().unwrap();
        let second_page = json_with_status(
            app.get_as(
                &format!("/chat/api/v1/webhooks/{hook_id}/deliveries?limit=2&cursor={cursor}"),
                &tenant.owner,
            )
            .await,
            200,
        )
        .await;
        assert_eq!(second_page["data"].as_array().unwrap().len(), 2);
        assert_eq!(second_page["meta"]["has_more"], true);
        assert_ne!(second_page["data"][0]["id"], first_page["data"][1]["id"]);
        app.stop().await;
    }
);

database_test!(
    ten_consecutive_failures_disable_a_webhook_until_it_is_enabled_again,
    |backend| async move {
        let receiver = Receiver::start(500).await;
        let app = chat_host(
            backend,
            WebhookSettings::for_receiver(&receiver, "1h"),
            None,
        )
        .await;
        let tenant = tenant(&app).await;
        let hook = create_webhook(
            &app,
            &tenant.owner,
            &receiver.url("/hooks/down"),
            &["message.created"],
        )
        .await;
        let hook_id = hook["id"].as_str().unwrap().to_owned();
        let conversation = general_conversation(&app, &tenant.editor).await;
        for index in 0..9 {
            post_message(
                &app,
                &tenant.editor,
                &conversation,
                &format!("message {index}"),
            )
            .await;
        }
        eventually(20, "nine failed attempts", || async {
            (receiver.count() == 9).then_some(())
        })
        .await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(
            webhook(&app, &tenant.owner, &hook_id).await["is_active"],
            true,
            "nine are not enough"
        );
        post_message(&app, &tenant.editor, &conversation, "the tenth").await;
        eventually(20, "the webhook disabled", || async {
            (webhook(&app, &tenant.owner, &hook_id).await["is_active"] == false).then_some(())
        })
        .await;

        // Disabled: new events create no delivery.
        post_message(&app, &tenant.editor, &conversation, "while disabled").await;
        tokio::time::sleep(Duration::from_millis(700)).await;
        assert_eq!(receiver.count(), 10);
        assert_eq!(
            deliveries(&app, &tenant.owner, &hook_id, "").await.len(),
            10
        );

        receiver.answer(204);
        let enabled = json_with_status(
            app.patch_as(
                &format!("/chat/api/v1/webhooks/{hook_id}"),
                &tenant.owner,
                &json!({ "is_active": true }),
            )
            .await,
            200,
        )
        .await["data"]
            .clone();
        assert_eq!(enabled["is_active"], true);
        let message = post_message(&app, &tenant.editor, &conversation, "after re-enabling").await;
        let delivered = eventually(20, "a delivery after re-enabling", || async {
            receiver.requests().into_iter().find(|request| {
                request.answered == 204 && request.json()["data"]["message_id"] == message["id"]
            })
        })
        .await;
        assert_eq!(delivered.event, "message.created");
        assert_eq!(
            webhook(&app, &tenant.owner, &hook_id).await["is_active"],
            true
        );
        app.stop().await;
    }
);

database_test!(
    retries_wait_while_a_webhook_is_disabled_and_resume_when_enabled,
    |backend| async move {
        let receiver = Receiver::start(500).await;
        let app = chat_host(
            backend,
            WebhookSettings::for_receiver(&receiver, "600ms,600ms,600ms,600ms"),
            None,
        )
        .await;
        let tenant = tenant(&app).await;
        let hook = create_webhook(
            &app,
            &tenant.owner,
            &receiver.url("/hooks/paused"),
            &["message.created"],
        )
        .await;
        let hook_id = hook["id"].as_str().unwrap().to_owned();
        let conversation = general_conversation(&app, &tenant.editor).await;
        post_message(&app, &tenant.editor, &conversation, "hello").await;
        eventually(20, "the first attempt", || async {
            (receiver.count() == 1).then_some(())
        })
        .await;
        json_with_status(
            app.patch_as(
                &format!("/chat/api/v1/webhooks/{hook_id}"),
                &tenant.owner,
                &json!({ "is_active": false }),
            )
            .await,
            200,
        )
        .await;
        tokio::time::sleep(Duration::from_millis(1800)).await;
        assert_eq!(receiver.count(), 1, "the retry waits while disabled");
        let waiting = deliveries(&app, &tenant.owner, &hook_id, "").await;
        assert_eq!(waiting[0]["status"], "failed");
        assert!(waiting[0]["next_retry_at"].is_null());

        receiver.answer(204);
        json_with_status(
            app.patch_as(
                &format!("/chat/api/v1/webhooks/{hook_id}"),
                &tenant.owner,
                &json!({ "is_active": true }),
            )
            .await,
            200,
        )
        .await;
        let delivered = eventually(20, "the resumed retry", || async {
            deliveries(&app, &tenant.owner, &hook_id, "?status=delivered")
                .await
                .into_iter()
                .next()
        })
        .await;
        assert_eq!(delivered["attempt"], 2);
        assert_eq!(receiver.count(), 2);
        app.stop().await;
    }
);

database_test!(
    deleting_a_webhook_discards_its_deliveries,
    |backend| async move {
        let receiver = Receiver::start(500).await;
        let app = chat_host(
            backend,
            WebhookSettings::for_receiver(&receiver, "1500ms"),
            None,
        )
        .await;
        let tenant = tenant(&app).await;
        let doomed = create_webhook(
            &app,
            &tenant.owner,
            &receiver.url("/hooks/doomed"),
            &["message.created"],
        )
        .await;
        let doomed_id = doomed["id"].as_str().unwrap().to_owned();
        let kept = create_webhook(
            &app,
            &tenant.owner,
            &receiver.url("/hooks/kept"),
            &["member.added"],
        )
        .await;
        let conversation = general_conversation(&app, &tenant.editor).await;
        post_message(&app, &tenant.editor, &conversation, "one").await;
        eventually(20, "a dead letter", || async {
            dead_letters(&app, &tenant.owner).await.into_iter().next()
        })
        .await;
        // The kept webhook has a dead letter too.
        let user = uuid::Uuid::new_v4().to_string();
        provision_user(&app, &tenant.id, &user).await;
        json_with_status(
            app.post_as(
                &format!("/chat/api/v1/conversations/{conversation}/members"),
                &tenant.owner,
                &json!({ "user_id": user }),
            )
            .await,
            201,
        )
        .await;
        eventually(20, "two dead letters", || async {
            (dead_letters(&app, &tenant.owner).await.len() == 2).then_some(())
        })
        .await;
        post_message(&app, &tenant.editor, &conversation, "two").await;
        eventually(20, "the first attempt of the second message", || async {
            (receiver.count() == 5).then_some(())
        })
        .await;

        no_content(
            app.delete_as(&format!("/chat/api/v1/webhooks/{doomed_id}"), &tenant.owner)
                .await,
        )
        .await;
        json_with_status(
            app.get_as(
                &format!("/chat/api/v1/webhooks/{doomed_id}/deliveries"),
                &tenant.owner,
            )
            .await,
            404,
        )
        .await;
        let left = dead_letters(&app, &tenant.owner).await;
        assert_eq!(left.len(), 1);
        assert_eq!(left[0]["webhook_id"], kept["id"]);
        let count = receiver.count();
        tokio::time::sleep(Duration::from_millis(2500)).await;
        assert_eq!(receiver.count(), count, "the pending retry was discarded");
        let stored = app
            .scalar("SELECT COUNT(*) FROM engine_kv WHERE engine_code = 'chat' AND key LIKE 'deliveries/%'")
            .await;
        assert_eq!(stored, 1, "only the kept webhook's delivery remains");
        app.stop().await;
    }
);

database_test!(
    a_changed_secret_keeps_signing_beside_the_new_one,
    |backend| async move {
        let receiver = Receiver::start(204).await;
        let app = chat_host(
            backend,
            WebhookSettings::for_receiver(&receiver, "1h"),
            None,
        )
        .await;
        let tenant = tenant(&app).await;
        let hook = create_webhook(
            &app,
            &tenant.owner,
            &receiver.url("/hooks/rotating"),
            &["message.created"],
        )
        .await;
        let hook_id = hook["id"].as_str().unwrap();
        let new_secret = "whsec_new_fedcba9876543210fedcba9876543210";
        json_with_status(
            app.patch_as(
                &format!("/chat/api/v1/webhooks/{hook_id}"),
                &tenant.owner,
                &json!({ "secret": new_secret }),
            )
            .await,
            200,
        )
        .await;
        let ping = json_with_status(
            app.post_as(
                &format!("/chat/api/v1/webhooks/{hook_id}/test"),
                &tenant.owner,
                &json!({}),
            )
            .await,
            200,
        )
        .await;
        assert_eq!(ping["data"]["status"], "delivered");
        let request = receiver.requests().pop().unwrap();
        let entries: Vec<&str> = request.signature.split(',').collect();
        assert_eq!(
            entries.len(),
            3,
            "t and two v1 entries: {}",
            request.signature
        );
        assert!(
            entries[0].starts_with("t=")
                && entries[1].starts_with("v1=")
                && entries[2].starts_with("v1=")
        );
        for secret in [new_secret, SECRET] {
            tessera_signature::verify(
                secret.as_bytes(),
                &request.signature,
                request.body.as_bytes(),
                now_unix(),
            )
            .unwrap_or_else(|error| panic!("{secret}: {error:?}"));
        }
        app.stop().await;
    }
);

database_test!(
    a_host_killed_mid_schedule_loses_no_delivery_and_repeats_none,
    |backend| async move {
        let receiver = Receiver::start(500).await;
        const SCHEDULE: &str = "2s,2s,2s,2s";
        let app = chat_host(
            backend,
            WebhookSettings::for_receiver(&receiver, SCHEDULE),
            None,
        )
        .await;
        let tenant = tenant(&app).await;
        // Three failing webhooks (each stays under the 10 consecutive failures that would
        // disable it: 4 messages × 2 failed attempts) and one that always accepts.
        let mut flaky = Vec::new();
        for index in 0..3 {
            let hook = create_webhook(
                &app,
                &tenant.owner,
                &receiver.url(&format!("/hooks/flaky-{index}")),
                &["message.created"],
            )
            .await;
            flaky.push(hook["id"].as_str().unwrap().to_owned());
        }
        let steady = create_webhook(
            &app,
            &tenant.owner,
            &receiver.url("/ok/steady"),
            &["message.created"],
        )
        .await;
        let conversation = general_conversation(&app, &tenant.editor).await;
        const MESSAGES: usize = 4;
        const DELIVERIES: usize = 4 * MESSAGES;
        for index in 0..MESSAGES {
            post_message(
                &app,
                &tenant.editor,
                &conversation,
                &format!("message {index}"),
            )
            .await;
        }
        // Every first attempt made: the steady ones delivered, the flaky ones failed.
        eventually(30, "the first attempts", || async {
            (receiver.by_delivery().len() == DELIVERIES).then_some(())
        })
        .await;
        let database = app.stop_keeping_database().await;

        // A real `tessera serve` takes over the schedule and is SIGKILLed after its attempts.
        let ca = receiver.ca();
        let mut served = serve(
            &database,
            &[
                // The outbound policy's own name, and the CONTRACT's older one still read.
                ("TESSERA_OUTBOUND_EXTRA_CA", ca.to_str().unwrap()),
                ("TESSERA_WEBHOOK_ALLOW_PRIVATE_TARGETS", "true"),
                ("TESSERA_WEBHOOK_RETRY_SCHEDULE", SCHEDULE),
            ],
        );
        eventually(60, "the second attempts, by the served host", || async {
            let counts = receiver.by_delivery();
            (counts
                .values()
                .filter(|(requests, _)| *requests >= 2)
                .count()
                == DELIVERIES - MESSAGES)
                .then_some(())
        })
        .await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        served.kill();

        // The receiver recovers; a new host delivers everything pending, once.
        receiver.answer(204);
        let app = chat_host(
            backend,
            WebhookSettings::for_receiver(&receiver, SCHEDULE),
            Some(database),
        )
        .await;
        // The killed host's claimed attempts run again once their leases end (three lifecycle
        // deadlines and 30 s, `work.rs`), then on the schedule: well past a minute.
        eventually(180, "every delivery accepted", || async {
            let counts = receiver.by_delivery();
            (counts.len() == DELIVERIES && counts.values().all(|(_, accepted)| *accepted >= 1))
                .then_some(())
        })
        .await;
        tokio::time::sleep(Duration::from_millis(2500)).await;
        let counts = receiver.by_delivery();
        assert!(
            counts.values().all(|(_, accepted)| *accepted == 1),
            "no delivery accepted twice: {counts:?}"
        );
        let steady_history =
            deliveries(&app, &tenant.owner, steady["id"].as_str().unwrap(), "").await;
        assert_eq!(steady_history.len(), MESSAGES);
        assert!(
            steady_history
                .iter()
                .all(|delivery| delivery["status"] == "delivered" && delivery["attempt"] == 1)
        );
        for hook_id in &flaky {
            let flaky_history = deliveries(&app, &tenant.owner, hook_id, "").await;
            assert_eq!(flaky_history.len(), MESSAGES);
            assert!(
                flaky_history
                    .iter()
                    .all(|delivery| delivery["status"] == "delivered" && delivery["attempt"] == 3),
                "{flaky_history:#?}"
            );
        }
        app.stop().await;
    }
);

/// Whether Standard Webhooks' library and Stripe's accept `request` as signed by `secret`
/// (`tests/webhooks/verify.py`): `(standard, stripe)`.
fn verified_by_libraries(request: &Received, secret: &str) -> (bool, bool) {
    use std::io::Write as _;
    let python = crate::components::target_dir().join("polyglot/python-venv/bin/python");
    assert!(
        python.is_file(),
        "{} is missing: `cargo xtask test` installs it with standardwebhooks and stripe",
        python.display()
    );
    let mut child = std::process::Command::new(python)
        .arg(crate::components::repository().join("tests/webhooks/verify.py"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("starting the verifier");
    let [id, timestamp, signature] = &request.standard;
    let input = json!({
        "body": request.body,
        "secret": secret,
        "headers": {
            "webhook-id": id,
            "webhook-timestamp": timestamp,
            "webhook-signature": signature,
            "x-service-signature": request.signature,
        },
    });
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "the verifier failed");
    let verdict: Value = serde_json::from_slice(&output.stdout).unwrap();
    (
        verdict["standard"].as_bool().unwrap(),
        verdict["stripe"].as_bool().unwrap(),
    )
}

database_test!(
    deliveries_verify_with_standard_webhooks_and_stripe_before_during_and_after_a_rotation,
    |backend| async move {
        let receiver = Receiver::start(204).await;
        let app = chat_host(
            backend,
            WebhookSettings::for_receiver(&receiver, "1h"),
            None,
        )
        .await;
        let tenant = tenant(&app).await;
        let hook = create_webhook(
            &app,
            &tenant.owner,
            &receiver.url("/hooks/standard"),
            &["message.created"],
        )
        .await;
        let hook_id = hook["id"].as_str().unwrap().to_owned();
        let ping = || async {
            let answer = json_with_status(
                app.post_as(
                    &format!("/chat/api/v1/webhooks/{hook_id}/test"),
                    &tenant.owner,
                    &json!({}),
                )
                .await,
                200,
            )
            .await;
            assert_eq!(answer["data"]["status"], "delivered", "{answer}");
            let request = receiver.requests().pop().unwrap();
            assert_eq!(request.standard[0], request.delivery_id);
            request
        };
        let rotate = |secret: &'static str| {
            let app = &app;
            let owner = tenant.owner.clone();
            let hook_id = hook_id.clone();
            async move {
                let rotated = json_with_status(
                    app.post_as(
                        &format!("/chat/api/v1/webhooks/{hook_id}/secret"),
                        &owner,
                        &json!({ "secret": secret }),
                    )
                    .await,
                    200,
                )
                .await;
                assert_eq!(rotated["data"]["secret"], secret, "{rotated}");
            }
        };
        const SECOND: &str = "whsec_second_fedcba9876543210fedcba98765";
        const THIRD: &str = "a-third-secret-without-any-prefix-0123456789";

        // Before: one secret, one entry in each header.
        let before = ping().await;
        assert_eq!(
            before.standard[2].split(' ').count(),
            1,
            "{:?}",
            before.standard
        );
        assert_eq!(verified_by_libraries(&before, SECRET), (true, true));
        assert_eq!(verified_by_libraries(&before, SECOND), (false, false));

        // During: the new secret and the replaced one both sign.
        rotate(SECOND).await;
        let during = ping().await;
        assert_eq!(
            during.standard[2].split(' ').count(),
            2,
            "{:?}",
            during.standard
        );
        assert_eq!(verified_by_libraries(&during, SECOND), (true, true));
        assert_eq!(verified_by_libraries(&during, SECRET), (true, true));

        // After: another rotation ends the first secret's overlap; it signs nothing more.
        rotate(THIRD).await;
        let after = ping().await;
        assert_eq!(verified_by_libraries(&after, THIRD), (true, true));
        assert_eq!(verified_by_libraries(&after, SECOND), (true, true));
        assert_eq!(verified_by_libraries(&after, SECRET), (false, false));

        // Refusals change nothing: a short secret, an editor, an unknown webhook.
        let path = format!("/chat/api/v1/webhooks/{hook_id}/secret");
        let short = json_with_status(
            app.post_as(&path, &tenant.owner, &json!({ "secret": "short" }))
                .await,
            422,
        )
        .await;
        assert!(short["errors"]["secret"].is_array(), "{short}");
        let missing =
            json_with_status(app.post_as(&path, &tenant.owner, &json!({})).await, 422).await;
        assert!(missing["errors"]["secret"].is_array(), "{missing}");
        assert_eq!(
            app.post_as(&path, &tenant.editor, &json!({ "secret": SECOND }))
                .await
                .status(),
            403
        );
        assert_eq!(
            app.post_as(
                "/chat/api/v1/webhooks/0190f5d2-0000-7000-8000-000000000000/secret",
                &tenant.owner,
                &json!({ "secret": SECOND })
            )
            .await
            .status(),
            404
        );
        let still = ping().await;
        assert_eq!(verified_by_libraries(&still, THIRD), (true, true));
        assert_eq!(verified_by_libraries(&still, SECOND), (true, true));
        app.stop().await;
    }
);
