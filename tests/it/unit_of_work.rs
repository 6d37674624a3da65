//! One engine call, one unit of work (`crates/runtime/src/unit_of_work.rs`): a call's writes,
//! events and jobs commit together when it succeeds and not at all when it traps, fails or
//! refuses (unless it committed them at a synchronisation point first);
//! reads in the call see its own writes; and a host SIGKILLed while clients create notes
//! leaves every acknowledged note with exactly one activity entry, and no entry without its
//! note.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::{Value, json};

use crate::database_test;
use crate::helpers::{
    AppOptions, Backend, ServeProcess, TestApp, TestDatabase, eventually, json_with_status,
    on_database, spawn_app_with, without_rate_limits,
};

fn uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

async fn data(app: &TestApp, path: &str, token: &str) -> Value {
    json_with_status(app.get_as(path, token).await, 200).await["data"].clone()
}

database_test!(
    a_call_that_traps_or_fails_after_writing_and_publishing_leaves_neither,
    |backend| async move {
        let app = spawn_app_with(
            backend,
            AppOptions {
                plugins: vec!["trapper", "listener"],
                ..AppOptions::default()
            },
        )
        .await;
        let token = app.token(&uuid(), &uuid(), "editor").await;
        let unit = |mode: &str, id: &str| format!("/trapper/api/v1/units/{mode}?id={id}");

        // Each call writes `units/<id>` and publishes `ping.unit`, then ends by its mode. The
        // ones that must leave nothing go first: the worker takes the oldest deliveries first,
        // so theirs would arrive before the others'.
        let trapped = app
            .post_as(&unit("trap", "trapped"), &token, &json!({}))
            .await;
        assert_eq!(trapped.status(), 502);
        let failed = app
            .post_as(&unit("fail", "failed"), &token, &json!({}))
            .await;
        assert_eq!(failed.status(), 500);
        // A refusal (4xx) commits nothing either, unless the call committed before it.
        let rejected = app
            .post_as(&unit("reject", "rejected"), &token, &json!({}))
            .await;
        assert_eq!(rejected.status(), 422);
        let kept = app
            .post_as(&unit("commit", "kept"), &token, &json!({}))
            .await;
        assert_eq!(kept.status(), 201);
        let rejected_kept = app
            .post_as(&unit("reject-kept", "rejected-kept"), &token, &json!({}))
            .await;
        assert_eq!(rejected_kept.status(), 422);

        let stored = data(&app, "/trapper/api/v1/units", &token).await;
        assert_eq!(stored, json!(["kept", "rejected-kept"]));
        let delivered = eventually(30, "the events of the kept calls", || async {
            let events = data(&app, "/listener/api/v1/events", &token).await;
            (events.as_array().unwrap().len() >= 2).then_some(events)
        })
        .await;
        // Exactly the kept calls' events, in whichever order the worker delivered them.
        let mut ids: Vec<&str> = delivered
            .as_array()
            .unwrap()
            .iter()
            .map(|event| event["payload"]["id"].as_str().unwrap())
            .collect();
        ids.sort_unstable();
        assert_eq!(ids, ["kept", "rejected-kept"], "{delivered:#}");
        assert_eq!(
            app.scalar("SELECT COUNT(*) FROM engine_work WHERE kind = 'event'")
                .await,
            0,
            "no delivery of a call that left nothing"
        );
        app.stop().await;
    }
);

database_test!(a_call_reads_its_own_writes, |backend| async move {
    let app = spawn_app_with(
        backend,
        AppOptions {
            plugins: vec!["trapper"],
            ..AppOptions::default()
        },
    )
    .await;
    let token = app.token(&uuid(), &uuid(), "editor").await;
    let seeded = app
        .post_as("/trapper/api/v1/own-writes/seed", &token, &json!({}))
        .await;
    assert_eq!(seeded.status(), 204);
    let seen = json_with_status(
        app.post_as("/trapper/api/v1/own-writes", &token, &json!({}))
            .await,
        200,
    )
    .await["data"]
        .clone();
    let entry = |key: &str, value: &str| json!([key, value]);
    assert_eq!(seen["deleted_c"], true);
    assert_eq!(seen["deleted_c_again"], false);
    assert_eq!(
        seen["read"],
        json!({ "a": "1", "b": "20", "c": null, "many": ["4", null, "1"] })
    );
    let (a, b, d) = (
        entry("own/a", "1"),
        entry("own/b", "20"),
        entry("own/d", "4"),
    );
    assert_eq!(seen["scans"]["forward"], json!([a, b, d]));
    assert_eq!(seen["scans"]["reverse"], json!([d, b, a]));
    assert_eq!(seen["scans"]["first_two"], json!([a, b]));
    assert_eq!(seen["scans"]["after_b"], json!([d]));
    assert_eq!(seen["count"], "15");
    assert_eq!(seen["swapped"], true);
    assert_eq!(seen["missed"], false);
    assert_eq!(seen["a_after_swap"], "100");
    assert_eq!(seen["deleted_under_own"], 3);
    assert_eq!(seen["after_prefix_delete"], json!([]));
    assert_eq!(seen["after_rewrite"], json!([entry("own/e", "5")]));
    // What the call left, committed as one unit.
    assert_eq!(
        data(&app, "/trapper/api/v1/own-writes", &token).await,
        json!({ "own": [entry("own/e", "5")], "count": "15" })
    );
    app.stop().await;
});

