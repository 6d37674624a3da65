//! Instances kept warm between calls (`crates/runtime/src/warm_instances.rs`): the calls of one
//! tenant reuse an instance, another tenant's never do; a trap discards the instance; an
//! instance serves at most `max_calls` calls, waits at most its idle timeout, and is not kept
//! once its memory passed half its cap; provisioning
//! retires a tenant's idle instances; with no warm instances every call starts fresh. The test
//! components `echo` and `flaky-provision` answer `GET …/instance` with the calls their
//! instance served.

use std::time::Duration;

use tessera_host::config::Config;
use tessera_host::runtime::warm_instances::WarmInstanceConfig;

use crate::helpers::{AppOptions, Backend, TestApp, json_with_status, spawn_app_with};

fn uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// A host serving `plugins` with instances kept warm as `warm` says.
async fn host(plugins: Vec<&'static str>, warm: WarmInstanceConfig) -> TestApp {
    spawn_app_with(
        Backend::Sqlite,
        AppOptions {
            plugins,
            ..AppOptions::unlimited_and(move |config: &mut Config| {
                config.runtime.warm_instances = warm;
            })
        },
    )
    .await
}

/// The calls the instance that answered `GET path` had served, this one included.
async fn calls_answering(app: &TestApp, path: &str, token: &str) -> u64 {
    let answer = json_with_status(app.get_as(path, token).await, 200).await;
    answer["data"]["calls"].as_u64().unwrap()
}

/// The calls the instance that served this request had served, this one included.
async fn instance_calls(app: &TestApp, engine: &str, token: &str) -> u64 {
    calls_answering(app, &format!("/{engine}/api/v1/instance"), token).await
}

