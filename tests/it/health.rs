//! Health endpoints: plain liveness of both services and the extended report.

use serde_json::json;

use crate::database_test;
use crate::helpers::{json_with_status, spawn_app};

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
        let body = json_with_status(app.extended_health().await, 200).await;
        assert_eq!(body["checks"]["database"], "ok");
        assert_eq!(body["checks"]["cache"], "ok");
        // No background worker runs yet, so each slot is down and so is the whole (worst of all).
        assert_eq!(
            body["checks"]["workers"],
            json!({ "projector": "down", "search": "down", "workflow": "down" })
        );
        assert_eq!(body["status"], "down");

        app.workers()
            .heartbeat("projector", std::time::Duration::ZERO);
        app.workers().heartbeat("search", std::time::Duration::ZERO);
        app.workers()
            .heartbeat("workflow", std::time::Duration::from_secs(120));
        let body = json_with_status(app.extended_health().await, 200).await;
        assert_eq!(
            body["checks"]["workers"],
            json!({ "projector": "ok", "search": "ok", "workflow": "degraded" })
        );
        assert_eq!(body["status"], "degraded");
        app.stop().await;
    }
);

database_test!(
    extended_health_reports_an_unreachable_database_as_down,
    |backend| async move {
        let app = spawn_app(backend).await;
        app.state().database.close().await;
        let body = json_with_status(app.extended_health().await, 200).await;
        assert_eq!(body["checks"]["database"], "down");
        assert_eq!(body["status"], "down");
    }
);
