//! Engines' realtime topics (world 0.3, CONTRACT §9) through a real host and Python's
//! `websockets` and `httpx-sse` (`tests/realtime/client.py`): a publication is delivered only
//! when its call commits (a trap, an error or a rejection delivers nothing), resuming with a
//! cursor of the engines' stream (WebSocket `since`, SSE `Last-Event-ID`), deny by default and
//! unknown topics, chat's conversation topics with their text for members only and the end of
//! a removed member's subscription, and a `reset` for a cursor the retention has passed.

use serde_json::{Value, json};

use crate::chat::{post_message, provision_user, tenant as chat_tenant};
use crate::database_test;
use crate::helpers::{AppOptions, TestApp, TestDatabase, json_with_status, spawn_app_with};
use crate::realtime::{Client, sse, ws};

/// A host with the trapper test engine, the 0.2 test engine and the chat engine.
async fn spawn(backend: crate::helpers::Backend) -> TestApp {
    let database = TestDatabase::new(backend).await;
    crate::components::install_engines(&database.data_dir.join("plugins"), &["chat"]);
    spawn_app_with(
        backend,
        AppOptions {
            plugins: vec!["trapper", "legacy-v0-2"],
            database: Some(database),
            ..AppOptions::unlimited()
        },
    )
    .await
}

/// `POST /trapper/api/v1/units/{mode}?id=…`: answers the status.
async fn unit(app: &TestApp, token: &str, mode: &str, id: &str) -> u16 {
    app.post_as(
        &format!("/trapper/api/v1/units/{mode}?id={id}"),
        token,
        &json!({}),
    )
    .await
    .status()
    .as_u16()
}

/// The next `unit.written` events' ids until (and with) `last`.
async fn unit_ids_until(client: &mut Client, last: &str) -> Vec<(String, String)> {
    let mut seen = Vec::new();
    loop {
        let frame = client.next_event(20).await;
        assert_eq!(frame["op"], "event", "{frame}");
        assert_eq!(frame["topic"], "trapper.units");
        assert_eq!(frame["type"], "unit.written");
        let id = frame["data"]["id"].as_str().unwrap().to_owned();
        seen.push((id.clone(), frame["cursor"].as_str().unwrap().to_owned()));
        if id == last {
            return seen;
        }
    }
}

database_test!(
    only_a_committed_call_publishes_and_a_cursor_resumes_the_engines_stream,
    |backend| async move {
        let app = spawn(backend).await;
        let tenant = app.create_tenant("acme");
        let token = app
            .token(&tenant, &uuid::Uuid::new_v4().to_string(), "editor")
            .await;
        let mut live = ws(&app, &token, &["trapper.units"], &[]);
        live.subscribed(1).await;
        let mut stream = sse(&app, &token, "trapper.units", &[]);
        assert_eq!(stream.next(20).await, json!({"open": true}));
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;

        assert_eq!(unit(&app, &token, "commit", "a").await, 201);
        assert_eq!(unit(&app, &token, "trap", "b").await, 502);
        assert_eq!(unit(&app, &token, "fail", "c").await, 500);
        assert_eq!(unit(&app, &token, "reject", "d").await, 422);
        // Committed at a synchronisation point before the rejection: kept, as its writes are.
        assert_eq!(unit(&app, &token, "reject-kept", "e").await, 422);
        assert_eq!(unit(&app, &token, "commit", "f").await, 201);

        let seen = unit_ids_until(&mut live, "f").await;
        let ids: Vec<&str> = seen.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(ids, ["a", "e", "f"], "the calls that committed, in order");
        assert!(seen.iter().all(|(_, cursor)| cursor.starts_with('e')));
        // The storage agrees: the same units were kept.
        let stored = json_with_status(app.get_as("/trapper/api/v1/units", &token).await, 200).await;
        assert_eq!(stored["data"], json!(["a", "e", "f"]));

        // SSE: the same three, each `id:` naming both streams.
        let mut sse_ids = Vec::new();
        while sse_ids.len() < 3 {
            let event = stream.next(20).await;
            assert_eq!(event["event"], "unit.written", "{event}");
            assert_eq!(event["data"]["topic"], "trapper.units");
            sse_ids.push((
                event["data"]["data"]["id"].as_str().unwrap().to_owned(),
                event["id"].as_str().unwrap().to_owned(),
            ));
        }
        assert_eq!(
            sse_ids
                .iter()
                .map(|(id, _)| id.as_str())
                .collect::<Vec<_>>(),
            ["a", "e", "f"]
        );
        stream.kill().await;
        live.kill().await;

        // Resuming after `a`: `e` and `f`, nothing twice, then what follows live.
        let mut resumed = ws(&app, &token, &["trapper.units"], &["--since", &seen[0].1]);
        resumed.subscribed(1).await;
        assert_eq!(unit(&app, &token, "commit", "g").await, 201);
        let again = unit_ids_until(&mut resumed, "g").await;
        assert_eq!(
            again.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(),
            ["e", "f", "g"]
        );
        let mut resumed_sse = sse(
            &app,
            &token,
            "trapper.units",
            &["--last-event-id", &sse_ids[1].1],
        );
        assert_eq!(resumed_sse.next(20).await, json!({"open": true}));
        let mut after = Vec::new();
        while after.len() < 2 {
            let event = resumed_sse.next(20).await;
            after.push(event["data"]["data"]["id"].as_str().unwrap().to_owned());
        }
        assert_eq!(after, ["f", "g"]);

        // A cursor of the log is no cursor of an engine topic.
        let log_cursor = "0".repeat(32);
        let mut wrong = ws(&app, &token, &["trapper.units"], &["--since", &log_cursor]);
        let refused = wrong.next_event(20).await;
        assert_eq!(refused["op"], "error", "{refused}");
        assert_eq!(refused["status"], 422);
        app.stop().await;
    }
);

