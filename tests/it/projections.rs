//! Projections: the timeline and inbox follow the log (cursor paging that stays stable while
//! items arrive), metrics and extended health report the workers, a rebuild replays the log,
//! a worker killed mid-stream resumes exactly once, two hosts share the log, and overlapping
//! PostgreSQL transactions never leave an event behind.

use std::collections::HashSet;

use serde_json::{Value, json};

use crate::database_test;
use crate::helpers::{
    AppOptions, Backend, TestApp, eventually, json_with_status, postgres_available, serve,
    spawn_app, spawn_app_with, spawn_http_only,
};

const TIMELINE: &str = "/core/api/v1/timeline";
const INBOX: &str = "/core/api/v1/inbox";

async fn scalar(app: &TestApp, sql: &'static str) -> i64 {
    app.scalar(sql).await
}

/// Events the projector has applied (its statistics move in each batch's transaction).
const PROJECTOR_PROCESSED: &str = "SELECT CAST(COALESCE(SUM(events_processed), 0) AS BIGINT)
     FROM projection_stats WHERE projection = 'projector'";

/// Waits until the projector has applied every event of the log.
async fn projected(app: &TestApp) {
    eventually(20, "the projector to catch up", || async {
        let events = scalar(app, "SELECT COUNT(*) FROM events").await;
        let processed = scalar(app, PROJECTOR_PROCESSED).await;
        (processed == events).then_some(())
    })
    .await;
}

/// Starts `writers` concurrent clients of `app`, each creating `per_writer` entities of
/// `family` with `fields(writer, index)`, every answer asserted 200; await the handles.
fn spawn_creates(
    app: &TestApp,
    token: &str,
    writers: usize,
    per_writer: usize,
    family: &'static str,
    fields: fn(usize, usize) -> Value,
) -> Vec<tokio::task::JoinHandle<()>> {
    (0..writers)
        .map(|writer| {
            let client = app.client.clone();
            let url = app.url("/core/api/v1/intentions");
            let token = token.to_owned();
            tokio::spawn(async move {
                for index in 0..per_writer {
                    let body = json!({"type": "entity.create",
                        "payload": {"family": family, "fields": fields(writer, index)}});
                    let response = client
                        .post(&url)
                        .bearer_auth(&token)
                        .json(&body)
                        .send()
                        .await
                        .unwrap();
                    assert_eq!(response.status(), 200);
                }
            })
        })
        .collect()
}

fn numbered(_writer: usize, index: usize) -> Value {
    json!({"n": index})
}

fn ids(body: &Value) -> Vec<String> {
    body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["id"].as_str().unwrap().to_owned())
        .collect()
}

/// Walks the timeline from the start with `limit`, running `between` after the first page.
async fn walk(app: &TestApp, token: &str, limit: u32, between: impl AsyncFnOnce()) -> Vec<String> {
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut between = Some(between);
    loop {
        let path = match &cursor {
            None => format!("{TIMELINE}?limit={limit}"),
            Some(cursor) => format!("{TIMELINE}?limit={limit}&cursor={cursor}"),
        };
        let page = json_with_status(app.get_as(&path, token).await, 200).await;
        seen.extend(ids(&page));
        if let Some(between) = between.take() {
            between().await;
        }
        if page["meta"]["has_more"] == false {
            return seen;
        }
        cursor = Some(page["meta"]["next_cursor"].as_str().unwrap().to_owned());
    }
}

