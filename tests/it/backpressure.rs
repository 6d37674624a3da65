//! Backpressure: past the operator's bound on the backlog of accepted work, writes answer 503
//! with `Retry-After` and change nothing; reads go on; once the backlog drains, writes are
//! admitted again and nothing accepted was lost.

use std::time::Duration;

use serde_json::{Value, json};

use crate::database_test;
use crate::helpers::{
    AppOptions, Backend, TestApp, TestDatabase, eventually, json_with_status, spawn_app_with,
};
use tessera_host::config::Config;
use tessera_host::storage::Database;

/// The bound of these tests: more than five items waiting refuses writes.
const MAX_ITEMS: u64 = 5;

fn bounded(config: &mut Config) {
    config.backlog.max_items = MAX_ITEMS;
    config.backlog.max_age = Duration::ZERO;
}

async fn host(backend: Backend, database: Option<TestDatabase>, projections: bool) -> TestApp {
    spawn_app_with(
        backend,
        AppOptions {
            database,
            ..AppOptions::unlimited_and(move |config| {
                bounded(config);
                config.projections.run_workers = projections;
            })
        },
    )
    .await
}

async fn backlog(app: &TestApp) -> Value {
    json_with_status(app.get("/core/api/metrics").await, 200).await["data"]["backlog"].clone()
}

