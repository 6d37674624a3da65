//! The voip engine (the real `voip.wasm` built by the harness) through the real host: starting
//! calls, the join / leave / end state machine with its 409s and durations, calls missed when
//! nobody answers before the ring timeout (a job of the host's durable work worker), call
//! history paging and filtering, roles, tenant isolation, provisioning and deprovisioning, the
//! events the calls publish, and the engine's OpenAPI entries.

use std::time::Duration;

use serde_json::{Value, json};
use tessera_host::config::Config;

use crate::database_test;
use crate::helpers::{
    AppOptions, Backend, TestApp, TestDatabase, eventually, json_with_status, spawn_app_with,
    without_rate_limits,
};

// ---------------------------------------------------------------------------------------------
// The host, a tenant and its users
// ---------------------------------------------------------------------------------------------

/// A host with the voip engine and the named test components, without rate limits.
async fn voip_host(backend: Backend, components: &[&'static str]) -> TestApp {
    let database = TestDatabase::new(backend).await;
    crate::components::install_engines(&database.data_dir.join("plugins"), &["voip"]);
    spawn_app_with(
        backend,
        AppOptions {
            plugins: components.to_vec(),
            database: Some(database),
            configure: Some(Box::new(|config: &mut Config| without_rate_limits(config))),
            ..AppOptions::default()
        },
    )
    .await
}

/// A provisioned user and a token of theirs.
struct Member {
    id: String,
    token: String,
}

/// A tenant provisioned on the voip engine: an owner (`alice`), three editors and a viewer.
struct Tenant {
    id: String,
    alice: Member,
    bob: Member,
    carol: Member,
    dave: Member,
    viewer: Member,
}

async fn provision_user(app: &TestApp, tenant_id: &str, user_id: &str) {
    let body = json!({
        "tenant_id": tenant_id, "user_id": user_id, "email": format!("{user_id}@example.com"),
        "first_name": "Test", "last_name": "User", "type": "user",
    });
    let response = app
        .post_signed("/voip/api/internal/voip/provision/user", &body)
        .await;
    json_with_status(response, 200).await;
}

async fn member(app: &TestApp, tenant_id: &str, role: &str) -> Member {
    let id = uuid::Uuid::new_v4().to_string();
    provision_user(app, tenant_id, &id).await;
    Member {
        token: app.token(tenant_id, &id, role).await,
        id,
    }
}

async fn tenant(app: &TestApp) -> Tenant {
    let id = uuid::Uuid::new_v4().to_string();
    let response = app
        .post_signed(
            "/voip/api/internal/voip/provision/tenant",
            &json!({ "tenant_id": id, "tenant_short_id": "acme", "name": "Acme" }),
        )
        .await;
    json_with_status(response, 200).await;
    Tenant {
        alice: member(app, &id, "owner").await,
        bob: member(app, &id, "editor").await,
        carol: member(app, &id, "editor").await,
        dave: member(app, &id, "editor").await,
        viewer: member(app, &id, "viewer").await,
        id,
    }
}

// ---------------------------------------------------------------------------------------------
// Calls through the API
// ---------------------------------------------------------------------------------------------

async fn start_call_response(app: &TestApp, caller: &Member, body: Value) -> reqwest::Response {
    app.post_as("/voip/api/v1/calls", &caller.token, &body)
        .await
}

/// Starts a call from `caller` to `invited` (defaults otherwise); returns the call.
async fn start_call(app: &TestApp, caller: &Member, invited: &[&Member]) -> Value {
    let ids: Vec<&str> = invited.iter().map(|member| member.id.as_str()).collect();
    let body = json!({ "participant_ids": ids });
    json_with_status(start_call_response(app, caller, body).await, 201).await["data"].clone()
}

fn call_id(call: &Value) -> String {
    call["id"].as_str().expect("a call id").to_owned()
}

/// `POST /voip/api/v1/calls/{id}/{action}` as `member`.
async fn act(app: &TestApp, member: &Member, id: &str, action: &str) -> reqwest::Response {
    app.post_as(
        &format!("/voip/api/v1/calls/{id}/{action}"),
        &member.token,
        &json!({}),
    )
    .await
}

/// Acts and expects 200; returns the call after it.
async fn act_ok(app: &TestApp, member: &Member, id: &str, action: &str) -> Value {
    json_with_status(act(app, member, id, action).await, 200).await["data"].clone()
}

/// Acts and expects a 409 with the given message.
async fn act_conflict(app: &TestApp, member: &Member, id: &str, action: &str, message: &str) {
    let body = json_with_status(act(app, member, id, action).await, 409).await;
    assert_eq!(body, json!({ "message": message }), "{action}");
}

/// Acts and expects a 404 `Call not found.`.
async fn act_not_found(app: &TestApp, member: &Member, id: &str, action: &str) {
    let body = json_with_status(act(app, member, id, action).await, 404).await;
    assert_eq!(body, json!({ "message": "Call not found." }), "{action}");
}

async fn show(app: &TestApp, member: &Member, id: &str) -> reqwest::Response {
    app.get_as(&format!("/voip/api/v1/calls/{id}"), &member.token)
        .await
}

async fn show_ok(app: &TestApp, member: &Member, id: &str) -> Value {
    json_with_status(show(app, member, id).await, 200).await["data"].clone()
}

/// The whole body of `GET /voip/api/v1/calls{query}` as `member`, expecting 200.
async fn history(app: &TestApp, member: &Member, query: &str) -> Value {
    let response = app
        .get_as(&format!("/voip/api/v1/calls{query}"), &member.token)
        .await;
    json_with_status(response, 200).await
}

/// The ids of a list body's calls, in order.
fn ids(body: &Value) -> Vec<String> {
    body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(call_id)
        .collect()
}

/// The participant entry of `user_id` in a call.
fn participant<'a>(call: &'a Value, user_id: &str) -> &'a Value {
    call["participants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|participant| participant["user_id"] == user_id)
        .expect("a participant")
}

