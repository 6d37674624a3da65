//! A tenant's usage: the engine calls, the realtime connections and deliveries, and the
//! limits hit that the host counts per tenant (only for tokens it verified), added to the database in batches, read by the
//! tenant's owners (`GET /core/api/v1/usage`) beside what each engine keeps for them, and by
//! the operator for every tenant (`GET /core/api/operator/usage`); the tenant's provisioning
//! for its owners (`GET /core/api/v1/tenant`, `POST …/provisioning/retry`).

use std::time::Duration;

use serde_json::{Value, json};

use crate::database_test;
use crate::helpers::{
    TestApp, create_owner, eventually, json_with_status, run_admin, spawn_app_with_engines,
};
use crate::realtime;

const PASSWORD: &str = "Correct-Horse-42";

async fn sign_in(app: &TestApp, login: &str) -> String {
    let response = app
        .post_json(
            "/auth/api/v1/auth/login",
            &json!({ "login": login, "password": PASSWORD }),
        )
        .await;
    json_with_status(response, 200).await["data"]["access_token"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Creates the tenants, `(slug, name)`, then an owner `owner@<slug>.example` of each, then
/// signs the owners in: their tokens, in the tenants' order.
async fn tenants_with_owners<const N: usize>(
    app: &TestApp,
    tenants: [(&str, &str); N],
) -> [String; N] {
    for (slug, name) in tenants {
        run_admin(
            &app.database,
            &["create-tenant", "--slug", slug, "--name", name],
        )
        .json();
    }
    for (slug, _) in tenants {
        create_owner(
            &app.database,
            slug,
            &format!("owner@{slug}.example"),
            PASSWORD,
        );
    }
    let mut tokens = Vec::with_capacity(N);
    for (slug, _) in tenants {
        tokens.push(sign_in(app, &format!("owner@{slug}.example")).await);
    }
    tokens.try_into().expect("a token per tenant")
}

async fn usage(app: &TestApp, token: &str) -> Value {
    json_with_status(app.get_as("/core/api/v1/usage?days=2", token).await, 200).await["data"]
        .clone()
}

database_test!(
    owners_read_their_tenants_engine_calls_limits_hit_and_storage,
    |backend| async move {
        let app = spawn_app_with_engines(backend, &["notes"], |config| {
            config.rate_limits.write_per_minute = 5;
            config.usage.flush_interval = Duration::from_millis(100);
        })
        .await;
        let [acme, globex] =
            tenants_with_owners(&app, [("acme", "acme"), ("globex", "globex")]).await;

        // Three notes, then writes until the write limit refuses.
        for title in ["one", "two", "three"] {
            json_with_status(
                app.post_as("/notes/api/v1/notes", &acme, &json!({ "title": title }))
                    .await,
                201,
            )
            .await;
        }
        let mut refused = 0;
        for _ in 0..10 {
            let response = app
                .post_as("/notes/api/v1/notes", &acme, &json!({ "title": "more" }))
                .await;
            if response.status() == 429 {
                refused += 1;
            }
        }
        assert!(refused >= 1, "the write limit refused some");
        // A forged bearer counts for no one (the host never verified it).
        let forged = "eyJhbGciOiJFZERTQSIsImtpZCI6IngifQ.eyJ0aWQiOiJ4In0.c2ln";
        for _ in 0..3 {
            let status = app
                .post_as("/notes/api/v1/notes", forged, &json!({ "title": "x" }))
                .await
                .status();
            assert!(status == 401 || status == 429, "{status}");
        }

        let counted = eventually(10, "the usage counters flushed", || async {
            let counted = usage(&app, &acme).await;
            (counted["limits_hit_by_limit"]["rate_limit.write"].as_i64() == Some(refused)
                && counted["engine_calls"].as_i64() >= Some(5))
            .then_some(counted)
        })
        .await;
        let allowed = 5 - 3; // the write budget after the three notes
        assert_eq!(
            counted["engine_calls_by_engine"]["notes"],
            json!(3 + allowed),
            "{counted}"
        );
        assert_eq!(counted["limits_hit"], json!(refused), "{counted}");
        assert_eq!(counted["days"], 2);
        let daily = counted["daily"].as_array().unwrap();
        assert_eq!(daily.len(), 2);
        assert_eq!(daily[1]["engine_calls"], counted["engine_calls"], "today");
        assert_eq!(daily[0]["engine_calls"], 0, "yesterday");
        let notes_storage = counted["storage"]
            .as_array()
            .unwrap()
            .iter()
            .find(|engine| engine["engine"] == "notes")
            .unwrap_or_else(|| panic!("{counted}"));
        assert!(notes_storage["entries"].as_i64().unwrap() >= 5, "{counted}");
        assert!(notes_storage["entry_bytes"].as_i64().unwrap() > 0);

        // Another tenant's owner sees none of it; a non-owner may not look; bad windows refused.
        let theirs = usage(&app, &globex).await;
        assert_eq!(theirs["engine_calls"], 0, "{theirs}");
        assert_eq!(theirs["limits_hit"], 0, "{theirs}");
        let refused_days =
            json_with_status(app.get_as("/core/api/v1/usage?days=0", &acme).await, 422).await;
        assert!(refused_days["errors"]["days"].is_array(), "{refused_days}");
        let editor = json_with_status(
            app.post_as(
                "/auth/api/v1/members",
                &acme,
                &json!({ "email": "ed@acme.example", "password": PASSWORD, "role": "editor" }),
            )
            .await,
            201,
        )
        .await;
        assert_eq!(editor["data"]["role"], "editor");
        let editor = sign_in(&app, "ed@acme.example").await;
        assert_eq!(
            app.get_as("/core/api/v1/usage", &editor).await.status(),
            403
        );

        // The operator sees every tenant's totals, busiest first.
        let operator = app.admin(&["operator-token"]).json()["operator_token"]
            .as_str()
            .unwrap()
            .to_owned();
        let totals = json_with_status(
            app.get_as("/core/api/operator/usage?days=1", &operator)
                .await,
            200,
        )
        .await;
        assert_eq!(totals["data"][0]["slug"], "acme", "{totals}");
        assert_eq!(totals["data"][0]["engine_calls"], counted["engine_calls"]);
        assert_eq!(
            app.get_as("/core/api/operator/usage", &acme).await.status(),
            401
        );
    }
);

database_test!(
    owners_see_their_tenants_provisioning_and_retry_it,
    |backend| async move {
        let app = spawn_app_with_engines(backend, &["notes", "chat"], |_| {}).await;
        let [owner] = tenants_with_owners(&app, [("acme", "Acme")]).await;
        let shown = json_with_status(app.get_as("/core/api/v1/tenant", &owner).await, 200).await;
        assert_eq!(shown["data"]["slug"], "acme");
        assert_eq!(shown["data"]["members"], 1);
        assert_eq!(
            shown["data"]["provisioning"]["status"], "completed",
            "{shown}"
        );
        assert_eq!(
            shown["data"]["provisioning"]["engines"]["chat"]["status"], "provisioned",
            "{shown}"
        );
        let retried = json_with_status(
            app.post_as("/core/api/v1/tenant/provisioning/retry", &owner, &json!({}))
                .await,
            200,
        )
        .await;
        assert_eq!(retried["data"]["status"], "completed", "{retried}");
        assert_eq!(retried["data"]["retried"], json!({}), "nothing left to run");

        let viewer_email = "viewer@acme.example";
        json_with_status(
            app.post_as(
                "/auth/api/v1/members",
                &owner,
                &json!({ "email": viewer_email, "password": PASSWORD, "role": "viewer" }),
            )
            .await,
            201,
        )
        .await;
        let viewer = sign_in(&app, viewer_email).await;
        assert_eq!(
            app.get_as("/core/api/v1/tenant", &viewer).await.status(),
            403
        );
        assert_eq!(
            app.post_as(
                "/core/api/v1/tenant/provisioning/retry",
                &viewer,
                &json!({})
            )
            .await
            .status(),
            403
        );
    }
);

database_test!(
    owners_read_their_tenants_realtime_connections_deliveries_and_limits_hit,
    |backend| async move {
        let app = spawn_app_with_engines(backend, &["notes"], |config| {
            config.usage.flush_interval = Duration::from_millis(100);
            config.realtime.max_subscriptions = 1;
            config.realtime.max_connections_per_user = 2;
            config.realtime.recheck_interval = Duration::from_millis(200);
        })
        .await;
        let [acme, globex] =
            tenants_with_owners(&app, [("acme", "acme"), ("globex", "globex")]).await;

        // Two connections (the limit): one subscribed to the timeline, one asking for two
        // topics (one too many: the one decided second is refused); a third connection is one
        // too many.
        let mut watcher = realtime::ws(&app, &acme, &["core.timeline"], &[]);
        watcher.subscribed(1).await;
        let mut second = realtime::ws(&app, &acme, &["core.inbox", "core.timeline"], &[]);
        let frames = [second.next(20).await, second.next(20).await];
        let subscribed: Vec<&Value> = frames
            .iter()
            .filter(|frame| frame["op"] == "subscribed")
            .collect();
        assert_eq!(subscribed.len(), 1, "{frames:?}");
        let second_follows_the_timeline = subscribed[0]["topic"] == "core.timeline";
        assert!(
            frames
                .iter()
                .any(|frame| frame["op"] == "error" && frame["status"] == 429),
            "{frames:?}"
        );
        let mut third = realtime::ws(&app, &acme, &[], &[]);
        assert_eq!(third.next(20).await, json!({"closed": 4029}));
        // Three changes, each with its events on the timeline.
        let created = app
            .create_entity(&acme, "task", json!({"title": "Ship"}))
            .await;
        let task_id = created["entity_id"].as_str().unwrap().to_owned();
        for title in ["Ship it", "Shipped"] {
            json_with_status(
                app.intention(
                    &acme,
                    "entity.update",
                    json!({"entity_id": task_id, "fields": {"title": title}}),
                )
                .await,
                200,
            )
            .await;
        }
        // Every event of the three changes, up to the last one's, on each timeline subscription;
        // then nothing more.
        let mut received = events_until_shipped(&mut watcher).await;
        if second_follows_the_timeline {
            received += events_until_shipped(&mut second).await;
        }
        assert!(received >= 3, "{received}");
        let counted = eventually(10, "the realtime usage flushed", || async {
            let counted = usage(&app, &acme).await;
            (counted["realtime_events_delivered"].as_i64() == Some(received)
                && counted["limits_hit_by_limit"]["realtime.connections"].as_i64() == Some(1))
            .then_some(counted)
        })
        .await;
        assert_eq!(counted["realtime_connections"], 2, "{counted}");
        assert_eq!(
            counted["limits_hit_by_limit"]["realtime.subscriptions"], 1,
            "{counted}"
        );
        assert_eq!(counted["limits_hit"], 2, "{counted}");
        // Another tenant's usage has none of it.
        let theirs = usage(&app, &globex).await;
        assert_eq!(theirs["realtime_connections"], 0, "{theirs}");
        assert_eq!(theirs["realtime_events_delivered"], 0, "{theirs}");
        assert_eq!(theirs["limits_hit"], 0, "{theirs}");
        watcher.kill().await;
        second.kill().await;
    }
);

/// Reads a timeline subscriber's events until the one that titles the task "Shipped", then
/// checks nothing more comes: how many it read.
async fn events_until_shipped(client: &mut realtime::Client) -> i64 {
    let mut received = 0;
    loop {
        let event = client.next_event(20).await;
        assert_eq!(event["op"], "event", "{event}");
        received += 1;
        if event["data"]["data"]["new_value"] == "Shipped" {
            break;
        }
    }
    client.expect_silence(1).await;
    received
}