database_test!(
    the_timeline_follows_the_log_with_stable_cursors,
    |backend| async move {
        let app = spawn_app_with(backend, AppOptions::unlimited()).await;
        let tenant = app.create_tenant("acme");
        let token = app
            .token(&tenant, &uuid::Uuid::new_v4().to_string(), "editor")
            .await;

        let empty = json_with_status(app.get_as(TIMELINE, &token).await, 200).await;
        assert_eq!(empty["data"], json!([]));
        assert_eq!(empty["meta"]["has_more"], false);

        let first = app
            .create_entity(&token, "task", json!({"title": "Write"}))
            .await;
        let first_id = first["entity_id"].as_str().unwrap().to_owned();
        for index in 0..59 {
            app.create_entity(&token, "task", json!({"n": index})).await;
        }
        projected(&app).await;

        let newest = json_with_status(
            app.get_as(&format!("{TIMELINE}?limit=2"), &token).await,
            200,
        )
        .await;
        let item = &newest["data"][0];
        assert_eq!(item["type"], "entity.field_set");
        assert_eq!(item["data"]["field"], "n");
        assert_eq!(item["data"]["value"], 58);
        assert!(item["occurred_at"].is_string() && item["entity_id"].is_string());
        assert_eq!(newest["meta"]["has_more"], true);

        let of_first = json_with_status(
            app.get_as(
                &format!("{TIMELINE}?entity_id={first_id}&direction=asc"),
                &token,
            )
            .await,
            200,
        )
        .await;
        let types: Vec<&str> = of_first["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| item["type"].as_str().unwrap())
            .collect();
        assert_eq!(types, ["entity.created", "entity.field_set"]);
        assert_eq!(of_first["data"][0]["data"], json!({"family": "task"}));
        assert_eq!(
            of_first["data"][1]["data"],
            json!({"field": "title", "value": "Write"})
        );

        let clamped = json_with_status(
            app.get_as(&format!("{TIMELINE}?limit=1000"), &token).await,
            200,
        )
        .await;
        assert_eq!(clamped["data"].as_array().unwrap().len(), 100);
        assert_eq!(clamped["meta"]["has_more"], true);

        // A walk while new items arrive: every item that existed at the start, exactly once.
        let before: HashSet<String> = {
            let all = walk(&app, &token, 100, async || {}).await;
            assert_eq!(all.len(), 120);
            all.into_iter().collect()
        };
        let walked = walk(&app, &token, 7, async || {
            for index in 0..5 {
                app.create_entity(&token, "task", json!({"late": index}))
                    .await;
            }
            projected(&app).await;
        })
        .await;
        let unique: HashSet<String> = walked.iter().cloned().collect();
        assert_eq!(unique.len(), walked.len(), "no duplicates");
        assert_eq!(unique, before, "no gaps, and nothing newer than the start");

        json_with_status(
            app.get_as(&format!("{TIMELINE}?cursor=garbage!"), &token)
                .await,
            422,
        )
        .await;
        json_with_status(
            app.get_as(&format!("{TIMELINE}?limit=0"), &token).await,
            422,
        )
        .await;
        json_with_status(app.get_as(&format!("{TIMELINE}?page=2"), &token).await, 400).await;

        let other = app.create_tenant("globex");
        let other_token = app
            .token(&other, &uuid::Uuid::new_v4().to_string(), "owner")
            .await;
        let foreign = json_with_status(app.get_as(TIMELINE, &other_token).await, 200).await;
        assert_eq!(
            foreign["data"],
            json!([]),
            "tenants never see each other's timeline"
        );
    }
);

database_test!(
    assignments_reach_the_assignees_inbox_which_pages_and_marks_read,
    |backend| async move {
        let app = spawn_app(backend).await;
        let tenant = app.create_tenant("acme");
        let alice = uuid::Uuid::new_v4().to_string();
        let bob = uuid::Uuid::new_v4().to_string();
        let alice_token = app.token(&tenant, &alice, "editor").await;
        let bob_token = app.token(&tenant, &bob, "viewer").await;

        let task = app
            .create_entity(
                &alice_token,
                "task",
                json!({"title": "Ship", "assignee_id": bob}),
            )
            .await;
        let task_id = task["entity_id"].as_str().unwrap().to_owned();
        // Assigning oneself notifies nobody.
        app.create_entity(&alice_token, "task", json!({"assignee_id": alice}))
            .await;
        let deal = app
            .create_entity(&alice_token, "deal", json!({"title": "Big"}))
            .await;
        app.intention(
            &alice_token,
            "entity.update",
            json!({"entity_id": deal["entity_id"], "fields": {"assignee_id": bob}}),
        )
        .await;
        projected(&app).await;

        let inbox = json_with_status(app.get_as(INBOX, &bob_token).await, 200).await;
        let items = inbox["data"].as_array().unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(
            items[0]["title"], "A deal was assigned to you",
            "newest first"
        );
        let item = &items[1];
        let mut keys: Vec<&str> = item
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            ["created_at", "entity_id", "id", "read_at", "title", "type"]
        );
        assert_eq!(item["type"], "entity.assigned");
        assert_eq!(item["title"], "A task was assigned to you");
        assert_eq!(item["entity_id"], task_id.as_str());
        assert_eq!(item["read_at"], Value::Null);
        assert_eq!(
            json_with_status(app.get_as(INBOX, &alice_token).await, 200).await["data"],
            json!([])
        );

        let first_page = json_with_status(
            app.get_as(&format!("{INBOX}?limit=1"), &bob_token).await,
            200,
        )
        .await;
        assert_eq!(first_page["meta"]["has_more"], true);
        let cursor = first_page["meta"]["next_cursor"].as_str().unwrap();
        let second_page = json_with_status(
            app.get_as(&format!("{INBOX}?limit=1&cursor={cursor}"), &bob_token)
                .await,
            200,
        )
        .await;
        assert_eq!(ids(&second_page), [item["id"].as_str().unwrap()]);
        assert_eq!(second_page["meta"]["has_more"], false);

        let item_id = item["id"].as_str().unwrap();
        let read_path = format!("{INBOX}/{item_id}/read");
        json_with_status(app.post_as(&read_path, &alice_token, &json!({})).await, 404).await;
        let read =
            json_with_status(app.post_as(&read_path, &bob_token, &json!({})).await, 200).await;
        let read_at = read["data"]["read_at"].as_str().unwrap().to_owned();
        let again =
            json_with_status(app.post_as(&read_path, &bob_token, &json!({})).await, 200).await;
        assert_eq!(
            again["data"]["read_at"],
            read_at.as_str(),
            "the first read time stays"
        );
        let inbox = json_with_status(app.get_as(INBOX, &bob_token).await, 200).await;
        assert_eq!(inbox["data"][1]["read_at"], read_at.as_str());
        json_with_status(
            app.post_as(
                &format!("{INBOX}/{}/read", uuid::Uuid::new_v4()),
                &bob_token,
                &json!({}),
            )
            .await,
            404,
        )
        .await;
        let other = app.create_tenant("globex");
        let bob_elsewhere = app.token(&other, &bob, "owner").await;
        json_with_status(
            app.post_as(&read_path, &bob_elsewhere, &json!({})).await,
            404,
        )
        .await;
        json_with_status(
            app.get_as(&format!("{INBOX}?unread=1"), &bob_token).await,
            400,
        )
        .await;
    }
);

