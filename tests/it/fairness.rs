//! A fair engine runtime: with a small instance pool, tenants flooding slow engine calls are
//! held to their share (beyond their queue: 503 with `Retry-After`, never 502) while a quiet
//! tenant's requests all succeed, and jobs and event deliveries queued meanwhile all complete
//! without an attempt spent on the lack of capacity.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tessera_host::config::Config;
use tessera_host::runtime::bus::BusEvent;
use tessera_host::runtime::work::{NewWork, WorkKind};
use tokio_util::sync::CancellationToken;

use crate::database_test;
use crate::helpers::{AppOptions, Backend, TestApp, json_with_status, spawn_app_with};

/// Flooding clients per flooding tenant: more than its share and its queue together.
const FLOODERS: usize = 16;
/// How long a flooding call holds its instance.
const SLOW_CALL_MS: u64 = 400;

fn uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// A pool of 8 instances, 4 per tenant, 4 more requests of a tenant may wait.
fn small_pool(config: &mut Config) {
    crate::helpers::without_rate_limits(config);
    config.runtime.max_instances = 8;
    config.runtime.tenant_concurrency = Some(4);
    config.runtime.tenant_queue = 4;
    config.runtime.tenant_queue_timeout = Duration::from_secs(5);
}

async fn spawn(backend: Backend, plugins: Vec<&'static str>) -> TestApp {
    spawn_app_with(
        backend,
        AppOptions {
            plugins,
            configure: Some(Box::new(small_pool)),
            ..AppOptions::default()
        },
    )
    .await
}

/// What the flooding clients saw.
#[derive(Default)]
struct FloodOutcome {
    ok: usize,
    /// 503s with a `Retry-After` header and a `{message}` body.
    refused: usize,
    /// Anything else: status and body.
    other: Vec<(u16, String)>,
}

impl std::fmt::Debug for FloodOutcome {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("FloodOutcome")
            .field("ok", &self.ok)
            .field("refused", &self.refused)
            .field("other", &self.other.len())
            .field("first others", &&self.other[..self.other.len().min(2)])
            .finish()
    }
}

