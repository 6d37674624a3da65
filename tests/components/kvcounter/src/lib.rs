//! Test `wasi:http` component (`kvcounter`): what the host's `wasi:keyvalue` and `wasi:config`
//! give a standard component, over plain `wasi:http`.
//!
//! - `GET /health`: `ok` (public in the tests' manifest).
//! - `GET /whoami`: the `x-tessera-*` and `x-correlation-id` headers it received, a line each.
//! - `POST /count/{name}`: `atomics.increment` of `name` in the bucket `counters`; the new count.
//! - `GET /count/{name}`: the count (`0` when unset).
//! - `PUT /notes/{key}`: stores the body in the bucket `notes`; `?fail` stores it, then answers 500.
//! - `GET /notes/{key}`: the note, or 404; `DELETE /notes/{key}` deletes it.
//! - `GET /notes`: every key of `notes` (all `list-keys` pages), a line each.
//! - `GET /many?keys=a,b`: `batch.get-many`, `key=value` or `key` a line each.
//! - `PUT /many?keys=a,b`: `batch.set-many` of each key to the body.
//! - `GET /config/{name}`: `wasi:config/store.get`, or 404; `GET /config`: `get-all`.

use std::io::Write as _;

use wasip2::http::types::{
    Fields, IncomingBody, IncomingRequest, Method, OutgoingBody, OutgoingResponse, ResponseOutparam,
};

wit_bindgen::generate!({
    path: "../../../wit/wasi-standard",
    world: "tessera:wasi-standard/standard",
    generate_all,
});

use wasi::config::store as config;
use wasi::keyvalue::{atomics, batch, store};

wasip2::http::proxy::export!(Component);

struct Component;

impl wasip2::exports::http::incoming_handler::Guest for Component {
    fn handle(request: IncomingRequest, response_out: ResponseOutparam) {
        let (status, body) = answer(&request);
        let response = OutgoingResponse::new(Fields::new());
        response.set_status_code(status).expect("a valid status");
        let outgoing = response.body().expect("the response body");
        ResponseOutparam::set(response_out, Ok(response));
        let mut stream = outgoing.write().expect("the body stream");
        stream.write_all(body.as_bytes()).expect("writing the body");
        stream.flush().expect("flushing the body");
        drop(stream);
        OutgoingBody::finish(outgoing, None).expect("finishing the body");
    }
}

fn answer(request: &IncomingRequest) -> (u16, String) {
    let path_with_query = request.path_with_query().unwrap_or_default();
    let (path, query) = path_with_query
        .split_once('?')
        .unwrap_or((path_with_query.as_str(), ""));
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let method = request.method();
    match (&method, segments.as_slice()) {
        (Method::Get, ["health"]) => (200, "ok".into()),
        (Method::Get, ["whoami"]) => (200, identity(request)),
        (Method::Post, ["count", name]) => outcome(count(name, 1)),
        (Method::Get, ["count", name]) => outcome(read_count(name)),
        (Method::Put, ["notes", key]) => {
            let body = read_body(request);
            match bucket("notes").and_then(|notes| notes.set(key, &body).map_err(describe)) {
                Ok(()) if query.split('&').any(|pair| pair == "fail") => {
                    (500, "stored, then failed".into())
                }
                Ok(()) => (200, "stored".into()),
                Err(error) => (500, error),
            }
        }
        (Method::Get, ["notes", key]) => {
            match bucket("notes").and_then(|notes| notes.get(key).map_err(describe)) {
                Ok(Some(value)) => (200, String::from_utf8_lossy(&value).into_owned()),
                Ok(None) => (404, "no such note".into()),
                Err(error) => (500, error),
            }
        }
        (Method::Delete, ["notes", key]) => {
            match bucket("notes").and_then(|notes| notes.delete(key).map_err(describe)) {
                Ok(()) => (200, "deleted".into()),
                Err(error) => (500, error),
            }
        }
        (Method::Get, ["notes"]) => outcome(list("notes")),
        (Method::Get, ["many"]) => outcome(get_many(keys_of(query))),
        (Method::Put, ["many"]) => {
            let body = read_body(request);
            outcome(bucket("notes").and_then(|notes| {
                let pairs: Vec<(String, Vec<u8>)> = keys_of(query)
                    .into_iter()
                    .map(|key| (key, body.clone()))
                    .collect();
                batch::set_many(&notes, &pairs)
                    .map(|()| "stored".to_owned())
                    .map_err(describe)
            }))
        }
        (Method::Get, ["config"]) => match config::get_all() {
            Ok(all) => (
                200,
                all.into_iter()
                    .map(|(name, value)| format!("{name}={value}\n"))
                    .collect(),
            ),
            Err(error) => (500, format!("{error:?}")),
        },
        (Method::Get, ["config", name]) => match config::get(name) {
            Ok(Some(value)) => (200, value),
            Ok(None) => (404, "no such setting".into()),
            Err(error) => (500, format!("{error:?}")),
        },
        _ => (404, "no such route".into()),
    }
}

