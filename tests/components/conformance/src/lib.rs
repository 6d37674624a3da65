//! Test engine `conformance`: runs a script of host-import operations in one call, so the same
//! scenario runs through the real host (`tests/it/test_kit.rs`) and through the SDK's test kit
//! (`src/fake_runner.rs`) and the two transcripts are compared.
//!
//! `POST /api/v1/script` `{"ops": [...], "status": 200}` runs each op in order and answers
//! `status` with `{"data": [result, …]}`: an answer of 4xx or 5xx discards the unit, as on the
//! host. Results hold no ids or times (job ids are kept under `id/…` keys, masked in dumps), and
//! a failed import is `{"error": true}` (the two hosts' messages may differ). `publish` sends
//! `ping.conformance {n}`, which the `listener` test engine records on the real host.

use tessera_sdk::serde_json::{Map, Value, json};
use tessera_sdk::{
    Context, Descriptor, Engine, HandlerResult, HostError, Request, Response, Router, blobs,
    events, scheduler, settings, storage, vault,
};

#[cfg(all(test, feature = "fake"))]
mod fake_runner;

/// The engine.
pub struct Conformance;

impl Engine for Conformance {
    fn describe() -> Descriptor {
        Descriptor::new("conformance", "Conformance", env!("CARGO_PKG_VERSION"))
    }

    fn handle(ctx: &Context, request: Request) -> Response {
        Router::new()
            .post("/api/v1/script", script)
            .handle(ctx, request)
    }
}

fn text(value: &Value) -> Vec<u8> {
    value.as_str().unwrap_or_default().as_bytes().to_vec()
}

fn optional_text(value: &Value) -> Option<Vec<u8>> {
    value.as_str().map(|text| text.as_bytes().to_vec())
}

