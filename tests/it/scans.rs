//! Bounded engine storage scans through the real host: one `storage.scan` returns at most a
//! page (`TESSERA_ENGINE_SCAN_PAGE`) whatever it asks, and the scans of one engine call return
//! at most a budget of entries together (`TESSERA_ENGINE_SCAN_BUDGET`), past which `scan`
//! fails with `scan budget exhausted`. Seen from the `scanner` test component, which calls the
//! host's `scan` raw (without the SDK's own clamping). The engines' filtered lists that page
//! within this bound are tested with each engine (e.g. `notes`).

use serde_json::{Value, json};
use tessera_host::config::Config;

use crate::database_test;
use crate::helpers::{AppOptions, Backend, TestApp, json_with_status, spawn_app_with};

/// A host with the `scanner` component, scans bounded to `page` entries each and `budget` per
/// call, a tenant with `entries` entries, and that tenant's token.
async fn scanner_host(backend: Backend, page: u32, budget: u64, entries: u64) -> (TestApp, String) {
    let configure = move |config: &mut Config| {
        config.engine_scans.page = page;
        config.engine_scans.budget = budget;
    };
    let app = spawn_app_with(
        backend,
        AppOptions {
            plugins: vec!["scanner"],
            configure: Some(Box::new(configure)),
            ..AppOptions::default()
        },
    )
    .await;
    let tenant_id = uuid::Uuid::new_v4().to_string();
    let user_id = uuid::Uuid::new_v4().to_string();
    let token = app.token(&tenant_id, &user_id, "owner").await;
    let filled = json_with_status(
        app.post_as("/scanner/api/v1/fill", &token, &json!({ "count": entries }))
            .await,
        201,
    )
    .await;
    assert_eq!(filled["data"]["written"], entries);
    (app, token)
}

async fn get(app: &TestApp, token: &str, path: &str) -> Value {
    json_with_status(app.get_as(path, token).await, 200).await["data"].clone()
}

database_test!(a_scan_returns_at_most_a_page, |backend| async move {
    let (app, token) = scanner_host(backend, 50, 1000, 120).await;

    // Asking for far more than the page gets the page.
    let scanned = get(&app, &token, "/scanner/api/v1/scan?limit=1000").await;
    assert_eq!(scanned, json!({ "count": 50 }));
    let scanned = get(&app, &token, "/scanner/api/v1/scan?limit=4294967295").await;
    assert_eq!(scanned, json!({ "count": 50 }));
    // Less than the page is answered as asked.
    let scanned = get(&app, &token, "/scanner/api/v1/scan?limit=7").await;
    assert_eq!(scanned, json!({ "count": 7 }));

    // Paging on with `after` reads everything, a page at a time, within the budget.
    let drained = get(&app, &token, "/scanner/api/v1/drain?limit=1000").await;
    assert_eq!(drained, json!({ "read": 120, "error": null }));
    app.stop().await;
});

database_test!(
    scanning_past_the_budget_of_a_call_is_refused,
    |backend| async move {
        let (app, token) = scanner_host(backend, 50, 200, 300).await;

        // One call reads exactly the budget, then its next scan fails with a clear message.
        let drained = get(&app, &token, "/scanner/api/v1/drain?limit=1000").await;
        assert_eq!(drained["read"], 200);
        let error = drained["error"]
            .as_str()
            .expect("the scan past the budget fails");
        assert!(
            error.contains("scan budget exhausted") && error.contains("200"),
            "{error}"
        );
        // A scan that would cross the budget is cut at it (pages of 30: 6 × 30 + 20).
        let drained = get(&app, &token, "/scanner/api/v1/drain?limit=30").await;
        assert_eq!(drained["read"], 200);
        assert!(drained["error"].is_string());

        // The budget is per call: the next call has its own.
        let scanned = get(&app, &token, "/scanner/api/v1/scan?limit=10").await;
        assert_eq!(scanned, json!({ "count": 10 }));
        app.stop().await;
    }
);