database_test!(
    engine_topics_are_the_engines_to_grant_and_unknown_ones_are_not_found,
    |backend| async move {
        let app = spawn(backend).await;
        let tenant = app.create_tenant("acme");
        let member = app
            .token(&tenant, &uuid::Uuid::new_v4().to_string(), "viewer")
            .await;
        let guest = app
            .token_of(
                &tenant,
                &uuid::Uuid::new_v4().to_string(),
                "viewer",
                "guest",
            )
            .await;
        let refusal = async |token: &str, topic: &str| -> Value {
            let mut client = ws(&app, token, &[topic], &[]);
            let frame = client.next_event(20).await;
            assert_eq!(frame["op"], "error", "{topic}: {frame}");
            assert_eq!(frame["topic"], topic);
            frame["status"].clone()
        };
        // The engine refuses guests (its authorize-subscription), so does the host for them.
        assert_eq!(refusal(&guest, "trapper.units").await, 403);
        // No pattern of the engine matches; no engine of that code; a 0.2 engine owns none.
        assert_eq!(refusal(&member, "trapper.other").await, 404);
        assert_eq!(refusal(&member, "trapper.units.extra").await, 404);
        assert_eq!(refusal(&member, "nobody.units").await, 404);
        assert_eq!(refusal(&member, "legacy-v0-2.anything").await, 404);
        // An engine that declares nothing publishes nothing: the 0.2 engine still serves.
        json_with_status(app.get_as("/legacy-v0-2/api/v1/hello", &member).await, 200).await;
        let owner = app
            .token(&tenant, &uuid::Uuid::new_v4().to_string(), "owner")
            .await;
        let details = json_with_status(
            app.get_as("/core/api/v1/engines/trapper", &owner).await,
            200,
        )
        .await;
        assert_eq!(details["data"]["world"], "0.3.0");
        assert_eq!(details["data"]["topics"], json!(["units"]));
        let legacy = json_with_status(
            app.get_as("/core/api/v1/engines/legacy-v0-2", &owner).await,
            200,
        )
        .await;
        assert_eq!(legacy["data"]["topics"], json!([]));
        // SSE refuses before the stream starts.
        let mut refused = sse(&app, &guest, "trapper.units", &[]);
        assert_eq!(refused.next(20).await, json!({"refused": 403}));
        let mut unknown = sse(&app, &member, "trapper.other", &[]);
        assert_eq!(unknown.next(20).await, json!({"refused": 404}));
        app.stop().await;
    }
);

