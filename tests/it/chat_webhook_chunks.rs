//! Chat webhooks whose deliveries outnumber what one engine call may scan
//! (`TESSERA_ENGINE_SCAN_BUDGET`, here a budget of 60 in pages of 20): re-enabling a disabled
//! webhook resumes every parked delivery, and deleting a webhook purges every one of its
//! deliveries and dead letters, each in chunks that durable jobs carry on from call to call,
//! while the request itself answers at once; deletions and re-enablings racing commit each
//! on the condition that the webhook is as they read it. Deliveries go to a real HTTPS
//! receiver on loopback (a fresh self-signed certificate trusted through
//! `TESSERA_WEBHOOK_EXTRA_CA`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU16, AtomicUsize, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::routing::post;
use serde_json::{Value, json};
use tessera_host::config::parse_retry_schedule;

use crate::database_test;
use crate::helpers::{
    Backend, CertificateFile, TestApp, eventually, json_with_status, limit_engine_scans,
    serve_https, spawn_app_with_engines,
};

/// Entries one engine scan returns at most in these tests.
const SCAN_PAGE: u32 = 20;
/// Entries the scans of one engine call return at most in these tests.
const SCAN_BUDGET: u64 = 60;

// ---------------------------------------------------------------------------------------------
// The receiver
// ---------------------------------------------------------------------------------------------

struct ReceiverState {
    /// The status answered on paths other than `/ok/…` (which always get 204).
    answer: AtomicU16,
    /// Requests wait for this to be true before they are answered.
    open: tokio::sync::watch::Sender<bool>,
    /// Requests that arrived, answered or still held.
    arrived: AtomicUsize,
    /// Per delivery id (`X-Webhook-Delivery`): the statuses answered, in order.
    answered: std::sync::Mutex<BTreeMap<String, Vec<u16>>>,
}

/// An HTTPS receiver on 127.0.0.1 that can hold its answers back.
struct GatedReceiver {
    port: u16,
    state: Arc<ReceiverState>,
    certificate: CertificateFile,
}

impl GatedReceiver {
    /// A receiver answering `answer` (after the gate opens, when `open` is false).
    fn start(answer: u16, open: bool) -> Self {
        async fn receive(
            State(state): State<Arc<ReceiverState>>,
            uri: Uri,
            headers: HeaderMap,
        ) -> StatusCode {
            let delivery_id = headers
                .get("x-webhook-delivery")
                .map(|value| value.to_str().unwrap().to_owned())
                .unwrap_or_default();
            state.arrived.fetch_add(1, Ordering::SeqCst);
            let mut open = state.open.subscribe();
            open.wait_for(|open| *open).await.unwrap();
            let answered = if uri.path().starts_with("/ok/") {
                204
            } else {
                state.answer.load(Ordering::SeqCst)
            };
            state
                .answered
                .lock()
                .unwrap()
                .entry(delivery_id)
                .or_default()
                .push(answered);
            StatusCode::from_u16(answered).unwrap()
        }
        let state = Arc::new(ReceiverState {
            answer: AtomicU16::new(answer),
            open: tokio::sync::watch::Sender::new(open),
            arrived: AtomicUsize::new(0),
            answered: std::sync::Mutex::default(),
        });
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

    fn open(&self) {
        self.state.open.send_replace(true);
    }

    /// How many requests arrived, answered or still held.
    fn arrived(&self) -> usize {
        self.state.arrived.load(Ordering::SeqCst)
    }

    /// The delivery ids answered with a 2xx at least once.
    fn accepted(&self) -> BTreeSet<String> {
        self.state
            .answered
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, statuses)| statuses.iter().any(|status| (200..300).contains(status)))
            .map(|(delivery_id, _)| delivery_id.clone())
            .collect()
    }
}

// ---------------------------------------------------------------------------------------------
// The host and a tenant
// ---------------------------------------------------------------------------------------------

/// A host with the chat engine, scans bounded to [`SCAN_PAGE`] and [`SCAN_BUDGET`], deliveries
/// retried on `schedule`, engine work run `concurrency` at a time.
async fn chunked_chat_host(
    backend: Backend,
    receiver: &GatedReceiver,
    schedule: &'static str,
    concurrency: usize,
) -> TestApp {
    let extra_ca = receiver.certificate.0.clone();
    spawn_app_with_engines(backend, &["chat"], move |config| {
        config.webhook.retry_schedule = parse_retry_schedule(schedule).unwrap();
        config.outbound.allow_private_targets = true;
        config.outbound.extra_ca = Some(extra_ca);
        limit_engine_scans(config, SCAN_PAGE, SCAN_BUDGET);
        config.work.concurrency = concurrency;
    })
    .await
}

