//! Runs a scenario of the `conformance` engine through the SDK's test kit: the operator's
//! settings and the steps (`{"settings": {name: value}, "steps": [{"tenant_id", "user_id",
//! "role", "script"}, …]}`) read from the file
//! `TESSERA_CONFORMANCE_SCENARIO`, the transcript (one `{"status", "body"}` per step) written to
//! `TESSERA_CONFORMANCE_TRANSCRIPT`, then `{"published": [n, …]}`: the `n` of each event the
//! engine published and committed. Compiled with the `fake` feature only; run by the host's
//! `tests/it/test_kit.rs`, which runs the same scenario through a real host and compares.

use tessera_sdk::Context;
use tessera_sdk::serde_json::{self, Value, json};
use tessera_sdk::testkit::TestHost;

use crate::Conformance;

#[test]
fn run_the_scenario_through_the_test_kit() {
    let scenario = std::env::var("TESSERA_CONFORMANCE_SCENARIO")
        .expect("TESSERA_CONFORMANCE_SCENARIO names the scenario file (tests/it/test_kit.rs)");
    let transcript_path = std::env::var("TESSERA_CONFORMANCE_TRANSCRIPT")
        .expect("TESSERA_CONFORMANCE_TRANSCRIPT names the transcript file");
    let input = std::fs::read_to_string(scenario).expect("reading the scenario");
    let scenario: Value = serde_json::from_str(&input).expect("a JSON scenario");
    let host = TestHost::<Conformance>::new();
    for (name, value) in scenario["settings"]
        .as_object()
        .cloned()
        .unwrap_or_default()
    {
        host.set_setting(&name, value.as_str().unwrap_or_default());
    }
    let steps = scenario["steps"].as_array().cloned().unwrap_or_default();
    let mut transcript = Vec::new();
    for step in &steps {
        let ctx = Context::for_tests(
            step["tenant_id"].as_str().unwrap_or_default(),
            step["user_id"].as_str().unwrap_or_default(),
            step["role"].as_str().unwrap_or("editor"),
        );
        let answer = host.post_json(&ctx, "/api/v1/script", &step["script"]);
        transcript.push(json!({ "status": answer.status, "body": answer.json() }));
    }
    let published: Vec<Value> = host
        .published()
        .into_iter()
        .map(|event| event.payload["n"].clone())
        .collect();
    transcript.push(json!({ "published": published }));
    std::fs::write(transcript_path, Value::Array(transcript).to_string())
        .expect("writing the transcript");
}
