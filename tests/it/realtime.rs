//! Realtime (CONTRACT §9) through a real host, with clients nobody here wrote: Python's
//! `websockets` and `httpx-sse` (`tests/realtime/client.py`, run from the toolchain's virtual
//! environment that `cargo xtask test` fills). Subscribing and receiving an entity's change,
//! the timeline and the inbox live; resuming after a forced disconnect with nothing missed and
//! nothing twice (WebSocket `since` and SSE `Last-Event-ID`); refusals; tickets; logout.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

use crate::components::{repository, target_dir};
use crate::database_test;
use crate::helpers::{AppOptions, TestApp, json_with_status, spawn_app_with};

fn python() -> PathBuf {
    let python = target_dir().join("polyglot/python-venv/bin/python");
    assert!(
        python.is_file(),
        "{} is missing: `cargo xtask test` installs it with websockets and httpx-sse",
        python.display()
    );
    python
}

/// A running Python client, read line by line.
pub(crate) struct Client {
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Client {
    fn start(arguments: &[String]) -> Self {
        let mut child = Command::new(python())
            .arg(repository().join("tests/realtime/client.py"))
            .args(arguments)
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("starting the Python realtime client");
        let stdout = child.stdout.take().unwrap();
        Self {
            child,
            lines: BufReader::new(stdout).lines(),
        }
    }

    /// The next line the client printed, within `seconds`.
    pub(crate) async fn next(&mut self, seconds: u64) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(seconds), self.lines.next_line())
            .await
            .expect("the client printed nothing in time")
            .expect("reading the client")
            .expect("the client ended");
        serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON: {line}"))
    }

    /// The next line whose `op` is not `subscribed`/`pong` and the subscribed topics seen.
    pub(crate) async fn next_event(&mut self, seconds: u64) -> Value {
        loop {
            let line = self.next(seconds).await;
            if !matches!(line["op"].as_str(), Some("subscribed" | "pong")) {
                return line;
            }
        }
    }

    /// Waits for `count` `subscribed` frames.
    pub(crate) async fn subscribed(&mut self, count: usize) {
        for _ in 0..count {
            let line = self.next(20).await;
            assert_eq!(line["op"], "subscribed", "{line}");
        }
    }

    /// Asserts the client prints nothing within `seconds`.
    pub(crate) async fn expect_silence(&mut self, seconds: u64) {
        let line = tokio::time::timeout(Duration::from_secs(seconds), self.lines.next_line()).await;
        if let Ok(Ok(Some(line))) = line {
            panic!("expected nothing, got {line}");
        }
    }

    /// Ends the client at once: its connection is cut without a close handshake.
    pub(crate) async fn kill(mut self) {
        self.child.kill().await.unwrap();
    }
}

fn ws_url(app: &TestApp, query: &str) -> String {
    app.url(&format!("/core/api/v1/realtime{query}"))
        .replacen("http://", "ws://", 1)
}

pub(crate) fn ws(app: &TestApp, token: &str, topics: &[&str], extra: &[&str]) -> Client {
    let mut arguments = vec![
        "ws".to_owned(),
        ws_url(app, ""),
        "--token".into(),
        token.into(),
    ];
    arguments.extend(extra.iter().map(|argument| (*argument).to_owned()));
    arguments.extend(topics.iter().map(|topic| (*topic).to_owned()));
    Client::start(&arguments)
}

pub(crate) fn sse(app: &TestApp, token: &str, topics: &str, extra: &[&str]) -> Client {
    let mut arguments = vec![
        "sse".to_owned(),
        app.url(&format!("/core/api/v1/realtime/events?topics={topics}")),
        "--token".into(),
        token.into(),
    ];
    arguments.extend(extra.iter().map(|argument| (*argument).to_owned()));
    Client::start(&arguments)
}

async fn spawn(backend: crate::helpers::Backend) -> TestApp {
    spawn_app_with(
        backend,
        AppOptions::unlimited_and(|config| config.realtime.max_subscriptions = 3),
    )
    .await
}