fn shown(bytes: Option<Vec<u8>>) -> Value {
    bytes.map_or(Value::Null, |bytes| {
        Value::String(String::from_utf8_lossy(&bytes).into_owned())
    })
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|item| item.as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn pairs(value: &Value) -> Vec<(String, Vec<u8>)> {
    value
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|pair| {
                    (
                        pair[0].as_str().unwrap_or_default().to_owned(),
                        text(&pair[1]),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The op's `at` (Unix milliseconds), else 2100-01-01.
fn at(op: &Value) -> u64 {
    op["at"].as_u64().unwrap_or(4_102_444_800_000)
}

/// Every entry of the tenant (values of `id/…` keys masked) and the blobs' usage.
fn dump() -> Result<Value, HostError> {
    let mut entries = Map::new();
    let mut after: Option<String> = None;
    loop {
        let scanned = storage::scan("", after.as_deref(), 100, false)?;
        for (key, value) in &scanned.entries {
            let value = if key.starts_with("id/") {
                Value::String("<id>".into())
            } else {
                shown(Some(value.clone()))
            };
            entries.insert(key.clone(), value);
        }
        after = scanned.entries.last().map(|(key, _)| key.clone());
        if scanned.exhausted {
            break;
        }
    }
    Ok(json!({ "entries": entries, "blob_usage": blobs::usage()? }))
}

/// Runs one op; `{"error": true}` when the host refused it.
fn run(op: &Value) -> Value {
    let result: Result<Value, HostError> = (|| {
        Ok(match op["op"].as_str().unwrap_or_default() {
            "get" => shown(storage::get(op["key"].as_str().unwrap_or_default())?),
            "get_many" => {
                let keys = strings(&op["keys"]);
                let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
                Value::Array(storage::get_many(&keys)?.into_iter().map(shown).collect())
            }
            "set" => {
                storage::set(op["key"].as_str().unwrap_or_default(), &text(&op["value"]))?;
                Value::Null
            }
            "delete" => Value::Bool(storage::delete(op["key"].as_str().unwrap_or_default())?),
            "scan" => {
                let scanned = storage::scan(
                    op["prefix"].as_str().unwrap_or_default(),
                    op["after"].as_str(),
                    op["limit"].as_u64().unwrap_or(100) as u32,
                    op["reverse"].as_bool().unwrap_or(false),
                )?;
                json!({
                    "keys": scanned.entries.iter().map(|(key, _)| key.clone()).collect::<Vec<_>>(),
                    "exhausted": scanned.exhausted,
                })
            }
            "delete_prefix" => json!(storage::delete_prefix(
                op["prefix"].as_str().unwrap_or_default()
            )?),
            "cas" => Value::Bool(storage::compare_and_swap(
                op["key"].as_str().unwrap_or_default(),
                optional_text(&op["expected"]).as_deref(),
                optional_text(&op["value"]).as_deref(),
            )?),
            "batch" => {
                let jobs: Vec<(u64, Vec<u8>)> = (0..op["jobs"].as_u64().unwrap_or(0))
                    .map(|n| (at(op), n.to_string().into_bytes()))
                    .collect();
                let ids =
                    storage::write_batch(&pairs(&op["sets"]), &strings(&op["deletes"]), &jobs)?;
                json!(ids.len())
            }
            "transact" => {
                let mut transaction = storage::Transaction::new();
                for pair in op["expect"].as_array().cloned().unwrap_or_default() {
                    transaction.expect(
                        pair[0].as_str().unwrap_or_default(),
                        optional_text(&pair[1]).as_deref(),
                    );
                }
                for (key, value) in pairs(&op["sets"]) {
                    transaction.set(&key, value);
                }
                for key in strings(&op["deletes"]) {
                    transaction.delete(&key);
                }
                for pair in op["add"].as_array().cloned().unwrap_or_default() {
                    transaction.add(
                        pair[0].as_str().unwrap_or_default(),
                        pair[1].as_i64().unwrap_or(0),
                    );
                }
                Value::Bool(matches!(
                    transaction.commit()?,
                    storage::Committed::Yes { .. }
                ))
            }
            "publish" => {
                events::publish("ping.conformance", &json!({ "n": op["n"] }))?;
                Value::Null
            }
            "schedule" => {
                let id = scheduler::schedule(at(op), b"later")?;
                storage::set(op["store_as"].as_str().unwrap_or("id/job"), id.as_bytes())?;
                Value::Null
            }
            "cancel" => {
                let id =
                    storage::get(op["stored"].as_str().unwrap_or("id/job"))?.unwrap_or_default();
                Value::Bool(scheduler::cancel(&String::from_utf8_lossy(&id))?)
            }
            "blob_put" => Value::Bool(matches!(
                blobs::put(
                    op["key"].as_str().unwrap_or_default(),
                    &text(&op["content"]),
                    op["quota"].as_u64(),
                    &pairs(&op["sets"]),
                )?,
                blobs::Put::Stored
            )),
            "blob_get" => shown(blobs::get(op["key"].as_str().unwrap_or_default())?),
            "blob_delete" => json!(blobs::delete(
                &strings(&op["keys"]),
                &strings(&op["deletes"])
            )?),
            "blob_usage" => json!(blobs::usage()?),
            "setting" => settings::get(op["name"].as_str().unwrap_or_default())
                .map_or(Value::Null, Value::String),
            "vault" => {
                let plaintext = text(&op["text"]);
                let sealed = vault::seal(&plaintext)?;
                Value::Bool(sealed != plaintext && vault::open(&sealed)? == plaintext)
            }
            "dump" => dump()?,
            other => json!({ "unknown_op": other }),
        })
    })();
    result.unwrap_or_else(|_| json!({ "error": true }))
}

fn script(_ctx: &Context, request: &Request) -> HandlerResult {
    let body: Value = request.json()?;
    let results: Vec<Value> = body["ops"]
        .as_array()
        .map(|ops| ops.iter().map(run).collect())
        .unwrap_or_default();
    let status = body["status"].as_u64().unwrap_or(200) as u16;
    Ok(Response::json(status, &json!({ "data": results })))
}

tessera_sdk::export_engine!(Conformance);