fn instant(value: &Value) -> chrono::DateTime<chrono::FixedOffset> {
    chrono::DateTime::parse_from_rfc3339(value.as_str().expect("a timestamp")).unwrap()
}

/// `ended_at − answered_at` of a call in whole seconds.
fn elapsed_seconds(call: &Value) -> i64 {
    (instant(&call["ended_at"]) - instant(&call["answered_at"])).num_seconds()
}

/// Deprovisions a user of the tenant on the voip engine (signed, as the orchestrator does).
async fn deprovision_user(app: &TestApp, tenant_id: &str, user_id: &str) {
    let body = json!({ "tenant_id": tenant_id, "user_id": user_id });
    let response = app
        .post_signed("/voip/api/internal/voip/deprovision/user", &body)
        .await;
    json_with_status(response, 200).await;
}

/// How many call records of the voip engine the database holds.
async fn stored_calls(app: &TestApp) -> i64 {
    app.scalar("SELECT COUNT(*) FROM engine_kv WHERE engine_code = 'voip' AND key LIKE 'calls/%'")
        .await
}

const ALREADY_ENDED: &str = "The call has already ended.";
const NOT_JOINED: &str = "You have not joined the call.";
const ALREADY_JOINED: &str = "You have already joined the call.";

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

database_test!(
    a_started_call_rings_and_only_its_participants_see_it,
    |backend| async move {
        let app = voip_host(backend, &[]).await;
        let tenant = tenant(&app).await;
        let body = json!({
            "participant_ids": [tenant.bob.id, tenant.carol.id],
            "kind": "video",
            "ring_timeout_seconds": 120,
        });
        let call = json_with_status(start_call_response(&app, &tenant.alice, body).await, 201)
            .await["data"]
            .clone();
        let id = call_id(&call);
        assert_eq!(uuid::Uuid::parse_str(&id).unwrap().get_version_num(), 7);
        let created_at = call["created_at"].clone();
        instant(&created_at);
        assert_eq!(
            call,
            json!({
                "id": id,
                "kind": "video",
                "status": "ringing",
                "initiator_id": tenant.alice.id,
                "ring_timeout_seconds": 120,
                "participants": [
                    { "user_id": tenant.alice.id, "state": "joined", "joined_at": created_at, "left_at": null },
                    { "user_id": tenant.bob.id, "state": "invited", "joined_at": null, "left_at": null },
                    { "user_id": tenant.carol.id, "state": "invited", "joined_at": null, "left_at": null },
                ],
                "created_at": created_at,
                "answered_at": null,
                "ended_at": null,
                "duration_seconds": null,
            })
        );
        // Defaults: audio, the tenant's 60 seconds.
        let default_call = start_call(&app, &tenant.bob, &[&tenant.alice]).await;
        assert_eq!(default_call["kind"], "audio");
        assert_eq!(default_call["ring_timeout_seconds"], 60);

        for member in [&tenant.alice, &tenant.bob, &tenant.carol] {
            assert_eq!(show_ok(&app, member, &id).await, call);
        }
        // Someone not in the call, owner or not, does not find it.
        for (member, hidden_id) in [
            (&tenant.dave, id.clone()),
            (&tenant.carol, call_id(&default_call)),
        ] {
            let body = json_with_status(show(&app, member, &hidden_id).await, 404).await;
            assert_eq!(body, json!({ "message": "Call not found." }));
        }
        json_with_status(show(&app, &tenant.alice, "no-such-call").await, 404).await;
        let response = app
            .get_as(&format!("/voip/api/v1/calls/{id}?x=1"), &tenant.alice.token)
            .await;
        json_with_status(response, 400).await;
        assert_eq!(
            ids(&history(&app, &tenant.dave, "").await),
            Vec::<String>::new()
        );
    }
);

