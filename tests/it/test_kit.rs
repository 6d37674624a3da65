//! The SDK's test kit keeps the host's semantics: one scenario of host-import operations (the
//! `conformance` test component: storage reads and writes, scans, a call answering 4xx or 5xx,
//! compare-and-swap and `transact` as synchronisation points, counters, batches, blobs and
//! their quota, jobs, events (recorded by the `listener` engine on the host), settings, the
//! vault, tenant scoping)
//! runs through the test kit's fakes (`cargo test --features fake` of the component, natively)
//! and through a real host over HTTP, and the two transcripts must be equal.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::components::{repository, target_dir};
use crate::database_test;
use crate::helpers::{AppOptions, TestApp, eventually, spawn_app_with};

/// One call: a tenant label, a user and the script the engine runs.
fn step(tenant: &str, user: &str, ops: Value, status: u16) -> Value {
    json!({
        "tenant_id": tenant,
        "user_id": user,
        "role": "editor",
        "script": { "ops": ops, "status": status },
    })
}

pub(crate) fn scenario() -> Vec<Value> {
    let a = |ops: Value| step("tenant-a", "ada", ops, 200);
    vec![
        // Reads see the call's own writes; scans page, run backwards and stop at a bound.
        a(json!([
            {"op": "set", "key": "k/a", "value": "1"},
            {"op": "set", "key": "k/b", "value": "2"},
            {"op": "set", "key": "k/c", "value": "3"},
            {"op": "scan", "prefix": "k/", "limit": 2},
            {"op": "scan", "prefix": "k/", "after": "k/a", "limit": 10},
            {"op": "scan", "prefix": "k/", "limit": 10, "reverse": true},
            {"op": "scan", "prefix": "k/", "after": "k/c", "limit": 10, "reverse": true},
            {"op": "get_many", "keys": ["k/a", "k/zz", "k/c"]},
            {"op": "delete", "key": "k/c"},
            {"op": "delete", "key": "k/c"},
            {"op": "get", "key": "k/c"},
        ])),
        // A call answering 422 keeps nothing: writes, events, jobs, batches, blobs.
        step(
            "tenant-a",
            "ada",
            json!([
                {"op": "set", "key": "k/x", "value": "lost"},
                {"op": "publish", "n": 1},
                {"op": "schedule", "store_as": "id/lost"},
                {"op": "batch", "sets": [["k/y", "lost"]], "jobs": 1},
                {"op": "blob_put", "key": "b/lost", "content": "xx"},
            ]),
            422,
        ),
        a(json!([
            {"op": "get_many", "keys": ["k/x", "id/lost", "k/y"]},
            {"op": "blob_get", "key": "b/lost"},
            {"op": "dump"},
        ])),
        // A compare-and-swap commits what came before it, even when the call then fails.
        step(
            "tenant-a",
            "ada",
            json!([
                {"op": "set", "key": "k/before", "value": "1"},
                {"op": "cas", "key": "k/lock", "value": "held"},
                {"op": "set", "key": "k/after", "value": "1"},
                {"op": "cas", "key": "k/lock", "expected": "wrong", "value": "x"},
            ]),
            500,
        ),
        a(json!([{"op": "get_many", "keys": ["k/before", "k/lock", "k/after"]}])),
        // Transactions: conditions, counters, and what fails them.
        a(json!([
            {"op": "transact", "expect": [["k/lock", "other"]], "sets": [["k/t", "1"]]},
            {"op": "transact", "expect": [["k/lock", "held"]], "sets": [["k/t", "1"]],
             "add": [["n/count", 5]]},
            {"op": "transact", "add": [["n/count", 3]]},
            {"op": "get", "key": "n/count"},
            {"op": "set", "key": "k/text", "value": "abc"},
            {"op": "transact", "add": [["k/text", 1]]},
            {"op": "transact", "sets": [["n/count", "1"]], "add": [["n/count", 1]]},
            {"op": "get_many", "keys": ["n/count", "k/t", "k/text"]},
        ])),
        // A batch: sets, then deletes; a prefix deleted.
        a(json!([
            {"op": "batch", "sets": [["k/d", "1"], ["k/e", "2"]], "deletes": ["k/d"]},
            {"op": "get_many", "keys": ["k/d", "k/e"]},
            {"op": "delete_prefix", "prefix": "k/"},
            {"op": "scan", "prefix": "k/", "limit": 10},
        ])),
        // Blobs within a quota.
        a(json!([
            {"op": "blob_put", "key": "b/1", "content": "0123456789", "quota": 15},
            {"op": "blob_put", "key": "b/2", "content": "0123456789", "quota": 15},
            {"op": "blob_usage"},
            {"op": "blob_put", "key": "b/1", "content": "012345678901", "quota": 15,
             "sets": [["m/meta", "12"]]},
            {"op": "blob_usage"},
            {"op": "blob_get", "key": "b/1"},
            {"op": "get", "key": "m/meta"},
            {"op": "blob_put", "key": "b/3", "content": "abc"},
            {"op": "blob_delete", "keys": ["b/1", "b/none"], "deletes": ["m/meta"]},
            {"op": "blob_usage"},
        ])),
        // An event committed (the `listener` engine records it on the host); jobs cancelled in
        // and out of a unit.
        a(json!([{"op": "publish", "n": 2}])),
        a(json!([
            {"op": "schedule", "store_as": "id/job"},
            {"op": "cancel", "stored": "id/job"},
        ])),
        a(json!([
            {"op": "schedule", "store_as": "id/job2"},
            {"op": "schedule", "store_as": "id/never", "at": u64::MAX / 2},
            {"op": "batch", "sets": [["m/never", "1"]], "jobs": 1, "at": 253_402_300_800_000_u64},
            {"op": "get_many", "keys": ["id/never", "m/never"]},
        ])),
        a(json!([
            {"op": "cancel", "stored": "id/job2"},
            {"op": "cancel", "stored": "id/job2"},
        ])),
        // The host's settings and the vault.
        a(json!([
            {"op": "setting", "name": "storage.scan-page"},
            {"op": "setting", "name": "storage.scan-budget"},
            {"op": "setting", "name": "no-such-setting"},
            {"op": "vault", "text": "secret"},
        ])),
        // Scans bounded by the page (3) and the call's budget (7) the operator set.
        a(json!([
            {"op": "set", "key": "s/1", "value": "1"}, {"op": "set", "key": "s/2", "value": "2"},
            {"op": "set", "key": "s/3", "value": "3"}, {"op": "set", "key": "s/4", "value": "4"},
            {"op": "set", "key": "s/5", "value": "5"}, {"op": "set", "key": "s/6", "value": "6"},
            {"op": "set", "key": "s/7", "value": "7"}, {"op": "set", "key": "s/8", "value": "8"},
            {"op": "scan", "prefix": "s/", "limit": 10},
            {"op": "scan", "prefix": "s/", "after": "s/3", "limit": 10},
            {"op": "scan", "prefix": "s/", "after": "s/6", "limit": 10, "reverse": true},
            {"op": "scan", "prefix": "s/", "after": "s/7", "limit": 10},
            {"op": "delete_prefix", "prefix": "s/"},
        ])),
        // Another tenant sees none of it.
        step(
            "tenant-b",
            "bob",
            json!([{"op": "get", "key": "n/count"}, {"op": "dump"}]),
            200,
        ),
        // What the first tenant holds in the end.
        a(json!([{"op": "dump"}])),
    ]
}