async fn provision_user(app: &TestApp, tenant_id: &str, user_id: &str) {
    let body = json!({
        "tenant_id": tenant_id, "user_id": user_id, "email": format!("{user_id}@example.com"),
        "first_name": "Test", "last_name": "User", "type": "user",
    });
    let response = app
        .post_signed("/chat/api/internal/chat/provision/user", &body)
        .await;
    json_with_status(response, 200).await;
}

/// A tenant provisioned on the chat engine: its id and an owner's token.
async fn tenant_with_owner(app: &TestApp) -> (String, String) {
    let tenant_id = uuid::Uuid::new_v4().to_string();
    let response = app
        .post_signed(
            "/chat/api/internal/chat/provision/tenant",
            &json!({ "tenant_id": tenant_id, "tenant_short_id": "acme", "name": "Acme" }),
        )
        .await;
    json_with_status(response, 200).await;
    let owner_id = uuid::Uuid::new_v4().to_string();
    provision_user(app, &tenant_id, &owner_id).await;
    let owner = app.token(&tenant_id, &owner_id, "owner").await;
    (tenant_id, owner)
}

const SECRET: &str = "whsec_0123456789abcdef0123456789abcdef";

async fn create_webhook(app: &TestApp, token: &str, url: &str, events: &[&str]) -> String {
    let body = json!({ "url": url, "events": events, "secret": SECRET });
    json_with_status(
        app.post_as("/chat/api/v1/webhooks", token, &body).await,
        201,
    )
    .await["data"]["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn general_conversation(app: &TestApp, token: &str) -> String {
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

async fn post_messages(app: &TestApp, token: &str, conversation_id: &str, count: usize) {
    for index in 0..count {
        let response = app
            .post_as(
                &format!("/chat/api/v1/conversations/{conversation_id}/messages"),
                token,
                &json!({ "body": format!("message {index}") }),
            )
            .await;
        json_with_status(response, 201).await;
    }
}

async fn set_active(app: &TestApp, token: &str, webhook_id: &str, active: bool) -> Value {
    let response = app
        .patch_as(
            &format!("/chat/api/v1/webhooks/{webhook_id}"),
            token,
            &json!({ "is_active": active }),
        )
        .await;
    json_with_status(response, 200).await["data"].clone()
}

/// Every item of a cursor-paged list, following `next_cursor` to the end.
async fn every_item(app: &TestApp, token: &str, path: &str) -> Vec<Value> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page_path = match &cursor {
            Some(cursor) => format!("{path}?limit=100&cursor={cursor}"),
            None => format!("{path}?limit=100"),
        };
        let page = json_with_status(app.get_as(&page_path, token).await, 200).await;
        items.extend(page["data"].as_array().unwrap().iter().cloned());
        if page["meta"]["has_more"] != true {
            return items;
        }
        cursor = Some(page["meta"]["next_cursor"].as_str().unwrap().to_owned());
    }
}