database_test!(
    join_leave_and_end_follow_the_call_state_machine,
    |backend| async move {
        let app = voip_host(backend, &[]).await;
        let tenant = tenant(&app).await;
        let call = start_call(&app, &tenant.alice, &[&tenant.bob, &tenant.carol]).await;
        let id = call_id(&call);

        // Nobody joined yet: only the initiator is in it, and invitees cannot leave or end it.
        act_conflict(&app, &tenant.alice, &id, "join", ALREADY_JOINED).await;
        act_conflict(&app, &tenant.bob, &id, "leave", NOT_JOINED).await;
        act_conflict(&app, &tenant.bob, &id, "end", NOT_JOINED).await;
        for action in ["join", "leave", "end"] {
            act_not_found(&app, &tenant.dave, &id, action).await;
            act_not_found(&app, &tenant.alice, "no-such-call", action).await;
        }

        // Bob answers: the call is active.
        let answered = act_ok(&app, &tenant.bob, &id, "join").await;
        assert_eq!(answered["status"], "active");
        let answered_at = answered["answered_at"].clone();
        instant(&answered_at);
        assert_eq!(
            participant(&answered, &tenant.bob.id),
            &json!({ "user_id": tenant.bob.id, "state": "joined", "joined_at": answered_at, "left_at": null })
        );
        assert_eq!(answered["ended_at"], Value::Null);
        assert_eq!(answered["duration_seconds"], Value::Null);
        act_conflict(&app, &tenant.bob, &id, "join", ALREADY_JOINED).await;

        // Carol joins later; the answer time stays the first one.
        let joined = act_ok(&app, &tenant.carol, &id, "join").await;
        assert_eq!(joined["answered_at"], answered_at);
        assert_eq!(participant(&joined, &tenant.carol.id)["state"], "joined");

        // Alice leaves: two remain, the call goes on; she may come back.
        let left = act_ok(&app, &tenant.alice, &id, "leave").await;
        assert_eq!(left["status"], "active");
        let alice = participant(&left, &tenant.alice.id);
        assert_eq!(alice["state"], "left");
        instant(&alice["left_at"]);
        act_conflict(&app, &tenant.alice, &id, "leave", NOT_JOINED).await;
        let back = act_ok(&app, &tenant.alice, &id, "join").await;
        assert_eq!(participant(&back, &tenant.alice.id)["state"], "joined");
        assert_eq!(participant(&back, &tenant.alice.id)["left_at"], Value::Null);

        // Carol ends it for everyone: ended, with its duration.
        tokio::time::sleep(Duration::from_millis(1100)).await;
        let ended = act_ok(&app, &tenant.carol, &id, "end").await;
        assert_eq!(ended["status"], "ended");
        let ended_at = ended["ended_at"].clone();
        let duration = ended["duration_seconds"].as_i64().expect("a duration");
        assert!(duration >= 1, "{ended}");
        assert_eq!(duration, elapsed_seconds(&ended));
        for participant in ended["participants"].as_array().unwrap() {
            assert_eq!(participant["state"], "left", "{participant}");
            assert_eq!(participant["left_at"], ended_at, "{participant}");
        }
        assert_eq!(show_ok(&app, &tenant.bob, &id).await, ended);

        // An ended call takes nothing more, and nothing changes.
        for member in [&tenant.alice, &tenant.bob, &tenant.carol] {
            for action in ["join", "leave", "end"] {
                act_conflict(&app, member, &id, action, ALREADY_ENDED).await;
            }
        }
        act_not_found(&app, &tenant.dave, &id, "join").await;
        assert_eq!(show_ok(&app, &tenant.alice, &id).await, ended);
    }
);

