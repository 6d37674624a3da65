//! Realtime revocation and limits (CONTRACT §9) through a real host, with the Python clients of
//! `tests/realtime/client.py` (`websockets`, `httpx-sse`): a logout, an ended session, an
//! expired token, a removed or disabled member and a disabled tenant each stop delivery within
//! 5 s, on the WebSocket (its close code) and on Server-Sent Events (the `close` event with the
//! same code); a member turned guest loses the topics guests may not read (an `error` frame);
//! the connection limit closes with 4029, a client that does not read with 4008, a subscription
//! over the limit answers 429; a stopping host closes with 1001 and a client resumes on another
//! host of the same database with nothing missed.

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::components::{repository, target_dir};
use crate::database_test;
use crate::helpers::{AppOptions, Backend, TestApp, json_with_status, spawn_app_with};

/// The most a revocation may take to stop delivery (the issue's bound).
const REVOCATION_BOUND: Duration = Duration::from_secs(5);

/// A running Python client, read line by line.
struct Client {
    _child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    /// What it was started with, for messages.
    arguments: String,
}

impl Client {
    fn start(arguments: &[String]) -> Self {
        let python = target_dir().join("polyglot/python-venv/bin/python");
        assert!(
            python.is_file(),
            "{} is missing: `cargo xtask test` installs it with websockets and httpx-sse",
            python.display()
        );
        let mut child = Command::new(python)
            .arg(repository().join("tests/realtime/client.py"))
            .args(arguments)
            .arg("--timeout")
            .arg("120")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("starting the Python realtime client");
        let stdout = child.stdout.take().unwrap();
        let stdin = child.stdin.take().unwrap();
        Self {
            _child: child,
            stdin,
            lines: BufReader::new(stdout).lines(),
            arguments: arguments.join(" "),
        }
    }

    /// The next line the client printed, within `seconds`.
    async fn next(&mut self, seconds: u64) -> Value {
        let arguments = &self.arguments;
        let line = tokio::time::timeout(Duration::from_secs(seconds), self.lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("the client printed nothing in {seconds} s: {arguments}"))
            .expect("reading the client")
            .unwrap_or_else(|| panic!("the client ended: {arguments}"));
        serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON: {line}"))
    }

    /// Reads up to the line `wanted` accepts, within `seconds` in all; the lines before it.
    async fn until(&mut self, seconds: u64, wanted: impl Fn(&Value) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(seconds);
        let mut before = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now()).as_secs() + 1;
            let line = self.next(left).await;
            if wanted(&line) {
                before.push(line);
                return before;
            }
            assert!(
                Instant::now() < deadline,
                "not seen in time; read {before:?}"
            );
            before.push(line);
        }
    }

    /// Waits for the `subscribed` frames of `count` topics.
    async fn subscribed(&mut self, count: usize) {
        for _ in 0..count {
            let line = self.next(20).await;
            assert_eq!(line["op"], "subscribed", "{line}");
        }
    }

    /// The SSE client's first line: the stream is open.
    async fn opened(&mut self) {
        assert_eq!(self.next(20).await, json!({"open": true}));
    }

    /// The code the connection closes with, and the lines before it.
    async fn closed(&mut self, seconds: u64) -> (u64, Vec<Value>) {
        let mut lines = self
            .until(seconds, |line| line.get("closed").is_some())
            .await;
        let closed = lines.pop().unwrap();
        let code = closed["closed"]
            .as_u64()
            .unwrap_or_else(|| panic!("closed without a code: {closed}"));
        (code, lines)
    }

    /// Sends a line to the client's standard input (`--hold`: reading starts; `--interactive`:
    /// a frame to send).
    async fn tell(&mut self, line: &str) {
        self.stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        self.stdin.flush().await.unwrap();
    }
}

fn ws(app: &TestApp, token: &str, topics: &[&str], extra: &[&str]) -> Client {
    let url = app
        .url("/core/api/v1/realtime")
        .replacen("http://", "ws://", 1);
    let mut arguments = vec!["ws".to_owned(), url, "--token".into(), token.into()];
    arguments.extend(extra.iter().map(|argument| (*argument).to_owned()));
    arguments.extend(topics.iter().map(|topic| (*topic).to_owned()));
    Client::start(&arguments)
}

fn sse(app: &TestApp, token: &str, topics: &str, extra: &[&str]) -> Client {
    let mut arguments = vec![
        "sse".to_owned(),
        app.url(&format!("/core/api/v1/realtime/events?topics={topics}")),
        "--token".into(),
        token.into(),
    ];
    arguments.extend(extra.iter().map(|argument| (*argument).to_owned()));
    Client::start(&arguments)
}

