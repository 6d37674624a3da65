//! The mail engine (`engines/mail`) through the real host: internal delivery into the inboxes
//! of the tenant's users, folders with counts, read marks, the trash and deletion, cursor paging
//! with the unread filter, external recipients kept `queued` without a relay and handed to a
//! real SMTP server on loopback (`smtp_sink`) with one, a refusing relay
//! retried into `failed`, roles, tenant isolation, validation, the events published (observed
//! through a bus subscription the test registers), provisioning and deprovisioning, and the
//! OpenAPI entries.

use serde_json::{Value, json};
use tessera_host::config::{Config, Secret};

use crate::database_test;
use crate::helpers::{
    AppOptions, Backend, TestApp, TestDatabase, assert_engine_documented, eventually,
    json_with_status, limit_engine_scans, observe_events, observed_events, spawn_app_with,
    spawn_app_with_engines, without_rate_limits,
};
use crate::smtp_sink::SmtpSink;

const MAIL: &str = "/mail/api/v1";
const INTERNAL: &str = "/mail/api/internal/mail";
/// The engine code the test subscribes to `mail.*` on the bus: no such engine is loaded, so
/// each published mail event stays in `engine_work` for the test to read.
const OBSERVER: &str = "mail-observer";

// ---------------------------------------------------------------------------------------------
// The host and a tenant
// ---------------------------------------------------------------------------------------------

/// A host with the mail engine, no rate limits, a 2 MiB body limit (a body may have 1,000,000
/// bytes), an observer of mail events, and `relay` as its SMTP relay.
async fn mail_host(backend: Backend, relay: Option<String>) -> TestApp {
    mail_host_with_senders(backend, relay, None).await
}