database_test!(
    two_person_calls_end_when_one_leaves_and_ringing_calls_end_missed,
    |backend| async move {
        let app = voip_host(backend, &[]).await;
        let tenant = tenant(&app).await;

        // Answered, then the callee hangs up: ended with its duration.
        let id = call_id(&start_call(&app, &tenant.alice, &[&tenant.bob]).await);
        act_ok(&app, &tenant.bob, &id, "join").await;
        tokio::time::sleep(Duration::from_millis(1100)).await;
        let ended = act_ok(&app, &tenant.bob, &id, "leave").await;
        assert_eq!(ended["status"], "ended");
        assert!(ended["duration_seconds"].as_i64().unwrap() >= 1, "{ended}");
        assert_eq!(ended["duration_seconds"], json!(elapsed_seconds(&ended)));
        assert_eq!(participant(&ended, &tenant.alice.id)["state"], "left");
        act_conflict(&app, &tenant.alice, &id, "end", ALREADY_ENDED).await;

        // The initiator gives up on a ringing call (leave or end): missed, duration 0.
        for action in ["leave", "end"] {
            let id = call_id(&start_call(&app, &tenant.alice, &[&tenant.bob, &tenant.carol]).await);
            let missed = act_ok(&app, &tenant.alice, &id, action).await;
            assert_eq!(missed["status"], "missed", "{action}");
            assert_eq!(missed["duration_seconds"], 0);
            assert_eq!(missed["answered_at"], Value::Null);
            instant(&missed["ended_at"]);
            assert_eq!(participant(&missed, &tenant.alice.id)["state"], "left");
            assert_eq!(
                participant(&missed, &tenant.bob.id),
                &json!({ "user_id": tenant.bob.id, "state": "invited", "joined_at": null, "left_at": null })
            );
            act_conflict(&app, &tenant.bob, &id, "join", ALREADY_ENDED).await;
        }
    }
);

database_test!(
    an_unanswered_call_is_missed_after_its_ring_timeout,
    |backend| async move {
        let app = voip_host(backend, &[]).await;
        let tenant = tenant(&app).await;
        let one_second = |invited: &Member| json!({ "participant_ids": [invited.id], "ring_timeout_seconds": 1 });
        let unanswered = json_with_status(
            start_call_response(&app, &tenant.alice, one_second(&tenant.bob)).await,
            201,
        )
        .await["data"]
            .clone();
        let answered = json_with_status(
            start_call_response(&app, &tenant.alice, one_second(&tenant.carol)).await,
            201,
        )
        .await["data"]
            .clone();
        let (unanswered_id, answered_id) = (call_id(&unanswered), call_id(&answered));
        act_ok(&app, &tenant.carol, &answered_id, "join").await;

        // The host's work worker runs the ring timeout job.
        let missed = eventually(15, "the unanswered call to be missed", || async {
            let call = show_ok(&app, &tenant.bob, &unanswered_id).await;
            (call["status"] == "missed").then_some(call)
        })
        .await;
        assert_eq!(missed["duration_seconds"], 0);
        assert_eq!(missed["answered_at"], Value::Null);
        let ended_at = instant(&missed["ended_at"]);
        assert!(
            ended_at - instant(&missed["created_at"]) >= chrono::Duration::seconds(1),
            "{missed}"
        );
        assert_eq!(
            participant(&missed, &tenant.alice.id)["left_at"],
            missed["ended_at"]
        );
        assert_eq!(participant(&missed, &tenant.bob.id)["state"], "invited");
        act_conflict(&app, &tenant.bob, &unanswered_id, "join", ALREADY_ENDED).await;

        // Both jobs ran (done jobs leave the queue); the answered call's changed nothing.
        eventually(15, "both ring timeout jobs to run", || async {
            let pending = app
                .scalar("SELECT COUNT(*) FROM engine_work WHERE engine_code = 'voip'")
                .await;
            (pending == 0).then_some(())
        })
        .await;
        let still_active = show_ok(&app, &tenant.carol, &answered_id).await;
        assert_eq!(still_active["status"], "active");
        assert_eq!(still_active["ended_at"], Value::Null);
        assert_eq!(show_ok(&app, &tenant.bob, &unanswered_id).await, missed);
    }
);

