//! `POST /api/v1/fetch`, shared by `fetcher` and `fetcher-bare`: takes
//! `{url, method?, headers?: {name: value}, body?: string, timeout_ms?}`, calls
//! `outbound-http.fetch` and answers 200 with the outcome:
//! `{"data": {"ok": true, "status", "headers": [[name, value], …], "body", "elapsed_ms"}}` or
//! `{"data": {"ok": false, "error": "<the host's reason>"}}`.

use tessera_sdk::http::{self, OutboundRequest};
use tessera_sdk::serde_json::{Value, json};
use tessera_sdk::{ApiError, Context, HandlerResult, Request, Response};

pub fn fetch(_ctx: &Context, request: &Request) -> HandlerResult {
    let input: Value = request.json()?;
    let url = input["url"]
        .as_str()
        .ok_or_else(|| ApiError::invalid("url", "required"))?;
    let method = input["method"].as_str().unwrap_or("GET");
    let mut outbound = OutboundRequest::new(method, url);
    if let Some(headers) = input["headers"].as_object() {
        for (name, value) in headers {
            let value = value
                .as_str()
                .ok_or_else(|| ApiError::invalid(format!("headers.{name}"), "string"))?;
            outbound = outbound.header(name, value);
        }
    }
    if let Some(body) = input["body"].as_str() {
        outbound = outbound.body(body.as_bytes().to_vec());
    }
    if let Some(timeout_ms) = input["timeout_ms"].as_u64() {
        outbound = outbound.timeout_ms(u32::try_from(timeout_ms).unwrap_or(u32::MAX));
    }
    let outcome = match http::fetch(outbound) {
        Ok(response) => json!({
            "ok": true,
            "status": response.status,
            "headers": response.headers,
            "body": String::from_utf8_lossy(&response.body),
            "elapsed_ms": response.elapsed_ms,
        }),
        Err(error) => json!({ "ok": false, "error": error.message() }),
    };
    Ok(Response::ok(&outcome))
}
