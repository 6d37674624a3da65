//! The activity engine (the real `activity.wasm`, beside the real `chat.wasm`) through the real
//! host: chat changes and core entity changes arrive on the bus and become feed items (newest
//! first, identifiers only), filters by actor, entity and type (exact and `prefix.*`), cursor
//! paging, the per-user "since last seen" count and mark, one item per event however often the
//! bus delivers it, tenant isolation, roles, provisioning and the OpenAPI entries.

use serde_json::{Value, json};
use tessera_host::runtime::bus::BusEvent;
use tessera_host::storage::engine_kv::{self, KvScope};

use crate::chat::general_conversation;
use crate::database_test;
use crate::helpers::{
    AppOptions, Backend, TestApp, TestDatabase, eventually, json_with_status, spawn_app_with,
    without_rate_limits,
};

const FEED: &str = "/activity/api/v1/feed";
const UNSEEN: &str = "/activity/api/v1/feed/unseen";
const SEEN: &str = "/activity/api/v1/feed/seen";
/// How long a test waits for events to travel through the bus.
const PATIENCE_SECONDS: u64 = 30;

/// A host with the activity and chat engines, without rate limits.
async fn activity_host(backend: Backend) -> TestApp {
    let database = TestDatabase::new(backend).await;
    crate::components::install_engines(&database.data_dir.join("plugins"), &["activity", "chat"]);
    spawn_app_with(
        backend,
        AppOptions {
            database: Some(database),
            configure: Some(Box::new(without_rate_limits)),
            ..AppOptions::default()
        },
    )
    .await
}

/// A tenant provisioned on both engines, with an owner, an editor and a viewer.
struct Tenant {
    id: String,
    owner: String,
    owner_id: String,
    editor: String,
    editor_id: String,
    viewer: String,
    viewer_id: String,
}

fn uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

async fn lifecycle(app: &TestApp, engine: &str, action: &str, body: &Value) -> Value {
    let response = app
        .post_signed(&format!("/{engine}/api/internal/{engine}/{action}"), body)
        .await;
    json_with_status(response, 200).await
}

fn user_body(tenant_id: &str, user_id: &str) -> Value {
    json!({
        "tenant_id": tenant_id, "user_id": user_id, "email": format!("{user_id}@example.com"),
        "first_name": "Test", "last_name": "User", "type": "user",
    })
}

async fn provision_user(app: &TestApp, tenant_id: &str, user_id: &str) {
    for engine in ["activity", "chat"] {
        lifecycle(
            app,
            engine,
            "provision/user",
            &user_body(tenant_id, user_id),
        )
        .await;
    }
}

async fn tenant(app: &TestApp) -> Tenant {
    let id = uuid();
    for engine in ["activity", "chat"] {
        let body = json!({ "tenant_id": id, "tenant_short_id": "acme", "name": "Acme" });
        lifecycle(app, engine, "provision/tenant", &body).await;
    }
    let (owner_id, editor_id, viewer_id) = (uuid(), uuid(), uuid());
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
        viewer_id,
    }
}

/// A token of a guest of the tenant.
async fn guest_token(app: &TestApp, tenant_id: &str) -> String {
    app.token_of(tenant_id, &uuid(), "viewer", "guest").await
}