database_test!(
    call_history_is_newest_first_filtered_and_cursor_paged,
    |backend| async move {
        let app = voip_host(backend, &[]).await;
        let tenant = tenant(&app).await;
        // Five calls between Alice and Bob (alternating who calls), the 2nd and 4th missed.
        let mut created = Vec::new();
        for index in 0..5 {
            let (caller, callee) = if index % 2 == 0 {
                (&tenant.alice, &tenant.bob)
            } else {
                (&tenant.bob, &tenant.alice)
            };
            let id = call_id(&start_call(&app, caller, &[callee]).await);
            if index % 2 == 1 {
                act_ok(&app, caller, &id, "end").await;
            }
            created.push(id);
        }
        // A call Bob is not in.
        let other = call_id(&start_call(&app, &tenant.alice, &[&tenant.carol]).await);
        let newest_first: Vec<String> = created.iter().rev().cloned().collect();

        let all = history(&app, &tenant.bob, "").await;
        assert_eq!(ids(&all), newest_first);
        assert_eq!(all["meta"]["has_more"], false);
        assert_eq!(
            all["data"][0],
            show_ok(&app, &tenant.bob, &created[4]).await
        );
        let alice_ids = ids(&history(&app, &tenant.alice, "").await);
        assert_eq!(alice_ids[0], other);
        assert_eq!(alice_ids[1..], newest_first[..]);
        assert_eq!(ids(&history(&app, &tenant.carol, "").await), vec![other]);

        // Pages of two: no overlap, nothing skipped.
        let mut walked = Vec::new();
        let mut query = "?limit=2".to_owned();
        let mut pages = 0;
        loop {
            let page = history(&app, &tenant.bob, &query).await;
            pages += 1;
            let page_ids = ids(&page);
            assert!(page_ids.len() <= 2);
            walked.extend(page_ids);
            if page["meta"]["has_more"] == false {
                break;
            }
            let cursor = page["meta"]["next_cursor"].as_str().unwrap();
            query = format!("?limit=2&cursor={cursor}");
        }
        assert_eq!((pages, walked), (3, newest_first.clone()));

        // Status filters keep pages full.
        let missed = history(&app, &tenant.bob, "?status=missed").await;
        assert_eq!(ids(&missed), vec![created[3].clone(), created[1].clone()]);
        let first = history(&app, &tenant.bob, "?status=ringing&limit=2").await;
        assert_eq!(ids(&first), vec![created[4].clone(), created[2].clone()]);
        assert_eq!(first["meta"]["has_more"], true);
        let cursor = first["meta"]["next_cursor"].as_str().unwrap();
        let second = history(
            &app,
            &tenant.bob,
            &format!("?status=ringing&limit=2&cursor={cursor}"),
        )
        .await;
        assert_eq!(ids(&second), vec![created[0].clone()]);
        assert_eq!(second["meta"]["has_more"], false);
        assert_eq!(
            ids(&history(&app, &tenant.bob, "?status=ended").await),
            Vec::<String>::new()
        );

        // Bad queries.
        for (query, status, errors) in [
            ("?status=busy", 422, json!({ "status": ["in"] })),
            ("?limit=0", 422, json!({ "limit": ["min:1"] })),
            ("?limit=x", 422, json!({ "limit": ["integer"] })),
            (
                "?cursor=not-a-cursor!",
                422,
                json!({ "cursor": ["invalid"] }),
            ),
            ("?sort=created_at", 400, Value::Null),
        ] {
            let response = app
                .get_as(&format!("/voip/api/v1/calls{query}"), &tenant.bob.token)
                .await;
            let body = json_with_status(response, status).await;
            if status == 422 {
                assert_eq!(body["errors"], errors, "{query}");
            }
        }
    }
);