database_test!(
    chat_pushes_a_conversations_messages_to_its_members_and_stops_for_a_removed_one,
    |backend| async move {
        let app = spawn(backend).await;
        let tenant = chat_tenant(&app).await;
        let outsider_id = uuid::Uuid::new_v4().to_string();
        provision_user(&app, &tenant.id, &outsider_id).await;
        let outsider = app.token(&tenant.id, &outsider_id, "editor").await;

        let mut editor_me = ws(&app, &tenant.editor, &["chat.me"], &[]);
        editor_me.subscribed(1).await;
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
        let joined = editor_me.next_event(20).await;
        assert_eq!(joined["type"], "conversation.created", "{joined}");
        assert_eq!(joined["topic"], "chat.me");
        assert_eq!(joined["data"]["id"], conversation_id.as_str());
        let topic = format!("chat.conversation.{conversation_id}");

        // Someone who may not read the conversation may not subscribe to it.
        let mut refused = ws(&app, &outsider, &[&topic], &[]);
        let frame = refused.next_event(20).await;
        assert_eq!(
            (frame["op"].clone(), frame["status"].clone()),
            (json!("error"), json!(403))
        );

        let mut member = ws(&app, &tenant.editor, &[&topic], &[]);
        member.subscribed(1).await;
        let marker = format!("text-{}", uuid::Uuid::new_v4());
        let message = post_message(&app, &tenant.owner, &conversation_id, &marker).await;
        let event = member.next_event(20).await;
        assert_eq!(event["type"], "message.created", "{event}");
        assert_eq!(event["topic"], topic.as_str());
        assert_eq!(event["data"]["id"], message["id"]);
        assert_eq!(event["data"]["body"], marker.as_str());

        // The owner removes the editor: the subscription ends at once, with a 403.
        let members = format!("/chat/api/v1/conversations/{conversation_id}/members");
        let removed = app
            .delete_as(&format!("{members}/{}", tenant.editor_id), &tenant.owner)
            .await;
        assert_eq!(removed.status(), 204);
        let mut ended = None;
        for _ in 0..4 {
            let frame = member.next_event(20).await;
            if frame["op"] == "error" {
                ended = Some(frame);
                break;
            }
            assert_eq!(frame["type"], "member.removed", "{frame}");
        }
        let ended = ended.expect("the subscription ended");
        assert_eq!(ended["topic"], topic.as_str());
        assert_eq!(ended["status"], 403);
        // Subscribing again asks chat again: refused now.
        let mut again = ws(&app, &tenant.editor, &[&topic], &[]);
        let frame = again.next_event(20).await;
        assert_eq!(
            (frame["op"].clone(), frame["status"].clone()),
            (json!("error"), json!(403)),
            "{frame}"
        );
        // Nothing more reaches the removed member's connection, while a member hears on.
        let mut owner = ws(&app, &tenant.owner, &[&topic], &[]);
        owner.subscribed(1).await;
        let secret = format!("after-{}", uuid::Uuid::new_v4());
        post_message(&app, &tenant.owner, &conversation_id, &secret).await;
        let heard = owner.next_event(20).await;
        assert_eq!(heard["data"]["body"], secret.as_str(), "{heard}");
        member.expect_silence(1).await;
        app.stop().await;
    }
);

database_test!(
    a_cursor_older_than_the_retention_gets_a_reset_then_the_events_that_follow,
    |backend| async move {
        let app = spawn(backend).await;
        let tenant = app.create_tenant("acme");
        let token = app
            .token(&tenant, &uuid::Uuid::new_v4().to_string(), "editor")
            .await;
        let mut live = ws(&app, &token, &["trapper.units"], &[]);
        live.subscribed(1).await;
        for id in ["a", "b", "c"] {
            assert_eq!(unit(&app, &token, "commit", id).await, 201);
        }
        let seen = unit_ids_until(&mut live, "c").await;
        // The retention keeps the last event of the topic only.
        let feed = app.state().engines.runtime().services().realtime_feed();
        let pruned = feed
            .prune_older_than(chrono::Utc::now() + chrono::Duration::minutes(1), 1)
            .await
            .unwrap();
        assert_eq!(pruned, 2);
        // From `b`: `c` is still there, nothing before it is needed: no reset.
        let mut recent = ws(&app, &token, &["trapper.units"], &["--since", &seen[1].1]);
        recent.subscribed(1).await;
        assert_eq!(unit_ids_until(&mut recent, "c").await.len(), 1);
        // From `a`: `b` is gone, so a reset, then live events.
        let mut old = ws(&app, &token, &["trapper.units"], &["--since", &seen[0].1]);
        old.subscribed(1).await;
        let reset = old.next_event(20).await;
        assert_eq!(reset, json!({"op": "reset", "topic": "trapper.units"}));
        assert_eq!(unit(&app, &token, "commit", "d").await, 201);
        let next = unit_ids_until(&mut old, "d").await;
        assert_eq!(next.len(), 1);
        app.stop().await;
    }
);