fn outcome(result: Result<String, String>) -> (u16, String) {
    match result {
        Ok(text) => (200, text),
        Err(error) => (500, error),
    }
}

fn describe(error: store::Error) -> String {
    match error {
        store::Error::NoSuchStore => "no-such-store".into(),
        store::Error::AccessDenied => "access-denied".into(),
        store::Error::Other(message) => format!("other: {message}"),
    }
}

fn bucket(name: &str) -> Result<store::Bucket, String> {
    store::open(name).map_err(describe)
}

fn count(name: &str, delta: u64) -> Result<String, String> {
    let counters = bucket("counters")?;
    atomics::increment(&counters, name, delta)
        .map(|count| count.to_string())
        .map_err(describe)
}

fn read_count(name: &str) -> Result<String, String> {
    let counters = bucket("counters")?;
    match counters.get(name).map_err(describe)? {
        Some(value) => Ok(String::from_utf8_lossy(&value).into_owned()),
        None => Ok("0".into()),
    }
}

fn list(name: &str) -> Result<String, String> {
    let open = bucket(name)?;
    let mut keys = String::new();
    let mut cursor = None;
    loop {
        let page = open.list_keys(cursor).map_err(describe)?;
        for key in page.keys {
            keys.push_str(&key);
            keys.push('\n');
        }
        match page.cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(keys),
        }
    }
}

fn keys_of(query: &str) -> Vec<String> {
    query
        .split('&')
        .filter_map(|pair| pair.strip_prefix("keys="))
        .flat_map(|keys| keys.split(','))
        .filter(|key| !key.is_empty())
        .map(str::to_owned)
        .collect()
}

fn get_many(keys: Vec<String>) -> Result<String, String> {
    let notes = bucket("notes")?;
    let values = batch::get_many(&notes, &keys).map_err(describe)?;
    Ok(keys
        .iter()
        .zip(values)
        .map(|(key, value)| match value {
            Some((_, value)) => format!("{key}={}\n", String::from_utf8_lossy(&value)),
            None => format!("{key}\n"),
        })
        .collect())
}

fn identity(request: &IncomingRequest) -> String {
    let mut lines: Vec<String> = request
        .headers()
        .entries()
        .into_iter()
        .filter(|(name, _)| name.starts_with("x-tessera-") || name == "x-correlation-id")
        .map(|(name, value)| format!("{name}: {}", String::from_utf8_lossy(&value)))
        .collect();
    lines.sort();
    lines.join("\n")
}

fn read_body(request: &IncomingRequest) -> Vec<u8> {
    let Ok(body) = request.consume() else {
        return Vec::new();
    };
    let mut bytes = Vec::new();
    {
        let Ok(stream) = body.stream() else {
            return Vec::new();
        };
        while let Ok(chunk) = stream.blocking_read(64 * 1024) {
            bytes.extend_from_slice(&chunk);
        }
    }
    IncomingBody::finish(body);
    bytes
}