/// A WebSocket and a stream of `token`, both on `core.timeline` and `core.inbox`, open.
async fn both(app: &TestApp, token: &str) -> (Client, Client) {
    let mut socket = ws(app, token, &["core.timeline", "core.inbox"], &[]);
    socket.subscribed(2).await;
    let mut stream = sse(app, token, "core.timeline,core.inbox", &[]);
    stream.opened().await;
    (socket, stream)
}

/// Both close with `code` within the bound from `since`.
async fn both_close_with(code: u64, since: Instant, socket: &mut Client, stream: &mut Client) {
    for (client, what) in [(socket, "the WebSocket"), (stream, "the event stream")] {
        let (closed, _) = client.closed(15).await;
        assert_eq!(closed, code, "{what}");
        let after = since.elapsed();
        assert!(after < REVOCATION_BOUND, "{what} closed after {after:?}");
        eprintln!("{what} closed with {code} {after:?} after the change");
    }
}

async fn spawn(backend: Backend) -> TestApp {
    spawn_app_with(backend, AppOptions::unlimited()).await
}

/// Creates tenant `acme` and a token of a new user of it with `role`: the tenant's id and the
/// token.
async fn acme_member(app: &TestApp, role: &str) -> (String, String) {
    let tenant = app.create_tenant("acme");
    let token = app.token(&tenant, &new_id(), role).await;
    (tenant, token)
}

/// Runs one statement with text parameters straight on the app's database.
async fn execute(app: &TestApp, sql: &'static str, parameters: &[&str]) -> u64 {
    let database = &app.state().database;
    tessera_host::on_pool!(database, pool => {
        let mut query = sqlx::query(sql);
        for parameter in parameters {
            query = query.bind(*parameter);
        }
        query.execute(pool).await.unwrap().rows_affected()
    })
}

fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

database_test!(
    a_logout_closes_the_websocket_and_the_stream_with_4001,
    |backend| async move {
        let app = spawn(backend).await;
        let (_, token) = acme_member(&app, "editor").await;
        let (mut socket, mut stream) = both(&app, &token).await;

        let logged_out = Instant::now();
        let response = app
            .post_as("/auth/api/v1/auth/logout", &token, &json!({}))
            .await;
        assert!(response.status().is_success(), "{}", response.status());
        both_close_with(4001, logged_out, &mut socket, &mut stream).await;
        app.stop().await;
    }
);

