//! Health endpoints: plain liveness of both services and the extended report.

use serde_json::json;

use crate::database_test;
use crate::helpers::{
    AppOptions, Backend, eventually, json_with_status, spawn_app, spawn_app_with,
};

database_test!(
    plain_health_reports_status_and_the_cargo_version,
    |backend| async move {
        let app = spawn_app(backend).await;
        let expected = json!({ "status": "ok", "version": env!("CARGO_PKG_VERSION") });
        assert_eq!(
            json_with_status(app.auth_health().await, 200).await,
            expected
        );
        assert_eq!(
            json_with_status(app.core_health().await, 200).await,
            expected
        );
        app.stop().await;
    }
);

database_test!(
    extended_health_checks_database_cache_and_workers,
    |backend| async move {
        let app = spawn_app(backend).await;
        let body = eventually(10, "the workers to report", || async {
            let body = app.extended_health_report().await;
            (body["status"] == "ok").then_some(body)
        })
        .await;
        assert_eq!(body["checks"]["database"], "ok");
        assert_eq!(body["checks"]["cache"], "ok");
        assert_eq!(
            body["checks"]["workers"],
            json!({ "projector": "ok", "search": "ok", "workflow": "ok" })
        );
        app.stop().await;

        // A host that runs no workers reports each of them down, and so the whole (the worst
        // of all checks), with 503.
        let app = spawn_app_with(
            backend,
            AppOptions {
                configure: Some(Box::new(|config| config.projections.run_workers = false)),
                ..AppOptions::default()
            },
        )
        .await;
        let body = json_with_status(app.extended_health().await, 503).await;
        assert_eq!(
            body["checks"]["workers"],
            json!({ "projector": "down", "search": "down", "workflow": "down" })
        );
        assert_eq!(body["checks"]["database"], "ok");
        assert_eq!(body["status"], "down");
    }
);

/// A transaction left open holds every later event back (see the projection worker): the
/// workers' lag grows past the threshold and they turn `degraded`, then `ok` once it ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lagging_workers_are_degraded_until_they_catch_up() {
    if !crate::helpers::postgres_available() {
        return;
    }
    let app = spawn_app_with(
        Backend::Postgres,
        AppOptions {
            configure: Some(Box::new(|config| {
                config.projections.degraded_lag = std::time::Duration::from_millis(300);
                config.projections.idle_poll = std::time::Duration::from_millis(50);
            })),
            ..AppOptions::default()
        },
    )
    .await;
    let tenant = app.create_tenant("acme");
    let token = app
        .token(&tenant, &uuid::Uuid::new_v4().to_string(), "editor")
        .await;
    let held = app.state().database.begin().await.unwrap();
    let mut held = held;
    tessera_host::on_tx!(&mut held, conn => sqlx::query("SELECT pg_current_xact_id()")
        .execute(&mut **conn)
        .await
        .map(drop)
        .unwrap());
    app.create_entity(&token, "task", json!({"title": "waiting"}))
        .await;
    let body = eventually(10, "the workers to turn degraded", || async {
        let body = app.extended_health_report().await;
        // Each worker measures its own lag on its own poll: wait for both.
        let workers = &body["checks"]["workers"];
        (workers["projector"] == "degraded" && workers["search"] == "degraded").then_some(body)
    })
    .await;
    assert_eq!(body["status"], "degraded");
    held.rollback().await.unwrap();
    app.state().core.event_signal.appended();
    eventually(10, "the workers to recover", || async {
        let body = app.extended_health_report().await;
        (body["status"] == "ok").then_some(())
    })
    .await;
}

database_test!(
    extended_health_reports_an_unreachable_database_as_down,
    |backend| async move {
        let app = spawn_app(backend).await;
        app.state().database.close().await;
        let body = json_with_status(app.extended_health().await, 503).await;
        assert_eq!(body["checks"]["database"], "down");
        assert_eq!(body["status"], "down");
    }
);

database_test!(
    probes_answer_live_and_ready_with_every_check,
    |backend| async move {
        let app = spawn_app(backend).await;
        assert_eq!(
            json_with_status(app.liveness().await, 200).await,
            json!({ "status": "ok" })
        );
        // Ready once the projection workers have reported.
        let body = eventually(10, "the host to be ready", || async {
            let response = app.readiness().await;
            (response.status() == 200).then_some(response)
        })
        .await;
        let body = json_with_status(body, 200).await;
        assert_eq!(body["status"], "ready");
        assert_eq!(body["failing"], json!([]));
        for check in ["database", "migrations", "plugins", "workers"] {
            assert_eq!(body["checks"][check]["ok"], true, "{check}: {body}");
        }
        assert_eq!(body["checks"]["migrations"]["detail"], "all applied");
        assert_eq!(
            body["checks"]["workers"]["detail"],
            "running: projector, search, workflow, bus"
        );

        // A migration of this binary missing from the database: not ready, and which one.
        let version: i64 = app
            .scalar("SELECT MAX(version) FROM _sqlx_migrations")
            .await;
        tessera_host::on_pool!(&app.state().database, pool => sqlx::query(
            "UPDATE _sqlx_migrations SET success = FALSE WHERE version = (SELECT MAX(version) FROM _sqlx_migrations)",
        )
        .execute(pool)
        .await
        .map(drop)
        .unwrap());
        let body = json_with_status(app.readiness().await, 503).await;
        assert_eq!(body["status"], "not_ready");
        assert_eq!(body["failing"], json!(["migrations"]));
        assert_eq!(
            body["checks"]["migrations"]["detail"],
            format!("not applied: {version}")
        );
        // Liveness does not depend on it: the process still serves.
        json_with_status(app.liveness().await, 200).await;
    }
);

database_test!(
    a_host_without_its_database_or_workers_is_not_ready,
    |backend| async move {
        // A host configured to run no projection workers is ready without them.
        let app = spawn_app_with(
            backend,
            AppOptions {
                configure: Some(Box::new(|config| config.projections.run_workers = false)),
                ..AppOptions::default()
            },
        )
        .await;
        let body = json_with_status(app.readiness().await, 200).await;
        assert_eq!(body["checks"]["workers"]["ok"], true);
        assert!(
            body["checks"]["workers"]["detail"]
                .as_str()
                .unwrap()
                .starts_with("not run by this host"),
            "{body}"
        );

        // Without its database: not ready, the migrations not checked; still alive.
        app.state().database.close().await;
        let body = json_with_status(app.readiness().await, 503).await;
        assert_eq!(body["failing"], json!(["database", "migrations"]));
        assert_eq!(body["checks"]["database"]["detail"], "unreachable");
        json_with_status(app.liveness().await, 200).await;
    }
);
