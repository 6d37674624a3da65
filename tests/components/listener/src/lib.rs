//! Test engine `listener`: subscribes to `ping.*` and records every delivery in its storage.
//! An event whose payload has `"fail_once": true` fails its first delivery (keeping its record
//! of it), one with `"fail": true` fails every delivery (keeping nothing).
//!
//! - `GET /api/v1/events` → 200 `{"data": [{"id", "event_type", "tenant_id", "payload",
//!   "attempt", "position"}, …]}` in delivery order; `position` counts the events the same
//!   instance received before this one (0 but in a batch of deliveries, when the host keeps
//!   no instance warm between calls).

use std::sync::atomic::{AtomicU64, Ordering};

use tessera_sdk::serde_json::{Value, json};
use tessera_sdk::{
    Context, Descriptor, Engine, Event, HandlerResult, Request, Response, Router, storage, time,
};

struct Listener;

/// Events this instance received so far.
static RECEIVED: AtomicU64 = AtomicU64::new(0);

impl Engine for Listener {
    fn describe() -> Descriptor {
        Descriptor::new("listener", "Listener", env!("CARGO_PKG_VERSION")).subscribe("ping.*")
    }

    fn handle(ctx: &Context, request: Request) -> Response {
        Router::new()
            .get("/api/v1/events", deliveries)
            .handle(ctx, request)
    }

    fn on_event(event: &Event) -> Result<(), String> {
        let position = RECEIVED.fetch_add(1, Ordering::Relaxed);
        let payload: Value = event.payload_json()?;
        let attempts_key = format!("attempts/{}", event.id);
        let attempt = storage::get_json::<u64>(&attempts_key)?.unwrap_or(0) + 1;
        storage::put_json(&attempts_key, &attempt)?;
        storage::put_json(
            &format!("events/{:020}/{}", time::now_unix_micros(), event.id),
            &json!({
                "id": event.id,
                "event_type": event.event_type,
                "tenant_id": event.tenant_id,
                "payload": payload,
                "attempt": attempt,
                "position": position,
            }),
        )?;
        if payload["fail"] == true {
            return Err("failing every delivery on purpose".into());
        }
        if payload["fail_once"] == true && attempt == 1 {
            // A failing delivery commits nothing it wrote; keep the record of this one.
            storage::commit_now()?;
            return Err("failing the first delivery on purpose".into());
        }
        Ok(())
    }
}

fn deliveries(_ctx: &Context, _request: &Request) -> HandlerResult {
    let events: Vec<Value> = storage::list_json::<Value>("events/", None, 1000, false)?
        .into_iter()
        .map(|(_, event)| event)
        .collect();
    Ok(Response::ok(&events))
}

tessera_sdk::export_engine!(Listener);