/// `count` calls one after another, each instance's count of calls.
async fn calls_in_turn(app: &TestApp, engine: &str, token: &str, count: usize) -> Vec<u64> {
    let mut seen = Vec::new();
    for _ in 0..count {
        seen.push(instance_calls(app, engine, token).await);
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_reuses_its_warm_instance_and_another_tenant_never_does() {
    let app = host(vec!["echo"], WarmInstanceConfig::default()).await;
    let (first, second) = (uuid(), uuid());
    let first_token = app.token(&first, &uuid(), "editor").await;
    let first_colleague = app.token(&first, &uuid(), "viewer").await;
    let second_token = app.token(&second, &uuid(), "editor").await;

    assert_eq!(
        calls_in_turn(&app, "echo", &first_token, 3).await,
        [1, 2, 3]
    );
    // Another user of the same tenant: the same instance.
    assert_eq!(instance_calls(&app, "echo", &first_colleague).await, 4);
    // Another tenant: a fresh instance of its own, never the first tenant's.
    assert_eq!(calls_in_turn(&app, "echo", &second_token, 2).await, [1, 2]);
    assert_eq!(instance_calls(&app, "echo", &first_token).await, 5);
    assert_eq!(app.state().engines.runtime().warm_instance_count(), 2);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trapped_instance_is_never_reused() {
    let app = host(vec!["echo"], WarmInstanceConfig::default()).await;
    let token = app.token(&uuid(), &uuid(), "editor").await;
    assert_eq!(calls_in_turn(&app, "echo", &token, 2).await, [1, 2]);
    let trapped = app.get_as("/echo/api/v1/panic", &token).await;
    assert_eq!(trapped.status().as_u16(), 502);
    assert_eq!(instance_calls(&app, "echo", &token).await, 1);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_retires_after_its_calls_and_after_its_idle_timeout() {
    let app = host(
        vec!["echo"],
        WarmInstanceConfig {
            max_calls: 3,
            idle_timeout: Duration::from_millis(400),
            ..WarmInstanceConfig::default()
        },
    )
    .await;
    let token = app.token(&uuid(), &uuid(), "editor").await;
    assert_eq!(
        calls_in_turn(&app, "echo", &token, 5).await,
        [1, 2, 3, 1, 2]
    );
    // Idle past its timeout, the instance is retired, even with no call to notice.
    let runtime = app.state().engines.runtime();
    assert_eq!(runtime.warm_instance_count(), 1);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while runtime.warm_instance_count() > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the idle instance was not retired"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(instance_calls(&app, "echo", &token).await, 1);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_warm_instances_every_call_starts_fresh() {
    for warm in [
        WarmInstanceConfig {
            capacity: 0,
            ..WarmInstanceConfig::default()
        },
        WarmInstanceConfig {
            max_calls: 1,
            ..WarmInstanceConfig::default()
        },
    ] {
        let app = host(vec!["echo"], warm).await;
        let token = app.token(&uuid(), &uuid(), "editor").await;
        assert_eq!(
            calls_in_turn(&app, "echo", &token, 3).await,
            [1, 1, 1],
            "{warm:?}"
        );
        assert_eq!(app.state().engines.runtime().warm_instance_count(), 0);
        app.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_host_keeps_no_more_idle_instances_than_its_capacity() {
    let app = host(
        vec!["echo"],
        WarmInstanceConfig {
            capacity: 2,
            ..WarmInstanceConfig::default()
        },
    )
    .await;
    let tokens = [
        app.token(&uuid(), &uuid(), "editor").await,
        app.token(&uuid(), &uuid(), "editor").await,
        app.token(&uuid(), &uuid(), "editor").await,
    ];
    for token in &tokens {
        assert_eq!(instance_calls(&app, "echo", token).await, 1);
    }
    assert_eq!(app.state().engines.runtime().warm_instance_count(), 2);
    // The oldest made room: the first tenant starts fresh, the last one is still warm.
    assert_eq!(instance_calls(&app, "echo", &tokens[0]).await, 1);
    assert_eq!(instance_calls(&app, "echo", &tokens[2]).await, 2);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provisioning_a_tenant_retires_its_warm_instances_only() {
    let app = host(vec!["flaky-provision"], WarmInstanceConfig::default()).await;
    let (provisioned, other) = (uuid(), uuid());
    let token = app.token(&provisioned, &uuid(), "editor").await;
    let other_token = app.token(&other, &uuid(), "editor").await;
    let engine = "flaky-provision";
    assert_eq!(calls_in_turn(&app, engine, &token, 2).await, [1, 2]);
    assert_eq!(calls_in_turn(&app, engine, &other_token, 2).await, [1, 2]);

    let failed = app
        .post_signed(
            "/flaky-provision/api/internal/flaky-provision/provision/tenant",
            &serde_json::json!({
                "tenant_id": provisioned, "tenant_short_id": "acme", "name": "Acme",
            }),
        )
        .await;
    // The engine's first attempt fails by design (502); what an instance read of the tenant
    // may be stale either way.
    json_with_status(failed, 502).await;

    assert_eq!(instance_calls(&app, engine, &token).await, 1);
    assert_eq!(instance_calls(&app, engine, &other_token).await, 3);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_whose_memory_passed_half_its_cap_is_not_kept() {
    // The default cap of 64 MiB per memory: an instance past 32 MiB is retired after its call.
    let app = host(vec!["echo"], WarmInstanceConfig::default()).await;
    let token = app.token(&uuid(), &uuid(), "editor").await;
    let hold_12_mib = "/echo/api/v1/hold/12";
    // About 13 MiB, then about 25 MiB: kept.
    assert_eq!(calls_answering(&app, hold_12_mib, &token).await, 1);
    assert_eq!(calls_answering(&app, hold_12_mib, &token).await, 2);
    assert_eq!(instance_calls(&app, "echo", &token).await, 3);
    // About 37 MiB after this call: retired, so the next call starts fresh.
    assert_eq!(calls_answering(&app, hold_12_mib, &token).await, 4);
    assert_eq!(instance_calls(&app, "echo", &token).await, 1);
    app.stop().await;
}