/// Starts [`FLOODERS`] clients sending slow calls as `token` until `stop`.
fn flood(
    app: &TestApp,
    token: &str,
    stop: &CancellationToken,
) -> (Arc<Mutex<FloodOutcome>>, Vec<tokio::task::JoinHandle<()>>) {
    let outcome = Arc::new(Mutex::new(FloodOutcome::default()));
    let url = app.url(&format!("/napper/api/v1/nap?ms={SLOW_CALL_MS}"));
    let tasks = (0..FLOODERS)
        .map(|_| {
            let (client, url, token, stop, outcome) = (
                app.client.clone(),
                url.clone(),
                token.to_owned(),
                stop.clone(),
                outcome.clone(),
            );
            tokio::spawn(async move {
                while !stop.is_cancelled() {
                    let response = client.get(&url).bearer_auth(&token).send().await.unwrap();
                    let status = response.status().as_u16();
                    let retry_after = response.headers().get("retry-after").cloned();
                    let body = response.text().await.unwrap_or_default();
                    let message = serde_json::from_str::<Value>(&body)
                        .ok()
                        .and_then(|body| body["message"].as_str().map(str::to_owned));
                    {
                        let mut outcome = outcome.lock().unwrap();
                        match status {
                            200 => outcome.ok += 1,
                            503 if retry_after.is_some_and(|value| value == "1")
                                && message.is_some_and(|message| !message.is_empty()) =>
                            {
                                outcome.refused += 1;
                            }
                            _ => outcome.other.push((status, body)),
                        }
                    }
                    if status != 200 {
                        // Refused at once: retry a little later, as the header says (sooner).
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
            })
        })
        .collect();
    (outcome, tasks)
}

async fn stop_flood(stop: &CancellationToken, tasks: Vec<tokio::task::JoinHandle<()>>) {
    stop.cancel();
    for task in tasks {
        task.await.unwrap();
    }
}

database_test!(
    a_flooding_tenant_is_held_to_its_share_while_another_tenants_requests_all_succeed,
    |backend| async move {
        let app = spawn(backend, vec!["napper"]).await;
        let flooding = [
            app.token(&uuid(), &uuid(), "editor").await,
            app.token(&uuid(), &uuid(), "editor").await,
        ];
        let quiet = app.token(&uuid(), &uuid(), "editor").await;

        // Two tenants flood: each may hold 4 of the 8 instances, so together they fill the
        // pool, and each has far more requests in flight than its share and queue.
        let stop = CancellationToken::new();
        let floods: Vec<_> = flooding
            .iter()
            .map(|token| flood(&app, token, &stop))
            .collect();
        tokio::time::sleep(Duration::from_millis(SLOW_CALL_MS)).await;

        // The quiet tenant's requests, three at a time, all succeed meanwhile.
        let mut quiet_statuses = Vec::new();
        for _ in 0..4 {
            let rounds = (0..3).map(|_| async {
                let response = app.get_as("/napper/api/v1/nap?ms=20", &quiet).await;
                let status = response.status().as_u16();
                (status, response.text().await.unwrap_or_default())
            });
            quiet_statuses.extend(futures_util::future::join_all(rounds).await);
        }
        let mut outcomes = Vec::new();
        for (outcome, tasks) in floods {
            stop_flood(&stop, tasks).await;
            outcomes.push(Arc::try_unwrap(outcome).unwrap().into_inner().unwrap());
        }

        let failed: Vec<_> = quiet_statuses
            .iter()
            .filter(|(status, _)| *status != 200)
            .collect();
        assert!(
            failed.is_empty(),
            "{} of the quiet tenant's {} requests failed while others flooded, e.g. {:?} (flooders: {outcomes:?})",
            failed.len(),
            quiet_statuses.len(),
            failed[0]
        );
        for outcome in &outcomes {
            assert!(
                outcome.other.is_empty(),
                "a flooding tenant got something else than 200 or 503 with Retry-After: {outcome:?}"
            );
            assert!(
                outcome.ok > 0,
                "a flooding tenant got nothing done: {outcome:?}"
            );
            assert!(
                outcome.refused > 0,
                "a flooding tenant was never refused beyond its queue: {outcome:?}"
            );
        }

        // Once the flood is over every slot is free again.
        assert_eq!(
            app.state().engines.runtime().admission().running(None),
            (0, 0)
        );
        let response = app.get_as("/napper/api/v1/ok", &flooding[0]).await;
        json_with_status(response, 200).await;
    }
);

/// The rows of `engine_work` of the jobber and listener engines: `(status, attempt,
/// last_error)`.
async fn work_rows(app: &TestApp) -> Vec<(String, i64, Option<String>)> {
    let database = &app.state().database;
    tessera_host::on_pool!(database, pool => sqlx::query_as::<_, (String, i64, Option<String>)>(
        "SELECT status, attempt, last_error FROM engine_work
         WHERE engine_code IN ('jobber', 'listener')",
    )
    .fetch_all(pool)
    .await)
    .unwrap()
}

/// The rows of [`work_rows`] whose run failed (kept `failed`, or waiting for a retry with the
/// error of their last run).
async fn failed_rows(app: &TestApp) -> Vec<(String, i64, Option<String>)> {
    work_rows(app)
        .await
        .into_iter()
        .filter(|(status, _, error)| status == "failed" || error.is_some())
        .collect()
}

async fn list(app: &TestApp, path: &str, token: &str) -> Vec<Value> {
    let body = json_with_status(app.get_as(path, token).await, 200).await;
    body["data"].as_array().unwrap().clone()
}

database_test!(
    jobs_and_deliveries_wait_for_a_slot_without_spending_an_attempt,
    |backend| async move {
        let app = spawn(backend, vec!["napper", "jobber", "listener"]).await;
        let tenants = [uuid(), uuid()];
        let flooding = [
            app.token(&tenants[0], &uuid(), "editor").await,
            app.token(&uuid(), &uuid(), "editor").await,
        ];

        // Work of a flooding tenant and of a quiet one, due once the pool is full.
        const JOBS: usize = 12;
        const EVENTS: usize = 6;
        let due_at = chrono::Utc::now() + chrono::Duration::milliseconds(600);
        let mut work = Vec::new();
        for tenant in &tenants {
            for index in 0..JOBS {
                work.push(NewWork {
                    id: uuid::Uuid::new_v4().to_string(),
                    engine_code: "jobber".into(),
                    tenant_id: tenant.clone(),
                    kind: WorkKind::Job,
                    payload: format!("job-{index}").into_bytes(),
                    due_at,
                    traceparent: None,
                });
            }
            for index in 0..EVENTS {
                let event = BusEvent {
                    id: uuid(),
                    event_type: "ping.saturated".into(),
                    tenant_id: tenant.clone(),
                    occurred_at: chrono::Utc::now().to_rfc3339(),
                    actor_id: None,
                    correlation_id: uuid(),
                    payload: json!({ "index": index }),
                };
                work.push(NewWork {
                    id: uuid::Uuid::new_v4().to_string(),
                    engine_code: "listener".into(),
                    tenant_id: tenant.clone(),
                    kind: WorkKind::Event,
                    payload: serde_json::to_vec(&event).unwrap(),
                    due_at,
                    traceparent: None,
                });
            }
        }
        app.state()
            .engines
            .runtime()
            .services()
            .queue
            .enqueue(&work)
            .await
            .unwrap();

        // Two tenants fill the pool for a while; meanwhile no item may fail for lack of a
        // slot (a failed run leaves its error on the row until it is retried).
        let stop = CancellationToken::new();
        let floods: Vec<_> = flooding
            .iter()
            .map(|token| flood(&app, token, &stop))
            .collect();
        let flood_until = tokio::time::Instant::now() + Duration::from_secs(4);
        let mut errors = Vec::new();
        while tokio::time::Instant::now() < flood_until && errors.is_empty() {
            errors = failed_rows(&app).await;
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        for (_, tasks) in floods {
            stop_flood(&stop, tasks).await;
        }
        assert!(
            errors.is_empty(),
            "engine work failed while the pool was full: {errors:?}"
        );

        // Everything completes, none of it failed, each item ran exactly once, as attempt 1.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            let rows = work_rows(&app).await;
            let errors = failed_rows(&app).await;
            assert!(
                errors.is_empty(),
                "engine work failed after the pool was full: {errors:?}"
            );
            if rows.is_empty() {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "engine work did not complete: {rows:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        for tenant in &tenants {
            let token = app.token(tenant, &uuid(), "editor").await;
            let runs = list(&app, "/jobber/api/v1/runs", &token).await;
            assert_eq!(runs.len(), JOBS, "every job ran once: {runs:?}");
            assert!(
                runs.iter().all(|run| run["attempt"] == 1),
                "a job spent an attempt: {runs:?}"
            );
            let events = list(&app, "/listener/api/v1/events", &token).await;
            assert_eq!(
                events.len(),
                EVENTS,
                "every event was delivered once: {events:?}"
            );
            assert!(events.iter().all(|event| event["tenant_id"] == **tenant));
        }
    }
);

/// One `looper` count call of `rounds` as `token`; its answer must be 200.
async fn count(app: &TestApp, token: &str, rounds: u64) {
    let response = app
        .get_as(&format!("/looper/api/v1/count?n={rounds}"), token)
        .await;
    json_with_status(response, 200).await;
}

/// Tenants share the CPU by turns, not by how many calls each runs: a tenant running six
/// CPU-bound calls and a tenant running one call of the same work get about as much CPU each,
/// so the single call, started last, finishes before most of the six. (With every call taking
/// its turn alike, the six, started first, would all finish before it.) No storage involved:
/// SQLite only.
#[tokio::test]
async fn tenants_share_the_cpu_by_turns_not_by_calls() {
    const NOISY_CALLS: usize = 6;
    let app = spawn_app_with(
        Backend::Sqlite,
        AppOptions {
            plugins: vec!["looper"],
            configure: Some(Box::new(|config: &mut Config| {
                crate::helpers::without_rate_limits(config);
                config.runtime.handle_timeout = Duration::from_secs(120);
            })),
            ..AppOptions::default()
        },
    )
    .await;
    let (noisy_tenant, quiet_tenant) = (uuid(), uuid());
    let noisy = app.token(&noisy_tenant, &uuid(), "editor").await;
    let quiet = app.token(&quiet_tenant, &uuid(), "editor").await;

    // Size the work so one call takes about 300 ms alone on this machine (the time only sizes
    // the work; what is asserted is the order of completions).
    let probe_rounds = 20_000_000;
    let started = std::time::Instant::now();
    count(&app, &quiet, probe_rounds).await;
    let alone = started.elapsed().as_secs_f64().max(0.001);
    let rounds = ((probe_rounds as f64) * 0.3 / alone).max(1_000_000.0) as u64;

    let finished = Arc::new(Mutex::new(Vec::<&'static str>::new()));
    let mut calls = Vec::new();
    for _ in 0..NOISY_CALLS {
        let (app_client, url, token, finished) = (
            app.client.clone(),
            app.url(&format!("/looper/api/v1/count?n={rounds}")),
            noisy.clone(),
            finished.clone(),
        );
        calls.push(tokio::spawn(async move {
            let response = app_client
                .get(&url)
                .bearer_auth(&token)
                .send()
                .await
                .unwrap();
            assert_eq!(response.status().as_u16(), 200);
            finished.lock().unwrap().push("noisy");
        }));
    }
    // The quiet call starts once all six noisy calls run.
    let admission = app.state().engines.runtime().admission().clone();
    crate::helpers::eventually(10, "the noisy calls to run", || {
        let admission = admission.clone();
        let noisy_tenant = noisy_tenant.clone();
        async move { (admission.running(Some(&noisy_tenant)).1 == NOISY_CALLS).then_some(()) }
    })
    .await;
    count(&app, &quiet, rounds).await;
    finished.lock().unwrap().push("quiet");
    for call in calls {
        call.await.unwrap();
    }

    let order = finished.lock().unwrap().clone();
    let position = order.iter().position(|who| *who == "quiet").unwrap();
    assert!(
        position <= 2,
        "the quiet tenant's call finished after {position} of the noisy tenant's {NOISY_CALLS}: {order:?}"
    );
}