/// The notes the engine stores (`notes/<id>`) and, per note id, how many `note.created` items
/// the activity engine holds for it.
async fn notes_and_activity(app: &TestApp) -> (BTreeSet<String>, BTreeMap<String, usize>) {
    let database = &app.state().database;
    let rows: Vec<(String, String, Vec<u8>)> = tessera_host::on_pool!(database, pool => sqlx::query_as(
        "SELECT engine_code, key, value FROM engine_kv
         WHERE (engine_code = 'notes' AND key LIKE 'notes/%')
            OR (engine_code = 'activity' AND key LIKE 'items/%')",
    )
    .fetch_all(pool)
    .await
    .unwrap());
    let mut notes = BTreeSet::new();
    let mut activity = BTreeMap::new();
    for (engine_code, key, value) in rows {
        if engine_code == "notes" {
            notes.insert(key.trim_start_matches("notes/").to_owned());
            continue;
        }
        let item: Value = serde_json::from_slice(&value).unwrap();
        if item["type"] == "note.created" {
            let note_id = item["entity_id"].as_str().unwrap().to_owned();
            *activity.entry(note_id).or_insert(0) += 1;
        }
    }
    (notes, activity)
}

async fn notes_host(database: TestDatabase, backend: Backend) -> TestApp {
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

database_test!(
    a_host_killed_while_clients_create_notes_loses_no_acknowledged_note_or_its_activity,
    |backend| async move {
        let database = TestDatabase::new(backend).await;
        crate::components::install_engines(
            &database.data_dir.join("plugins"),
            &["notes", "activity"],
        );
        let app = notes_host(database, backend).await;
        let (tenant_id, user_id) = (uuid(), uuid());
        let user = json!({
            "tenant_id": tenant_id, "user_id": user_id, "email": "editor@example.com",
            "first_name": "Test", "last_name": "User", "type": "user",
        });
        for engine in ["notes", "activity"] {
            let tenant =
                json!({ "tenant_id": tenant_id, "tenant_short_id": "acme", "name": "Acme" });
            for (action, body) in [("tenant", &tenant), ("user", &user)] {
                let path = format!("/{engine}/api/internal/{engine}/provision/{action}");
                json_with_status(app.post_signed(&path, body).await, 200).await;
            }
        }
        let token = app.token(&tenant_id, &user_id, "editor").await;
        let database = app.stop_keeping_database().await;

        // A real `tessera serve` on the same data, written to by 16 clients, SIGKILLed while
        // they write.
        let served = ServeProcess::start(|command| {
            command
                .env("TESSERA_RATE_LIMIT_READ", "0")
                .env("TESSERA_RATE_LIMIT_WRITE", "0");
            on_database(command, &database)
        });
        let url = served.url("/notes/api/v1/notes");
        let client = reqwest::Client::new();
        let stop = tokio_util::sync::CancellationToken::new();
        let clients: Vec<_> = (0..16)
            .map(|client_index| {
                let (client, url, token, stop) =
                    (client.clone(), url.clone(), token.clone(), stop.clone());
                tokio::spawn(async move {
                    let mut acknowledged = Vec::new();
                    for index in 0.. {
                        if stop.is_cancelled() {
                            break;
                        }
                        let body = json!({ "title": format!("note {client_index}-{index}") });
                        let Ok(response) = client
                            .post(&url)
                            .bearer_auth(&token)
                            .json(&body)
                            .send()
                            .await
                        else {
                            break;
                        };
                        if response.status() != 201 {
                            continue;
                        }
                        let Ok(created) = response.json::<Value>().await else {
                            break;
                        };
                        acknowledged.push(created["data"]["id"].as_str().unwrap().to_owned());
                    }
                    acknowledged
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(1500)).await;
        drop(served);
        stop.cancel();
        let mut acknowledged = BTreeSet::new();
        for client in clients {
            acknowledged.extend(client.await.unwrap());
        }
        assert!(
            acknowledged.len() >= 16,
            "the clients created only {} notes before the kill",
            acknowledged.len()
        );

        // After a restart the bus delivers what the killed host left; then every note has
        // exactly one activity entry and every entry its note.
        let app = notes_host(database, backend).await;
        // What the killed host had claimed runs again when its lease ends (90 s by default);
        // move those ends to now, as waiting would.
        let state_database = &app.state().database;
        tessera_host::on_pool!(state_database, pool => sqlx::query(
            "UPDATE engine_work SET locked_until = '1970-01-01T00:00:00.000000Z'
             WHERE status = 'running'",
        )
        .execute(pool)
        .await
        .map(drop)
        .unwrap());
        eventually(60, "every event delivered", || async {
            (app.scalar("SELECT COUNT(*) FROM engine_work WHERE kind = 'event'")
                .await
                == 0)
                .then_some(())
        })
        .await;
        let (notes, activity) = notes_and_activity(&app).await;
        let lost: Vec<_> = acknowledged.difference(&notes).collect();
        assert!(lost.is_empty(), "acknowledged notes lost: {lost:?}");
        for note_id in &notes {
            assert_eq!(
                activity.get(note_id),
                Some(&1),
                "the note {note_id} has {:?} activity entries",
                activity.get(note_id)
            );
        }
        let orphans: Vec<_> = activity.keys().filter(|id| !notes.contains(*id)).collect();
        assert!(
            orphans.is_empty(),
            "activity entries without their note: {orphans:?}"
        );
        app.stop().await;
    }
);