database_test!(
    subscribers_receive_an_entitys_change_the_timeline_and_the_inbox_live,
    |backend| async move {
        let app = spawn(backend).await;
        let tenant = app.create_tenant("acme");
        let alice = uuid::Uuid::new_v4().to_string();
        let bob = uuid::Uuid::new_v4().to_string();
        let alice_token = app.token(&tenant, &alice, "editor").await;
        let bob_token = app.token(&tenant, &bob, "viewer").await;
        let task = app
            .create_entity(&alice_token, "task", json!({"title": "Ship"}))
            .await;
        let task_id = task["entity_id"].as_str().unwrap().to_owned();
        let entity_topic = format!("core.entity.{task_id}");

        let mut watcher = ws(
            &app,
            &alice_token,
            &["core.timeline", &entity_topic],
            &["--send", r#"{"op":"ping"}"#],
        );
        let pong = watcher.next(20).await;
        assert_eq!(pong, json!({"op": "pong"}));
        // The task's creation may arrive between the two `subscribed` frames (a subscription
        // starts at the host's place in the log, which may be a moment behind): nothing else.
        let mut subscribed = 0;
        while subscribed < 2 {
            let frame = watcher.next(20).await;
            if frame["op"] == "subscribed" {
                subscribed += 1;
            } else {
                assert_eq!(frame["type"], "entity.created", "{frame}");
                assert_eq!(frame["data"]["entity_id"], task_id.as_str(), "{frame}");
            }
        }
        let mut inbox = ws(&app, &bob_token, &["core.inbox"], &[]);
        inbox.subscribed(1).await;
        let mut inbox_stream = sse(&app, &bob_token, "core.inbox", &[]);
        assert_eq!(inbox_stream.next(20).await, json!({"open": true}));
        // The stream subscribes as it opens: give it a moment to be registered.
        tokio::time::sleep(Duration::from_millis(300)).await;

        json_with_status(
            app.intention(
                &alice_token,
                "entity.update",
                json!({"entity_id": task_id, "fields": {"assignee_id": bob}}),
            )
            .await,
            200,
        )
        .await;

        // A subscription without `since` starts at the host's place in the log, which may be a
        // moment behind the subscription: the task's creation, committed just before, may
        // come first (never anything missed). Past it, the assignment on both topics.
        let mut topics_seen = Vec::new();
        while topics_seen.len() < 2 {
            let event = watcher.next_event(20).await;
            assert_eq!(event["op"], "event", "{event}");
            assert_eq!(event["data"]["entity_id"], task_id.as_str());
            if event["data"]["data"]["field"] != "assignee_id" {
                assert!(
                    event["type"] == "entity.created" || event["data"]["data"]["field"] == "title",
                    "only the task's creation may precede its assignment: {event}"
                );
                continue;
            }
            assert_eq!(event["type"], event["data"]["type"]);
            assert!(event["cursor"].as_str().is_some_and(|c| !c.is_empty()));
            assert!(event["occurred_at"].is_string());
            topics_seen.push(event["topic"].as_str().unwrap().to_owned());
        }
        topics_seen.sort();
        assert_eq!(
            topics_seen,
            ["core.entity.".to_owned() + &task_id, "core.timeline".into()]
        );

        let item = inbox.next_event(20).await;
        assert_eq!(item["op"], "event", "{item}");
        assert_eq!(item["topic"], "core.inbox");
        assert_eq!(item["type"], "entity.assigned");
        assert_eq!(item["data"]["title"], "A task was assigned to you");
        assert_eq!(item["data"]["entity_id"], task_id.as_str());
        // The inbox REST read shows the same item under the same id.
        let rest = crate::helpers::eventually(20, "the inbox item", || async {
            let inbox =
                json_with_status(app.get_as("/core/api/v1/inbox", &bob_token).await, 200).await;
            inbox["data"].as_array().unwrap().first().cloned()
        })
        .await;
        assert_eq!(rest["id"], item["data"]["id"]);

        let streamed = inbox_stream.next(20).await;
        assert_eq!(streamed["event"], "entity.assigned", "{streamed}");
        // An SSE id names the position served in both streams: the log's is the event's cursor.
        let (log_half, engines_half) = streamed["id"].as_str().unwrap().split_once('.').unwrap();
        assert_eq!(log_half, item["cursor"].as_str().unwrap());
        assert!(engines_half.starts_with('e'), "{streamed}");
        assert_eq!(streamed["data"], item);

        watcher.kill().await;
        inbox.kill().await;
        inbox_stream.kill().await;
        app.stop().await;
    }
);

database_test!(
    a_client_resumes_after_a_forced_disconnect_with_nothing_missed_and_nothing_twice,
    |backend| async move {
        let app = spawn(backend).await;
        let tenant = app.create_tenant("acme");
        let token = app
            .token(&tenant, &uuid::Uuid::new_v4().to_string(), "editor")
            .await;
        let create = |index: u32| {
            let app = &app;
            let token = token.clone();
            async move {
                app.create_entity(&token, "task", json!({"title": format!("Task {index}")}))
                    .await["entity_id"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            }
        };

        let mut first = ws(&app, &token, &["core.timeline"], &[]);
        first.subscribed(1).await;
        let mut seen: Vec<Value> = Vec::new();
        for index in 0..3 {
            create(index).await;
        }
        // Every creation is at least one timeline event: read three, then cut the connection.
        for _ in 0..3 {
            seen.push(first.next_event(20).await);
        }
        first.kill().await;
        let cursor = seen.last().unwrap()["cursor"].as_str().unwrap().to_owned();
        for index in 3..6 {
            create(index).await;
        }

        // Everything after the cursor, from the log, then live.
        let mut second = ws(&app, &token, &["core.timeline"], &["--since", &cursor]);
        second.subscribed(1).await;
        let mut sse_resumed = sse(&app, &token, "core.timeline", &["--last-event-id", &cursor]);
        assert_eq!(sse_resumed.next(20).await, json!({"open": true}));
        create(6).await;

        // The REST timeline, oldest first, is the reference.
        let all = crate::helpers::eventually(20, "the timeline", || async {
            let page = json_with_status(
                app.get_as("/core/api/v1/timeline?direction=asc&limit=100", &token)
                    .await,
                200,
            )
            .await;
            let items = page["data"].as_array().unwrap().clone();
            (items
                .iter()
                .filter(|item| item["type"] == "entity.created")
                .count()
                == 7)
                .then_some(items)
        })
        .await;
        let ids: Vec<&str> = all
            .iter()
            .map(|item| item["id"].as_str().unwrap())
            .collect();
        let position = ids
            .iter()
            .position(|id| *id == seen.last().unwrap()["data"]["id"].as_str().unwrap())
            .unwrap();
        let expected = &ids[position + 1..];
        let mut resumed = Vec::new();
        while resumed.len() < expected.len() {
            let event = second.next_event(20).await;
            assert_eq!(event["op"], "event", "{event}");
            resumed.push(event["data"]["id"].as_str().unwrap().to_owned());
        }
        assert_eq!(resumed, expected, "nothing missed, nothing twice, in order");
        let mut streamed = Vec::new();
        while streamed.len() < expected.len() {
            let event = sse_resumed.next(20).await;
            streamed.push(event["data"]["data"]["id"].as_str().unwrap().to_owned());
        }
        assert_eq!(streamed, expected, "the stream resumes the same way");
        // Nothing more arrives (no duplicate after the live switch).
        create(7).await;
        let next = second.next_event(20).await;
        let last_resumed = expected.last().unwrap().to_string();
        let following = crate::helpers::eventually(20, "the next event", || async {
            let page = json_with_status(
                app.get_as("/core/api/v1/timeline?direction=asc&limit=100", &token)
                    .await,
                200,
            )
            .await;
            let items = page["data"].as_array().unwrap().clone();
            let at = items
                .iter()
                .position(|item| item["id"] == last_resumed.as_str())?;
            items.get(at + 1).map(|item| item["id"].clone())
        })
        .await;
        assert_eq!(
            next["data"]["id"], following,
            "the first event after the replay"
        );
        second.kill().await;
        sse_resumed.kill().await;
        app.stop().await;
    }
);

database_test!(
    refusals_answer_in_the_contracts_shapes,
    |backend| async move {
        let app = spawn(backend).await;
        let tenant = app.create_tenant("acme");
        let other_tenant = app.create_tenant("globex");
        let token = app
            .token(&tenant, &uuid::Uuid::new_v4().to_string(), "editor")
            .await;
        let stranger = app
            .token(&other_tenant, &uuid::Uuid::new_v4().to_string(), "owner")
            .await;
        let theirs = app
            .create_entity(&stranger, "task", json!({"title": "Theirs"}))
            .await;
        let their_topic = format!("core.entity.{}", theirs["entity_id"].as_str().unwrap());
        let guest = app
            .token_of(
                &tenant,
                &uuid::Uuid::new_v4().to_string(),
                "viewer",
                "guest",
            )
            .await;

        // Without a token or a ticket: 401 before the upgrade.
        let mut anonymous = Client::start(&["ws".into(), ws_url(&app, "")]);
        assert_eq!(anonymous.next(20).await, json!({"refused": 401}));
        let plain = app.get("/core/api/v1/realtime").await;
        assert_eq!(plain.status(), 401);

        // Another tenant's entity and an unknown topic: 404; a malformed frame: 422.
        let mut client = ws(
            &app,
            &token,
            &[&their_topic, "core.nothing"],
            &["--send", r#"{"op":"subscribe"}"#],
        );
        let malformed = client.next(20).await;
        assert_eq!(malformed["op"], "error");
        assert_eq!(malformed["status"], 422);
        let mut refused = [client.next(20).await, client.next(20).await];
        refused.sort_by_key(|frame| frame["topic"].as_str().unwrap_or("").to_owned());
        assert_eq!(refused[0]["topic"], their_topic.as_str());
        assert_eq!(refused[0]["status"], 404);
        assert_eq!(refused[1]["topic"], "core.nothing");
        assert_eq!(refused[1]["status"], 404);
        assert_eq!(refused[0]["op"], "error");

        // A guest: its inbox, not the timeline.
        let mut guest_client = ws(&app, &guest, &["core.inbox", "core.timeline"], &[]);
        let mut frames = [guest_client.next(20).await, guest_client.next(20).await];
        frames.sort_by_key(|frame| frame["op"].as_str().unwrap_or("").to_owned());
        assert_eq!(frames[0]["op"], "error");
        assert_eq!(frames[0]["topic"], "core.timeline");
        assert_eq!(frames[0]["status"], 403);
        assert_eq!(
            frames[1],
            json!({"op": "subscribed", "topic": "core.inbox"})
        );
        let guest_stream = app
            .get_as("/core/api/v1/realtime/events?topics=core.timeline", &guest)
            .await;
        assert_eq!(guest_stream.status(), 403);

        // Too many subscriptions (this host allows 3 a connection): 429 for the fourth.
        let mut topics = vec!["core.timeline".to_owned(), "core.inbox".to_owned()];
        for title in ["One", "Two"] {
            let mine = app
                .create_entity(&token, "task", json!({ "title": title }))
                .await;
            topics.push(format!(
                "core.entity.{}",
                mine["entity_id"].as_str().unwrap()
            ));
        }
        let topics: Vec<&str> = topics.iter().map(String::as_str).collect();
        let mut busy = ws(&app, &token, &topics, &[]);
        let mut statuses = Vec::new();
        for _ in 0..4 {
            let frame = busy.next(20).await;
            statuses.push(match frame["op"].as_str() {
                Some("subscribed") => 200,
                _ => frame["status"].as_u64().unwrap(),
            });
        }
        statuses.sort();
        assert_eq!(statuses, [200, 200, 200, 429]);
        busy.kill().await;
        client.kill().await;
        guest_client.kill().await;
        app.stop().await;
    }
);

database_test!(
    a_ticket_opens_one_connection_and_logout_closes_it_with_4001,
    |backend| async move {
        let app = spawn(backend).await;
        let tenant = app.create_tenant("acme");
        let token = app
            .token(&tenant, &uuid::Uuid::new_v4().to_string(), "editor")
            .await;
        let ticket = json_with_status(
            app.post_as("/core/api/v1/realtime/tickets", &token, &json!({}))
                .await,
            201,
        )
        .await;
        let ticket_text = ticket["data"]["ticket"].as_str().unwrap().to_owned();
        assert!(ticket["data"]["expires_at"].is_string());
        let url = ws_url(&app, &format!("?ticket={ticket_text}"));
        let mut first = Client::start(&["ws".into(), url.clone(), "core.timeline".into()]);
        first.subscribed(1).await;
        // Used once: the second connection with it is refused before the upgrade.
        let mut second = Client::start(&["ws".into(), url]);
        assert_eq!(second.next(20).await, json!({"refused": 401}));

        // Logging out closes the ticket's connection and the bearer's with 4001 within 5 s.
        let mut bearer = ws(&app, &token, &["core.inbox"], &[]);
        bearer.subscribed(1).await;
        let logged_out = Instant::now();
        let response = app
            .post_as("/auth/api/v1/auth/logout", &token, &json!({}))
            .await;
        assert!(response.status().is_success(), "{}", response.status());
        assert_eq!(first.next_event(10).await, json!({"closed": 4001}));
        assert_eq!(bearer.next_event(10).await, json!({"closed": 4001}));
        assert!(
            logged_out.elapsed() < Duration::from_secs(5),
            "closed after {:?}",
            logged_out.elapsed()
        );
        app.stop().await;
    }
);

#[tokio::test]
async fn a_client_message_beyond_the_frame_limit_closes_the_connection_with_1009() {
    let app = spawn_app_with(
        crate::helpers::Backend::Sqlite,
        AppOptions::unlimited_and(|config| config.realtime.max_frame_bytes = 1024),
    )
    .await;
    let tenant = app.create_tenant("acme");
    let token = app
        .token(&tenant, &uuid::Uuid::new_v4().to_string(), "editor")
        .await;
    // A ping padded to the limit is still a frame of the protocol.
    let padded = format!(r#"{{"op":"ping"{}}}"#, " ".repeat(1024 - 13));
    assert_eq!(padded.len(), 1024);
    let mut at_limit = ws(&app, &token, &[], &["--send", &padded]);
    assert_eq!(at_limit.next(20).await, json!({"op": "pong"}));
    // One byte more closes the connection with 1009 (message too big).
    let over = format!(r#"{{"op":"ping"{}}}"#, " ".repeat(1024 - 12));
    let mut beyond = ws(&app, &token, &[], &["--send", &over]);
    assert_eq!(beyond.next(20).await, json!({"closed": 1009}));
    at_limit.kill().await;
    app.stop().await;
}

database_test!(
    owners_follow_their_tenants_audit_trail_and_no_one_else_does,
    |backend| async move {
        let app = spawn(backend).await;
        let acme = app.create_tenant("acme");
        let globex = app.create_tenant("globex");
        let owner = app
            .token(&acme, &uuid::Uuid::new_v4().to_string(), "owner")
            .await;
        let editor_id = uuid::Uuid::new_v4().to_string();
        let editor = app.token(&acme, &editor_id, "editor").await;
        let outsider = app
            .token(&globex, &uuid::Uuid::new_v4().to_string(), "editor")
            .await;

        let mut trail = ws(&app, &owner, &["core.audit"], &[]);
        trail.subscribed(1).await;
        // The trail is the owners' to read, as `GET /auth/api/v1/audit`.
        let mut refused = ws(&app, &editor, &["core.audit"], &[]);
        let frame = refused.next_event(20).await;
        assert_eq!(
            (frame["op"].clone(), frame["status"].clone()),
            (json!("error"), json!(403)),
            "{frame}"
        );

        // Another tenant's entry first, then one of the owner's tenant: only the latter arrives.
        for token in [&outsider, &editor] {
            let response = app
                .post_as("/auth/api/v1/auth/logout", token, &json!({}))
                .await;
            assert!(response.status().is_success(), "{}", response.status());
        }
        let entry = trail.next_event(20).await;
        assert_eq!(entry["op"], "event", "{entry}");
        assert_eq!(entry["topic"], "core.audit");
        assert_eq!(entry["type"], "session.logged_out", "{entry}");
        assert_eq!(entry["data"]["user_id"], editor_id.as_str(), "{entry}");
        // The frame carries the entry as the REST trail lists it.
        let listed = json_with_status(
            app.get_as("/auth/api/v1/audit?event=session.logged_out", &owner)
                .await,
            200,
        )
        .await;
        assert_eq!(listed["data"][0], entry["data"], "{listed}");
        trail.expect_silence(1).await;
        app.stop().await;
    }
);