/// [`mail_host`] with `TESSERA_SMTP_ENGINES` set to `senders` (`None`: unset, so the engines
/// asking for `send-mail` may send).
async fn mail_host_with_senders(
    backend: Backend,
    relay: Option<String>,
    senders: Option<Vec<String>>,
) -> TestApp {
    let database = TestDatabase::new(backend).await;
    crate::components::install_engines(&database.data_dir.join("plugins"), &["mail"]);
    let configure = move |config: &mut Config| {
        without_rate_limits(config);
        config.http.max_body_bytes = 2 * 1024 * 1024;
        config.smtp.url = relay.map(Secret::new);
        config.smtp.engines = senders;
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
    observe_events(&app, OBSERVER, &["mail.*"]);
    app
}

/// The mail events published in `tenant_id`, `(type, payload)` sorted by type then payload.
async fn mail_events(app: &TestApp, tenant_id: &str) -> Vec<(String, Value)> {
    let mut events = observed_events(app, OBSERVER, Some(tenant_id)).await;
    sort_events(&mut events);
    events
}

/// Orders events by type, then recipient (the order their deliveries are stored in is not
/// theirs).
fn sort_events(events: &mut [(String, Value)]) {
    events.sort_by_key(|(event_type, payload)| {
        (event_type.clone(), payload["recipient_id"].to_string())
    });
}

/// The due times of the mail engine's jobs in `tenant_id` (pending or running).
async fn mail_jobs(app: &TestApp, tenant_id: &str) -> Vec<String> {
    let database = &app.state().database;
    tessera_host::on_pool!(database, pool => sqlx::query_scalar(
        "SELECT due_at FROM engine_work WHERE engine_code = 'mail' AND tenant_id = $1 AND kind = 'job' ORDER BY due_at",
    )
    .bind(tenant_id)
    .fetch_all(pool)
    .await
    .unwrap())
}

/// Makes the mail engine's pending jobs in `tenant_id` due now (instead of waiting out the
/// retry delays).
async fn make_jobs_due(app: &TestApp, tenant_id: &str) {
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    let database = &app.state().database;
    tessera_host::on_pool!(database, pool => sqlx::query(
        "UPDATE engine_work SET due_at = $2 WHERE engine_code = 'mail' AND tenant_id = $1 AND kind = 'job' AND status = 'pending'",
    )
    .bind(tenant_id)
    .bind(now)
    .execute(pool)
    .await
    .map(drop)
    .unwrap());
}

/// The mail engine's storage keys in `tenant_id` matching the SQL `LIKE` pattern.
async fn stored_keys(app: &TestApp, tenant_id: &str, pattern: &str) -> Vec<String> {
    let database = &app.state().database;
    tessera_host::on_pool!(database, pool => sqlx::query_scalar(
        "SELECT key FROM engine_kv WHERE engine_code = 'mail' AND tenant_id = $1 AND key LIKE $2 ORDER BY key",
    )
    .bind(tenant_id)
    .bind(pattern)
    .fetch_all(pool)
    .await
    .unwrap())
}

/// A user of a tenant: id, address and token.
struct User {
    id: String,
    email: String,
    token: String,
}

/// A tenant provisioned on the mail engine with an owner, two editors and a viewer.
struct Tenant {
    id: String,
    owner: User,
    editor: User,
    other_editor: User,
    viewer: User,
}

async fn user(app: &TestApp, tenant_id: &str, role: &str) -> User {
    let id = uuid::Uuid::new_v4().to_string();
    let email = format!("{role}-{}@example.com", &id[..8]);
    let body = json!({
        "tenant_id": tenant_id, "user_id": id, "email": email,
        "first_name": "Test", "last_name": "User", "type": "user",
    });
    json_with_status(
        app.post_signed(&format!("{INTERNAL}/provision/user"), &body)
            .await,
        200,
    )
    .await;
    User {
        token: app.token(tenant_id, &id, role).await,
        id,
        email,
    }
}

async fn tenant(app: &TestApp) -> Tenant {
    let id = uuid::Uuid::new_v4().to_string();
    json_with_status(
        app.post_signed(
            &format!("{INTERNAL}/provision/tenant"),
            &json!({ "tenant_id": id, "tenant_short_id": "acme", "name": "Acme" }),
        )
        .await,
        200,
    )
    .await;
    Tenant {
        owner: user(app, &id, "owner").await,
        editor: user(app, &id, "editor").await,
        other_editor: user(app, &id, "editor").await,
        viewer: user(app, &id, "viewer").await,
        id,
    }
}

// ---------------------------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------------------------

fn message_path(id: &str) -> String {
    format!("{MAIL}/messages/{id}")
}

/// Sends a message; returns the sender's copy.
async fn send(app: &TestApp, token: &str, body: Value) -> Value {
    json_with_status(
        app.post_as(&format!("{MAIL}/messages"), token, &body).await,
        201,
    )
    .await["data"]
        .clone()
}

async fn show(app: &TestApp, token: &str, id: &str) -> Value {
    json_with_status(app.get_as(&message_path(id), token).await, 200).await["data"].clone()
}

async fn patch(app: &TestApp, token: &str, id: &str, body: Value) -> Value {
    json_with_status(app.patch_as(&message_path(id), token, &body).await, 200).await["data"].clone()
}

/// `GET …/folders/{folder}/messages{query}`: the whole answer.
async fn folder(app: &TestApp, token: &str, folder: &str, query: &str) -> Value {
    let path = format!("{MAIL}/folders/{folder}/messages{query}");
    json_with_status(app.get_as(&path, token).await, 200).await
}

/// `(total, unread)` of each folder, in the order inbox, sent, outbox, trash.
async fn counts(app: &TestApp, token: &str) -> Vec<(u64, u64)> {
    let folders = json_with_status(app.get_as(&format!("{MAIL}/folders"), token).await, 200).await;
    let names: Vec<&str> = folders["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|folder| folder["id"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["inbox", "sent", "outbox", "trash"]);
    folders["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|folder| {
            (
                folder["total"].as_u64().unwrap(),
                folder["unread"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// The ids of a list answer's items, in order.
fn ids(listed: &Value) -> Vec<String> {
    listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| message["id"].as_str().unwrap().to_owned())
        .collect()
}

fn text(value: &Value) -> String {
    value.as_str().unwrap().to_owned()
}

/// Asserts a 204 with an empty body.
async fn no_content(response: reqwest::Response) {
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    assert_eq!((status, text.as_str()), (204, ""));
}

/// Asserts a 422 with exactly these field errors.
async fn invalid(response: reqwest::Response, errors: Value) {
    assert_eq!(
        json_with_status(response, 422).await,
        json!({ "message": "The given data was invalid.", "errors": errors })
    );
}

/// A sender's copy without its server-assigned values: what a test can predict.
fn predictable(message: &Value) -> Value {
    let mut message = message.clone();
    for field in ["id", "message_id", "created_at", "updated_at"] {
        message.as_object_mut().unwrap().remove(field);
    }
    if let Some(delivery) = message["delivery"].as_object_mut() {
        for field in ["last_attempt_at", "next_attempt_at", "sent_at"] {
            if delivery[field].is_string() {
                delivery.insert(field.to_owned(), json!("<time>"));
            }
        }
    }
    message
}

fn is_timestamp(value: &Value) -> bool {
    value.as_str().is_some_and(|text| {
        chrono::DateTime::parse_from_rfc3339(text).is_ok() && text.ends_with('Z')
    })
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

database_test!(
    internal_delivery_reaches_inboxes_unread_and_read_marks_count,
    |backend| async move {
        let app = mail_host(backend, None).await;
        let tenant = tenant(&app).await;
        let (owner, editor, other) = (&tenant.owner, &tenant.editor, &tenant.other_editor);
        let empty = vec![(0, 0); 4];
        let folders = json_with_status(
            app.get_as(&format!("{MAIL}/folders"), &editor.token).await,
            200,
        )
        .await;
        assert_eq!(
            folders,
            json!({ "data": [
                { "id": "inbox", "name": "Inbox", "total": 0, "unread": 0 },
                { "id": "sent", "name": "Sent", "total": 0, "unread": 0 },
                { "id": "outbox", "name": "Outbox", "total": 0, "unread": 0 },
                { "id": "trash", "name": "Trash", "total": 0, "unread": 0 },
            ]})
        );

        // Addresses match case-insensitively; an address named twice gets one copy.
        let shouted = editor.email.to_uppercase();
        let body = "Noon at the usual place?\nBring the slides.";
        let sent = send(
            &app,
            &owner.token,
            json!({
                "to": [shouted, editor.email], "cc": [other.email],
                "subject": "  Lunch  ", "body": body,
            }),
        )
        .await;
        assert_eq!(
            predictable(&sent),
            json!({
                "folder": "sent", "read": true, "from": owner.email, "sender_id": owner.id,
                "to": [shouted, editor.email], "cc": [other.email], "subject": "Lunch",
                "delivery": {
                    "status": "delivered",
                    "recipients": [
                        { "address": shouted, "internal": true, "status": "delivered" },
                        { "address": other.email, "internal": true, "status": "delivered" },
                    ],
                    "attempts": 0, "last_attempt_at": null, "next_attempt_at": null,
                    "last_error": null, "sent_at": null,
                },
                "body": body,
            })
        );
        assert!(is_timestamp(&sent["created_at"]));
        assert_eq!(sent["updated_at"], sent["created_at"]);
        let message_id = text(&sent["message_id"]);
        assert_ne!(sent["id"], sent["message_id"]);

        // Each recipient has an unread copy of their own in the inbox.
        let mut copies = Vec::new();
        for recipient in [editor, other] {
            assert_eq!(
                counts(&app, &recipient.token).await,
                [(1, 1), (0, 0), (0, 0), (0, 0)]
            );
            let inbox = folder(&app, &recipient.token, "inbox", "").await;
            assert_eq!(inbox["meta"]["has_more"], false);
            let listed = inbox["data"][0].clone();
            assert_eq!(
                listed,
                json!({
                    "id": listed["id"], "message_id": message_id, "folder": "inbox",
                    "read": false, "from": owner.email, "sender_id": owner.id,
                    "to": [shouted, editor.email], "cc": [other.email], "subject": "Lunch",
                    "delivery": null, "created_at": sent["created_at"],
                    "updated_at": sent["created_at"],
                })
            );
            assert_ne!(listed["id"], sent["id"]);
            let mut shown = listed.clone();
            shown["body"] = json!(body);
            assert_eq!(
                show(&app, &recipient.token, &text(&listed["id"])).await,
                shown
            );
            copies.push(text(&listed["id"]));
        }
        assert_ne!(copies[0], copies[1]);
        assert_eq!(
            counts(&app, &owner.token).await,
            [(0, 0), (1, 0), (0, 0), (0, 0)]
        );
        let own = folder(&app, &owner.token, "sent", "").await;
        let mut listed = sent.clone();
        listed.as_object_mut().unwrap().remove("body");
        assert_eq!(own["data"], json!([listed]));

        // Read marks: showing does not mark; PATCH does, and the counts follow.
        let read = patch(&app, &editor.token, &copies[0], json!({ "read": true })).await;
        assert_eq!(
            (read["read"].clone(), read["folder"].clone()),
            (json!(true), json!("inbox"))
        );
        assert_eq!(read["body"], body);
        assert!(read["updated_at"].as_str() > sent["created_at"].as_str());
        assert_eq!(
            counts(&app, &editor.token).await,
            [(1, 0), (0, 0), (0, 0), (0, 0)]
        );
        assert_eq!(
            counts(&app, &other.token).await,
            [(1, 1), (0, 0), (0, 0), (0, 0)]
        );
        patch(&app, &editor.token, &copies[0], json!({ "read": false })).await;
        assert_eq!(
            counts(&app, &editor.token).await,
            [(1, 1), (0, 0), (0, 0), (0, 0)]
        );
        assert_eq!(counts(&app, &tenant.viewer.token).await, empty);

        // Identifiers only: no address, subject or body in any event.
        let events = mail_events(&app, &tenant.id).await;
        let mut expected = vec![
            (
                "mail.received".to_owned(),
                json!({ "message_id": message_id, "recipient_id": editor.id, "copy_id": copies[0] }),
            ),
            (
                "mail.received".to_owned(),
                json!({ "message_id": message_id, "recipient_id": other.id, "copy_id": copies[1] }),
            ),
            (
                "mail.sent".to_owned(),
                json!({
                    "message_id": message_id, "sender_id": owner.id,
                    "internal_recipient_ids": [editor.id, other.id], "external_count": 0,
                }),
            ),
        ];
        sort_events(&mut expected);
        assert_eq!(events, expected);
        app.stop().await;
    }
);

database_test!(
    copies_move_to_the_trash_and_back_and_are_deleted_for_good,
    |backend| async move {
        let app = mail_host(backend, None).await;
        let tenant = tenant(&app).await;
        let (owner, editor) = (&tenant.owner, &tenant.editor);
        let sent = send(
            &app,
            &owner.token,
            json!({ "to": [editor.email], "subject": "Draft", "body": "v1" }),
        )
        .await;
        let own_id = text(&sent["id"]);
        let copy_id = ids(&folder(&app, &editor.token, "inbox", "").await)[0].clone();
        let path = message_path(&copy_id);

        // A received copy moves only between the inbox and the trash.
        for (body, errors) in [
            (json!({ "folder": "sent" }), json!({ "folder": ["in"] })),
            (json!({ "folder": "outbox" }), json!({ "folder": ["in"] })),
            (json!({ "folder": "archive" }), json!({ "folder": ["in"] })),
            (json!({ "folder": 5 }), json!({ "folder": ["string"] })),
            (
                json!({ "read": "yes", "folder": "trash" }),
                json!({ "read": ["boolean"] }),
            ),
        ] {
            invalid(app.patch_as(&path, &editor.token, &body).await, errors).await;
        }
        let refused = app.patch_as(&path, &editor.token, &json!([])).await;
        assert_eq!(refused.status(), 400);
        assert_eq!(show(&app, &editor.token, &copy_id).await["folder"], "inbox");

        let trashed = patch(&app, &editor.token, &copy_id, json!({ "folder": "trash" })).await;
        assert_eq!(
            (trashed["folder"].clone(), trashed["read"].clone()),
            (json!("trash"), json!(false))
        );
        assert_eq!(
            counts(&app, &editor.token).await,
            [(0, 0), (0, 0), (0, 0), (1, 1)]
        );
        assert_eq!(
            ids(&folder(&app, &editor.token, "trash", "").await),
            [copy_id.as_str()]
        );
        assert_eq!(
            folder(&app, &editor.token, "inbox", "").await["data"],
            json!([])
        );
        let restored = patch(
            &app,
            &editor.token,
            &copy_id,
            json!({ "folder": "inbox", "read": true }),
        )
        .await;
        assert_eq!(
            (restored["folder"].clone(), restored["read"].clone()),
            (json!("inbox"), json!(true))
        );
        // An empty change changes nothing.
        assert_eq!(
            patch(&app, &editor.token, &copy_id, json!({})).await,
            restored
        );

        // DELETE moves to the trash, and deletes for good from there.
        no_content(app.delete_as(&path, &editor.token).await).await;
        assert_eq!(show(&app, &editor.token, &copy_id).await["folder"], "trash");
        no_content(app.delete_as(&path, &editor.token).await).await;
        assert_eq!(
            json_with_status(app.get_as(&path, &editor.token).await, 404).await,
            json!({ "message": "Message not found." })
        );
        assert_eq!(counts(&app, &editor.token).await, vec![(0, 0); 4]);
        json_with_status(app.delete_as(&path, &editor.token).await, 404).await;

        // The sender's copy keeps the body; it moves between sent and the trash.
        assert_eq!(show(&app, &owner.token, &own_id).await["body"], "v1");
        let own_path = message_path(&own_id);
        invalid(
            app.patch_as(&own_path, &owner.token, &json!({ "folder": "inbox" }))
                .await,
            json!({ "folder": ["in"] }),
        )
        .await;
        invalid(
            app.patch_as(&own_path, &owner.token, &json!({ "folder": "outbox" }))
                .await,
            json!({ "folder": ["in"] }),
        )
        .await;
        patch(&app, &owner.token, &own_id, json!({ "folder": "trash" })).await;
        assert_eq!(
            patch(&app, &owner.token, &own_id, json!({ "folder": "sent" })).await["folder"],
            "sent"
        );
        assert_eq!(stored_keys(&app, &tenant.id, "bodies/%").await.len(), 1);
        no_content(app.delete_as(&own_path, &owner.token).await).await;
        no_content(app.delete_as(&own_path, &owner.token).await).await;
        json_with_status(app.get_as(&own_path, &owner.token).await, 404).await;
        // The last copy took the body along.
        assert_eq!(
            stored_keys(&app, &tenant.id, "bodies/%").await,
            Vec::<String>::new()
        );
        assert_eq!(
            stored_keys(&app, &tenant.id, "holders/%").await,
            Vec::<String>::new()
        );

        // Sending to oneself: one copy in sent, another unread in the inbox.
        let to_self = send(&app, &owner.token, json!({ "to": [owner.email] })).await;
        assert_eq!(
            (
                to_self["folder"].clone(),
                to_self["subject"].clone(),
                to_self["body"].clone()
            ),
            (json!("sent"), json!(""), json!(""))
        );
        assert_eq!(
            counts(&app, &owner.token).await,
            [(1, 1), (1, 0), (0, 0), (0, 0)]
        );
        let inbox = folder(&app, &owner.token, "inbox", "").await;
        assert_eq!(inbox["data"][0]["message_id"], to_self["message_id"]);
        assert_ne!(inbox["data"][0]["id"], to_self["id"]);
        app.stop().await;
    }
);

database_test!(
    external_recipients_stay_queued_in_the_outbox_without_a_relay,
    |backend| async move {
        let app = mail_host(backend, None).await;
        let tenant = tenant(&app).await;
        let (owner, editor) = (&tenant.owner, &tenant.editor);
        let sent = send(
            &app,
            &owner.token,
            json!({
                "to": [editor.email, "someone@outside.example"],
                "cc": ["Other@Outside.example"], "subject": "Hello", "body": "Hi all",
            }),
        )
        .await;
        assert_eq!(
            predictable(&sent),
            json!({
                "folder": "outbox", "read": true, "from": owner.email, "sender_id": owner.id,
                "to": [editor.email, "someone@outside.example"],
                "cc": ["Other@Outside.example"], "subject": "Hello",
                "delivery": {
                    "status": "queued",
                    "recipients": [
                        { "address": editor.email, "internal": true, "status": "delivered" },
                        { "address": "someone@outside.example", "internal": false, "status": "queued" },
                        { "address": "Other@Outside.example", "internal": false, "status": "queued" },
                    ],
                    "attempts": 0, "last_attempt_at": null, "next_attempt_at": null,
                    "last_error": null, "sent_at": null,
                },
                "body": "Hi all",
            })
        );
        let own_id = text(&sent["id"]);
        assert_eq!(
            counts(&app, &owner.token).await,
            [(0, 0), (0, 0), (1, 0), (0, 0)]
        );
        assert_eq!(
            ids(&folder(&app, &owner.token, "outbox", "").await),
            [own_id.as_str()]
        );
        // The internal recipient has their copy at once.
        assert_eq!(
            counts(&app, &editor.token).await,
            [(1, 1), (0, 0), (0, 0), (0, 0)]
        );
        // Without a relay nothing is scheduled: it stays queued.
        assert_eq!(mail_jobs(&app, &tenant.id).await, Vec::<String>::new());
        assert_eq!(
            show(&app, &owner.token, &own_id).await["delivery"]["status"],
            "queued"
        );

        // An outbox copy goes to the trash and back to the outbox, never to sent.
        invalid(
            app.patch_as(
                &message_path(&own_id),
                &owner.token,
                &json!({ "folder": "sent" }),
            )
            .await,
            json!({ "folder": ["in"] }),
        )
        .await;
        patch(&app, &owner.token, &own_id, json!({ "folder": "trash" })).await;
        assert_eq!(
            patch(&app, &owner.token, &own_id, json!({ "folder": "outbox" })).await["folder"],
            "outbox"
        );

        let message_id = text(&sent["message_id"]);
        let copy_id = ids(&folder(&app, &editor.token, "inbox", "").await)[0].clone();
        assert_eq!(
            mail_events(&app, &tenant.id).await,
            vec![
                (
                    "mail.received".to_owned(),
                    json!({ "message_id": message_id, "recipient_id": editor.id, "copy_id": copy_id }),
                ),
                (
                    "mail.sent".to_owned(),
                    json!({
                        "message_id": message_id, "sender_id": owner.id,
                        "internal_recipient_ids": [editor.id], "external_count": 2,
                    }),
                ),
            ]
        );
        app.stop().await;
    }
);

database_test!(
    external_mail_reaches_a_real_smtp_relay_and_moves_to_sent,
    |backend| async move {
        let sink = SmtpSink::start(false).await;
        let app = mail_host(backend, Some(sink.url())).await;
        let tenant = tenant(&app).await;
        let (owner, editor) = (&tenant.owner, &tenant.editor);
        let body = "Hello Carol,\r\nthe numbers look good.\r\nAda";
        let sent = send(
            &app,
            &owner.token,
            json!({
                "to": ["carol@outside.example"], "cc": [editor.email],
                "subject": "Quarterly numbers", "body": body,
            }),
        )
        .await;
        assert_eq!(sent["folder"], "outbox");
        assert_eq!(sent["delivery"]["status"], "queued");
        // With a relay the first attempt is due at once.
        assert!(is_timestamp(&sent["delivery"]["next_attempt_at"]));
        let own_id = text(&sent["id"]);
        let message_id = text(&sent["message_id"]);

        let mail = eventually(30, "the mail at the SMTP sink", || async {
            sink.mails().into_iter().next()
        })
        .await;
        assert_eq!(mail.sender, owner.email);
        // Only the external recipient goes through SMTP; the internal one has their copy.
        assert_eq!(mail.recipients, ["carol@outside.example"]);
        assert_eq!(mail.header("Subject"), Some("Quarterly numbers"));
        assert_eq!(
            mail.header("Message-ID"),
            Some(format!("<{message_id}@example.com>").as_str())
        );
        assert_eq!(mail.header("From"), Some(owner.email.as_str()));
        assert_eq!(mail.header("To"), Some("carol@outside.example"));
        assert!(
            mail.header("Content-Type")
                .is_some_and(|value| value.starts_with("text/plain")),
            "{mail:?}"
        );
        assert_eq!(mail.body(), body);

        let delivered = eventually(30, "the copy marked sent", || async {
            let message = show(&app, &owner.token, &own_id).await;
            (message["delivery"]["status"] == "sent").then_some(message)
        })
        .await;
        assert_eq!(
            predictable(&delivered),
            json!({
                "folder": "sent", "read": true, "from": owner.email, "sender_id": owner.id,
                "to": ["carol@outside.example"], "cc": [editor.email],
                "subject": "Quarterly numbers",
                "delivery": {
                    "status": "sent",
                    "recipients": [
                        { "address": "carol@outside.example", "internal": false, "status": "sent" },
                        { "address": editor.email, "internal": true, "status": "delivered" },
                    ],
                    "attempts": 1, "last_attempt_at": "<time>", "next_attempt_at": null,
                    "last_error": null, "sent_at": "<time>",
                },
                "body": body,
            })
        );
        assert_eq!(
            counts(&app, &owner.token).await,
            [(0, 0), (1, 0), (0, 0), (0, 0)]
        );
        assert_eq!(
            folder(&app, &owner.token, "outbox", "").await["data"],
            json!([])
        );
        assert_eq!(ids(&folder(&app, &owner.token, "sent", "").await), [own_id]);
        assert_eq!(
            counts(&app, &editor.token).await,
            [(1, 1), (0, 0), (0, 0), (0, 0)]
        );
        eventually(10, "the finished job to be gone", || async {
            mail_jobs(&app, &tenant.id).await.is_empty().then_some(())
        })
        .await;
        assert_eq!(sink.mails().len(), 1, "sent once");
        assert_eq!(sink.refused(), 0);
        app.stop().await;
    }
);

database_test!(
    a_refusing_relay_is_retried_and_the_mail_ends_failed_in_the_outbox,
    |backend| async move {
        let sink = SmtpSink::start(true).await;
        let app = mail_host(backend, Some(sink.url())).await;
        let tenant = tenant(&app).await;
        let owner = &tenant.owner;
        let sent = send(
            &app,
            &owner.token,
            json!({ "to": ["dave@outside.example"], "subject": "Ping", "body": "Pong?" }),
        )
        .await;
        let own_id = text(&sent["id"]);
        let attempted = |attempts: u64| {
            let (app, token, own_id) = (&app, &owner.token, &own_id);
            async move {
                eventually(30, &format!("attempt {attempts}"), || async {
                    let message = show(app, token, own_id).await;
                    (message["delivery"]["attempts"] == attempts).then_some(message)
                })
                .await
            }
        };

        let first = attempted(1).await;
        let delivery = &first["delivery"];
        assert_eq!(first["folder"], "outbox");
        assert_eq!(delivery["status"], "queued");
        assert_eq!(delivery["recipients"][0]["status"], "queued");
        assert!(
            delivery["last_error"]
                .as_str()
                .is_some_and(|error| error.contains("permanent error (550)")),
            "{delivery}"
        );
        // The next attempt waits a minute.
        let last =
            chrono::DateTime::parse_from_rfc3339(delivery["last_attempt_at"].as_str().unwrap())
                .unwrap();
        let next =
            chrono::DateTime::parse_from_rfc3339(delivery["next_attempt_at"].as_str().unwrap())
                .unwrap();
        let wait = (next - last).num_seconds();
        assert!((59..=61).contains(&wait), "{wait} s");
        let jobs = eventually(10, "one pending retry", || async {
            let jobs = mail_jobs(&app, &tenant.id).await;
            (jobs.len() == 1).then_some(jobs)
        })
        .await;
        assert_eq!(jobs[0], delivery["next_attempt_at"].as_str().unwrap());
        assert_eq!(sink.refused(), 1);
        assert!(sink.mails().is_empty());

        // Attempts 2 to 4 (made due now instead of after 1, 5 and 30 minutes).
        for attempts in 2..=4 {
            eventually(10, "the retry to be scheduled", || async {
                (!mail_jobs(&app, &tenant.id).await.is_empty()).then_some(())
            })
            .await;
            make_jobs_due(&app, &tenant.id).await;
            attempted(attempts).await;
        }
        let failed = show(&app, &owner.token, &own_id).await;
        assert_eq!(
            predictable(&failed),
            json!({
                "folder": "outbox", "read": true, "from": owner.email, "sender_id": owner.id,
                "to": ["dave@outside.example"], "cc": [], "subject": "Ping",
                "delivery": {
                    "status": "failed",
                    "recipients": [
                        { "address": "dave@outside.example", "internal": false, "status": "failed" },
                    ],
                    "attempts": 4, "last_attempt_at": "<time>", "next_attempt_at": null,
                    "last_error": failed["delivery"]["last_error"], "sent_at": null,
                },
                "body": "Pong?",
            })
        );
        assert!(
            failed["delivery"]["last_error"]
                .as_str()
                .unwrap()
                .contains("permanent error (550)")
        );
        eventually(10, "no job left", || async {
            mail_jobs(&app, &tenant.id).await.is_empty().then_some(())
        })
        .await;
        assert_eq!(sink.refused(), 4);
        assert_eq!(
            counts(&app, &owner.token).await,
            [(0, 0), (0, 0), (1, 0), (0, 0)]
        );
        app.stop().await;
    }
);

database_test!(
    an_engine_the_operator_does_not_name_cannot_use_the_relay,
    |backend| async move {
        // The relay is configured, but `TESSERA_SMTP_ENGINES` names another engine: the mail
        // engine asks for `send-mail` yet is not granted it, so `mail-transport.available` is
        // false for it and the external copy stays queued, no attempt made.
        let sink = SmtpSink::start(false).await;
        let app =
            mail_host_with_senders(backend, Some(sink.url()), Some(vec!["notes".to_owned()])).await;
        let tenant = tenant(&app).await;
        let owner = &tenant.owner;
        let details = json_with_status(
            app.get_as("/core/api/v1/engines/mail", &owner.token).await,
            200,
        )
        .await;
        assert_eq!(details["data"]["may_send_mail"], false, "{details}");
        let sent = send(
            &app,
            &owner.token,
            json!({ "to": ["erin@outside.example"], "subject": "Hi", "body": "Hello." }),
        )
        .await;
        let own_id = text(&sent["id"]);
        let message = show(&app, &owner.token, &own_id).await;
        assert_eq!(message["folder"], "outbox");
        assert_eq!(message["delivery"]["status"], "queued");
        assert_eq!(message["delivery"]["attempts"], 0);
        assert_eq!(
            message["delivery"]["next_attempt_at"],
            Value::Null,
            "{message}"
        );
        assert!(sink.mails().is_empty());
        assert_eq!(sink.refused(), 0);
        app.stop().await;
    }
);

database_test!(
    folders_page_newest_first_with_the_unread_filter,
    |backend| async move {
        let app = mail_host(backend, None).await;
        let tenant = tenant(&app).await;
        let (owner, editor) = (&tenant.owner, &tenant.editor);
        let mut sent = Vec::new();
        for n in 1..=5 {
            let message = send(
                &app,
                &owner.token,
                json!({ "to": [editor.email], "subject": format!("m{n}") }),
            )
            .await;
            sent.push(text(&message["message_id"]));
        }
        let subjects = |listed: &Value| -> Vec<String> {
            listed["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|message| text(&message["subject"]))
                .collect()
        };
        let first = folder(&app, &editor.token, "inbox", "?limit=2").await;
        assert_eq!(subjects(&first), ["m5", "m4"]);
        assert_eq!(first["meta"]["has_more"], true);
        let cursor = text(&first["meta"]["next_cursor"]);
        let second = folder(
            &app,
            &editor.token,
            "inbox",
            &format!("?limit=2&cursor={cursor}"),
        )
        .await;
        assert_eq!(subjects(&second), ["m3", "m2"]);
        assert_eq!(second["meta"]["has_more"], true);
        let cursor = text(&second["meta"]["next_cursor"]);
        let third = folder(
            &app,
            &editor.token,
            "inbox",
            &format!("?limit=2&cursor={cursor}"),
        )
        .await;
        assert_eq!(subjects(&third), ["m1"]);
        assert_eq!(third["meta"]["has_more"], false);
        let cursor = text(&third["meta"]["next_cursor"]);
        let past = folder(&app, &editor.token, "inbox", &format!("?cursor={cursor}")).await;
        assert_eq!(past["data"], json!([]));
        assert_eq!(
            past["meta"],
            json!({ "next_cursor": cursor, "has_more": false })
        );
        let mut all: Vec<String> = [&first, &second, &third]
            .iter()
            .flat_map(|page| ids(page))
            .collect();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), 5, "no overlap");

        // Mark m4 and m2 read.
        for listed in [&first["data"][1], &second["data"][1]] {
            patch(
                &app,
                &editor.token,
                &text(&listed["id"]),
                json!({ "read": true }),
            )
            .await;
        }
        assert_eq!(
            subjects(&folder(&app, &editor.token, "inbox", "?unread=true").await),
            ["m5", "m3", "m1"]
        );
        assert_eq!(
            subjects(&folder(&app, &editor.token, "inbox", "?unread=false").await),
            ["m4", "m2"]
        );
        let unread = folder(&app, &editor.token, "inbox", "?unread=true&limit=2").await;
        assert_eq!(subjects(&unread), ["m5", "m3"]);
        assert_eq!(unread["meta"]["has_more"], true);
        let cursor = text(&unread["meta"]["next_cursor"]);
        let rest = folder(
            &app,
            &editor.token,
            "inbox",
            &format!("?unread=true&limit=2&cursor={cursor}"),
        )
        .await;
        assert_eq!(subjects(&rest), ["m1"]);
        assert_eq!(rest["meta"]["has_more"], false);
        assert_eq!(
            counts(&app, &editor.token).await,
            [(5, 3), (0, 0), (0, 0), (0, 0)]
        );
        // The sender's copies page the same way.
        let own = folder(&app, &owner.token, "sent", "?limit=100").await;
        let own_messages: Vec<String> = own["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|message| text(&message["message_id"]))
            .collect();
        sent.reverse();
        assert_eq!(own_messages, sent);

        let inbox = format!("{MAIL}/folders/inbox/messages");
        invalid(
            app.get_as(&format!("{inbox}?unread=maybe"), &editor.token)
                .await,
            json!({ "unread": ["boolean"] }),
        )
        .await;
        invalid(
            app.get_as(&format!("{inbox}?limit=0"), &editor.token).await,
            json!({ "limit": ["min:1"] }),
        )
        .await;
        invalid(
            app.get_as(&format!("{inbox}?cursor=not-a-cursor!"), &editor.token)
                .await,
            json!({ "cursor": ["invalid"] }),
        )
        .await;
        assert_eq!(
            json_with_status(
                app.get_as(&format!("{inbox}?colour=red"), &editor.token)
                    .await,
                400
            )
            .await,
            json!({ "message": "Unknown query parameter `colour`." })
        );
        assert_eq!(
            json_with_status(
                app.get_as(&format!("{MAIL}/folders/archive/messages"), &editor.token)
                    .await,
                404
            )
            .await,
            json!({ "message": "Folder not found." })
        );
        app.stop().await;
    }
);

database_test!(
    invalid_messages_are_422s_and_nothing_is_sent,
    |backend| async move {
        let app = mail_host(backend, None).await;
        let tenant = tenant(&app).await;
        let (owner, editor) = (&tenant.owner, &tenant.editor);
        let to = json!([editor.email]);
        let many = |count: usize, domain: &str| -> Vec<String> {
            (0..count).map(|n| format!("user{n}@{domain}")).collect()
        };
        for (body, errors) in [
            (json!({}), json!({ "to": ["required"] })),
            (json!({ "to": [] }), json!({ "to": ["min:1"] })),
            (json!({ "to": editor.email }), json!({ "to": ["array"] })),
            (
                json!({ "to": [editor.email, "not-an-address", 5, "a@b.c, d@e.f"] }),
                json!({ "to.1": ["email"], "to.2": ["string"], "to.3": ["email"] }),
            ),
            (
                json!({ "to": many(101, "outside.example") }),
                json!({ "to": ["max:100"] }),
            ),
            (
                json!({ "to": many(60, "a.example"), "cc": many(50, "b.example") }),
                json!({ "cc": ["max:40"] }),
            ),
            (
                json!({ "to": to, "cc": ["<x@y.example>"] }),
                json!({ "cc.0": ["email"] }),
            ),
            (
                json!({ "to": to, "cc": "x@y.example" }),
                json!({ "cc": ["array"] }),
            ),
            (
                json!({ "to": to, "subject": "one\r\nBcc: eve@evil.example" }),
                json!({ "subject": ["single_line"] }),
            ),
            (
                json!({ "to": to, "subject": "s".repeat(999) }),
                json!({ "subject": ["max:998"] }),
            ),
            (
                json!({ "to": to, "subject": 5 }),
                json!({ "subject": ["string"] }),
            ),
            (
                json!({ "to": to, "body": 5 }),
                json!({ "body": ["string"] }),
            ),
            (
                json!({ "to": to, "body": "b".repeat(1_000_001) }),
                json!({ "body": ["max:1000000"] }),
            ),
        ] {
            invalid(
                app.post_as(&format!("{MAIL}/messages"), &owner.token, &body)
                    .await,
                errors,
            )
            .await;
        }
        for raw in ["not json", "[]"] {
            let response = app
                .client
                .post(app.url(&format!("{MAIL}/messages")))
                .bearer_auth(&owner.token)
                .header("content-type", "application/json")
                .body(raw)
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 400, "{raw}");
        }
        // Limits that are just right pass.
        let fits = send(
            &app,
            &owner.token,
            json!({
                "to": many(60, "a.example"), "cc": many(40, "b.example"),
                "subject": "s".repeat(998), "body": "b".repeat(1_000_000),
            }),
        )
        .await;
        assert_eq!(
            fits["delivery"]["recipients"].as_array().unwrap().len(),
            100
        );
        assert_eq!(fits["body"].as_str().unwrap().len(), 1_000_000);
        no_content(
            app.delete_as(&message_path(&text(&fits["id"])), &owner.token)
                .await,
        )
        .await;
        no_content(
            app.delete_as(&message_path(&text(&fits["id"])), &owner.token)
                .await,
        )
        .await;

        // Nothing of the refused ones was stored or announced.
        assert_eq!(counts(&app, &owner.token).await, vec![(0, 0); 4]);
        assert_eq!(counts(&app, &editor.token).await, vec![(0, 0); 4]);
        let events = mail_events(&app, &tenant.id).await;
        assert_eq!(events.len(), 1, "only the message that fit: {events:?}");
        assert_eq!(
            stored_keys(&app, &tenant.id, "messages/%").await,
            Vec::<String>::new()
        );
        assert_eq!(
            stored_keys(&app, &tenant.id, "bodies/%").await,
            Vec::<String>::new()
        );
        app.stop().await;
    }
);

database_test!(roles_and_mailbox_privacy, |backend| async move {
    let app = mail_host(backend, None).await;
    let tenant = tenant(&app).await;
    let (owner, viewer, other) = (&tenant.owner, &tenant.viewer, &tenant.other_editor);
    let forbidden = json!({ "message": "This action is unauthorized." });

    // Viewers read their mail but send and change nothing.
    let sent = send(
        &app,
        &owner.token,
        json!({ "to": [viewer.email], "subject": "FYI" }),
    )
    .await;
    let response = app
        .post_as(
            &format!("{MAIL}/messages"),
            &viewer.token,
            &json!({ "to": [owner.email] }),
        )
        .await;
    assert_eq!(json_with_status(response, 403).await, forbidden);
    let copy_id = ids(&folder(&app, &viewer.token, "inbox", "").await)[0].clone();
    assert_eq!(show(&app, &viewer.token, &copy_id).await["subject"], "FYI");
    let path = message_path(&copy_id);
    let response = app
        .patch_as(&path, &viewer.token, &json!({ "read": true }))
        .await;
    assert_eq!(json_with_status(response, 403).await, forbidden);
    assert_eq!(
        json_with_status(app.delete_as(&path, &viewer.token).await, 403).await,
        forbidden
    );
    assert_eq!(show(&app, &viewer.token, &copy_id).await["read"], false);
    assert_eq!(
        counts(&app, &viewer.token).await,
        [(1, 1), (0, 0), (0, 0), (0, 0)]
    );
    assert_eq!(
        counts(&app, &owner.token).await,
        [(0, 0), (1, 0), (0, 0), (0, 0)]
    );

    // Nobody sees, changes or deletes someone else's copy.
    let not_found = json!({ "message": "Message not found." });
    for id in [copy_id.clone(), text(&sent["id"])] {
        let path = message_path(&id);
        assert_eq!(
            json_with_status(app.get_as(&path, &other.token).await, 404).await,
            not_found
        );
        let response = app
            .patch_as(&path, &other.token, &json!({ "read": true }))
            .await;
        assert_eq!(json_with_status(response, 404).await, not_found);
        assert_eq!(
            json_with_status(app.delete_as(&path, &other.token).await, 404).await,
            not_found
        );
    }
    json_with_status(app.get_as(&message_path(&copy_id), &owner.token).await, 404).await;
    assert_eq!(counts(&app, &other.token).await, vec![(0, 0); 4]);

    // A caller without a mailbox (not provisioned on the engine) has nothing.
    let stranger = app
        .token(&tenant.id, &uuid::Uuid::new_v4().to_string(), "editor")
        .await;
    let no_mailbox = json!({ "message": "Mailbox not found." });
    assert_eq!(
        json_with_status(app.get_as(&format!("{MAIL}/folders"), &stranger).await, 404).await,
        no_mailbox
    );
    assert_eq!(
        json_with_status(
            app.get_as(&format!("{MAIL}/folders/inbox/messages"), &stranger)
                .await,
            404
        )
        .await,
        no_mailbox
    );
    let response = app
        .post_as(
            &format!("{MAIL}/messages"),
            &stranger,
            &json!({ "to": [owner.email] }),
        )
        .await;
    assert_eq!(json_with_status(response, 404).await, no_mailbox);
    assert_eq!(app.get(&format!("{MAIL}/folders")).await.status(), 401);
    app.stop().await;
});

database_test!(tenants_never_see_each_others_mail, |backend| async move {
    let app = mail_host(backend, None).await;
    let acme = tenant(&app).await;
    let globex = tenant(&app).await;
    // Another tenant's user is an outside address: nothing reaches their inbox.
    let sent = send(
        &app,
        &acme.owner.token,
        json!({ "to": [globex.editor.email], "subject": "Across" }),
    )
    .await;
    assert_eq!(sent["folder"], "outbox");
    assert_eq!(
        sent["delivery"]["recipients"],
        json!([{ "address": globex.editor.email, "internal": false, "status": "queued" }])
    );
    assert_eq!(counts(&app, &globex.editor.token).await, vec![(0, 0); 4]);
    let copy = send(
        &app,
        &acme.owner.token,
        json!({ "to": [acme.editor.email] }),
    )
    .await;
    let acme_copy = ids(&folder(&app, &acme.editor.token, "inbox", "").await)[0].clone();
    for id in [text(&sent["id"]), text(&copy["id"]), acme_copy] {
        let path = message_path(&id);
        for token in [&globex.owner.token, &globex.editor.token] {
            json_with_status(app.get_as(&path, token).await, 404).await;
            let response = app.patch_as(&path, token, &json!({ "read": true })).await;
            json_with_status(response, 404).await;
            json_with_status(app.delete_as(&path, token).await, 404).await;
        }
    }
    assert_eq!(counts(&app, &globex.owner.token).await, vec![(0, 0); 4]);
    assert_eq!(mail_events(&app, &globex.id).await, Vec::new());
    assert_eq!(
        counts(&app, &acme.owner.token).await,
        [(0, 0), (1, 0), (1, 0), (0, 0)]
    );
    app.stop().await;
});

database_test!(
    deprovisioning_removes_a_users_mailbox_and_a_tenants_everything,
    |backend| async move {
        let app = mail_host(backend, None).await;
        let tenant = tenant(&app).await;
        let (owner, leaving, other) = (&tenant.owner, &tenant.editor, &tenant.other_editor);
        let first = send(
            &app,
            &owner.token,
            json!({ "to": [leaving.email, other.email], "subject": "One", "body": "first" }),
        )
        .await;
        let from_leaving = send(
            &app,
            &leaving.token,
            json!({ "to": [owner.email], "subject": "Two", "body": "second" }),
        )
        .await;
        let leaving_copy = ids(&folder(&app, &leaving.token, "inbox", "").await)[0].clone();
        let owner_copy = ids(&folder(&app, &owner.token, "inbox", "").await)[0].clone();
        let other_copy = ids(&folder(&app, &other.token, "inbox", "").await)[0].clone();

        let deprovision = json!({ "tenant_id": tenant.id, "user_id": leaving.id });
        for _ in 0..2 {
            // Idempotent: the second run finds nothing left to remove.
            json_with_status(
                app.post_signed(&format!("{INTERNAL}/deprovision/user"), &deprovision)
                    .await,
                200,
            )
            .await;
        }
        let no_mailbox = json!({ "message": "Mailbox not found." });
        assert_eq!(
            json_with_status(
                app.get_as(&format!("{MAIL}/folders"), &leaving.token).await,
                404
            )
            .await,
            no_mailbox
        );
        for id in [&leaving_copy, &text(&from_leaving["id"])] {
            json_with_status(app.get_as(&message_path(id), &leaving.token).await, 404).await;
        }
        assert_eq!(
            stored_keys(&app, &tenant.id, &format!("%{}%", leaving.id)).await,
            Vec::<String>::new()
        );
        assert_eq!(
            stored_keys(&app, &tenant.id, &format!("%{}%", leaving.email)).await,
            Vec::<String>::new()
        );
        // The others keep their copies, bodies included.
        assert_eq!(
            show(&app, &owner.token, &owner_copy).await["body"],
            "second"
        );
        assert_eq!(show(&app, &other.token, &other_copy).await["body"], "first");
        assert_eq!(
            show(&app, &owner.token, &text(&first["id"])).await["body"],
            "first"
        );
        // The address is an outside one now.
        let after = send(&app, &owner.token, json!({ "to": [leaving.email] })).await;
        assert_eq!(
            after["delivery"]["recipients"],
            json!([{ "address": leaving.email, "internal": false, "status": "queued" }])
        );

        json_with_status(
            app.post_signed(
                &format!("{INTERNAL}/deprovision/tenant"),
                &json!({ "tenant_id": tenant.id }),
            )
            .await,
            200,
        )
        .await;
        for user in [owner, other] {
            assert_eq!(
                json_with_status(
                    app.get_as(&format!("{MAIL}/folders"), &user.token).await,
                    404
                )
                .await,
                no_mailbox
            );
        }
        json_with_status(
            app.get_as(&message_path(&owner_copy), &owner.token).await,
            404,
        )
        .await;
        assert_eq!(
            stored_keys(&app, &tenant.id, "%").await,
            Vec::<String>::new()
        );
        app.stop().await;
    }
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_mail_route_is_documented_with_bearer_security() {
    let app = crate::helpers::spawn_app_with_engines(Backend::Sqlite, &["mail"], |_| {}).await;
    let document = app.openapi().await;
    assert_engine_documented(
        &document,
        "mail",
        &[
            ("get", "/mail/api/v1/folders"),
            ("get", "/mail/api/v1/folders/{folder}/messages"),
            ("post", "/mail/api/v1/messages"),
            ("get", "/mail/api/v1/messages/{id}"),
            ("patch", "/mail/api/v1/messages/{id}"),
            ("delete", "/mail/api/v1/messages/{id}"),
        ],
        &[
            "mail.Folder",
            "mail.Message",
            "mail.MessageSummary",
            "mail.Delivery",
            "mail.MessageSend",
            "mail.MessageUpdate",
        ],
    );
    app.stop().await;
}

// ---------------------------------------------------------------------------------------------
// Folder counters
// ---------------------------------------------------------------------------------------------

/// [`mail_host`] whose engine calls scan at most `page` entries at once and `budget` in all.
async fn mail_host_scanning(backend: Backend, page: u32, budget: u64) -> TestApp {
    spawn_app_with_engines(backend, &["mail"], move |config| {
        limit_engine_scans(config, page, budget);
    })
    .await
}

/// The ids of every copy in `folder` of the caller's mailbox, newest first, paging on.
async fn all_ids(app: &TestApp, token: &str, name: &str) -> Vec<String> {
    let mut ids = Vec::new();
    let mut query = "?limit=100".to_owned();
    loop {
        let page = folder(app, token, name, &query).await;
        ids.extend(
            page["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|message| text(&message["id"])),
        );
        match page["meta"]["next_cursor"].as_str() {
            Some(cursor) if page["meta"]["has_more"] == true => {
                query = format!("?limit=100&cursor={cursor}");
            }
            _ => return ids,
        }
    }
}

database_test!(
    folder_counts_hold_for_mailboxes_larger_than_a_calls_scan_budget,
    |backend| async move {
        // One engine call may scan 60 entries; the editor's inbox holds 100.
        let app = mail_host_scanning(backend, 20, 60).await;
        let tenant = tenant(&app).await;
        let (owner, editor) = (&tenant.owner, &tenant.editor);
        for n in 0..100 {
            send(
                &app,
                &owner.token,
                json!({ "to": [editor.email], "subject": format!("m{n}") }),
            )
            .await;
        }
        assert_eq!(
            counts(&app, &editor.token).await,
            [(100, 100), (0, 0), (0, 0), (0, 0)]
        );
        assert_eq!(counts(&app, &owner.token).await[1].0, 100);

        // Ten read, five to the trash, two of those deleted for good.
        let inbox = all_ids(&app, &editor.token, "inbox").await;
        assert_eq!(inbox.len(), 100);
        for id in &inbox[..10] {
            patch(&app, &editor.token, id, json!({ "read": true })).await;
        }
        for id in &inbox[90..95] {
            assert_eq!(
                app.delete_as(&message_path(id), &editor.token)
                    .await
                    .status(),
                204
            );
        }
        for id in &inbox[90..92] {
            assert_eq!(
                app.delete_as(&message_path(id), &editor.token)
                    .await
                    .status(),
                204
            );
        }
        assert_eq!(
            counts(&app, &editor.token).await,
            [(95, 85), (0, 0), (0, 0), (3, 3)]
        );
        // Back from the trash, read.
        patch(
            &app,
            &editor.token,
            &inbox[92],
            json!({ "folder": "inbox", "read": true }),
        )
        .await;
        assert_eq!(
            counts(&app, &editor.token).await,
            [(96, 85), (0, 0), (0, 0), (2, 2)]
        );
    }
);

database_test!(
    racing_changes_of_the_same_copies_are_each_counted_once,
    |backend| async move {
        let app = mail_host(backend, None).await;
        let tenant = tenant(&app).await;
        let (owner, editor) = (&tenant.owner, &tenant.editor);
        for n in 0..4 {
            send(
                &app,
                &owner.token,
                json!({ "to": [editor.email], "subject": format!("m{n}") }),
            )
            .await;
        }
        let inbox = all_ids(&app, &editor.token, "inbox").await;
        // Per copy, at once: marks read and unread, moves to the trash and back, and deletes
        // (a delete of a copy in the trash removes it).
        let mut requests = Vec::new();
        for id in &inbox {
            for round in 0..6 {
                let (app, token, id) = (&app, editor.token.clone(), id.clone());
                requests.push(async move {
                    let path = message_path(&id);
                    let response = match round {
                        0 | 3 => {
                            app.patch_as(&path, &token, &json!({ "read": round == 0 }))
                                .await
                        }
                        1 => {
                            app.patch_as(&path, &token, &json!({ "folder": "trash" }))
                                .await
                        }
                        2 => {
                            app.patch_as(&path, &token, &json!({ "folder": "inbox" }))
                                .await
                        }
                        _ => app.delete_as(&path, &token).await,
                    };
                    let status = response.status().as_u16();
                    assert!(
                        [200, 204, 404, 409].contains(&status),
                        "unexpected {status} for round {round}"
                    );
                });
            }
        }
        futures_util::future::join_all(requests).await;

        // The counters say what the copies are.
        let mut expected = [(0u64, 0u64); 4];
        for (index, name) in ["inbox", "sent", "outbox", "trash"].into_iter().enumerate() {
            for id in all_ids(&app, &editor.token, name).await {
                let message = show(&app, &editor.token, &id).await;
                expected[index].0 += 1;
                expected[index].1 += u64::from(message["read"] == false);
            }
        }
        assert_eq!(counts(&app, &editor.token).await, expected);
    }
);

database_test!(
    a_mailbox_kept_from_before_its_counters_is_counted_on_first_use,
    |backend| async move {
        let app = mail_host(backend, None).await;
        let tenant = tenant(&app).await;
        let (owner, editor) = (&tenant.owner, &tenant.editor);
        for n in 0..3 {
            send(
                &app,
                &owner.token,
                json!({ "to": [editor.email], "subject": format!("m{n}") }),
            )
            .await;
        }
        // As an earlier version left it: no counters.
        let database = &app.state().database;
        tessera_host::on_pool!(database, pool => sqlx::query(
            "DELETE FROM engine_entries WHERE key LIKE 'tallies/%'
             AND scope IN (SELECT scope FROM engine_scopes WHERE engine_code = 'mail')",
        )
        .execute(pool)
        .await
        .map(drop)
        .unwrap());
        let inbox = all_ids(&app, &editor.token, "inbox").await;
        // A change made before the first count is not counted twice.
        patch(&app, &editor.token, &inbox[0], json!({ "read": true })).await;
        assert_eq!(
            counts(&app, &editor.token).await,
            [(3, 2), (0, 0), (0, 0), (0, 0)]
        );
        assert!(
            !stored_keys(&app, &tenant.id, &format!("tallies/{}/counted", editor.id))
                .await
                .is_empty()
        );
        patch(&app, &editor.token, &inbox[1], json!({ "read": true })).await;
        assert_eq!(
            counts(&app, &editor.token).await,
            [(3, 1), (0, 0), (0, 0), (0, 0)]
        );
    }
);
