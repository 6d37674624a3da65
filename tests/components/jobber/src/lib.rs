//! Test engine `jobber`: the durable scheduler and event publishing, seen from an engine.
//!
//! - `POST /api/v1/jobs` `{"in_ms": n, "payload": "text"}` → 201 `{"data": {"job_id"}}`; host
//!   refusals are 422 `{"message"}`.
//! - `DELETE /api/v1/jobs/{id}` → 200 `{"data": {"cancelled": bool}}`
//! - `GET /api/v1/runs` → 200 `{"data": [{"job_id", "payload", "attempt"}, …]}`: every run, in
//!   the order they happened. A job whose payload is `fail-once` fails its first run; one whose
//!   payload is `busy-ms:N` records its run, then busy-waits N milliseconds.
//! - `POST /api/v1/events` `{"event_type", "payload": {…}}` → 202, or 409 with the host's reason.

use tessera_sdk::serde_json::{Value, json};
use tessera_sdk::{
    ApiError, Context, Descriptor, Engine, HandlerResult, Job, Request, Response, Router, events,
    scheduler, storage, time,
};

struct Jobber;

impl Engine for Jobber {
    fn describe() -> Descriptor {
        Descriptor::new("jobber", "Jobber", env!("CARGO_PKG_VERSION")).subscribe("ping.*")
    }

    fn handle(ctx: &Context, request: Request) -> Response {
        Router::new()
            .post("/api/v1/jobs", schedule)
            .delete("/api/v1/jobs/{id}", cancel)
            .get("/api/v1/runs", runs)
            .post("/api/v1/events", publish)
            .handle(ctx, request)
    }

    fn run_job(job: &Job) -> Result<(), String> {
        let payload = String::from_utf8_lossy(&job.payload).into_owned();
        let key = format!("runs/{:020}/{}", time::now_unix_micros(), job.id);
        storage::put_json(
            &key,
            &json!({ "job_id": job.id, "payload": payload, "attempt": job.attempt }),
        )?;
        if payload == "fail-once" && job.attempt == 1 {
            // A failing run commits nothing it wrote; keep the record of this one.
            storage::commit_now()?;
            return Err("failing the first run on purpose".into());
        }
        if let Some(ms) = payload
            .strip_prefix("busy-ms:")
            .and_then(|ms| ms.parse::<u64>().ok())
        {
            // The record is visible while the run lasts.
            storage::commit_now()?;
            let start = std::time::Instant::now();
            while start.elapsed() < std::time::Duration::from_millis(ms) {
                std::hint::spin_loop();
            }
        }
        Ok(())
    }
}

/// A host refusal, shown to the test as 409 with the host's reason.
fn refused(error: tessera_sdk::HostError) -> ApiError {
    ApiError::Conflict(error.message().to_owned())
}

fn schedule(_ctx: &Context, request: &Request) -> HandlerResult {
    let body: Value = request.json()?;
    let in_ms = body["in_ms"].as_u64().unwrap_or(0);
    let payload = body["payload"].as_str().unwrap_or_default();
    let job_id =
        scheduler::schedule(time::now_unix_ms() + in_ms, payload.as_bytes()).map_err(refused)?;
    Ok(Response::created(&json!({ "job_id": job_id })))
}

fn cancel(_ctx: &Context, request: &Request) -> HandlerResult {
    let cancelled = scheduler::cancel(request.param("id"))?;
    Ok(Response::ok(&json!({ "cancelled": cancelled })))
}

fn runs(_ctx: &Context, _request: &Request) -> HandlerResult {
    let runs: Vec<Value> = storage::list_json::<Value>("runs/", None, 1000, false)?
        .into_iter()
        .map(|(_, run)| run)
        .collect();
    Ok(Response::ok(&runs))
}

fn publish(_ctx: &Context, request: &Request) -> HandlerResult {
    let body: Value = request.json()?;
    let event_type = body["event_type"].as_str().unwrap_or_default();
    events::publish(event_type, &body["payload"]).map_err(refused)?;
    Ok(Response::accepted(&json!({ "published": event_type })))
}

tessera_sdk::export_engine!(Jobber);