/// Posts a message; returns its id.
async fn post_message(app: &TestApp, token: &str, conversation_id: &str, text: &str) -> String {
    let response = app
        .post_as(
            &format!("/chat/api/v1/conversations/{conversation_id}/messages"),
            token,
            &json!({ "body": text }),
        )
        .await;
    json_with_status(response, 201).await["data"]["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// `GET /activity/api/v1/feed<query>` → the whole body.
async fn feed_page(app: &TestApp, token: &str, query: &str) -> Value {
    json_with_status(app.get_as(&format!("{FEED}{query}"), token).await, 200).await
}

async fn feed(app: &TestApp, token: &str, query: &str) -> Vec<Value> {
    feed_page(app, token, query).await["data"]
        .as_array()
        .unwrap()
        .clone()
}

/// Polls the feed until it holds at least `count` items; returns them.
async fn wait_for_feed(app: &TestApp, token: &str, query: &str, count: usize) -> Vec<Value> {
    eventually(
        PATIENCE_SECONDS,
        &format!("{count} feed items for {query:?}"),
        || async {
            let items = feed(app, token, query).await;
            (items.len() >= count).then_some(items)
        },
    )
    .await
}

/// Waits until every bus delivery has run successfully (rows are deleted on success).
async fn deliveries_drained(app: &TestApp) {
    eventually(PATIENCE_SECONDS, "every event delivered", || async {
        (app.scalar("SELECT COUNT(*) FROM engine_work WHERE kind = 'event'")
            .await
            == 0)
            .then_some(())
    })
    .await;
}

/// Publishes `event` on the host's bus as the host would (no publishing engine).
async fn publish(app: &TestApp, event: &BusEvent) {
    app.state()
        .engines
        .runtime()
        .services()
        .bus
        .publish(event, None)
        .await
        .expect("publishing on the bus");
}

fn bus_event(
    tenant_id: &str,
    event_type: &str,
    actor_id: Option<&str>,
    payload: Value,
) -> BusEvent {
    BusEvent {
        id: uuid(),
        event_type: event_type.into(),
        tenant_id: tenant_id.into(),
        occurred_at: "2026-11-21T17:19:00.000000Z".into(),
        actor_id: actor_id.map(str::to_owned),
        correlation_id: uuid(),
        payload,
    }
}

async fn unseen(app: &TestApp, token: &str) -> Value {
    json_with_status(app.get_as(UNSEEN, token).await, 200).await["data"].clone()
}

/// `POST /activity/api/v1/feed/seen` without a body.
async fn mark_seen_now(app: &TestApp, token: &str) -> reqwest::Response {
    app.client
        .post(app.url(SEEN))
        .bearer_auth(token)
        .send()
        .await
        .expect("POST")
}

fn ids(items: &[Value]) -> Vec<&str> {
    items
        .iter()
        .map(|item| item["id"].as_str().unwrap())
        .collect()
}

fn types(items: &[Value]) -> Vec<&str> {
    items
        .iter()
        .map(|item| item["type"].as_str().unwrap())
        .collect()
}

async fn expect_invalid(app: &TestApp, token: &str, query: &str, field: &str) {
    let body = json_with_status(app.get_as(&format!("{FEED}{query}"), token).await, 422).await;
    assert!(body["errors"][field].is_array(), "{query}: {body}");
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

database_test!(
    chat_changes_become_identifier_only_items_newest_first,
    |backend| async move {
        let app = activity_host(backend).await;
        let tenant = tenant(&app).await;
        let general = general_conversation(&app, &tenant.owner).await;
        let secret = format!("TOP-SECRET-{}", uuid());
        let first = post_message(&app, &tenant.owner, &general, &secret).await;
        let items = wait_for_feed(&app, &tenant.viewer, "", 1).await;
        let second = post_message(&app, &tenant.editor, &general, &secret).await;
        let items_after = wait_for_feed(&app, &tenant.viewer, "", 2).await;
        assert_eq!(items_after[1], items[0], "the older item comes second");

        let item = &items_after[0];
        let mut keys: Vec<&str> = item
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "actor_id",
                "data",
                "entity_id",
                "event_id",
                "id",
                "occurred_at",
                "type"
            ]
        );
        assert_eq!(item["type"], "message.created");
        assert_eq!(item["actor_id"], tenant.editor_id.as_str());
        assert_eq!(item["entity_id"], second.as_str());
        assert_eq!(
            item["data"],
            json!({ "conversation_id": general, "message_id": second, "user_id": tenant.editor_id })
        );
        assert!(uuid::Uuid::parse_str(item["event_id"].as_str().unwrap()).is_ok());
        assert_eq!(
            uuid::Uuid::parse_str(item["id"].as_str().unwrap())
                .unwrap()
                .get_version_num(),
            7
        );
        assert!(
            chrono::DateTime::parse_from_rfc3339(item["occurred_at"].as_str().unwrap()).is_ok()
        );
        assert_eq!(items_after[1]["entity_id"], first.as_str());
        assert_eq!(items_after[1]["actor_id"], tenant.owner_id.as_str());

        // A conversation and a member added to it: `member.*` is about the conversation, and
        // its actor is who added the member (the host stamps the requesting user on events
        // an engine publishes while serving a request), not the member (`user_id`).
        let created = json_with_status(
            app.post_as(
                "/chat/api/v1/conversations",
                &tenant.owner,
                &json!({ "title": secret }),
            )
            .await,
            201,
        )
        .await;
        let conversation_id = created["data"]["id"].as_str().unwrap().to_owned();
        wait_for_feed(&app, &tenant.viewer, "", 3).await;
        json_with_status(
            app.post_as(
                &format!("/chat/api/v1/conversations/{conversation_id}/members"),
                &tenant.owner,
                &json!({ "user_id": tenant.viewer_id }),
            )
            .await,
            201,
        )
        .await;
        let items = wait_for_feed(&app, &tenant.viewer, "", 4).await;
        assert_eq!(
            types(&items),
            [
                "member.added",
                "conversation.created",
                "message.created",
                "message.created"
            ]
        );
        assert_eq!(
            (&items[0]["actor_id"], &items[0]["entity_id"]),
            (&json!(tenant.owner_id), &json!(conversation_id))
        );
        assert_eq!(
            items[0]["data"],
            json!({ "conversation_id": conversation_id, "user_id": tenant.viewer_id })
        );
        assert_eq!(
            (&items[1]["actor_id"], &items[1]["entity_id"]),
            (&json!(tenant.owner_id), &json!(conversation_id))
        );
        let raw = app.get_as(FEED, &tenant.owner).await.text().await.unwrap();
        assert!(!raw.contains(&secret), "no content in the feed: {raw}");
    }
);

database_test!(
    filters_combine_by_actor_entity_and_type,
    |backend| async move {
        let app = activity_host(backend).await;
        let tenant = tenant(&app).await;
        let general = general_conversation(&app, &tenant.owner).await;
        let by_owner = post_message(&app, &tenant.owner, &general, "one").await;
        wait_for_feed(&app, &tenant.owner, "", 1).await;
        let by_editor = post_message(&app, &tenant.editor, &general, "two").await;
        wait_for_feed(&app, &tenant.owner, "", 2).await;
        json_with_status(
            app.patch_as(
                &format!("/chat/api/v1/conversations/{general}/messages/{by_editor}"),
                &tenant.editor,
                &json!({ "body": "two, edited" }),
            )
            .await,
            200,
        )
        .await;
        wait_for_feed(&app, &tenant.owner, "", 3).await;
        json_with_status(
            app.patch_as(
                &format!("/chat/api/v1/conversations/{general}"),
                &tenant.owner,
                &json!({ "title": "Everyone" }),
            )
            .await,
            200,
        )
        .await;
        wait_for_feed(&app, &tenant.owner, "", 4).await;
        deliveries_drained(&app).await;
        let all = feed(&app, &tenant.owner, "").await;
        assert_eq!(
            types(&all),
            [
                "conversation.updated",
                "message.updated",
                "message.created",
                "message.created"
            ]
        );

        let owner = &tenant.owner_id;
        let editor = &tenant.editor_id;
        let cases: Vec<(String, Vec<&Value>)> = vec![
            (format!("?actor_id={owner}"), vec![&all[0], &all[3]]),
            (format!("?actor_id={editor}"), vec![&all[1], &all[2]]),
            (format!("?entity_id={by_editor}"), vec![&all[1], &all[2]]),
            (format!("?entity_id={by_owner}"), vec![&all[3]]),
            (format!("?entity_id={general}"), vec![&all[0]]),
            ("?type=message.*".into(), vec![&all[1], &all[2], &all[3]]),
            ("?type=message.created".into(), vec![&all[2], &all[3]]),
            ("?type=conversation.*".into(), vec![&all[0]]),
            ("?type=*".into(), all.iter().collect()),
            ("?type=note.*".into(), vec![]),
            (
                format!("?actor_id={editor}&type=message.updated"),
                vec![&all[1]],
            ),
            (format!("?actor_id={owner}&type=message.*"), vec![&all[3]]),
            (format!("?actor_id={editor}&entity_id={by_owner}"), vec![]),
            (
                format!("?actor_id={editor}&entity_id={by_editor}&type=message.created"),
                vec![&all[2]],
            ),
            (format!("?actor_id={}", uuid()), vec![]),
        ];
        for (query, expected) in cases {
            let page = feed_page(&app, &tenant.viewer, &query).await;
            let expected: Vec<Value> = expected.into_iter().cloned().collect();
            assert_eq!(page["data"], json!(expected), "{query}");
            assert_eq!(page["meta"]["has_more"], false, "{query}");
        }

        // Each item is stored once, under `items/`; its index entries are empty and name it by
        // the id ending their key.
        let scope = KvScope {
            engine_code: "activity",
            tenant_id: &tenant.id,
        };
        let database = &app.state().database;
        let stored = engine_kv::list(database, &scope, "", None, 1000, false)
            .await
            .unwrap();
        let index: Vec<&(String, Vec<u8>)> = stored
            .iter()
            .filter(|(key, _)| key.starts_with("by-"))
            .collect();
        // Each item here has an actor, an entity and a type: three index entries (its type's
        // prefix patterns have none: a pattern merges the indexes of its types).
        assert_eq!(index.len(), 3 * all.len(), "{index:?}");
        assert!(index.iter().all(|(_, value)| value.is_empty()), "{index:?}");
        // An index entry written before that, holding a copy of its item, is still read.
        let item_id = all[1]["id"].as_str().unwrap();
        let copy = serde_json::to_vec(&all[1]).unwrap();
        engine_kv::set(
            database,
            &scope,
            &format!("by-actor/{editor}/{item_id}"),
            &copy,
        )
        .await
        .unwrap();
        let page = feed_page(&app, &tenant.viewer, &format!("?actor_id={editor}")).await;
        assert_eq!(page["data"], json!([&all[1], &all[2]]));

        // Unknown parameters are 400; bad values 422, naming the parameter.
        let body = json_with_status(
            app.get_as(&format!("{FEED}?colour=red"), &tenant.owner)
                .await,
            400,
        )
        .await;
        assert_eq!(body["message"], "Unknown query parameter `colour`.");
        for (query, field) in [
            ("?type=Message.Created", "type"),
            ("?type=message.", "type"),
            ("?type=message.**", "type"),
            ("?actor_id=", "actor_id"),
            ("?entity_id=", "entity_id"),
            ("?limit=0", "limit"),
            ("?limit=ten", "limit"),
            ("?cursor=not-a-cursor!", "cursor"),
            // A well-formed cursor whose position is not an item id.
            ("?cursor=ImEvYiI", "cursor"),
        ] {
            expect_invalid(&app, &tenant.owner, query, field).await;
        }
        let long = "x".repeat(201);
        expect_invalid(
            &app,
            &tenant.owner,
            &format!("?entity_id={long}"),
            "entity_id",
        )
        .await;
        let body = json_with_status(
            app.get_as(&format!("{FEED}?type=Bad&limit=0"), &tenant.owner)
                .await,
            422,
        )
        .await;
        assert_eq!(
            body["errors"],
            json!({ "type": ["format"], "limit": ["min:1"] }),
            "every bad parameter is named at once"
        );

        // Guests see nothing of the tenant's feed.
        let guest = guest_token(&app, &tenant.id).await;
        for response in [
            app.get_as(FEED, &guest).await,
            app.get_as(UNSEEN, &guest).await,
            mark_seen_now(&app, &guest).await,
        ] {
            json_with_status(response, 403).await;
        }
    }
);

database_test!(
    cursor_pages_walk_the_feed_without_overlap,
    |backend| async move {
        let app = activity_host(backend).await;
        let tenant = tenant(&app).await;
        let general = general_conversation(&app, &tenant.owner).await;
        for (index, token) in [
            &tenant.owner,
            &tenant.editor,
            &tenant.owner,
            &tenant.editor,
            &tenant.owner,
        ]
        .into_iter()
        .enumerate()
        {
            post_message(&app, token, &general, &format!("message {index}")).await;
        }
        wait_for_feed(&app, &tenant.viewer, "", 5).await;
        deliveries_drained(&app).await;
        let all = feed(&app, &tenant.viewer, "").await;
        assert_eq!(all.len(), 5);

        // Two per page: 2 + 2 + 1, no overlap, in the order of the whole feed.
        let mut walked: Vec<Value> = Vec::new();
        let mut cursor: Option<String> = None;
        let mut pages = Vec::new();
        loop {
            let query = match &cursor {
                Some(cursor) => format!("?limit=2&cursor={cursor}"),
                None => "?limit=2".to_owned(),
            };
            let page = feed_page(&app, &tenant.viewer, &query).await;
            let data = page["data"].as_array().unwrap().clone();
            pages.push((data.len(), page["meta"]["has_more"].as_bool().unwrap()));
            walked.extend(data);
            cursor = page["meta"]["next_cursor"].as_str().map(str::to_owned);
            if page["meta"]["has_more"] == false {
                break;
            }
        }
        assert_eq!(pages, [(2, true), (2, true), (1, false)]);
        assert_eq!(walked, all);
        // Past the end: empty, and the cursor stays.
        let page = feed_page(
            &app,
            &tenant.viewer,
            &format!("?limit=2&cursor={}", cursor.clone().unwrap()),
        )
        .await;
        assert_eq!(page["data"], json!([]));
        assert_eq!(
            page["meta"],
            json!({ "next_cursor": cursor, "has_more": false })
        );

        // A filtered walk: the owner's three messages, two then one.
        let owner_query = format!("?actor_id={}&type=message.created&limit=2", tenant.owner_id);
        let first = feed_page(&app, &tenant.viewer, &owner_query).await;
        assert_eq!(first["meta"]["has_more"], true);
        let next = first["meta"]["next_cursor"].as_str().unwrap();
        let second = feed_page(
            &app,
            &tenant.viewer,
            &format!("{owner_query}&cursor={next}"),
        )
        .await;
        assert_eq!(second["meta"]["has_more"], false);
        let owner_items: Vec<Value> = all
            .iter()
            .filter(|item| item["actor_id"] == tenant.owner_id.as_str())
            .cloned()
            .collect();
        let mut filtered = first["data"].as_array().unwrap().clone();
        filtered.extend(second["data"].as_array().unwrap().clone());
        assert_eq!(ids(&filtered), ids(&owner_items));
        assert_eq!(filtered.len(), 3);
    }
);

database_test!(
    unseen_counts_what_others_did_since_the_mark,
    |backend| async move {
        let app = activity_host(backend).await;
        let tenant = tenant(&app).await;
        // Provisioning starts every user's mark at that moment.
        for token in [&tenant.owner, &tenant.editor, &tenant.viewer] {
            let data = unseen(&app, token).await;
            assert_eq!(
                (&data["count"], &data["capped"]),
                (&json!(0), &json!(false))
            );
            assert!(data["last_seen_at"].is_string(), "{data}");
        }
        let viewer_mark = unseen(&app, &tenant.viewer).await["last_seen_at"].clone();

        let general = general_conversation(&app, &tenant.owner).await;
        // One at a time, so the items arrive in this order.
        for (count, (token, text)) in [
            (&tenant.editor, "one"),
            (&tenant.editor, "two"),
            (&tenant.owner, "three"),
        ]
        .into_iter()
        .enumerate()
        {
            post_message(&app, token, &general, text).await;
            wait_for_feed(&app, &tenant.viewer, "", count + 1).await;
        }
        deliveries_drained(&app).await;
        let items = feed(&app, &tenant.viewer, "").await;

        // Their own actions are not news to anyone.
        let count = |data: Value| {
            (
                data["count"].as_u64().unwrap(),
                data["capped"].as_bool().unwrap(),
            )
        };
        assert_eq!(count(unseen(&app, &tenant.owner).await), (2, false));
        assert_eq!(count(unseen(&app, &tenant.editor).await), (1, false));
        let viewer = unseen(&app, &tenant.viewer).await;
        assert_eq!(
            viewer,
            json!({ "count": 3, "capped": false, "last_seen_at": viewer_mark })
        );

        // A viewer marks everything seen (their own read state): 200, the same shape.
        let viewer_marked =
            json_with_status(mark_seen_now(&app, &tenant.viewer).await, 200).await["data"].clone();
        assert_eq!(count(viewer_marked.clone()), (0, false));
        assert!(viewer_marked["last_seen_at"].as_str().unwrap() > viewer_mark.as_str().unwrap());
        assert_eq!(unseen(&app, &tenant.viewer).await, viewer_marked);

        // Up to a given item: the oldest; then the editor's second message and the owner's
        // follow it, of which the editor's counts for the owner.
        let oldest = items[2]["id"].as_str().unwrap();
        let marked = json_with_status(
            app.post_as(SEEN, &tenant.owner, &json!({ "item_id": oldest }))
                .await,
            200,
        )
        .await["data"]
            .clone();
        assert_eq!(count(marked.clone()), (1, false));
        // The mark never moves back, and `{}` means now.
        let newest = items[0]["id"].as_str().unwrap();
        let moved = json_with_status(
            app.post_as(SEEN, &tenant.owner, &json!({ "item_id": newest }))
                .await,
            200,
        )
        .await["data"]
            .clone();
        assert_eq!(count(moved.clone()), (0, false));
        let kept = json_with_status(
            app.post_as(SEEN, &tenant.owner, &json!({ "item_id": oldest }))
                .await,
            200,
        )
        .await["data"]
            .clone();
        assert_eq!(kept, moved);
        json_with_status(app.post_as(SEEN, &tenant.editor, &json!({})).await, 200).await;
        assert_eq!(count(unseen(&app, &tenant.editor).await), (0, false));

        // Bad input changes nothing.
        for (body, rule) in [
            (json!({ "item_id": uuid() }), "exists"),
            (json!({ "item_id": 7 }), "string"),
        ] {
            let response = app.post_as(SEEN, &tenant.viewer, &body).await;
            let body = json_with_status(response, 422).await;
            assert_eq!(body["errors"], json!({ "item_id": [rule] }));
        }
        json_with_status(app.post_as(SEEN, &tenant.viewer, &json!([1])).await, 400).await;
        json_with_status(
            app.get_as(&format!("{UNSEEN}?x=1"), &tenant.viewer).await,
            400,
        )
        .await;
        assert_eq!(unseen(&app, &tenant.viewer).await, viewer_marked);

        // Something new: counted for the others, not for its author.
        post_message(&app, &tenant.editor, &general, "four").await;
        wait_for_feed(&app, &tenant.viewer, "", 4).await;
        assert_eq!(count(unseen(&app, &tenant.viewer).await), (1, false));
        assert_eq!(count(unseen(&app, &tenant.owner).await), (1, false));
        assert_eq!(count(unseen(&app, &tenant.editor).await), (0, false));

        // A member the engine never provisioned has no mark: everything by others counts.
        let stranger = app.token(&tenant.id, &uuid(), "viewer").await;
        assert_eq!(
            unseen(&app, &stranger).await,
            json!({ "count": 4, "capped": false, "last_seen_at": null })
        );
    }
);

database_test!(
    an_event_delivered_twice_gives_one_item,
    |backend| async move {
        let app = activity_host(backend).await;
        let tenant = tenant(&app).await;
        // The same event (same id) published twice in a row, and another twice at once: the bus
        // delivers each copy, the feed keeps one item per event. The first has a UUID v7 id, as
        // the host's events have (its item is keyed by it); the second a UUID v4 (its item gets
        // an id of its own and a marker of the event).
        let mut note = bus_event(
            &tenant.id,
            "note.created",
            Some(&tenant.editor_id),
            json!({ "note_id": "n1", "folder_id": "f1", "title": "Secret plans", "tag_ids": ["t1", "t2"] }),
        );
        note.id = uuid::Uuid::now_v7().to_string();
        publish(&app, &note).await;
        publish(&app, &note).await;
        deliveries_drained(&app).await;
        let call = bus_event(
            &tenant.id,
            "call.ended",
            None,
            json!({ "call_id": "c1", "duration_seconds": 30 }),
        );
        tokio::join!(publish(&app, &call), publish(&app, &call));
        deliveries_drained(&app).await;
        let items = feed(&app, &tenant.owner, "").await;
        assert_eq!(types(&items), ["call.ended", "note.created"], "{items:#?}");
        assert_eq!(items[1]["event_id"], note.id.as_str());
        assert_eq!(items[1]["actor_id"], tenant.editor_id.as_str());
        assert_eq!(items[1]["entity_id"], "n1");
        assert_eq!(items[1]["occurred_at"], "2026-11-21T17:19:00.000000Z");
        assert_eq!(
            items[1]["data"],
            json!({ "note_id": "n1", "folder_id": "f1", "tag_ids": ["t1", "t2"] })
        );
        assert_eq!(
            (
                &items[0]["event_id"],
                &items[0]["actor_id"],
                &items[0]["entity_id"],
                &items[0]["data"]
            ),
            (
                &json!(call.id),
                &Value::Null,
                &json!("c1"),
                &json!({ "call_id": "c1" })
            )
        );

        assert_eq!(items[1]["id"], note.id.as_str());
        assert_ne!(items[0]["id"], call.id.as_str());
        let scope = KvScope {
            engine_code: "activity",
            tenant_id: &tenant.id,
        };
        let markers: Vec<String> = engine_kv::list(
            &app.state().database,
            &scope,
            "seen-events/",
            None,
            100,
            false,
        )
        .await
        .unwrap()
        .into_iter()
        .map(|(key, _)| key)
        .collect();
        assert_eq!(markers, [format!("seen-events/{}", call.id)]);

        // Later redeliveries of either change nothing.
        publish(&app, &note).await;
        publish(&app, &call).await;
        deliveries_drained(&app).await;
        assert_eq!(feed(&app, &tenant.owner, "").await, items);
        assert_eq!(
            feed(&app, &tenant.owner, "?entity_id=n1").await,
            vec![items[1].clone()]
        );

        // Ids with a slash stay apart from the ids they start with.
        let nested = bus_event(
            &tenant.id,
            "file.created",
            None,
            json!({ "file_id": "n1/x" }),
        );
        publish(&app, &nested).await;
        deliveries_drained(&app).await;
        assert_eq!(feed(&app, &tenant.owner, "?entity_id=n1").await.len(), 1);
        assert_eq!(
            feed(&app, &tenant.owner, "?entity_id=n1%2Fx").await.len(),
            1
        );
    }
);

database_test!(tenants_never_see_each_others_feed, |backend| async move {
    let app = activity_host(backend).await;
    let first = tenant(&app).await;
    let second = tenant(&app).await;
    let general = general_conversation(&app, &first.owner).await;
    let message = post_message(&app, &first.owner, &general, "hello").await;
    let items = wait_for_feed(&app, &first.owner, "", 1).await;
    deliveries_drained(&app).await;

    assert_eq!(feed(&app, &second.owner, "").await, Vec::<Value>::new());
    assert_eq!(
        feed(&app, &second.owner, &format!("?entity_id={message}")).await,
        Vec::<Value>::new()
    );
    assert_eq!(
        feed(
            &app,
            &second.owner,
            &format!("?actor_id={}", first.owner_id)
        )
        .await,
        Vec::<Value>::new()
    );
    assert_eq!(unseen(&app, &second.owner).await["count"], 0);
    // The other tenant's item is not an item here.
    let response = app
        .post_as(SEEN, &second.owner, &json!({ "item_id": items[0]["id"] }))
        .await;
    assert_eq!(
        json_with_status(response, 422).await["errors"],
        json!({ "item_id": ["exists"] })
    );
    // An event of the second tenant lands in the second tenant only.
    let event = bus_event(
        &second.id,
        "user.updated",
        None,
        json!({ "user_id": second.viewer_id }),
    );
    publish(&app, &event).await;
    deliveries_drained(&app).await;
    assert_eq!(
        types(&feed(&app, &second.viewer, "").await),
        ["user.updated"]
    );
    assert_eq!(feed(&app, &first.owner, "").await, items);
});

database_test!(
    provisioning_creates_and_deprovisioning_removes_the_feed,
    |backend| async move {
        let app = activity_host(backend).await;
        let status = |token: String| {
            let app = &app;
            async move {
                json_with_status(app.get_as("/activity/api/v1/status", &token).await, 200).await["data"].clone()
            }
        };
        // Before provisioning, events of the tenant are ignored.
        let early_tenant = uuid();
        let early = bus_event(
            &early_tenant,
            "entity.created",
            None,
            json!({ "entity_id": "e0" }),
        );
        publish(&app, &early).await;
        deliveries_drained(&app).await;
        let early_token = app.token(&early_tenant, &uuid(), "owner").await;
        assert_eq!(
            status(early_token.clone()).await,
            json!({ "engine": "activity", "tenant_provisioned": false, "user_provisioned": false })
        );
        assert_eq!(feed(&app, &early_token, "").await, Vec::<Value>::new());

        let tenant = tenant(&app).await;
        assert_eq!(
            status(tenant.editor.clone()).await,
            json!({ "engine": "activity", "tenant_provisioned": true, "user_provisioned": true })
        );
        let general = general_conversation(&app, &tenant.owner).await;
        post_message(&app, &tenant.owner, &general, "one").await;
        wait_for_feed(&app, &tenant.viewer, "", 1).await;

        // Provisioning again changes nothing: the mark and the items stay.
        let editor_mark = unseen(&app, &tenant.editor).await;
        assert_eq!(editor_mark["count"], 1);
        provision_user(&app, &tenant.id, &tenant.editor_id).await;
        let body = json!({ "tenant_id": tenant.id, "tenant_short_id": "acme", "name": "Acme" });
        lifecycle(&app, "activity", "provision/tenant", &body).await;
        assert_eq!(unseen(&app, &tenant.editor).await, editor_mark);
        assert_eq!(feed(&app, &tenant.viewer, "").await.len(), 1);

        // Deprovisioning a user removes their mark only (the feed is tenant data).
        json_with_status(mark_seen_now(&app, &tenant.viewer).await, 200).await;
        let removed = lifecycle(
            &app,
            "activity",
            "deprovision/user",
            &json!({ "tenant_id": tenant.id, "user_id": tenant.editor_id }),
        )
        .await;
        assert_eq!(removed["data"]["status"], "deprovisioned");
        assert_eq!(
            unseen(&app, &tenant.editor).await,
            json!({ "count": 1, "capped": false, "last_seen_at": null })
        );
        assert_eq!(
            status(tenant.editor.clone()).await["user_provisioned"],
            false
        );
        assert_eq!(unseen(&app, &tenant.viewer).await["count"], 0);
        assert!(unseen(&app, &tenant.viewer).await["last_seen_at"].is_string());
        assert_eq!(feed(&app, &tenant.viewer, "").await.len(), 1);
        // Again: still fine.
        lifecycle(
            &app,
            "activity",
            "deprovision/user",
            &json!({ "tenant_id": tenant.id, "user_id": tenant.editor_id }),
        )
        .await;

        // Deprovisioning the tenant removes everything; later events are ignored.
        for _ in 0..2 {
            lifecycle(
                &app,
                "activity",
                "deprovision/tenant",
                &json!({ "tenant_id": tenant.id }),
            )
            .await;
        }
        assert_eq!(feed(&app, &tenant.viewer, "").await, Vec::<Value>::new());
        assert_eq!(
            unseen(&app, &tenant.viewer).await,
            json!({ "count": 0, "capped": false, "last_seen_at": null })
        );
        assert_eq!(
            status(tenant.owner.clone()).await,
            json!({ "engine": "activity", "tenant_provisioned": false, "user_provisioned": false })
        );
        let late = bus_event(
            &tenant.id,
            "entity.created",
            None,
            json!({ "entity_id": "e1" }),
        );
        publish(&app, &late).await;
        deliveries_drained(&app).await;
        assert_eq!(feed(&app, &tenant.viewer, "").await, Vec::<Value>::new());
    }
);

/// The due times of the activity engine's pending jobs in `tenant_id`.
async fn pruning_jobs(app: &TestApp, tenant_id: &str) -> Vec<String> {
    let database = &app.state().database;
    tessera_host::on_pool!(database, pool => sqlx::query_scalar::<_, String>(
        "SELECT due_at FROM engine_work WHERE engine_code = 'activity' AND tenant_id = $1 AND kind = 'job' AND status = 'pending'",
    )
    .bind(tenant_id)
    .fetch_all(pool)
    .await
    .unwrap())
}

/// Makes the pending pruning run due now, and waits until it ran and scheduled the next one
/// (about a day later).
async fn run_pruning_now(app: &TestApp, tenant_id: &str) {
    let now = chrono::Utc::now();
    let database = &app.state().database;
    tessera_host::on_pool!(database, pool => sqlx::query(
        "UPDATE engine_work SET due_at = $2 WHERE engine_code = 'activity' AND tenant_id = $1 AND kind = 'job' AND status = 'pending'",
    )
    .bind(tenant_id)
    .bind(now.to_rfc3339_opts(chrono::SecondsFormat::Micros, true))
    .execute(pool)
    .await
    .map(drop)
    .unwrap());
    app.state().engines.runtime().services().queue.wake();
    let tomorrow =
        (now + chrono::Duration::hours(23)).to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    eventually(PATIENCE_SECONDS, "the next pruning run", || async {
        let jobs = pruning_jobs(app, tenant_id).await;
        (jobs.len() == 1 && jobs[0] > tomorrow).then_some(())
    })
    .await;
}

/// The activity engine's storage keys in `tenant_id`.
async fn stored_keys(app: &TestApp, tenant_id: &str) -> Vec<String> {
    let scope = KvScope {
        engine_code: "activity",
        tenant_id,
    };
    engine_kv::list(&app.state().database, &scope, "", None, 1000, false)
        .await
        .unwrap()
        .into_iter()
        .map(|(key, _)| key)
        .collect()
}

database_test!(
    a_daily_job_prunes_items_past_the_retention,
    |backend| async move {
        let app = activity_host(backend).await;
        let tenant = tenant(&app).await;
        // Provisioning scheduled the first run a day from now.
        let jobs = pruning_jobs(&app, &tenant.id).await;
        let in_23_hours = (chrono::Utc::now() + chrono::Duration::hours(23))
            .to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
        assert_eq!(jobs.len(), 1, "{jobs:?}");
        assert!(jobs[0] > in_23_hours, "{jobs:?}");

        let general = general_conversation(&app, &tenant.owner).await;
        post_message(&app, &tenant.owner, &general, "one").await;
        post_message(&app, &tenant.editor, &general, "two").await;
        wait_for_feed(&app, &tenant.viewer, "", 2).await;
        deliveries_drained(&app).await;
        let items = feed(&app, &tenant.viewer, "").await;

        // With the default 90 days nothing is old enough.
        run_pruning_now(&app, &tenant.id).await;
        assert_eq!(feed(&app, &tenant.viewer, "").await, items);

        // With a retention of 0 days everything recorded so far goes, indexes and markers too.
        let scope = KvScope {
            engine_code: "activity",
            tenant_id: &tenant.id,
        };
        let database = &app.state().database;
        let settings = engine_kv::get(database, &scope, "feed-settings")
            .await
            .unwrap()
            .unwrap();
        let mut settings: Value = serde_json::from_slice(&settings).unwrap();
        assert_eq!(settings["retention_days"], 90);
        settings["retention_days"] = json!(0);
        engine_kv::set(
            database,
            &scope,
            "feed-settings",
            settings.to_string().as_bytes(),
        )
        .await
        .unwrap();
        run_pruning_now(&app, &tenant.id).await;
        assert_eq!(feed(&app, &tenant.viewer, "").await, Vec::<Value>::new());
        assert_eq!(unseen(&app, &tenant.viewer).await["count"], 0);
        let left: Vec<String> = stored_keys(&app, &tenant.id)
            .await
            .into_iter()
            .filter(|key| !key.starts_with("users/"))
            .collect();
        assert_eq!(left, ["feed-settings", "retention-schedule", "tenant"]);
    }
);

database_test!(
    core_entity_changes_reach_the_feed_through_the_bus_relay,
    |backend| async move {
        let app = activity_host(backend).await;
        // A tenant created through the CLI: core families, and every installed engine
        // provisioned.
        let tenant_id = app.create_tenant("acme");
        let user_id = uuid();
        let token = app.token(&tenant_id, &user_id, "editor").await;
        let intention = app
            .create_entity(
                &token,
                "deal",
                json!({ "title": "Big one", "amount": 1200 }),
            )
            .await;
        let entity_id = intention["entity_id"].as_str().unwrap().to_owned();
        wait_for_feed(&app, &token, "?type=entity.*", 1).await;
        deliveries_drained(&app).await;
        // The creation is one item: its field events fold into it, names only.
        let items = feed(&app, &token, "").await;
        assert_eq!(items.len(), 1, "{items:#?}");
        let item = &items[0];
        assert_eq!(item["type"], "entity.created");
        assert_eq!(item["actor_id"], user_id.as_str());
        assert_eq!(item["entity_id"], entity_id.as_str());
        let mut fields: Vec<&str> = item["data"]["fields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|field| field.as_str().unwrap())
            .collect();
        fields.sort_unstable();
        assert_eq!(fields, ["amount", "title"]);
        assert_eq!(
            item["data"].as_object().unwrap().keys().collect::<Vec<_>>(),
            ["entity_id", "family", "fields"],
            "identifiers and names only, never the values"
        );
        assert_eq!(item["data"]["family"], "deal");

        // An update's field events are items of their own.
        let updated = app
            .intention(
                &token,
                "entity.update",
                json!({ "entity_id": entity_id, "fields": { "amount": 1500, "stage": "won" } }),
            )
            .await;
        json_with_status(updated, 200).await;
        wait_for_feed(&app, &token, "", 3).await;
        deliveries_drained(&app).await;
        let items = feed(&app, &token, "").await;
        let mut changes: Vec<(&str, &str)> = items[..2]
            .iter()
            .map(|item| {
                (
                    item["type"].as_str().unwrap(),
                    item["data"]["field"].as_str().unwrap(),
                )
            })
            .collect();
        changes.sort_unstable();
        assert_eq!(
            changes,
            [
                ("entity.field_set", "stage"),
                ("entity.field_updated", "amount")
            ]
        );
        assert_eq!(items.len(), 3, "{items:#?}");
        assert_eq!(
            feed(
                &app,
                &token,
                &format!("?entity_id={entity_id}&type=entity.created")
            )
            .await
            .len(),
            1
        );
        assert_eq!(
            feed(&app, &token, &format!("?actor_id={user_id}"))
                .await
                .len(),
            3
        );
    }
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_activity_route_is_documented() {
    let app = crate::helpers::spawn_app_with_engines(Backend::Sqlite, &["activity"], |_| {}).await;
    let document = app.openapi().await;
    let paths = &document["paths"];
    for (method, path) in [
        ("get", "/activity/api/v1/status"),
        ("get", "/activity/api/v1/feed"),
        ("get", "/activity/api/v1/feed/unseen"),
        ("post", "/activity/api/v1/feed/seen"),
    ] {
        let operation = &paths[path][method];
        assert!(operation.is_object(), "{method} {path} is documented");
        assert_eq!(
            operation["tags"][0], "activity",
            "{method} {path} is tagged activity"
        );
        assert!(
            operation["security"][0]["bearer"].is_array(),
            "{method} {path} requires a bearer token"
        );
    }
    let mut parameters: Vec<&str> = paths["/activity/api/v1/feed"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|parameter| parameter["name"].as_str().unwrap())
        .collect();
    parameters.sort_unstable();
    assert_eq!(
        parameters,
        ["actor_id", "cursor", "entity_id", "limit", "type"]
    );
    for schema in [
        "activity.FeedItem",
        "activity.Unseen",
        "activity.Seen",
        "activity.ProvisioningStatus",
    ] {
        assert!(
            document["components"]["schemas"][schema].is_object(),
            "the schema {schema} is documented"
        );
    }
    assert!(
        document["tags"]
            .as_array()
            .unwrap()
            .iter()
            .any(|tag| tag["name"] == "activity")
    );
}
