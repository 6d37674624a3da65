//! Test engine `trapper`: `GET /api/v1/trap` panics, which traps the component instance;
//! `GET /api/v1/ok` → 200 `{"data": "ok"}` proves the engine still serves afterwards.
//!
//! The unit of work of a call (`unit_of_work.rs` in the host):
//! - `POST /api/v1/units/{mode}?id=…` writes `units/{id}` and publishes `ping.unit`
//!   `{id, mode}` (which the `listener` test engine records), then by `mode`: `commit` → 201,
//!   `trap` → panics, `fail` → 500, `reject` → 422, `reject-kept` → 422 after committing
//!   (`storage::commit_now`).
//!   It also publishes `unit.written` `{id, mode}` to its realtime topic `trapper.units`
//!   (members may subscribe, guests not), so realtime delivers exactly the committed ones.
//! - `GET /api/v1/units` → 200 `{"data": [id, …]}`: the ids stored.
//! - `POST /api/v1/own-writes/seed` stores `own/a`=1, `own/b`=2, `own/c`=3 and `count`=10;
//!   `POST /api/v1/own-writes` then writes, reads, scans, counts, compares and deletes in one
//!   call and answers what each read saw; `GET /api/v1/own-writes` answers what is stored.

use tessera_sdk::serde_json::{Value, json};
use tessera_sdk::storage::{self, Transaction};
use tessera_sdk::{
    ApiError, Context, Descriptor, Engine, HandlerResult, Request, Response, Router, events,
    realtime,
};

struct Trapper;

impl Engine for Trapper {
    fn describe() -> Descriptor {
        Descriptor::new("trapper", "Trapper", env!("CARGO_PKG_VERSION"))
    }

    fn topics() -> Vec<String> {
        vec!["units".to_owned()]
    }

    fn authorize_subscription(caller: &Context, topic: &str) -> bool {
        topic == "units" && !caller.is_guest()
    }

    fn handle(ctx: &Context, request: Request) -> Response {
        Router::new()
            .get("/api/v1/trap", trap)
            .get("/api/v1/ok", |_, _| Ok(Response::ok(&"ok")))
            .post("/api/v1/units/{mode}", unit)
            .get("/api/v1/units", units)
            .post("/api/v1/own-writes/seed", seed)
            .post("/api/v1/own-writes", own_writes)
            .get("/api/v1/own-writes", stored)
            .handle(ctx, request)
    }
}

fn trap(_ctx: &Context, _request: &Request) -> HandlerResult {
    panic!("trapper: deliberate panic for the host's trap handling");
}

fn unit(_ctx: &Context, request: &Request) -> HandlerResult {
    let mode = request.param("mode").to_owned();
    let id = request
        .query_unchecked()
        .get("id")
        .ok_or_else(|| ApiError::invalid("id", "required"))?
        .to_owned();
    storage::set(&format!("units/{id}"), id.as_bytes())?;
    events::publish("ping.unit", &json!({ "id": id, "mode": mode }))?;
    realtime::publish("units", "unit.written", &json!({ "id": id, "mode": mode }))?;
    match mode.as_str() {
        "commit" => Ok(Response::created(&json!({ "id": id }))),
        "trap" => panic!("trapper: trapping after writing and publishing"),
        "fail" => Err(ApiError::internal("failing after writing and publishing")),
        "reject-kept" => {
            storage::commit_now()?;
            Err(ApiError::invalid("mode", "rejected"))
        }
        _ => Err(ApiError::invalid("mode", "rejected")),
    }
}

fn units(_ctx: &Context, _request: &Request) -> HandlerResult {
    let ids: Vec<String> = storage::scan("units/", None, 1000, false)?
        .entries
        .into_iter()
        .map(|(_, value)| String::from_utf8_lossy(&value).into_owned())
        .collect();
    Ok(Response::ok(&ids))
}

fn seed(_ctx: &Context, _request: &Request) -> HandlerResult {
    for (key, value) in [
        ("own/a", "1"),
        ("own/b", "2"),
        ("own/c", "3"),
        ("count", "10"),
    ] {
        storage::set(key, value.as_bytes())?;
    }
    Ok(Response::no_content())
}

fn text(value: Option<Vec<u8>>) -> Value {
    value.map_or(Value::Null, |value| {
        Value::String(String::from_utf8_lossy(&value).into_owned())
    })
}

fn keys(prefix: &str, after: Option<&str>, limit: u32, reverse: bool) -> Result<Value, ApiError> {
    let scan = storage::scan(prefix, after, limit, reverse)?;
    Ok(scan
        .entries
        .into_iter()
        .map(|(key, value)| json!([key, text(Some(value))]))
        .collect())
}

fn own_writes(_ctx: &Context, _request: &Request) -> HandlerResult {
    storage::set("own/b", b"20")?;
    let deleted_c = storage::delete("own/c")?;
    let deleted_c_again = storage::delete("own/c")?;
    storage::set("own/d", b"4")?;
    let read = json!({
        "a": text(storage::get("own/a")?),
        "b": text(storage::get("own/b")?),
        "c": text(storage::get("own/c")?),
        "many": storage::get_many(&["own/d", "own/c", "own/a"])?.into_iter().map(text).collect::<Vec<_>>(),
    });
    let scans = json!({
        "forward": keys("own/", None, 10, false)?,
        "reverse": keys("own/", None, 10, true)?,
        "first_two": keys("own/", None, 2, false)?,
        "after_b": keys("own/", Some("own/b"), 2, false)?,
    });
    let mut counting = Transaction::new();
    counting.add("count", 5);
    counting.commit()?;
    let count = text(storage::get("count")?);
    let swapped = storage::compare_and_swap("own/a", Some(b"1"), Some(b"100"))?;
    let missed = storage::compare_and_swap("own/a", Some(b"1"), Some(b"200"))?;
    let a_after_swap = text(storage::get("own/a")?);
    let deleted_under_own = storage::delete_prefix("own/")?;
    let after_prefix_delete = keys("own/", None, 10, false)?;
    storage::set("own/e", b"5")?;
    let after_rewrite = keys("own/", None, 10, false)?;
    Ok(Response::ok(&json!({
        "deleted_c": deleted_c,
        "deleted_c_again": deleted_c_again,
        "read": read,
        "scans": scans,
        "count": count,
        "swapped": swapped,
        "missed": missed,
        "a_after_swap": a_after_swap,
        "deleted_under_own": deleted_under_own,
        "after_prefix_delete": after_prefix_delete,
        "after_rewrite": after_rewrite,
    })))
}

fn stored(_ctx: &Context, _request: &Request) -> HandlerResult {
    Ok(Response::ok(&json!({
        "own": keys("own/", None, 10, false)?,
        "count": text(storage::get("count")?),
    })))
}

tessera_sdk::export_engine!(Trapper);