/// The operator's scan bounds on both sides (`TESSERA_ENGINE_SCAN_PAGE`, `…_BUDGET`).
pub(crate) const SCAN_PAGE: u32 = 3;
pub(crate) const SCAN_BUDGET: u64 = 7;

/// The transcript of `steps` through the test kit: the component's `fake_runner` test, run
/// natively by cargo.
fn through_the_test_kit(steps: &[Value], scratch: &Path) -> Vec<Value> {
    let scenario = scratch.join("scenario.json");
    let transcript = scratch.join("transcript.json");
    let settings = json!({
        "storage.scan-page": SCAN_PAGE.to_string(),
        "storage.scan-budget": SCAN_BUDGET.to_string(),
    });
    std::fs::write(
        &scenario,
        json!({ "settings": settings, "steps": steps }).to_string(),
    )
    .unwrap();
    let target_dir = target_dir().join("conformance-fake");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args(["test", "--quiet", "--manifest-path"])
        .arg(repository().join("tests/components/Cargo.toml"))
        .args([
            "-p",
            "conformance",
            "--features",
            "fake",
            "--lib",
            "--target-dir",
        ])
        .arg(target_dir)
        .env("TESSERA_CONFORMANCE_SCENARIO", &scenario)
        .env("TESSERA_CONFORMANCE_TRANSCRIPT", &transcript)
        .output()
        .expect("running cargo test for the conformance component");
    assert!(
        output.status.success(),
        "the scenario through the test kit failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(&std::fs::read_to_string(&transcript).unwrap()).unwrap()
}

/// One step through the real host's engine `code`: its status and body.
async fn through_the_host(
    app: &TestApp,
    tokens: &HashMap<String, String>,
    step: &Value,
    code: &str,
) -> Value {
    let key = format!("{}/{}", step["tenant_id"], step["user_id"]);
    let answer = app
        .post_as(
            &format!("/{code}/api/v1/script"),
            &tokens[&key],
            &step["script"],
        )
        .await;
    let status = answer.status().as_u16();
    let body: Value = answer.json().await.unwrap_or(Value::Null);
    json!({ "status": status, "body": body })
}

/// The transcript of `steps` through the engine `code` (a conformance engine) of a real host
/// that also runs the `listener` engine: each step's status and body, then the `n` of each
/// event the listener received.
pub(crate) async fn host_transcript(app: &TestApp, steps: &[Value], code: &str) -> Vec<Value> {
    let mut tokens = HashMap::new();
    for (tenant, user) in [("tenant-a", "ada"), ("tenant-b", "bob")] {
        let tenant_id = uuid::Uuid::new_v4().to_string();
        let token = app.token(&tenant_id, user, "editor").await;
        tokens.insert(format!("\"{tenant}\"/\"{user}\""), token);
    }
    let mut real = Vec::with_capacity(steps.len());
    for step in steps {
        real.push(through_the_host(app, &tokens, step, code).await);
    }
    // The events the host committed, as the engine subscribed to them received them.
    let token = &tokens["\"tenant-a\"/\"ada\""];
    let published = eventually(
        30,
        "the listener to receive the committed event",
        || async {
            let answer = app.get_as("/listener/api/v1/events", token).await;
            let body: Value = answer.json().await.ok()?;
            let received: Vec<Value> = body["data"]
                .as_array()?
                .iter()
                .map(|event| event["payload"]["n"].clone())
                .collect();
            (!received.is_empty()).then_some(received)
        },
    )
    .await;
    real.push(json!({ "published": published }));
    real
}

database_test!(
    the_test_kit_answers_a_scenario_exactly_as_the_host_does,
    |backend| async move {
        let steps = scenario();
        let app = spawn_app_with(
            backend,
            AppOptions {
                plugins: vec!["conformance", "listener"],
                configure: Some(Box::new(|config| {
                    config.engine_scans.page = SCAN_PAGE;
                    config.engine_scans.budget = SCAN_BUDGET;
                })),
                ..AppOptions::default()
            },
        )
        .await;
        let fake = through_the_test_kit(&steps, &app.database.data_dir);

        // The kit itself does what the host's contract says (so an equal transcript means the
        // host does too, and neither is vacuous).
        assert_eq!(
            fake[2]["body"]["data"][0],
            json!([null, null, null]),
            "a 422 keeps nothing"
        );
        assert_eq!(fake[4]["body"]["data"][0], json!(["1", "held", null]));
        assert_eq!(fake[5]["body"]["data"][3], "8");
        let scans = &fake[13]["body"]["data"];
        assert_eq!(
            scans[8],
            json!({ "keys": ["s/1", "s/2", "s/3"], "exhausted": false })
        );
        assert_eq!(
            scans[10],
            json!({ "keys": ["s/5"], "exhausted": false }),
            "budget left: 1"
        );
        assert_eq!(scans[11], json!({ "error": true }), "budget exhausted");
        assert_eq!(
            fake[steps.len()],
            json!({ "published": [2] }),
            "only the committed event"
        );
        let real = host_transcript(&app, &steps, "conformance").await;
        for (index, (real, fake)) in real.iter().zip(&fake).enumerate() {
            assert_eq!(
                real, fake,
                "step {index}: the host (left) and the test kit (right)"
            );
        }
        assert_eq!(real.len(), fake.len());
        app.stop().await;
    }
);