database_test!(
    invalid_calls_are_refused_and_store_nothing,
    |backend| async move {
        let app = voip_host(backend, &[]).await;
        let tenant = tenant(&app).await;
        let (bob, carol) = (tenant.bob.id.clone(), tenant.carol.id.clone());
        let unknown = uuid::Uuid::new_v4().to_string();
        let too_many: Vec<String> = (0..51).map(|_| bob.clone()).collect();
        for (body, errors) in [
            (json!({}), json!({ "participant_ids": ["required"] })),
            (
                json!({ "participant_ids": null }),
                json!({ "participant_ids": ["required"] }),
            ),
            (
                json!({ "participant_ids": bob }),
                json!({ "participant_ids": ["array"] }),
            ),
            (
                json!({ "participant_ids": [] }),
                json!({ "participant_ids": ["min:1"] }),
            ),
            (
                json!({ "participant_ids": too_many }),
                json!({ "participant_ids": ["max:50"] }),
            ),
            (
                json!({ "participant_ids": [bob, tenant.alice.id, unknown, 7, bob] }),
                json!({
                    "participant_ids.1": ["not_self"],
                    "participant_ids.2": ["exists"],
                    "participant_ids.3": ["string"],
                    "participant_ids.4": ["distinct"],
                }),
            ),
            (
                json!({ "participant_ids": [carol], "kind": "fax", "ring_timeout_seconds": 0 }),
                json!({ "kind": ["in"], "ring_timeout_seconds": ["min:1"] }),
            ),
            (
                json!({ "participant_ids": [carol], "kind": 1, "ring_timeout_seconds": 301 }),
                json!({ "kind": ["string"], "ring_timeout_seconds": ["max:300"] }),
            ),
            (
                json!({ "participant_ids": [carol], "ring_timeout_seconds": 1.5 }),
                json!({ "ring_timeout_seconds": ["integer"] }),
            ),
            (
                json!({ "participant_ids": [carol], "ring_timeout_seconds": "10" }),
                json!({ "ring_timeout_seconds": ["integer"] }),
            ),
            (json!([carol]), json!({ "body": ["object"] })),
        ] {
            let response = start_call_response(&app, &tenant.alice, body.clone()).await;
            let answer = json_with_status(response, 422).await;
            assert_eq!(
                answer,
                json!({ "message": "The given data was invalid.", "errors": errors }),
                "{body}"
            );
        }
        let response = app
            .post_raw("/voip/api/v1/calls", "application/json", "{not json")
            .await;
        assert_eq!(response.status(), 401);
        let response = app
            .client
            .post(app.url("/voip/api/v1/calls"))
            .bearer_auth(&tenant.alice.token)
            .header("content-type", "application/json")
            .body("{not json")
            .send()
            .await
            .unwrap();
        json_with_status(response, 400).await;
        // Nothing was stored, for anyone.
        for member in [&tenant.alice, &tenant.bob, &tenant.carol] {
            assert_eq!(ids(&history(&app, member, "").await), Vec::<String>::new());
        }
        assert_eq!(stored_calls(&app).await, 0);
    }
);

database_test!(
    viewers_write_nothing_but_read_their_calls,
    |backend| async move {
        let app = voip_host(backend, &[]).await;
        let tenant = tenant(&app).await;
        let body = json!({ "participant_ids": [tenant.bob.id] });
        let refused =
            json_with_status(start_call_response(&app, &tenant.viewer, body).await, 403).await;
        assert_eq!(
            refused,
            json!({ "message": "This action is unauthorized." })
        );
        assert_eq!(
            ids(&history(&app, &tenant.viewer, "").await),
            Vec::<String>::new()
        );
        assert_eq!(
            ids(&history(&app, &tenant.bob, "").await),
            Vec::<String>::new()
        );

        // A viewer may be called and sees the call, but cannot join, leave or end it.
        let call = start_call(&app, &tenant.alice, &[&tenant.viewer]).await;
        let id = call_id(&call);
        assert_eq!(show_ok(&app, &tenant.viewer, &id).await, call);
        assert_eq!(
            ids(&history(&app, &tenant.viewer, "").await),
            vec![id.clone()]
        );
        for action in ["join", "leave", "end"] {
            json_with_status(act(&app, &tenant.viewer, &id, action).await, 403).await;
        }
        assert_eq!(show_ok(&app, &tenant.alice, &id).await, call);
    }
);

database_test!(tenants_never_see_each_others_calls, |backend| async move {
    let app = voip_host(backend, &[]).await;
    let first = tenant(&app).await;
    let second = tenant(&app).await;
    let call = start_call(&app, &first.alice, &[&first.bob]).await;
    let id = call_id(&call);

    // Another tenant's user with the same role finds nothing.
    json_with_status(show(&app, &second.alice, &id).await, 404).await;
    for action in ["join", "leave", "end"] {
        act_not_found(&app, &second.bob, &id, action).await;
    }
    assert_eq!(
        ids(&history(&app, &second.alice, "").await),
        Vec::<String>::new()
    );
    // The same user id in another tenant is another user: a token of the first tenant's
    // Bob for the second tenant sees nothing of the first.
    let bob_elsewhere = Member {
        id: first.bob.id.clone(),
        token: app.token(&second.id, &first.bob.id, "editor").await,
    };
    json_with_status(show(&app, &bob_elsewhere, &id).await, 404).await;
    assert_eq!(
        ids(&history(&app, &bob_elsewhere, "").await),
        Vec::<String>::new()
    );
    // Another tenant's users cannot be called.
    let body = json!({ "participant_ids": [second.bob.id] });
    let answer = json_with_status(start_call_response(&app, &first.alice, body).await, 422).await;
    assert_eq!(answer["errors"], json!({ "participant_ids.0": ["exists"] }));
    assert_eq!(show_ok(&app, &first.bob, &id).await, call);
});