database_test!(
    metrics_count_each_tenants_events_and_extended_health_reports_the_workers,
    |backend| async move {
        let app = spawn_app(backend).await;
        let acme = app.create_tenant("acme");
        let globex = app.create_tenant("globex");
        let acme_token = app
            .token(&acme, &uuid::Uuid::new_v4().to_string(), "editor")
            .await;
        let globex_token = app
            .token(&globex, &uuid::Uuid::new_v4().to_string(), "viewer")
            .await;
        for _ in 0..3 {
            app.create_entity(
                &acme_token,
                "contact",
                json!({"name": "Ada", "city": "London"}),
            )
            .await;
        }
        projected(&app).await;

        let tenant =
            json_with_status(app.get_as("/core/api/metrics", &acme_token).await, 200).await;
        let data = &tenant["data"];
        assert_eq!(data["events_processed"], 9);
        assert_eq!(data["workflows_executed"], 0);
        assert_eq!(data["workflows_failed"], 0);
        assert!(data["worker_latency_avg_ms"].as_f64().unwrap() >= 0.0);
        let quiet =
            json_with_status(app.get_as("/core/api/metrics", &globex_token).await, 200).await;
        assert_eq!(quiet["data"]["events_processed"], 0);
        let platform = json_with_status(app.get("/core/api/metrics").await, 200).await;
        assert_eq!(platform["data"]["events_processed"], 9);
        json_with_status(
            app.client
                .get(app.url("/core/api/metrics"))
                .bearer_auth("not-a-token")
                .send()
                .await
                .unwrap(),
            401,
        )
        .await;

        let health = eventually(10, "every worker to report", || async {
            let health = app.extended_health_report().await;
            (health["checks"]["workers"]
                == json!({"projector": "ok", "search": "ok", "workflow": "ok"}))
            .then_some(health)
        })
        .await;
        assert_eq!(health["status"], "ok");
        assert_eq!(health["checks"]["database"], "ok");
        assert_eq!(health["checks"]["cache"], "ok");
    }
);