database_test!(
    an_ended_session_closes_its_connections_with_4001_and_no_other,
    |backend| async move {
        let app = spawn(backend).await;
        let (tenant, owner) = acme_member(&app, "owner").await;
        let user = new_id();
        let laptop = app.token(&tenant, &user, "editor").await;
        let phone = app.token(&tenant, &user, "editor").await;
        let (mut socket, mut stream) = both(&app, &laptop).await;
        let mut on_phone = ws(&app, &phone, &["core.timeline"], &["--interactive"]);
        on_phone.subscribed(1).await;

        // The user ends the laptop's session from the phone (their own sessions endpoint).
        let sessions =
            json_with_status(app.get_as("/auth/api/v1/auth/sessions", &phone).await, 200).await;
        let sessions = sessions["data"].as_array().unwrap();
        assert_eq!(sessions.len(), 2, "{sessions:?}");
        let laptop_session = sessions
            .iter()
            .find(|session| session["current"] == false)
            .unwrap()["id"]
            .as_str()
            .unwrap()
            .to_owned();
        let ended = Instant::now();
        let response = app
            .delete_as(
                &format!("/auth/api/v1/auth/sessions/{laptop_session}"),
                &phone,
            )
            .await;
        assert_eq!(response.status(), 204);
        both_close_with(4001, ended, &mut socket, &mut stream).await;
        // The phone's connection, another session, stays.
        on_phone.tell(r#"{"op":"ping"}"#).await;
        assert_eq!(on_phone.next(20).await, json!({"op": "pong"}));

        // An owner ends every session of the member (resetting their second factors): the
        // phone's connection closes too.
        let reset = Instant::now();
        json_with_status(
            app.post_as(
                &format!("/auth/api/v1/members/{user}/mfa/reset"),
                &owner,
                &json!({}),
            )
            .await,
            200,
        )
        .await;
        let (code, _) = on_phone.closed(15).await;
        assert_eq!(code, 4001);
        assert!(reset.elapsed() < REVOCATION_BOUND, "{:?}", reset.elapsed());
        app.stop().await;
    }
);

database_test!(
    an_expired_token_closes_its_connections_with_4001,
    |backend| async move {
        let lifetime = Duration::from_secs(6);
        let app = spawn_app_with(
            backend,
            AppOptions::unlimited_and(move |config| config.auth.token_lifetime = lifetime),
        )
        .await;
        let tenant = app.create_tenant("acme");
        let issued = Instant::now();
        let token = app.token(&tenant, &new_id(), "editor").await;
        let (mut socket, mut stream) = both(&app, &token).await;
        // `exp` is in whole seconds: the token expires at most a second before `lifetime` is up.
        let expired = issued + lifetime - Duration::from_secs(1);
        assert!(
            Instant::now() < expired,
            "the clients took the token's whole lifetime to connect"
        );
        both_close_with(4001, expired, &mut socket, &mut stream).await;
        app.stop().await;
    }
);

database_test!(
    a_removed_or_disabled_member_is_closed_with_4003,
    |backend| async move {
        let app = spawn(backend).await;
        let (tenant, owner) = acme_member(&app, "owner").await;

        // The membership ends, with nothing announced on this host (another host, or a
        // maintenance statement): the periodic check sees it.
        let removed = new_id();
        let token = app.token(&tenant, &removed, "editor").await;
        let (mut socket, mut stream) = both(&app, &token).await;
        let ended = Instant::now();
        let deleted = execute(
            &app,
            "DELETE FROM memberships WHERE user_id = $1 AND tenant_id = $2",
            &[&removed, &tenant],
        )
        .await;
        assert_eq!(deleted, 1);
        both_close_with(4003, ended, &mut socket, &mut stream).await;

        // An owner disables a member's account.
        let disabled = new_id();
        let token = app.token(&tenant, &disabled, "viewer").await;
        let (mut socket, mut stream) = both(&app, &token).await;
        let ended = Instant::now();
        json_with_status(
            app.post_as(
                &format!("/auth/api/v1/members/{disabled}/disable"),
                &owner,
                &json!({}),
            )
            .await,
            200,
        )
        .await;
        both_close_with(4003, ended, &mut socket, &mut stream).await;
        app.stop().await;
    }
);

database_test!(
    a_disabled_tenant_closes_its_connections_with_4003,
    |backend| async move {
        let app = spawn(backend).await;
        let tenant = app.create_tenant("acme");
        let other = app.create_tenant("globex");
        let (mut socket, mut stream) =
            both(&app, &app.token(&tenant, &new_id(), "owner").await).await;
        let mut elsewhere = ws(
            &app,
            &app.token(&other, &new_id(), "owner").await,
            &["core.timeline"],
            &["--interactive"],
        );
        elsewhere.subscribed(1).await;

        let operator = app.state().operator_token.expose().to_owned();
        let disabled = Instant::now();
        json_with_status(
            app.post_as(
                "/core/api/operator/tenants/acme/disable",
                &operator,
                &json!({}),
            )
            .await,
            200,
        )
        .await;
        both_close_with(4003, disabled, &mut socket, &mut stream).await;
        eprintln!(
            "the disabled tenant's connections closed {:?} after the operator's request",
            disabled.elapsed()
        );
        // Another tenant's connection stays.
        elsewhere.tell(r#"{"op":"ping"}"#).await;
        assert_eq!(elsewhere.next(20).await, json!({"op": "pong"}));
        app.stop().await;
    }
);

database_test!(
    a_member_turned_guest_keeps_only_the_topics_guests_may_read,
    |backend| async move {
        let app = spawn(backend).await;
        let tenant = app.create_tenant("acme");
        let member = new_id();
        let token = app.token(&tenant, &member, "editor").await;
        let mut socket = ws(
            &app,
            &token,
            &["core.timeline", "core.inbox"],
            &["--interactive"],
        );
        socket.subscribed(2).await;
        let mut stream = sse(&app, &token, "core.timeline,core.inbox", &[]);
        stream.opened().await;

        // The user's type changes to guest (nothing announced: the periodic check sees it).
        let changed = Instant::now();
        execute(
            &app,
            "UPDATE users SET user_type = 'guest' WHERE id = $1",
            &[&member],
        )
        .await;
        let lines = socket.until(15, |line| line["op"] == "error").await;
        let refused = lines.last().unwrap();
        assert_eq!(refused["topic"], "core.timeline", "{lines:?}");
        assert_eq!(refused["status"], 403);
        assert!(
            changed.elapsed() < REVOCATION_BOUND,
            "{:?}",
            changed.elapsed()
        );
        let lines = stream.until(15, |line| line["event"] == "error").await;
        let refused = &lines.last().unwrap()["data"];
        assert_eq!(refused["topic"], "core.timeline", "{lines:?}");
        assert_eq!(refused["status"], 403);
        assert!(
            changed.elapsed() < REVOCATION_BOUND,
            "{:?}",
            changed.elapsed()
        );

        // The connection stays, with its inbox; the timeline is refused to it from now on.
        socket
            .tell(r#"{"op":"subscribe","topic":"core.timeline"}"#)
            .await;
        let again = socket.next(20).await;
        assert_eq!(again["op"], "error", "{again}");
        assert_eq!(again["status"], 403);
        socket
            .tell(r#"{"op":"subscribe","topic":"core.inbox"}"#)
            .await;
        assert_eq!(
            socket.next(20).await,
            json!({"op": "subscribed", "topic": "core.inbox"})
        );
        app.stop().await;
    }
);

database_test!(
    connection_and_subscription_limits_answer_4029_and_429,
    |backend| async move {
        let app = spawn_app_with(
            backend,
            AppOptions::unlimited_and(|config| {
                config.realtime.max_connections_per_user = 2;
                config.realtime.max_subscriptions = 2;
            }),
        )
        .await;
        let (tenant, token) = acme_member(&app, "editor").await;
        let task = app
            .create_entity(&token, "task", json!({"title": "Ship"}))
            .await;
        let entity_topic = format!("core.entity.{}", task["entity_id"].as_str().unwrap());

        // Three topics on a connection that may hold two: one answers 429.
        let mut first = ws(
            &app,
            &token,
            &["core.timeline", "core.inbox", &entity_topic],
            &[],
        );
        let mut statuses = Vec::new();
        for _ in 0..3 {
            let frame = first.next(20).await;
            statuses.push(match frame["op"].as_str() {
                Some("subscribed") => 200,
                _ => {
                    assert_eq!(frame["op"], "error", "{frame}");
                    frame["status"].as_u64().unwrap()
                }
            });
        }
        statuses.sort();
        assert_eq!(statuses, [200, 200, 429]);

        // The user's second connection is let in, the third is closed with 4029, and an event
        // stream over the limit is refused with 429.
        let mut second = sse(&app, &token, "core.inbox", &[]);
        second.opened().await;
        let mut third = ws(&app, &token, &["core.inbox"], &[]);
        assert_eq!(third.next(20).await, json!({"closed": 4029}));
        let mut fourth = sse(&app, &token, "core.inbox", &[]);
        assert_eq!(fourth.next(20).await, json!({"refused": 429}));

        // Another user of the tenant has connections of their own.
        let other = app.token(&tenant, &new_id(), "viewer").await;
        let mut theirs = ws(&app, &other, &["core.inbox"], &[]);
        theirs.subscribed(1).await;
        app.stop().await;
    }
);

database_test!(
    a_client_that_does_not_read_is_closed_with_4008,
    |backend| async move {
        let app = spawn_app_with(
            backend,
            AppOptions::unlimited_and(|config| config.realtime.send_queue = 64),
        )
        .await;
        let (_, token) = acme_member(&app, "editor").await;
        // A small entity whose topic tells when the host has fanned out everything before its
        // change (the hub hands events out in the log's order).
        let marker = app
            .create_entity(&token, "task", json!({"title": "Marker"}))
            .await["entity_id"]
            .as_str()
            .unwrap()
            .to_owned();
        let mut watching = ws(&app, &token, &[&format!("core.entity.{marker}")], &[]);
        watching.subscribed(1).await;
        // The client subscribes, then reads nothing, through a small socket buffer.
        let mut stalled = ws(
            &app,
            &token,
            &["core.timeline"],
            &["--hold", "--receive-buffer", "4096"],
        );
        assert_eq!(stalled.next(20).await, json!({"holding": true}));

        // Tasks of six 9 kB fields: each is an `entity.created` and six `entity.field_set`
        // events of about 9 kB; 150 of them, about 8 MB, are far more than the sockets' buffers
        // (the host's side grows to a few megabytes) and 64 queued frames.
        let value = "x".repeat(9_000);
        let fields: serde_json::Map<String, Value> = (0..6)
            .map(|field| (format!("field_{field}"), json!(value)))
            .collect();
        let count = 150;
        for _ in 0..count {
            app.create_entity(&token, "task", Value::Object(fields.clone()))
                .await;
        }
        json_with_status(
            app.intention(
                &token,
                "entity.update",
                json!({"entity_id": marker, "fields": {"fanned_out": true}}),
            )
            .await,
            200,
        )
        .await;
        watching
            .until(30, |line| line["data"]["data"]["field"] == "fanned_out")
            .await;

        // Reading now, the client gets what was on its way, then the close.
        stalled.tell("").await;
        let (code, before) = stalled.closed(60).await;
        assert_eq!(code, 4008);
        let events = before.iter().filter(|line| line["op"] == "event").count();
        assert!(
            events < count * 7,
            "all {} events arrived: nothing filled",
            count * 7
        );
        eprintln!(
            "the stalled client got {events} of {} events before 4008",
            count * 7
        );
        app.stop().await;
    }
);

database_test!(
    a_stopping_host_closes_with_1001_and_the_client_resumes_on_the_next_host,
    |backend| async move {
        let first = spawn(backend).await;
        let (_, token) = acme_member(&first, "editor").await;
        let mut socket = ws(&first, &token, &["core.timeline"], &[]);
        socket.subscribed(1).await;
        let mut stream = sse(&first, &token, "core.timeline", &[]);
        stream.opened().await;
        for index in 0..3 {
            first
                .create_entity(
                    &token,
                    "task",
                    json!({ "title": format!("Before {index}") }),
                )
                .await;
        }
        let first_event = socket.until(20, |line| line["op"] == "event").await;
        let first_sse = stream.until(20, |line| line.get("id").is_some()).await;

        // The host stops: both close with 1001. The last cursor each saw is where it resumes.
        let database = first.stop_keeping_database().await;
        let (code, socket_lines) = socket.closed(20).await;
        assert_eq!(code, 1001);
        let (code, stream_lines) = stream.closed(20).await;
        assert_eq!(code, 1001);
        let last_frame = first_event
            .iter()
            .chain(&socket_lines)
            .rfind(|line| line["op"] == "event")
            .unwrap()
            .clone();
        let last_streamed = first_sse
            .iter()
            .chain(&stream_lines)
            .rfind(|line| line.get("id").is_some())
            .unwrap()
            .clone();
        let cursor = last_frame["cursor"].as_str().unwrap();
        let last_event_id = last_streamed["id"].as_str().unwrap();

        // The next host, on the same database: more happens before and after the clients
        // come back.
        let second = spawn_app_with(
            backend,
            AppOptions {
                database: Some(database),
                ..AppOptions::unlimited()
            },
        )
        .await;
        for index in 0..2 {
            second
                .create_entity(
                    &token,
                    "task",
                    json!({ "title": format!("Between {index}") }),
                )
                .await;
        }
        let mut socket = ws(&second, &token, &["core.timeline"], &["--since", cursor]);
        socket.subscribed(1).await;
        let mut stream = sse(
            &second,
            &token,
            "core.timeline",
            &["--last-event-id", last_event_id],
        );
        stream.opened().await;
        second
            .create_entity(&token, "task", json!({ "title": "After" }))
            .await;

        // The REST timeline of the second host is the reference: 6 creations in all.
        let all = crate::helpers::eventually(20, "the timeline", || async {
            let page = json_with_status(
                second
                    .get_as("/core/api/v1/timeline?direction=asc&limit=100", &token)
                    .await,
                200,
            )
            .await;
            let items = page["data"].as_array().unwrap().clone();
            let created = items
                .iter()
                .filter(|item| item["type"] == "entity.created")
                .count();
            (created == 6).then_some(items)
        })
        .await;
        let ids: Vec<&str> = all
            .iter()
            .map(|item| item["id"].as_str().unwrap())
            .collect();
        let after = |id: &str| -> Vec<String> {
            let at = ids.iter().position(|known| *known == id).unwrap();
            ids[at + 1..].iter().map(|id| (*id).to_owned()).collect()
        };
        // Everything after the last event each client saw on the first host, whether it came
        // while they were away or after.
        let expected = after(last_frame["data"]["id"].as_str().unwrap());
        assert!(expected.len() >= 3, "{expected:?}");
        let mut resumed = Vec::new();
        while resumed.len() < expected.len() {
            let frame = socket.next(20).await;
            assert_eq!(frame["op"], "event", "{frame}");
            resumed.push(frame["data"]["id"].as_str().unwrap().to_owned());
        }
        assert_eq!(resumed, expected, "nothing missed, nothing twice, in order");

        let expected = after(last_streamed["data"]["data"]["id"].as_str().unwrap());
        let mut streamed = Vec::new();
        while streamed.len() < expected.len() {
            let event = stream.next(20).await;
            streamed.push(event["data"]["data"]["id"].as_str().unwrap().to_owned());
        }
        assert_eq!(streamed, expected, "the stream resumes the same way");
        second.stop().await;
    }
);