/// Stored deliveries of the chat engine marked parked (waiting for their webhook's
/// re-enabling), straight from the database.
async fn parked_deliveries(app: &TestApp, backend: Backend) -> i64 {
    app.scalar(match backend {
        Backend::Sqlite => {
            "SELECT COUNT(*) FROM engine_kv WHERE engine_code = 'chat'
             AND key LIKE 'deliveries/%' AND CAST(value AS TEXT) LIKE '%\"parked\":true%'"
        }
        Backend::Postgres => {
            "SELECT COUNT(*) FROM engine_kv WHERE engine_code = 'chat'
             AND key LIKE 'deliveries/%' AND convert_from(value, 'UTF8') LIKE '%\"parked\":true%'"
        }
    })
    .await
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

database_test!(
    re_enabling_resumes_more_parked_deliveries_than_one_call_may_scan,
    |backend| async move {
        // Held answers and one job at a time: the first attempt waits at the receiver while
        // the messages are posted and the webhook is disabled, so every other first attempt
        // runs after the disabling and parks its delivery.
        let receiver = GatedReceiver::start(500, false);
        let app = chunked_chat_host(backend, &receiver, "300ms,300ms", 1).await;
        let (_, owner) = tenant_with_owner(&app).await;
        let hook_id = create_webhook(
            &app,
            &owner,
            &receiver.url("/hooks/paused"),
            &["message.created"],
        )
        .await;
        let conversation = general_conversation(&app, &owner).await;
        const MESSAGES: usize = 150;
        post_messages(&app, &owner, &conversation, MESSAGES).await;
        eventually(20, "the first attempt at the receiver", || async {
            (receiver.arrived() >= 1).then_some(())
        })
        .await;
        assert_eq!(
            set_active(&app, &owner, &hook_id, false).await["is_active"],
            false
        );
        receiver.open();
        eventually(60, "every delivery parked", || async {
            (parked_deliveries(&app, backend).await == MESSAGES as i64).then_some(())
        })
        .await;
        assert_eq!(receiver.arrived(), 1, "nothing is sent while disabled");

        // Re-enabling answers at once; the parked deliveries are resumed chunk by chunk.
        receiver.answer(204);
        assert_eq!(
            set_active(&app, &owner, &hook_id, true).await["is_active"],
            true
        );
        eventually(90, "every parked delivery delivered", || async {
            (receiver.accepted().len() == MESSAGES).then_some(())
        })
        .await;
        eventually(20, "no delivery left parked", || async {
            (parked_deliveries(&app, backend).await == 0).then_some(())
        })
        .await;
        // Each recorded as delivered (the record follows the receiver's answer).
        let history_path = format!("/chat/api/v1/webhooks/{hook_id}/deliveries");
        let history = eventually(20, "every delivery recorded as delivered", || async {
            let history = every_item(&app, &owner, &history_path).await;
            history
                .iter()
                .all(|delivery| delivery["status"] == "delivered")
                .then_some(history)
        })
        .await;
        assert_eq!(history.len(), MESSAGES);
        let ids: BTreeSet<String> = history
            .iter()
            .map(|delivery| delivery["id"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(ids, receiver.accepted());
        app.stop().await;
    }
);

database_test!(
    deleting_a_webhook_purges_more_deliveries_and_dead_letters_than_one_call_may_scan,
    |backend| async move {
        let receiver = GatedReceiver::start(500, true);
        let app = chunked_chat_host(backend, &receiver, "200ms", 64).await;
        let (tenant_id, owner) = tenant_with_owner(&app).await;
        // The doomed webhook and fifteen others fail every member.added delivery twice, into
        // the dead letter queue: 4 dead letters each (8 failures, short of the 10 that
        // disable a webhook), 64 in all, more than one call may scan.
        let doomed = create_webhook(
            &app,
            &owner,
            &receiver.url("/hooks/doomed"),
            &["message.created", "member.added"],
        )
        .await;
        let mut others = BTreeSet::new();
        for index in 0..15 {
            others.insert(
                create_webhook(
                    &app,
                    &owner,
                    &receiver.url(&format!("/hooks/other-{index}")),
                    &["member.added"],
                )
                .await,
            );
        }
        let conversation = general_conversation(&app, &owner).await;
        for _ in 0..4 {
            let user_id = uuid::Uuid::new_v4().to_string();
            provision_user(&app, &tenant_id, &user_id).await;
            json_with_status(
                app.post_as(
                    &format!("/chat/api/v1/conversations/{conversation}/members"),
                    &owner,
                    &json!({ "user_id": user_id }),
                )
                .await,
                201,
            )
            .await;
        }
        let dead_letters_path = "/chat/api/v1/webhooks/dlq";
        let before = eventually(60, "64 dead letters", || async {
            let items = every_item(&app, &owner, dead_letters_path).await;
            (items.len() == 64).then_some(items)
        })
        .await;
        let others_dead_letters: BTreeSet<String> = before
            .iter()
            .filter(|item| item["webhook_id"] != doomed.as_str())
            .map(|item| item["id"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(others_dead_letters.len(), 60);

        // Then 80 more deliveries of the doomed webhook, delivered.
        json_with_status(
            app.patch_as(
                &format!("/chat/api/v1/webhooks/{doomed}"),
                &owner,
                &json!({ "url": receiver.url("/ok/doomed") }),
            )
            .await,
            200,
        )
        .await;
        post_messages(&app, &owner, &conversation, 80).await;
        eventually(60, "the doomed webhook's messages delivered", || async {
            (receiver.accepted().len() == 80).then_some(())
        })
        .await;
        let stored_deliveries = || async {
            app.scalar(
                "SELECT COUNT(*) FROM engine_kv WHERE engine_code = 'chat'
                 AND key LIKE 'deliveries/%'",
            )
            .await
        };
        let stored_dead_letters = || async {
            app.scalar(
                "SELECT COUNT(*) FROM engine_kv WHERE engine_code = 'chat' AND key LIKE 'dlq/%'",
            )
            .await
        };
        assert_eq!(stored_deliveries().await, 64 + 80);

        let response = app
            .delete_as(&format!("/chat/api/v1/webhooks/{doomed}"), &owner)
            .await;
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        assert_eq!((status, text.as_str()), (204, ""));

        // At once: the webhook is gone, and so are its dead letters from the list.
        json_with_status(
            app.get_as(
                &format!("/chat/api/v1/webhooks/{doomed}/deliveries"),
                &owner,
            )
            .await,
            404,
        )
        .await;
        let listed: BTreeSet<String> = every_item(&app, &owner, dead_letters_path)
            .await
            .iter()
            .map(|item| {
                assert!(
                    others.contains(item["webhook_id"].as_str().unwrap()),
                    "{item}"
                );
                item["id"].as_str().unwrap().to_owned()
            })
            .collect();
        assert_eq!(listed, others_dead_letters);

        // Soon: its deliveries and dead letters are gone from storage too, the others' kept.
        eventually(60, "the doomed webhook's deliveries purged", || async {
            (stored_deliveries().await == 60 && stored_dead_letters().await == 60).then_some(())
        })
        .await;
        let listed: BTreeSet<String> = every_item(&app, &owner, dead_letters_path)
            .await
            .iter()
            .map(|item| item["id"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(listed, others_dead_letters);
        for webhook_id in &others {
            let history = every_item(
                &app,
                &owner,
                &format!("/chat/api/v1/webhooks/{webhook_id}/deliveries"),
            )
            .await;
            assert_eq!(history.len(), 4);
        }
        app.stop().await;
    }
);

database_test!(
    racing_deletions_and_re_enablings_delete_a_webhook_once_and_never_bring_it_back,
    |backend| async move {
        let receiver = GatedReceiver::start(204, true);
        let app = chunked_chat_host(backend, &receiver, "200ms", 16).await;
        let (_, owner) = tenant_with_owner(&app).await;
        let hook_id = create_webhook(
            &app,
            &owner,
            &receiver.url("/ok/racing"),
            &["message.created"],
        )
        .await;
        set_active(&app, &owner, &hook_id, false).await;
        let path = format!("/chat/api/v1/webhooks/{hook_id}");

        // Ten deletions and six re-enablings at once, each reading the webhook and committing
        // on the condition that it is unchanged (six re-enablings conflict fewer times than a
        // request tries, so none answers 409).
        let deletions = (0..10).map(|_| app.delete_as(&path, &owner));
        let re_enabling =
            json!({ "is_active": true, "events": ["message.created", "member.added"] });
        let re_enablings = (0..6).map(|_| app.patch_as(&path, &owner, &re_enabling));
        let (deleted, re_enabled) = tokio::join!(
            futures_util::future::join_all(deletions),
            futures_util::future::join_all(re_enablings),
        );
        let mut deleted: Vec<u16> = deleted
            .iter()
            .map(|response| response.status().as_u16())
            .collect();
        deleted.sort_unstable();
        // One deletion commits; the others find the webhook gone.
        assert_eq!(deleted, [204, 404, 404, 404, 404, 404, 404, 404, 404, 404]);
        // A re-enabling either committed before the deletion or finds the webhook gone.
        for response in re_enabled {
            let status = response.status().as_u16();
            assert!(status == 200 || status == 404, "{status}");
        }

        // Gone for good: no re-enabling wrote it back.
        json_with_status(app.get_as(&path, &owner).await, 404).await;
        let listed = json_with_status(app.get_as("/chat/api/v1/webhooks", &owner).await, 200).await;
        assert_eq!(listed["data"], json!([]));
        let stored_records = || async {
            app.scalar(
                "SELECT COUNT(*) FROM engine_kv WHERE engine_code = 'chat'
                 AND (key LIKE 'webhooks/%' OR key LIKE 'webhook-failures/%')",
            )
            .await
        };
        assert_eq!(stored_records().await, 0);
        // Nor does a resume job started before the deletion, nor the purge.
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        assert_eq!(stored_records().await, 0);
        app.stop().await;
    }
);