database_test!(
    a_rebuild_replays_the_log_into_the_same_read_models,
    |backend| async move {
        let app = spawn_app(backend).await;
        let tenant = app.create_tenant("acme");
        let bob = uuid::Uuid::new_v4().to_string();
        let token = app
            .token(&tenant, &uuid::Uuid::new_v4().to_string(), "editor")
            .await;
        let bob_token = app.token(&tenant, &bob, "editor").await;
        for index in 0..10 {
            app.create_entity(&token, "task", json!({"n": index, "assignee_id": bob}))
                .await;
        }
        for name in [
            "Quarterly review Alpha",
            "Quarterly review Beta",
            "Annual summary Gamma",
        ] {
            app.create_entity(&token, "contact", json!({ "name": name }))
                .await;
        }
        projected(&app).await;
        let inbox = json_with_status(app.get_as(INBOX, &bob_token).await, 200).await;
        let first_item = inbox["data"][0]["id"].as_str().unwrap().to_owned();
        json_with_status(
            app.post_as(
                &format!("{INBOX}/{first_item}/read"),
                &bob_token,
                &json!({}),
            )
            .await,
            200,
        )
        .await;
        projected(&app).await;
        let timeline_before = walk(&app, &token, 100, async || {}).await;
        let inbox_before = json_with_status(app.get_as(INBOX, &bob_token).await, 200).await;
        let metrics_before =
            json_with_status(app.get_as("/core/api/metrics", &token).await, 200).await;
        // A common word, a rare one and a prefix: what the search index answers.
        let searches = [
            "/core/api/v1/search?q=review",
            "/core/api/v1/search?q=gamma",
            "/core/api/v1/search?q=quarterly%20alpha",
        ];
        let mut search_before = Vec::new();
        for path in searches {
            search_before.push(
                eventually(20, "the search index", || async {
                    let body = json_with_status(app.get_as(path, &token).await, 200).await;
                    (body["data"].as_array().is_some_and(|hits| !hits.is_empty())).then_some(body)
                })
                .await,
            );
        }
        assert_eq!(search_before[0]["data"].as_array().unwrap().len(), 2);

        let output = app.admin(&["rebuild-projections"]).json();
        let rebuilt = output["rebuilt"].as_array().unwrap();
        let projector = rebuilt
            .iter()
            .find(|report| report["projection"] == "projector")
            .unwrap();
        let logged = scalar(&app, "SELECT COUNT(*) FROM events").await;
        assert!(
            projector["events"].as_i64().unwrap() <= logged,
            "{output}: {logged} events logged"
        );
        assert!(
            rebuilt
                .iter()
                .any(|report| report["projection"] == "search")
        );
        assert!(
            rebuilt
                .iter()
                .all(|report| report["projection"] != "workflow"),
            "workflows are not replayed"
        );

        projected(&app).await;
        assert_eq!(walk(&app, &token, 100, async || {}).await, timeline_before);
        let inbox_after = json_with_status(app.get_as(INBOX, &bob_token).await, 200).await;
        assert_eq!(
            inbox_after["data"], inbox_before["data"],
            "items and read marks come back"
        );
        // The rebuilt index answers every search as before, on both databases.
        for (path, before) in searches.into_iter().zip(&search_before) {
            eventually(20, "the rebuilt search index", || async {
                let body = json_with_status(app.get_as(path, &token).await, 200).await;
                (body == *before).then_some(())
            })
            .await;
        }
        let metrics_after =
            json_with_status(app.get_as("/core/api/metrics", &token).await, 200).await;
        assert_eq!(
            metrics_after["data"]["events_processed"], metrics_before["data"]["events_processed"],
            "replayed events are not counted twice"
        );
    }
);

