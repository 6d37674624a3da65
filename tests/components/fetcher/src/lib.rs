//! Test engine `fetcher`: `POST /api/v1/fetch` performs one outbound HTTP request through the
//! host's policy and reports the outcome (see `fetch.rs`); `POST /api/v1/fetch-later` `{url}`
//! schedules a job (202 `{"data": {"job_id"}}`) whose run sends `GET url`. It declares the outbound hosts
//! `https://*:*` (any HTTPS URL), the plain-HTTP loopback origins `http://127.0.0.1:*`,
//! `http://localhost:*`, `http://[::1]:*`, and `http://10.0.0.1`, so the tests can tell a
//! refusal by the allow-list from a refusal of private addresses.

use tessera_sdk::http::{self, OutboundRequest};
use tessera_sdk::serde_json::{Value, json};
use tessera_sdk::{
    ApiError, Context, Descriptor, Engine, HandlerResult, Job, Request, Response, Router,
    scheduler, time,
};

mod fetch;

struct Fetcher;

impl Engine for Fetcher {
    fn describe() -> Descriptor {
        Descriptor::new("fetcher", "Fetcher", env!("CARGO_PKG_VERSION")).outbound_hosts(&[
            "https://*:*",
            "http://127.0.0.1:*",
            "http://localhost:*",
            "http://[::1]:*",
            "http://10.0.0.1",
        ])
    }

    fn handle(ctx: &Context, request: Request) -> Response {
        Router::new()
            .post("/api/v1/fetch", fetch::fetch)
            .post("/api/v1/fetch-later", fetch_later)
            .handle(ctx, request)
    }

    fn run_job(job: &Job) -> Result<(), String> {
        let url = String::from_utf8_lossy(&job.payload).into_owned();
        http::fetch(OutboundRequest::new("GET", &url))
            .map(drop)
            .map_err(|error| error.message().to_owned())
    }
}

fn fetch_later(_ctx: &Context, request: &Request) -> HandlerResult {
    let input: Value = request.json()?;
    let url = input["url"]
        .as_str()
        .ok_or_else(|| ApiError::invalid("url", "required"))?;
    let job_id = scheduler::schedule(time::now_unix_ms(), url.as_bytes())
        .map_err(|error| ApiError::Conflict(error.message().to_owned()))?;
    Ok(Response::accepted(&json!({ "job_id": job_id })))
}

tessera_sdk::export_engine!(Fetcher);
