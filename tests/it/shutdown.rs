//! Stopping the host, through the real binary: on SIGTERM, `/readyz` is no longer
//! served, a request in flight finishes and is answered, and the host exits cleanly; one that
//! outlasts `TESSERA_SHUTDOWN_TIMEOUT` does not hold the host past that deadline.

use std::time::{Duration, Instant};

use crate::helpers::{
    AppOptions, Backend, ServeProcess, TestDatabase, on_database, spawn_app_with,
};

/// A real `tessera serve` with the test component `plugin` and the environment `settings`, an
/// editor's token for it, and its data (kept until the test ends).
async fn served_with(
    plugin: &'static str,
    settings: &[(&str, &str)],
) -> (ServeProcess, String, TestDatabase) {
    let database = TestDatabase::new(Backend::Sqlite).await;
    let app = spawn_app_with(
        Backend::Sqlite,
        AppOptions {
            plugins: vec![plugin],
            database: Some(database),
            ..AppOptions::default()
        },
    )
    .await;
    let token = app
        .token(
            &uuid::Uuid::new_v4().to_string(),
            &uuid::Uuid::new_v4().to_string(),
            "editor",
        )
        .await;
    let database = app.stop_keeping_database().await;
    let served = ServeProcess::start(|command| {
        command.envs(settings.iter().copied());
        on_database(command, &database)
    });
    (served, token, database)
}

/// [`served_with`] the `napper` test component and `TESSERA_SHUTDOWN_TIMEOUT`.
async fn napper_host(shutdown_timeout: &str) -> (ServeProcess, String, TestDatabase) {
    served_with(
        "napper",
        &[
            ("TESSERA_SHUTDOWN_TIMEOUT", shutdown_timeout),
            ("TESSERA_ENGINE_HANDLE_TIMEOUT", "60s"),
        ],
    )
    .await
}

/// Starts `GET /napper/api/v1/nap?ms=…` and waits until the host is running it.
async fn nap_in_flight(
    served: &ServeProcess,
    token: &str,
    ms: u64,
) -> tokio::task::JoinHandle<Result<reqwest::Response, reqwest::Error>> {
    let request = reqwest::Client::new()
        .get(served.url(&format!("/napper/api/v1/nap?ms={ms}")))
        .bearer_auth(token)
        .send();
    let in_flight = tokio::spawn(request);
    // The call is admitted and sleeping well within this.
    tokio::time::sleep(Duration::from_millis(500)).await;
    in_flight
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_a_request_in_flight_finish_then_exits_cleanly() {
    let (served, token, _database) = napper_host("20s").await;
    let ready = reqwest::get(served.url("/readyz")).await.unwrap();
    assert!([200, 503].contains(&ready.status().as_u16()));
    let in_flight = nap_in_flight(&served, &token, 2_000).await;
    let url = served.url("/readyz");
    let started = Instant::now();
    let exit = tokio::task::spawn_blocking(move || served.terminate());
    // Once stopping, the host accepts no new connection (a load balancer's probe fails).
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        reqwest::get(&url).await.is_err(),
        "no new connection is accepted while draining"
    );
    let response = in_flight
        .await
        .unwrap()
        .expect("the request in flight is answered");
    assert_eq!(response.status(), 200);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["data"]["slept_ms"], 2_000);
    let status = exit.await.unwrap();
    assert!(status.success(), "a clean exit: {status:?}");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the host exited once the request was answered, not at the deadline ({:?})",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_past_the_shutdown_deadline_does_not_hold_the_host() {
    let (served, token, _database) = napper_host("1s").await;
    let in_flight = nap_in_flight(&served, &token, 30_000).await;
    let started = Instant::now();
    let status = tokio::task::spawn_blocking(move || served.terminate())
        .await
        .unwrap();
    let stopped_after = started.elapsed();
    assert!(
        status.success(),
        "the deadline is a clean exit too: {status:?}"
    );
    // The deadline (1 s), the moment given to hand back engine work (2 s), and the runtime's
    // own second: far less than the 30 s call.
    assert!(
        stopped_after < Duration::from_secs(10),
        "the host exited {stopped_after:?} after SIGTERM"
    );
    assert!(
        in_flight.await.unwrap().is_err(),
        "the cut-off request is not answered as if it had succeeded"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_work_running_at_the_deadline_goes_back_to_the_queue() {
    let (served, token, database) =
        served_with("jobber", &[("TESSERA_SHUTDOWN_TIMEOUT", "1s")]).await;
    let client = reqwest::Client::new();
    // A job that runs 20 s (its lifecycle deadline is 30 s).
    let scheduled = client
        .post(served.url("/jobber/api/v1/jobs"))
        .bearer_auth(&token)
        .json(&serde_json::json!({ "in_ms": 0, "payload": "busy-ms:20000" }))
        .send()
        .await
        .unwrap();
    assert_eq!(scheduled.status(), 201);
    crate::helpers::eventually(20, "the job to start", || async {
        let runs: serde_json::Value = client
            .get(served.url("/jobber/api/v1/runs"))
            .bearer_auth(&token)
            .send()
            .await
            .ok()?
            .json()
            .await
            .ok()?;
        (runs["data"].as_array()?.len() == 1).then_some(())
    })
    .await;
    let started = Instant::now();
    let status = tokio::task::spawn_blocking(move || served.terminate())
        .await
        .unwrap();
    assert!(status.success(), "{status:?}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );

    // The run was handed back: pending again, unclaimed, its attempt not counted, so the next
    // host runs it at once rather than when its lease would have ended.
    let pool = sqlx::SqlitePool::connect(&database.url).await.unwrap();
    let (status, locked_until, attempt): (String, Option<String>, i64) =
        sqlx::query_as("SELECT status, locked_until, attempt FROM engine_work WHERE kind = 'job'")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(
        (status.as_str(), locked_until, attempt),
        ("pending", None, 0)
    );
    pool.close().await;
}