database_test!(
    deprovisioning_a_user_removes_their_history,
    |backend| async move {
        let app = voip_host(backend, &[]).await;
        let tenant = tenant(&app).await;
        // Bob is in an active call with Alice, and in a missed call with Carol; Alice and
        // Carol have a call of their own.
        let active = call_id(&start_call(&app, &tenant.alice, &[&tenant.bob]).await);
        act_ok(&app, &tenant.bob, &active, "join").await;
        let missed = call_id(&start_call(&app, &tenant.bob, &[&tenant.carol]).await);
        act_ok(&app, &tenant.bob, &missed, "end").await;
        let unrelated = call_id(&start_call(&app, &tenant.alice, &[&tenant.carol]).await);
        assert_eq!(stored_calls(&app).await, 3);

        deprovision_user(&app, &tenant.id, &tenant.bob.id).await;
        // Bob's history and user record are gone; running it again changes nothing.
        assert_eq!(
            ids(&history(&app, &tenant.bob, "").await),
            Vec::<String>::new()
        );
        let status = json_with_status(
            app.get_as("/voip/api/v1/status", &tenant.bob.token).await,
            200,
        )
        .await;
        assert_eq!(status["data"]["user_provisioned"], false);
        deprovision_user(&app, &tenant.id, &tenant.bob.id).await;
        // Bob left the call he was still in, which ended it; the others keep their history.
        let ended = show_ok(&app, &tenant.alice, &active).await;
        assert_eq!(ended["status"], "ended");
        assert_eq!(participant(&ended, &tenant.bob.id)["state"], "left");
        assert_eq!(
            ids(&history(&app, &tenant.alice, "").await),
            vec![unrelated.clone(), active.clone()]
        );
        assert_eq!(
            ids(&history(&app, &tenant.carol, "").await),
            vec![unrelated.clone(), missed.clone()]
        );
        assert_eq!(stored_calls(&app).await, 3);

        // Once Carol is gone too, the call only the two of them were in goes with her.
        deprovision_user(&app, &tenant.id, &tenant.carol.id).await;
        assert_eq!(
            ids(&history(&app, &tenant.carol, "").await),
            Vec::<String>::new()
        );
        json_with_status(show(&app, &tenant.carol, &missed).await, 404).await;
        assert_eq!(stored_calls(&app).await, 2);
        assert_eq!(
            ids(&history(&app, &tenant.alice, "").await),
            vec![unrelated, active]
        );
    }
);

database_test!(
    deprovisioning_the_tenant_removes_every_call,
    |backend| async move {
        let app = voip_host(backend, &[]).await;
        let other = tenant(&app).await;
        let tenant = tenant(&app).await;
        let id = call_id(&start_call(&app, &tenant.alice, &[&tenant.bob]).await);
        let kept = call_id(&start_call(&app, &other.alice, &[&other.bob]).await);
        let status = json_with_status(
            app.get_as("/voip/api/v1/status", &tenant.alice.token).await,
            200,
        )
        .await;
        assert_eq!(
            status["data"],
            json!({ "engine": "voip", "tenant_provisioned": true, "user_provisioned": true })
        );

        for _ in 0..2 {
            let response = app
                .post_signed(
                    "/voip/api/internal/voip/deprovision/tenant",
                    &json!({ "tenant_id": tenant.id }),
                )
                .await;
            json_with_status(response, 200).await;
        }
        json_with_status(show(&app, &tenant.alice, &id).await, 404).await;
        json_with_status(act(&app, &tenant.bob, &id, "join").await, 404).await;
        assert_eq!(
            ids(&history(&app, &tenant.alice, "").await),
            Vec::<String>::new()
        );
        let status = json_with_status(
            app.get_as("/voip/api/v1/status", &tenant.alice.token).await,
            200,
        )
        .await;
        assert_eq!(
            status["data"],
            json!({ "engine": "voip", "tenant_provisioned": false, "user_provisioned": false })
        );
        // The other tenant keeps its call.
        assert_eq!(ids(&history(&app, &other.bob, "").await), vec![kept]);
        assert_eq!(stored_calls(&app).await, 1);
    }
);