database_test!(
    past_the_backlog_bound_writes_are_refused_and_nothing_accepted_is_lost,
    |backend| async move {
        // A host whose projections do not run: every accepted intention's events wait.
        let app = host(backend, None, false).await;
        let tenant = app.create_tenant("acme");
        let token = app
            .token(&tenant, &uuid::Uuid::new_v4().to_string(), "owner")
            .await;

        let (accepted, refused) = write_until_refused(&app, &token).await;
        // Refused only once the log held more than the bound (each contact is two events:
        // created, then its one field set; how many writes that takes depends on when the
        // sampler looks, every half second).
        let logged = app.scalar("SELECT COUNT(*) FROM events").await;
        assert!(
            logged as u64 > MAX_ITEMS,
            "{accepted} accepted, {logged} events"
        );
        assert_eq!(logged, 2 * accepted as i64, "{accepted} accepted");
        let retry_after: u64 = refused.headers()["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!((1..=30).contains(&retry_after), "Retry-After {retry_after}");
        let body = json_with_status(refused, 503).await;
        assert!(
            body["message"].as_str().unwrap().contains("retry later"),
            "{body}"
        );
        // The refused write changed nothing; reads and sign-in are not refused.
        let entities = app.scalar("SELECT COUNT(*) FROM entities").await;
        assert_eq!(entities, accepted as i64);
        json_with_status(
            app.get_as("/core/api/v1/entities?family=contact", &token)
                .await,
            200,
        )
        .await;
        let report = backlog(&app).await;
        assert_eq!(report["refusing_writes"], true, "{report}");
        assert_eq!(report["max_items"], MAX_ITEMS);
        assert!(report["items"].as_u64().unwrap() > MAX_ITEMS, "{report}");

        // A host with projections takes over the same database: the backlog drains, every
        // accepted entity was projected, and writes are admitted again.
        let database = app.stop_keeping_database().await;
        let app = host(backend, Some(database), true).await;
        let accepted_count = accepted as i64;
        eventually(
            30,
            "every accepted entity projected and the backlog drained",
            || async {
                let projected = app
                    .scalar("SELECT COUNT(DISTINCT entity_id) FROM search_documents")
                    .await;
                let report = backlog(&app).await;
                let drained = report["items"] == 0 && report["refusing_writes"] == false;
                (projected == accepted_count && drained).then_some(())
            },
        )
        .await;
        // Samples taken since then agree (the gauge is sampled every half second).
        tokio::time::sleep(Duration::from_millis(1200)).await;
        let report = backlog(&app).await;
        assert_eq!(report["items"], 0, "{report}");
        assert_eq!(report["refusing_writes"], false, "{report}");
        json_with_status(create_contact(&app, &token, "after").await, 200).await;
        app.stop().await;
    }
);

/// `POST /core/api/v1/intentions`: a contact named `name`, as `token`.
async fn create_contact(app: &TestApp, token: &str, name: &str) -> reqwest::Response {
    app.intention(
        token,
        "entity.create",
        json!({ "family": "contact", "fields": { "name": name } }),
    )
    .await
}

/// Creates contacts as `token` until a write is refused: how many were accepted, and the
/// refusal.
async fn write_until_refused(app: &TestApp, token: &str) -> (usize, reqwest::Response) {
    let mut accepted = 0;
    loop {
        assert!(accepted < 200, "no write was refused");
        let response = create_contact(app, token, &format!("c{accepted}")).await;
        if response.status() == 503 {
            return (accepted, response);
        }
        let body = json_with_status(response, 200).await;
        assert!(body["data"]["entity_id"].is_string(), "{body}");
        accepted += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

database_test!(
    a_tenant_flooding_the_platform_is_refused_while_another_goes_on_writing,
    |backend| async move {
        // A host whose projections do not run: every accepted intention's events wait.
        let app = host(backend, None, false).await;
        let flooding = app.create_tenant("flood");
        let quiet = app.create_tenant("quiet");
        let flooding_token = app
            .token(&flooding, &uuid::Uuid::new_v4().to_string(), "owner")
            .await;
        let quiet_token = app
            .token(&quiet, &uuid::Uuid::new_v4().to_string(), "owner")
            .await;
        let (flooded, _) = write_until_refused(&app, &flooding_token).await;
        assert!(flooded as u64 > MAX_ITEMS / 2);

        // Once the sampler has found who holds the backlog, the other tenant writes again.
        eventually(10, "the quiet tenant's write accepted", || async {
            let response = create_contact(&app, &quiet_token, "quiet").await;
            (response.status() == 200).then_some(())
        })
        .await;
        let report = backlog(&app).await;
        assert_eq!(report["refusing_writes"], true, "{report}");
        assert_eq!(report["refused_tenants"], json!([flooding]), "{report}");
        // The flooding tenant is still refused, and its refused write changed nothing.
        let before = app.scalar("SELECT COUNT(*) FROM entities").await;
        let refused = create_contact(&app, &flooding_token, "more").await;
        assert_eq!(refused.status(), 503);
        assert!(refused.headers().contains_key("retry-after"));
        assert_eq!(app.scalar("SELECT COUNT(*) FROM entities").await, before);
        app.stop().await;
    }
);

database_test!(
    the_backlog_counts_due_engine_work_up_to_its_cap_and_its_age,
    |backend| async move {
        use tessera_host::runtime::batch_writer::{BatchWriter, StorageBatch};
        use tessera_host::runtime::work::{NewWork, WorkKind, WorkQueue};

        let database = TestDatabase::new(backend).await;
        let handle = Database::connect_and_migrate(&database.database_config())
            .await
            .expect("migrating");
        let queue = WorkQueue::new(handle.clone());
        let writer = BatchWriter::start(handle.clone(), queue.clone());
        let job = |due_in_seconds: i64| NewWork {
            id: uuid::Uuid::new_v4().to_string(),
            engine_code: "absent".to_owned(),
            tenant_id: "tenant-a".to_owned(),
            kind: WorkKind::Job,
            payload: b"{}".to_vec(),
            due_at: chrono::Utc::now() + chrono::Duration::seconds(due_in_seconds),
            traceparent: None,
        };
        let engines = ["absent".to_owned(), "other".to_owned()];
        assert_eq!(queue.backlog(&engines, 100).await.unwrap().items, 0);
        // Four jobs due (the oldest 60 s ago), two due in an hour: only the four wait.
        let jobs = vec![job(-60), job(-1), job(0), job(-5), job(3600), job(3600)];
        writer
            .write(StorageBatch {
                engine_code: "absent".to_owned(),
                tenant_id: "tenant-a".to_owned(),
                jobs,
                ..StorageBatch::default()
            })
            .await
            .unwrap();
        let sample = queue.backlog(&engines, 100).await.unwrap();
        assert_eq!(sample.items, 4);
        assert!(
            (60..120).contains(&sample.oldest_age.as_secs()),
            "{sample:?}"
        );
        // Counting stops at the cap; the age is still the oldest's.
        let capped = queue.backlog(&engines, 2).await.unwrap();
        assert_eq!(capped.items, 2);
        assert!(capped.oldest_age.as_secs() >= 60);
        // The work of engines not loaded here does not count (nor does anything without them).
        let elsewhere = queue.backlog(&["other".to_owned()], 100).await.unwrap();
        assert_eq!((elsewhere.items, elsewhere.oldest_age), (0, Duration::ZERO));
        assert_eq!(queue.backlog(&[], 100).await.unwrap().items, 0);
        handle.close().await;
    }
);
