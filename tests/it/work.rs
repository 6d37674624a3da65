//! Durable engine work: the scheduler import (jobs run when due, retried, cancelled, kept across
//! a restart and taken over after a host dies mid-run) and the event bus (deliveries to
//! subscribers, retried, scoped to the tenant, never back to the publisher).

use std::time::Duration;

use serde_json::{Value, json};

use crate::database_test;
use crate::helpers::{AppOptions, TestApp, eventually, json_with_status, spawn_app_with};
use tessera_host::runtime::bus::{BusEvent, Relayed};
use tessera_host::runtime::work::{ClaimedWork, NewWork, WorkKind, WorkQueue};

/// Generous: the worker polls every 500 ms and retries after 1 s.
const PATIENCE: Duration = Duration::from_secs(30);

fn uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

async fn spawn_with(backend: crate::helpers::Backend, plugins: Vec<&'static str>) -> TestApp {
    spawn_app_with(
        backend,
        AppOptions {
            plugins,
            ..AppOptions::default()
        },
    )
    .await
}

async fn list(app: &TestApp, path: &str, token: &str) -> Vec<Value> {
    let body = json_with_status(app.get_as(path, token).await, 200).await;
    body["data"].as_array().unwrap().clone()
}

/// Polls `path` until `done` holds for its `data` list, or panics after [`PATIENCE`].
async fn wait_for(
    app: &TestApp,
    path: &str,
    token: &str,
    done: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let started = std::time::Instant::now();
    loop {
        let items = list(app, path, token).await;
        if done(&items) {
            return items;
        }
        assert!(
            started.elapsed() < PATIENCE,
            "gave up waiting on {path}; last seen: {items:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn runs_of<'a>(runs: &'a [Value], payload: &str) -> Vec<&'a Value> {
    runs.iter()
        .filter(|run| run["payload"] == payload)
        .collect()
}

async fn schedule(app: &TestApp, token: &str, in_ms: u64, payload: &str) -> String {
    let body = json_with_status(
        app.post_as(
            "/jobber/api/v1/jobs",
            token,
            &json!({ "in_ms": in_ms, "payload": payload }),
        )
        .await,
        201,
    )
    .await;
    body["data"]["job_id"].as_str().unwrap().to_owned()
}

/// A fresh, migrated database and the work queue over it (keep the first: dropping it removes
/// the database).
async fn migrated_queue(
    backend: crate::helpers::Backend,
) -> (
    crate::helpers::TestDatabase,
    tessera_host::storage::Database,
    WorkQueue,
) {
    let test_database = crate::helpers::TestDatabase::new(backend).await;
    let database = test_database.connect().await;
    database
        .migrate(&test_database.data_dir)
        .await
        .expect("migrating");
    let queue = WorkQueue::new(database.clone());
    (test_database, database, queue)
}

/// A job of `engine_code` for the tenant `tenant`, due at `due_at`.
fn job(engine_code: &str, due_at: chrono::DateTime<chrono::Utc>, payload: &str) -> NewWork {
    NewWork {
        id: uuid::Uuid::new_v4().to_string(),
        engine_code: engine_code.to_owned(),
        tenant_id: "tenant".to_owned(),
        kind: WorkKind::Job,
        payload: payload.as_bytes().to_vec(),
        due_at,
        traceparent: None,
    }
}

async fn work_rows(app: &TestApp, engine_code: &str) -> i64 {
    let database = &app.state().database;
    tessera_host::on_pool!(database, pool => sqlx::query_scalar::<_, i64>(
        "SELECT COUNT(*) FROM engine_work WHERE engine_code = $1",
    )
    .bind(engine_code)
    .fetch_one(pool)
    .await)
    .unwrap()
}

database_test!(
    scheduled_jobs_run_when_due_retry_cancel_and_survive_a_restart,
    |backend| async move {
        let app = spawn_with(backend, vec!["jobber"]).await;
        let tenant = uuid();
        let other_tenant = uuid();
        let token = app.token(&tenant, &uuid(), "editor").await;
        let other_token = app.token(&other_tenant, &uuid(), "editor").await;

        schedule(&app, &token, 0, "now").await;
        schedule(&app, &token, 0, "fail-once").await;
        let cancelled = schedule(&app, &token, 600_000, "cancelled").await;
        let cancel = json_with_status(
            app.delete_as(&format!("/jobber/api/v1/jobs/{cancelled}"), &token)
                .await,
            200,
        )
        .await;
        assert_eq!(cancel["data"]["cancelled"], true);
        // Another tenant cannot cancel it, and a cancelled job cannot be cancelled again.
        let cancel = json_with_status(
            app.delete_as(&format!("/jobber/api/v1/jobs/{cancelled}"), &other_token)
                .await,
            200,
        )
        .await;
        assert_eq!(cancel["data"]["cancelled"], false);

        let runs = wait_for(&app, "/jobber/api/v1/runs", &token, |runs| {
            runs_of(runs, "now").len() == 1 && runs_of(runs, "fail-once").len() == 2
        })
        .await;
        assert_eq!(runs_of(&runs, "now")[0]["attempt"], 1);
        let retried: Vec<&Value> = runs_of(&runs, "fail-once")
            .into_iter()
            .map(|run| &run["attempt"])
            .collect();
        assert_eq!(retried, [&json!(1), &json!(2)], "a failed run is retried");
        assert!(runs_of(&runs, "cancelled").is_empty());
        assert!(
            list(&app, "/jobber/api/v1/runs", &other_token)
                .await
                .is_empty(),
            "jobs run in the tenant that scheduled them"
        );

        // A host that died mid-run: its lease runs out and another run takes over.
        let orphan = schedule(&app, &token, 600_000, "orphan").await;
        let database = &app.state().database;
        let past = "2000-01-01T00:00:00.000000Z";
        tessera_host::on_pool!(database, pool => sqlx::query(
            "UPDATE engine_work SET status = 'running', attempt = 1, due_at = $2, locked_until = $2 WHERE id = $1",
        )
        .bind(&orphan)
        .bind(past)
        .execute(pool)
        .await
        .map(drop))
        .unwrap();
        let runs = wait_for(&app, "/jobber/api/v1/runs", &token, |runs| {
            !runs_of(runs, "orphan").is_empty()
        })
        .await;
        assert_eq!(runs_of(&runs, "orphan")[0]["attempt"], 2);

        // Scheduled, then the host stops before it is due: the next host runs it.
        let pending = schedule(&app, &token, 2_000, "after-restart").await;
        let database = app.stop_keeping_database().await;
        let connection = database.connect().await;
        let status: String = tessera_host::on_pool!(connection, pool => sqlx::query_scalar(
            "SELECT status FROM engine_work WHERE id = $1",
        )
        .bind(&pending)
        .fetch_one(pool)
        .await)
        .unwrap();
        assert_eq!(
            status, "pending",
            "the job had not run when the first host stopped"
        );
        connection.close().await;
        let restarted = spawn_app_with(
            backend,
            AppOptions {
                plugins: vec!["jobber"],
                database: Some(database),
                ..AppOptions::default()
            },
        )
        .await;
        let runs = wait_for(&restarted, "/jobber/api/v1/runs", &token, |runs| {
            !runs_of(runs, "after-restart").is_empty()
        })
        .await;
        assert_eq!(runs_of(&runs, "after-restart").len(), 1);
        // The run's writes and the removal of its work item are separate trips to the writer:
        // the item goes shortly after the run is visible.
        eventually(10, "done work to be removed", || async {
            (work_rows(&restarted, "jobber").await == 0).then_some(())
        })
        .await;
        restarted.stop().await;
    }
);

database_test!(
    published_events_reach_each_subscriber_in_the_tenant_with_retries,
    |backend| async move {
        let app = spawn_with(backend, vec!["jobber", "listener"]).await;
        let tenant = uuid();
        let other_tenant = uuid();
        let token = app.token(&tenant, &uuid(), "editor").await;
        let other_token = app.token(&other_tenant, &uuid(), "editor").await;

        for body in [
            json!({ "event_type": "ping.hello", "payload": { "n": 1 } }),
            json!({ "event_type": "ping.flaky", "payload": { "fail_once": true } }),
            json!({ "event_type": "other.thing", "payload": {} }),
        ] {
            json_with_status(
                app.post_as("/jobber/api/v1/events", &token, &body).await,
                202,
            )
            .await;
        }
        for (body, reason) in [
            (
                json!({ "event_type": "Not A Type", "payload": {} }),
                "not an event type",
            ),
            (
                json!({ "event_type": "ping.list", "payload": [1, 2] }),
                "JSON object",
            ),
        ] {
            let refused = json_with_status(
                app.post_as("/jobber/api/v1/events", &token, &body).await,
                409,
            )
            .await;
            assert!(
                refused["message"].as_str().unwrap().contains(reason),
                "{refused}"
            );
        }

        let events = wait_for(&app, "/listener/api/v1/events", &token, |events| {
            events
                .iter()
                .filter(|event| event["event_type"] == "ping.flaky")
                .count()
                == 2
                && events
                    .iter()
                    .any(|event| event["event_type"] == "ping.hello")
        })
        .await;
        let hello: Vec<&Value> = events
            .iter()
            .filter(|event| event["event_type"] == "ping.hello")
            .collect();
        assert_eq!(hello.len(), 1, "delivered once: {events:?}");
        assert_eq!(hello[0]["payload"], json!({ "n": 1 }));
        assert_eq!(hello[0]["tenant_id"], tenant);
        let flaky_attempts: Vec<&Value> = events
            .iter()
            .filter(|event| event["event_type"] == "ping.flaky")
            .map(|event| &event["attempt"])
            .collect();
        assert_eq!(
            flaky_attempts,
            [&json!(1), &json!(2)],
            "a failed delivery is retried"
        );
        assert!(
            !events
                .iter()
                .any(|event| event["event_type"] == "other.thing"),
            "only subscribed types are delivered"
        );
        assert!(
            list(&app, "/listener/api/v1/events", &other_token)
                .await
                .is_empty(),
            "events stay in their tenant"
        );
        assert_eq!(
            work_rows(&app, "jobber").await,
            0,
            "the publisher, though subscribed to ping.*, is not sent its own events"
        );
        app.stop().await;
    }
);

/// A host serving the `listener` test engine with every call on a fresh instance (so the
/// listener's count of what its instance received tells one batch from several calls), a
/// tenant and an editor's token in it.
async fn cold_listener(backend: crate::helpers::Backend) -> (TestApp, String, String) {
    let app = spawn_app_with(
        backend,
        AppOptions {
            plugins: vec!["listener"],
            configure: Some(Box::new(|config| {
                config.runtime.warm_instances.capacity = 0
            })),
            ..AppOptions::default()
        },
    )
    .await;
    let tenant = uuid();
    let token = app.token(&tenant, &uuid(), "editor").await;
    (app, tenant, token)
}

/// Three events of `tenant` for the listener: the second fails every delivery.
fn first_failing_third(tenant: &str, event_type: &str) -> [BusEvent; 3] {
    let event = |name: &str, payload: Value| BusEvent {
        id: format!("{name}-{}", uuid()),
        event_type: event_type.into(),
        tenant_id: tenant.to_owned(),
        occurred_at: "2026-11-26T04:00:00.000000Z".into(),
        actor_id: None,
        correlation_id: uuid(),
        payload,
    };
    [
        event("first", json!({ "name": "first" })),
        event("failing", json!({ "name": "failing", "fail": true })),
        event("third", json!({ "name": "third" })),
    ]
}

/// The failing event of [`first_failing_third`] was delivered alone and failed on its own
/// account (its delivery `failing_work` counted and kept); the other two were delivered once
/// each, with nothing kept of any earlier run, as one batch in order.
async fn only_the_failing_event_fails(app: &TestApp, token: &str, failing_work: &str) {
    let database = &app.state().database;
    eventually(30, "the failing delivery counted alone", || async {
        let attempt: i64 = tessera_host::on_pool!(database, pool => sqlx::query_scalar(
            "SELECT attempt FROM engine_work WHERE id = $1 AND last_error IS NOT NULL",
        )
        .bind(failing_work)
        .fetch_optional(pool)
        .await)
        .unwrap()
        .unwrap_or(0);
        (attempt >= 1).then_some(())
    })
    .await;
    let delivered = wait_for(app, "/listener/api/v1/events", token, |events| {
        events.len() >= 2
    })
    .await;
    let names: Vec<&Value> = delivered
        .iter()
        .map(|event| &event["payload"]["name"])
        .collect();
    assert_eq!(names, [&json!("first"), &json!("third")], "{delivered:?}");
    // The first event ran in the failed run too, but nothing it wrote there stayed: its
    // committed record is that of its second run, which found no earlier attempt.
    assert_eq!(delivered[0]["attempt"], 1, "{delivered:?}");
    assert_eq!(delivered[1]["attempt"], 1, "{delivered:?}");
    // Delivered again as one batch without the failing event: one instance, in order.
    assert_eq!(delivered[0]["position"], 0, "{delivered:?}");
    assert_eq!(delivered[1]["position"], 1, "{delivered:?}");
    assert_eq!(
        work_rows(app, "listener").await,
        1,
        "only the failing event waits"
    );
}

database_test!(
    a_batch_of_deliveries_commits_all_or_nothing,
    |backend| async move {
        let (app, tenant, token) = cold_listener(backend).await;
        let services = app.state().engines.runtime().services();
        // Three events of one tenant enqueued at once, so one claim takes them as one batch:
        // the first is delivered, the second fails, the third is never reached.
        let events = first_failing_third(&tenant, "ping.batch");
        let mut deliveries = Vec::new();
        for event in &events {
            deliveries.extend(services.bus.deliveries(event, None).unwrap());
        }
        let failing_work = deliveries[1].id.clone();
        services.queue.enqueue(&deliveries).await.unwrap();
        only_the_failing_event_fails(&app, &token, &failing_work).await;
        app.stop().await;
    }
);

database_test!(
    a_pack_of_deliveries_that_fails_is_split_and_each_event_counts_alone,
    |backend| async move {
        let (app, tenant, token) = cold_listener(backend).await;
        let services = app.state().engines.runtime().services();
        // Published as the bus relay publishes the core's events: one pack of three, which
        // fails at its second event, is split, and its events run one by one as if never
        // packed.
        let events = first_failing_third(&tenant, "ping.packed");
        let relayed: Vec<Relayed> = events
            .iter()
            .map(|event| Relayed {
                event: event.clone(),
                traceparent: None,
                // One intention's events.
                group: 1,
            })
            .collect();
        let database = &app.state().database;
        let mut tx = database.begin().await.unwrap();
        let delivered = services
            .bus
            .publish_packed_in(&mut tx, &relayed)
            .await
            .unwrap();
        let rows: i64 = tessera_host::on_tx!(&mut tx, conn => sqlx::query_scalar(
            "SELECT COUNT(*) FROM engine_work WHERE engine_code = 'listener'",
        )
        .fetch_one(&mut **conn)
        .await)
        .unwrap();
        tx.commit().await.unwrap();
        assert_eq!((delivered, rows), (3, 1), "one row for the three events");
        services.bus.wake();
        let failing_work = services.bus.deliveries(&events[1], None).unwrap()[0]
            .id
            .clone();
        only_the_failing_event_fails(&app, &token, &failing_work).await;
        app.stop().await;
    }
);

database_test!(
    claims_take_the_oldest_due_items_and_completions_only_their_own_attempt,
    |backend| async move {
        let (_test_database, database, queue) = migrated_queue(backend).await;
        let now = chrono::Utc::now();
        let item = |engine_code: &str, seconds_ago: i64, payload: &str| {
            job(
                engine_code,
                now - chrono::Duration::seconds(seconds_ago),
                payload,
            )
        };
        // A backlog enqueued newest first, items of an engine this host does not run, and
        // items not due yet.
        let mut items: Vec<NewWork> = (0..300)
            .map(|index| item("jobber", index, &format!("due-{index}")))
            .collect();
        items.push(item("other", 10_000, "other-engine"));
        items.push(item("jobber", -600, "later"));
        queue.enqueue(&items).await.unwrap();
        // A run whose host died: its lease ran out, and it is older than every pending item.
        let expired = queue
            .enqueue(&[item("jobber", 5_000, "expired")])
            .await
            .unwrap();
        tessera_host::on_pool!(database, pool => sqlx::query(
            "UPDATE engine_work SET status = 'running', attempt = 1, locked_until = $2 WHERE id = $1",
        )
        .bind(&expired[0])
        .bind("2000-01-01T00:00:00.000000Z")
        .execute(pool)
        .await
        .map(drop))
        .unwrap();

        let engines = ["jobber".to_owned()];
        let lease = Duration::from_secs(60);
        let payloads = |claimed: &[ClaimedWork]| -> Vec<String> {
            claimed
                .iter()
                .map(|work| String::from_utf8(work.payload.clone()).unwrap())
                .collect()
        };
        let first = queue.claim(&engines, 3, lease).await.unwrap();
        assert_eq!(payloads(&first), ["expired", "due-299", "due-298"]);
        assert_eq!(
            first.iter().map(|work| work.attempt).collect::<Vec<_>>(),
            [2, 1, 1],
            "a claim counts the run"
        );
        // Claimed items are not claimed again while their lease runs.
        let second = queue.claim(&engines, 2, lease).await.unwrap();
        assert_eq!(payloads(&second), ["due-297", "due-296"]);

        // A completion names the attempt it ran: a stale one deletes nothing.
        let stale = (first[0].id.clone(), first[0].attempt - 1);
        let done: Vec<(String, u32)> = first
            .iter()
            .skip(1)
            .chain(&second)
            .map(|work| (work.id.clone(), work.attempt))
            .chain([stale])
            .collect();
        queue.complete_many(&done).await.unwrap();
        let left: i64 = tessera_host::on_pool!(database, pool => sqlx::query_scalar(
            "SELECT count(*) FROM engine_work",
        )
        .fetch_one(pool)
        .await)
        .unwrap();
        assert_eq!(left, 303 - 4, "four completions deleted four items");
        let expired_status: String = tessera_host::on_pool!(database, pool => sqlx::query_scalar(
            "SELECT status FROM engine_work WHERE id = $1",
        )
        .bind(&expired[0])
        .fetch_one(pool)
        .await)
        .unwrap();
        assert_eq!(expired_status, "running");

        // The whole due backlog drains in claim order, and nothing else is claimed.
        let mut drained = Vec::new();
        loop {
            let claimed = queue.claim(&engines, 32, lease).await.unwrap();
            if claimed.is_empty() {
                break;
            }
            drained.extend(payloads(&claimed));
        }
        let expected: Vec<String> = (0..296).rev().map(|index| format!("due-{index}")).collect();
        assert_eq!(drained, expected);
        database.close().await;
    }
);

database_test!(
    handed_back_claims_are_pending_again_and_storage_groups_complete_work,
    |backend| async move {
        use tessera_host::runtime::batch_writer::{BatchWriter, StorageBatch};
        use tessera_host::storage::engine_kv::{self, KvScope};

        let (_test_database, database, queue) = migrated_queue(backend).await;
        let now = chrono::Utc::now();
        let item = |payload: &str| job("jobber", now - chrono::Duration::seconds(10), payload);
        queue
            .enqueue(&[item("first"), item("second"), item("third")])
            .await
            .unwrap();
        let engines = ["jobber".to_owned()];
        let lease = Duration::from_secs(60);
        let status = |id: String| {
            let database = database.clone();
            async move {
                tessera_host::on_pool!(database, pool => sqlx::query_as::<_, (String, i64)>(
                    "SELECT status, attempt FROM engine_work WHERE id = $1",
                )
                .bind(&id)
                .fetch_optional(pool)
                .await)
                .unwrap()
            }
        };

        // Handed back: pending again, the claim not counted as a run, claimable at once.
        let claimed = queue.claim(&engines, 2, lease).await.unwrap();
        assert_eq!(claimed.len(), 2);
        queue.release(&claimed[..1]).await.unwrap();
        assert_eq!(
            status(claimed[0].id.clone()).await,
            Some(("pending".to_owned(), 0))
        );
        assert_eq!(
            status(claimed[1].id.clone()).await,
            Some(("running".to_owned(), 1))
        );
        let again = queue.claim(&engines, 3, lease).await.unwrap();
        assert_eq!(again.len(), 2, "the handed-back item and the third");
        assert!(again.iter().any(|work| work.id == claimed[0].id));
        assert!(again.iter().all(|work| work.attempt == 1));
        // A stale hand-back changes nothing: the second item's lease ran out (its host, say,
        // hung) and another claim took it over (attempt 2) before the hand-back came.
        tessera_host::on_pool!(database, pool => sqlx::query(
            "UPDATE engine_work SET locked_until = $2 WHERE id = $1",
        )
        .bind(&claimed[1].id)
        .bind("2000-01-01T00:00:00.000000Z")
        .execute(pool)
        .await
        .map(drop))
        .unwrap();
        let taken_over = queue.claim(&engines, 1, lease).await.unwrap();
        assert_eq!(taken_over[0].id, claimed[1].id);
        assert_eq!(taken_over[0].attempt, 2);
        queue.release(&claimed[1..2]).await.unwrap();
        assert_eq!(
            status(claimed[1].id.clone()).await,
            Some(("running".to_owned(), 2))
        );

        // One group: storage writes, a new job and two completions, all or nothing; a stale
        // completion (an attempt that is not the item's current one) deletes nothing.
        let writer = BatchWriter::start(database.clone(), queue.clone());
        let scope = KvScope {
            engine_code: "jobber",
            tenant_id: "tenant",
        };
        engine_kv::set(&database, &scope, "gone", b"old")
            .await
            .unwrap();
        let batch = StorageBatch {
            engine_code: "jobber".to_owned(),
            tenant_id: "tenant".to_owned(),
            expect: Vec::new(),
            add: Vec::new(),
            sets: vec![
                ("b".to_owned(), b"2".to_vec()),
                ("a".to_owned(), b"1".to_vec()),
            ],
            deletes: vec!["gone".to_owned()],
            jobs: vec![item("scheduled")],
            ..StorageBatch::default()
        };
        let stale = (claimed[1].id.clone(), claimed[1].attempt);
        let (ids, first, second, stale_done) = tokio::join!(
            writer.write(batch),
            writer.complete((again[0].id.clone(), again[0].attempt)),
            writer.complete((again[1].id.clone(), again[1].attempt)),
            writer.complete(stale),
        );
        let ids = ids.unwrap();
        first.unwrap();
        second.unwrap();
        stale_done.unwrap();
        assert_eq!(ids.len(), 1);
        assert_eq!(
            status(ids[0].clone()).await,
            Some(("pending".to_owned(), 0))
        );
        assert_eq!(status(again[0].id.clone()).await, None);
        assert_eq!(status(again[1].id.clone()).await, None);
        assert_eq!(
            status(claimed[1].id.clone()).await,
            Some(("running".to_owned(), 2))
        );
        let values = engine_kv::get_many(
            &database,
            &scope,
            &["a".to_owned(), "b".to_owned(), "gone".to_owned()],
        )
        .await
        .unwrap();
        assert_eq!(values, vec![Some(b"1".to_vec()), Some(b"2".to_vec()), None]);
        database.close().await;
    }
);

database_test!(
    a_unit_whose_work_was_claimed_again_commits_nothing_and_its_group_commits_the_rest,
    |backend| async move {
        use tessera_host::runtime::batch_writer::{BatchWriter, BlobWrites, StorageBatch};
        use tessera_host::storage::engine_blobs;
        use tessera_host::storage::engine_kv::{self, KvScope};

        let (_test_database, database, queue) = migrated_queue(backend).await;
        let now = chrono::Utc::now();
        let items: Vec<NewWork> = (0..5)
            .map(|index| {
                job(
                    "jobber",
                    now - chrono::Duration::seconds(100 - index),
                    &format!("item-{index}"),
                )
            })
            .collect();
        let ids = queue.enqueue(&items).await.unwrap();
        let engines = ["jobber".to_owned()];
        let lease = Duration::from_secs(60);
        let claimed = queue.claim(&engines, 5, lease).await.unwrap();
        assert_eq!(claimed.len(), 5);
        let run_of = |id: &str| {
            let work = claimed.iter().find(|work| work.id == id).unwrap();
            (work.id.clone(), work.attempt)
        };
        // This host stalled (or died mid-commit): the leases of items 0, 2 and 4 ran out and
        // another host claimed them again (attempt 2), so their runs here are stale.
        for stale in [&ids[0], &ids[2], &ids[4]] {
            tessera_host::on_pool!(database, pool => sqlx::query(
                "UPDATE engine_work SET locked_until = $2 WHERE id = $1",
            )
            .bind(stale)
            .bind("2000-01-01T00:00:00.000000Z")
            .execute(pool)
            .await
            .map(drop))
            .unwrap();
        }
        let taken_over = queue.claim(&engines, 5, lease).await.unwrap();
        assert_eq!(taken_over.len(), 3);
        assert!(taken_over.iter().all(|work| work.attempt == 2));

        let writer = BatchWriter::start(database.clone(), queue.clone());
        let scope = KvScope {
            engine_code: "jobber",
            tenant_id: "tenant",
        };
        let unit = |key: &str, completes: (String, u32)| StorageBatch {
            engine_code: "jobber".to_owned(),
            tenant_id: "tenant".to_owned(),
            sets: vec![(key.to_owned(), b"effect".to_vec())],
            completes: vec![completes],
            ..StorageBatch::default()
        };
        let refused = |outcome: anyhow::Result<Vec<String>>| {
            let error = outcome.expect_err("a stale unit must not commit");
            assert!(format!("{error:#}").contains("claimed again"), "{error:#}");
        };
        // One group of plain units (PostgreSQL: the single group statement): the stale unit
        // is refused whole, the current one and a bare stale completion commit.
        let (stale_unit, current_unit, bare_stale) = tokio::join!(
            writer.write(unit("stale", run_of(&ids[0]))),
            writer.write(unit("current", run_of(&ids[1]))),
            writer.complete(run_of(&ids[2])),
        );
        refused(stale_unit);
        current_unit.unwrap();
        bare_stale.unwrap();
        // A unit with a condition (the transaction path) and one with a blob (the unit alone,
        // in a savepoint): refused the same way.
        let conditional = StorageBatch {
            expect: vec![("absent".to_owned(), None)],
            ..unit("conditional", run_of(&ids[2]))
        };
        let error = writer
            .write_conditional(conditional)
            .await
            .expect_err("a stale conditional unit must not commit");
        assert!(format!("{error:#}").contains("claimed again"), "{error:#}");
        let with_blob = StorageBatch {
            blobs: BlobWrites {
                puts: vec![("blob".to_owned(), b"content".to_vec())],
                ..BlobWrites::default()
            },
            ..unit("with-blob", run_of(&ids[4]))
        };
        refused(writer.write(with_blob).await);
        // A current unit with a blob commits.
        let current_blob = StorageBatch {
            blobs: BlobWrites {
                puts: vec![("current-blob".to_owned(), b"content".to_vec())],
                ..BlobWrites::default()
            },
            ..unit("current-blob", run_of(&ids[3]))
        };
        writer.write(current_blob).await.unwrap();

        let keys: Vec<String> = [
            "stale",
            "current",
            "conditional",
            "with-blob",
            "current-blob",
        ]
        .map(str::to_owned)
        .to_vec();
        let values = engine_kv::get_many(&database, &scope, &keys).await.unwrap();
        assert_eq!(
            values,
            vec![
                None,
                Some(b"effect".to_vec()),
                None,
                None,
                Some(b"effect".to_vec())
            ]
        );
        assert_eq!(
            engine_blobs::get(&database, &scope, "blob").await.unwrap(),
            None
        );
        assert!(
            engine_blobs::get(&database, &scope, "current-blob")
                .await
                .unwrap()
                .is_some()
        );
        // The items claimed again stay with their new run; the completed ones are gone.
        let mut left: Vec<(String, i64)> = tessera_host::on_pool!(database, pool => sqlx::query_as(
            "SELECT id, attempt FROM engine_work",
        )
        .fetch_all(pool)
        .await)
        .unwrap();
        left.sort();
        let mut expected: Vec<(String, i64)> = [&ids[0], &ids[2], &ids[4]]
            .map(|id| (id.clone(), 2))
            .to_vec();
        expected.sort();
        assert_eq!(left, expected);
        database.close().await;
    }
);

database_test!(
    transactions_commit_only_on_their_conditions_and_counters_add_up,
    |backend| async move {
        use tessera_host::runtime::batch_writer::{BatchWriter, StorageBatch};
        use tessera_host::storage::engine_kv::{self, KvScope};

        let (_test_database, database, queue) = migrated_queue(backend).await;
        let writer = BatchWriter::start(database.clone(), queue.clone());
        let scope = KvScope {
            engine_code: "jobber",
            tenant_id: "tenant",
        };
        engine_kv::set(&database, &scope, "state", b"open")
            .await
            .unwrap();
        let now = chrono::Utc::now();
        let transaction =
            |expect: Option<&str>, set: &str, add: i64, job_payload: &str| StorageBatch {
                engine_code: "jobber".to_owned(),
                tenant_id: "tenant".to_owned(),
                expect: vec![(
                    "state".to_owned(),
                    expect.map(|value| value.as_bytes().to_vec()),
                )],
                sets: vec![("state".to_owned(), set.as_bytes().to_vec())],
                deletes: Vec::new(),
                add: vec![("count".to_owned(), add)],
                jobs: vec![job("jobber", now, job_payload)],
                ..StorageBatch::default()
            };
        // Twelve calls race to close the same state, each counting it: one wins, whatever
        // groups they fall into; the others change nothing and schedule nothing.
        let racing = (0..12).map(|index| {
            writer.write_conditional(transaction(
                Some("open"),
                "closed",
                1,
                &format!("job{index}"),
            ))
        });
        let outcomes: Vec<_> = futures_util::future::join_all(racing)
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();
        let won: Vec<_> = outcomes.iter().flatten().collect();
        assert_eq!(won.len(), 1, "{outcomes:?}");
        assert_eq!(won[0].len(), 1, "the winner's job is scheduled");
        let count = |database: tessera_host::storage::Database| async move {
            let scope = KvScope {
                engine_code: "jobber",
                tenant_id: "tenant",
            };
            engine_kv::get(&database, &scope, "count").await.unwrap()
        };
        assert_eq!(count(database.clone()).await, Some(b"1".to_vec()));
        let scheduled: i64 = tessera_host::on_pool!(database, pool => sqlx::query_scalar(
            "SELECT COUNT(*) FROM engine_work WHERE engine_code = 'jobber' AND payload LIKE 'job%'",
        )
        .fetch_one(pool)
        .await
        .unwrap());
        assert_eq!(scheduled, 1);

        // Counters without conditions never conflict: 20 concurrent adds all count.
        let adds = (0..20).map(|_| {
            writer.write_conditional(StorageBatch {
                expect: Vec::new(),
                sets: Vec::new(),
                jobs: Vec::new(),
                ..transaction(None, "", 5, "")
            })
        });
        for outcome in futures_util::future::join_all(adds).await {
            assert!(outcome.unwrap().is_some());
        }
        assert_eq!(count(database.clone()).await, Some(b"101".to_vec()));

        // Expecting absence holds only while the key is absent; a value that is no integer
        // cannot be added to, and that transaction writes nothing.
        let claim = |value: &str| StorageBatch {
            expect: vec![("claim".to_owned(), None)],
            sets: vec![("claim".to_owned(), value.as_bytes().to_vec())],
            add: Vec::new(),
            jobs: Vec::new(),
            ..transaction(None, "", 0, "")
        };
        let (first, second) = tokio::join!(
            writer.write_conditional(claim("a")),
            writer.write_conditional(claim("b"))
        );
        assert_eq!(
            [first.unwrap().is_some(), second.unwrap().is_some()]
                .iter()
                .filter(|won| **won)
                .count(),
            1
        );
        let not_a_number = StorageBatch {
            expect: Vec::new(),
            sets: vec![("other".to_owned(), b"x".to_vec())],
            add: vec![("state".to_owned(), 1)],
            jobs: Vec::new(),
            ..transaction(None, "", 0, "")
        };
        let error = writer.write_conditional(not_a_number).await.unwrap_err();
        assert!(
            format!("{error:#}").contains("does not hold an integer"),
            "{error:#}"
        );
        assert_eq!(
            engine_kv::get(&database, &scope, "other").await.unwrap(),
            None
        );
        assert_eq!(
            engine_kv::get(&database, &scope, "state").await.unwrap(),
            Some(b"closed".to_vec())
        );
        database.close().await;
    }
);

database_test!(
    a_stopping_host_hands_back_the_work_it_claimed_but_did_not_start,
    |backend| async move {
        let app = spawn_app_with(
            backend,
            AppOptions {
                plugins: vec!["jobber"],
                // One slot: a run in it, one claimed item waiting for it, the rest pending.
                configure: Some(Box::new(|config| config.work.concurrency = 1)),
                ..AppOptions::default()
            },
        )
        .await;
        let token = app.token(&uuid(), &uuid(), "editor").await;
        for _ in 0..3 {
            schedule(&app, &token, 0, "busy-ms:1500").await;
        }
        wait_for(&app, "/jobber/api/v1/runs", &token, |runs| !runs.is_empty()).await;
        let claimed = |database: tessera_host::storage::Database| async move {
            tessera_host::on_pool!(database, pool => sqlx::query_as::<_, (String, i64)>(
                "SELECT status, attempt FROM engine_work WHERE engine_code = 'jobber' ORDER BY status, attempt",
            )
            .fetch_all(pool)
            .await)
            .unwrap()
        };
        // While the first runs: it and the one waiting for its slot are claimed.
        let expected_during = [
            ("pending".to_owned(), 0),
            ("running".to_owned(), 1),
            ("running".to_owned(), 1),
        ];
        let started = std::time::Instant::now();
        loop {
            let during = claimed(app.state().database.clone()).await;
            if during == expected_during {
                break;
            }
            assert!(
                started.elapsed() < Duration::from_millis(1000),
                "while the first run lasts: {during:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }

        // Stopping lets the run finish and hands the waiting item back: two items left, both
        // pending, neither counted as run.
        let database = app.stop_keeping_database().await;
        let handle = database.connect().await;
        assert_eq!(
            claimed(handle.clone()).await,
            [("pending".to_owned(), 0), ("pending".to_owned(), 0)]
        );
        handle.close().await;
    }
);