database_test!(calls_publish_identifier_only_events, |backend| async move {
    // The `listener` test component records the events it is delivered; it subscribes to
    // `ping.*` in its descriptor, so the test points its subscription at `call.*`.
    let app = voip_host(backend, &["listener"]).await;
    app.state()
        .engines
        .runtime()
        .services()
        .bus
        .subscriptions()
        .set("listener", vec!["call.*".into()]);
    let tenant = tenant(&app).await;
    let answered = call_id(&start_call(&app, &tenant.alice, &[&tenant.bob]).await);
    act_ok(&app, &tenant.bob, &answered, "join").await;
    let ended = act_ok(&app, &tenant.alice, &answered, "end").await;
    let missed = call_id(&start_call(&app, &tenant.bob, &[&tenant.alice, &tenant.carol]).await);
    act_ok(&app, &tenant.bob, &missed, "leave").await;
    // Refused changes publish nothing.
    json_with_status(act(&app, &tenant.bob, &missed, "join").await, 409).await;

    let payload = |id: &str,
                   initiator: &Member,
                   others: &[&Member],
                   status: &str,
                   duration: Value,
                   actor: &Member| {
        let mut participant_ids = vec![initiator.id.clone()];
        participant_ids.extend(others.iter().map(|member| member.id.clone()));
        json!({
            "call_id": id, "initiator_id": initiator.id, "participant_ids": participant_ids,
            "kind": "audio", "status": status, "duration_seconds": duration,
            "user_id": actor.id,
        })
    };
    let (alice, bob, carol) = (&tenant.alice, &tenant.bob, &tenant.carol);
    let expected = vec![
        (
            "call.started",
            payload(&answered, alice, &[bob], "ringing", Value::Null, alice),
        ),
        (
            "call.answered",
            payload(&answered, alice, &[bob], "active", Value::Null, bob),
        ),
        (
            "call.ended",
            payload(
                &answered,
                alice,
                &[bob],
                "ended",
                ended["duration_seconds"].clone(),
                alice,
            ),
        ),
        (
            "call.started",
            payload(&missed, bob, &[alice, carol], "ringing", Value::Null, bob),
        ),
        (
            "call.missed",
            payload(&missed, bob, &[alice, carol], "missed", json!(0), bob),
        ),
    ];
    let events = eventually(15, "five call events", || async {
        let body = json_with_status(
            app.get_as("/listener/api/v1/events", &tenant.alice.token)
                .await,
            200,
        )
        .await;
        let events = body["data"].as_array().unwrap().clone();
        (events.len() >= expected.len()).then_some(events)
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let body = json_with_status(
        app.get_as("/listener/api/v1/events", &tenant.alice.token)
            .await,
        200,
    )
    .await;
    assert_eq!(body["data"].as_array().unwrap().len(), events.len());
    let mut received: Vec<(String, Value)> = events
        .iter()
        .map(|event| {
            assert_eq!(event["tenant_id"], tenant.id);
            (
                event["event_type"].as_str().unwrap().to_owned(),
                event["payload"].clone(),
            )
        })
        .collect();
    let key = |(event_type, payload): &(String, Value)| {
        (payload["call_id"].to_string(), event_type.clone())
    };
    received.sort_by_key(key);
    let mut expected: Vec<(String, Value)> = expected
        .into_iter()
        .map(|(event_type, payload)| (event_type.to_owned(), payload))
        .collect();
    expected.sort_by_key(key);
    assert_eq!(received, expected);
});

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_voip_route_is_documented_with_bearer_security() {
    let app = crate::helpers::spawn_app_with_engines(Backend::Sqlite, &["voip"], |_| {}).await;
    let document = app.openapi().await;
    let paths = &document["paths"];
    for (method, path) in [
        ("get", "/voip/api/v1/calls"),
        ("post", "/voip/api/v1/calls"),
        ("get", "/voip/api/v1/calls/{id}"),
        ("post", "/voip/api/v1/calls/{id}/join"),
        ("post", "/voip/api/v1/calls/{id}/leave"),
        ("post", "/voip/api/v1/calls/{id}/end"),
    ] {
        let operation = &paths[path][method];
        assert!(operation.is_object(), "{method} {path} is documented");
        assert_eq!(
            operation["tags"][0], "voip",
            "{method} {path} is tagged voip"
        );
        assert!(
            operation["security"][0]["bearer"].is_array(),
            "{method} {path} requires a bearer token"
        );
    }
    let schemas = &document["components"]["schemas"];
    for schema in ["voip.Call", "voip.NewCall", "voip.Participant"] {
        assert!(
            schemas[schema].is_object(),
            "the schema {schema} is documented"
        );
    }
    assert!(
        document["tags"]
            .as_array()
            .unwrap()
            .iter()
            .any(|tag| tag["name"] == "voip"),
        "the voip tag is declared"
    );
}