database_test!(
    a_worker_killed_mid_stream_resumes_and_applies_every_event_exactly_once,
    |backend| async move {
        // This host only serves HTTP: the log fills up with nobody projecting it.
        let app = spawn_http_only(backend).await;
        let tenant = app.create_tenant("acme");
        let token = app
            .token(&tenant, &uuid::Uuid::new_v4().to_string(), "editor")
            .await;
        let writers = spawn_creates(
            &app,
            &token,
            4,
            100,
            "contact",
            |writer, index| json!({"writer": writer, "n": index, "name": "Ada", "city": "Paris", "tag": "x"}),
        );
        for writer in writers {
            writer.await.unwrap();
        }
        let total = scalar(&app, "SELECT COUNT(*) FROM events").await;
        assert_eq!(total, 2400);
        let applied = || scalar(&app, PROJECTOR_PROCESSED);

        // A host with workers that apply one event per transaction, killed mid-stream.
        let mut doomed = serve(&app.database, &[("TESSERA_PROJECTION_BATCH_SIZE", "1")]);
        eventually(30, "the doomed host to start projecting", || async {
            (applied().await >= 50).then_some(())
        })
        .await;
        doomed.kill();
        let at_kill = applied().await;
        assert!(
            at_kill < total,
            "killed mid-stream ({at_kill} of {total} applied)"
        );

        // A new host resumes from the checkpoint.
        let mut survivor = serve(&app.database, &[]);
        let result = async {
            eventually(60, "the survivor to catch up", || async {
                (applied().await == total).then_some(())
            })
            .await;
            // The survivor stops at the log's end: had a batch been applied twice (its
            // checkpoint not moved with it), the count would pass the log's length.
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
            assert_eq!(applied().await, total, "every event applied exactly once");
            assert_eq!(
                scalar(&app, "SELECT COUNT(*) FROM search_documents").await,
                400,
                "every entity indexed"
            );
        };
        let outcome = tokio::time::timeout(std::time::Duration::from_secs(90), result).await;
        survivor.kill();
        outcome.expect("the survivor finished");
    }
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hosts_on_one_postgres_share_the_log_without_double_applying() {
    if !postgres_available() {
        return;
    }
    let small_batches = || -> AppOptions {
        AppOptions::unlimited_and(|config| {
            config.projections.batch_size = 7;
        })
    };
    let first = spawn_app_with(Backend::Postgres, small_batches()).await;
    let second = spawn_app_with(
        Backend::Postgres,
        AppOptions {
            database: Some(first.database.for_another_host()),
            ..small_batches()
        },
    )
    .await;
    let tenant = first.create_tenant("acme");
    let user = uuid::Uuid::new_v4().to_string();
    let first_token = first.token(&tenant, &user, "editor").await;
    let second_token = second.token(&tenant, &user, "editor").await;
    let mut writers = spawn_creates(&first, &first_token, 4, 50, "task", numbered);
    writers.extend(spawn_creates(
        &second,
        &second_token,
        4,
        50,
        "task",
        numbered,
    ));
    for writer in writers {
        writer.await.unwrap();
    }
    let total = scalar(&first, "SELECT COUNT(*) FROM events").await;
    assert_eq!(total, 800);
    projected(&first).await;
    for projection in ["projector", "search", "workflow"] {
        let sql: &'static str = match projection {
            "projector" => {
                "SELECT CAST(COALESCE(SUM(events_processed), 0) AS BIGINT) FROM projection_stats WHERE projection = 'projector'"
            }
            "search" => {
                "SELECT CAST(COALESCE(SUM(events_processed), 0) AS BIGINT) FROM projection_stats WHERE projection = 'search'"
            }
            _ => {
                "SELECT CAST(COALESCE(SUM(events_processed), 0) AS BIGINT) FROM projection_stats WHERE projection = 'workflow'"
            }
        };
        let processed = eventually(20, "every projection to catch up", || async {
            let processed = scalar(&first, sql).await;
            (processed >= total).then_some(processed)
        })
        .await;
        assert_eq!(
            processed, total,
            "{projection} applied each event exactly once"
        );
    }
    for host in [&first, &second] {
        let health = json_with_status(host.extended_health().await, 200).await;
        assert_eq!(health["checks"]["workers"]["projector"], "ok");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overlapping_postgres_transactions_never_leave_an_event_unprojected() {
    if !postgres_available() {
        return;
    }
    let app = spawn_app_with(Backend::Postgres, AppOptions::unlimited()).await;
    let acme = app.create_tenant("acme");
    let slow = app.create_tenant("slow");
    let token = app
        .token(&acme, &uuid::Uuid::new_v4().to_string(), "editor")
        .await;
    let database = app.state().database.clone();

    // A transaction takes its log position first and commits last.
    let mut held = database.begin().await.unwrap();
    let context = tessera_host::core::events::EventContext {
        tenant_id: slow.clone(),
        ..Default::default()
    };
    let late_entity = uuid::Uuid::new_v4().to_string();
    let event = tessera_host::core::events::DomainEvent::Created {
        entity_id: late_entity.clone(),
        family: "task".into(),
        timestamp: tessera_host::storage::time::now(),
    };
    let appended = tessera_host::core::events::append(
        &mut held,
        &context,
        &[event.to_new_event()],
        &tessera_host::storage::time::now(),
    )
    .await
    .unwrap();
    let held_position: i64 = tessera_host::on_tx!(&mut held, conn => sqlx::query_scalar(
        "SELECT position FROM event_log WHERE id = $1",
    )
    .bind(&appended[0].id)
    .fetch_one(&mut **conn)
    .await
    .unwrap());

    // Meanwhile many later positions commit, concurrently.
    let writers = spawn_creates(&app, &token, 16, 10, "task", numbered);
    for writer in writers {
        writer.await.unwrap();
    }
    let acme_events = 320;
    let max_position = scalar(&app, "SELECT MAX(position) FROM events").await;
    assert!(
        max_position > held_position,
        "later positions committed first"
    );
    // The workers ran meanwhile (every append wakes them) but read nothing at or above the
    // horizon of the open transaction: no later event can be applied before the early one.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(scalar(&app, PROJECTOR_PROCESSED).await, 0);
    assert_eq!(
        scalar(&app, "SELECT COUNT(*) FROM search_documents").await,
        0
    );

    // The early position commits last: it must still be projected, exactly once.
    held.commit().await.unwrap();
    app.state().core.event_signal.appended();
    projected(&app).await;
    assert_eq!(
        scalar(&app, "SELECT COUNT(*) FROM events").await,
        acme_events + 1
    );
    assert_eq!(scalar(&app, PROJECTOR_PROCESSED).await, acme_events + 1);
    eventually(
        20,
        "the search projection to index the late entity",
        || async {
            let indexed: i64 = tessera_host::on_pool!(&database, pool => sqlx::query_scalar(
            "SELECT COUNT(*) FROM search_documents WHERE entity_id = $1",
        )
        .bind(&late_entity)
        .fetch_one(pool)
        .await
        .unwrap());
            (indexed == 1).then_some(())
        },
    )
    .await;
}
