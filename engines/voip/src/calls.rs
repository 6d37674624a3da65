//! The call endpoints, their storage and their events.
//!
//! A call is written with its participants' history index entries and the job of its ring
//! timeout in one storage transaction; every later change is a compare-and-swap of the call
//! record (`storage::update_json`), so a join racing the timeout or another participant's
//! leave never loses an update. Events carry identifiers only and are published after the
//! change committed.

use serde::{Deserialize, Serialize};
use tessera_sdk::serde_json::{Map, Value, json};
use tessera_sdk::storage::{self, Update};
use tessera_sdk::tenancy::{RemovalChunk, RemovalWrites, RemovedChunk};
use tessera_sdk::{
    ApiError, Context, CursorPage, HandlerResult, HostError, Job, Request, Response,
    ValidationErrors, events, tenancy, time,
};

use crate::call::{Action, Call, CallKind, CallStatus, StatusChange};

/// Most users a call invites besides its initiator.
const MAX_PARTICIPANTS: usize = 50;
/// Bounds of `ring_timeout_seconds`.
const RING_TIMEOUT_SECONDS: (u32, u32) = (1, 300);
/// The ring timeout when neither the request nor the tenant's settings give one.
const DEFAULT_RING_TIMEOUT_SECONDS: u32 = 60;
/// Index entries read per storage scan while filling a history page.
const SCAN_BATCH: u32 = 200;
/// Most calls one chunk of a user's removal forgets: each takes several storage operations.
const REMOVAL_CALLS: usize = 100;

fn call_key(call_id: &str) -> String {
    format!("calls/{call_id}")
}

fn history_prefix(user_id: &str) -> String {
    format!("by-user/{user_id}/")
}

fn history_key(user_id: &str, call_id: &str) -> String {
    format!("{}{call_id}", history_prefix(user_id))
}

fn load(call_id: &str) -> Result<Option<Call>, HostError> {
    storage::get_json(&call_key(call_id))
}

/// The call, when `user_id` is one of its participants; 404 otherwise.
fn load_for(call_id: &str, user_id: &str) -> Result<Call, ApiError> {
    load(call_id)?
        .filter(|call| call.has_participant(user_id))
        .ok_or_else(|| ApiError::not_found("Call"))
}

/// The job that makes a call missed when nobody answers in time.
#[derive(Serialize, Deserialize)]
struct RingTimeoutJob {
    call_id: String,
}

/// Publishes the event of a call's status change: identifiers, status and duration only, in
/// the call's unit of work (it exists if and only if the change commits).
fn publish(event_type: &str, call: &Call, actor_id: Option<&str>) -> Result<(), HostError> {
    let payload = json!({
        "call_id": call.id,
        "initiator_id": call.initiator_id,
        "participant_ids": call.participant_ids(),
        "kind": call.kind,
        "status": call.status,
        "duration_seconds": call.duration_seconds,
        "user_id": actor_id,
    });
    events::publish(event_type, &payload)
}

/// Applies `change` to the stored call with compare-and-swap (again if the call changed in
/// between); returns the call as written and what happened to its status. Nothing is written
/// when `change` fails.
fn change_call(
    call_id: &str,
    mut change: impl FnMut(&mut Call) -> Result<Option<StatusChange>, ApiError>,
) -> Result<(Call, Option<StatusChange>), ApiError> {
    let mut outcome = Err(ApiError::not_found("Call"));
    storage::update_json::<Call, _>(&call_key(call_id), |current| {
        let Some(mut call) = current else {
            outcome = Err(ApiError::not_found("Call"));
            return Update::Keep;
        };
        match change(&mut call) {
            Ok(status_change) => {
                outcome = Ok((call.clone(), status_change));
                Update::Set(call)
            }
            Err(error) => {
                outcome = Err(error);
                Update::Keep
            }
        }
    })?;
    outcome
}

/// The request body as a JSON object: 400 when it is not JSON, 422 `body: object` when it is
/// not an object.
fn object_body(req: &Request) -> Result<Map<String, Value>, ApiError> {
    match req.json::<Value>()? {
        Value::Object(map) => Ok(map),
        _ => Err(ApiError::invalid("body", "object")),
    }
}

/// `participant_ids`: 1 to 50 distinct provisioned users of the tenant other than the caller.
/// Returns the valid ones; failures go to `errors` (`participant_ids` for the list,
/// `participant_ids.N` for an item).
fn participant_ids(
    body: &Map<String, Value>,
    caller_id: &str,
    errors: &mut ValidationErrors,
) -> Result<Vec<String>, ApiError> {
    const FIELD: &str = "participant_ids";
    let items = match body.get(FIELD) {
        None | Some(Value::Null) => {
            errors.add(FIELD, "required");
            return Ok(Vec::new());
        }
        Some(Value::Array(items)) => items,
        Some(_) => {
            errors.add(FIELD, "array");
            return Ok(Vec::new());
        }
    };
    if !errors.check(!items.is_empty(), FIELD, "min:1")
        || !errors.check(
            items.len() <= MAX_PARTICIPANTS,
            FIELD,
            &format!("max:{MAX_PARTICIPANTS}"),
        )
    {
        return Ok(Vec::new());
    }
    let mut valid: Vec<String> = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let field = format!("{FIELD}.{index}");
        let Some(user_id) = item.as_str() else {
            errors.add(field, "string");
            continue;
        };
        if user_id == caller_id {
            errors.add(field, "not_self");
        } else if valid.iter().any(|seen| seen == user_id) {
            errors.add(field, "distinct");
        } else if user_id.is_empty()
            || user_id.len() > 100
            || tenancy::user_record(user_id)?.is_none()
        {
            errors.add(field, "exists");
        } else {
            valid.push(user_id.to_owned());
        }
    }
    Ok(valid)
}

/// `kind`: `audio` (the default) or `video`.
fn kind(body: &Map<String, Value>, errors: &mut ValidationErrors) -> CallKind {
    match body.get("kind") {
        None | Some(Value::Null) => CallKind::Audio,
        Some(Value::String(text)) => CallKind::parse(text).unwrap_or_else(|| {
            errors.add("kind", "in");
            CallKind::Audio
        }),
        Some(_) => {
            errors.add("kind", "string");
            CallKind::Audio
        }
    }
}

/// The tenant's default ring timeout (`settings.ring_timeout_seconds`), else 60 s.
fn default_ring_timeout() -> Result<u32, HostError> {
    let settings = storage::get_json::<Value>(crate::SETTINGS_KEY)?;
    let (min, max) = RING_TIMEOUT_SECONDS;
    Ok(settings
        .and_then(|settings| settings["ring_timeout_seconds"].as_u64())
        .and_then(|seconds| u32::try_from(seconds).ok())
        .filter(|seconds| (min..=max).contains(seconds))
        .unwrap_or(DEFAULT_RING_TIMEOUT_SECONDS))
}

/// `ring_timeout_seconds`: an integer from 1 to 300, else the tenant's default.
fn ring_timeout(body: &Map<String, Value>, errors: &mut ValidationErrors) -> Result<u32, ApiError> {
    const FIELD: &str = "ring_timeout_seconds";
    let (min, max) = RING_TIMEOUT_SECONDS;
    let value = match body.get(FIELD) {
        None | Some(Value::Null) => return Ok(default_ring_timeout()?),
        Some(value) => value,
    };
    match value.as_i64() {
        Some(seconds) if seconds < i64::from(min) => errors.add(FIELD, format!("min:{min}")),
        Some(seconds) if seconds > i64::from(max) => errors.add(FIELD, format!("max:{max}")),
        Some(seconds) => return Ok(u32::try_from(seconds).unwrap_or(max)),
        None => errors.add(FIELD, "integer"),
    }
    Ok(DEFAULT_RING_TIMEOUT_SECONDS)
}

/// `POST /api/v1/calls`: starts a ringing call and schedules its ring timeout.
pub fn create(ctx: &Context, req: &Request) -> HandlerResult {
    req.query(&[])?;
    ctx.require_writer()?;
    let body = object_body(req)?;
    let mut errors = ValidationErrors::new();
    let invited_ids = participant_ids(&body, &ctx.user_id, &mut errors)?;
    let kind = kind(&body, &mut errors);
    let ring_timeout_seconds = ring_timeout(&body, &mut errors)?;
    errors.into_result()?;
    let now_micros = time::now_unix_micros();
    let call = Call::start(
        uuid::Uuid::now_v7().to_string(),
        kind,
        &ctx.user_id,
        &invited_ids,
        ring_timeout_seconds,
        now_micros,
    );
    let mut sets = vec![storage::json_entry(call_key(&call.id), &call)?];
    for user_id in call.participant_ids() {
        sets.push(storage::json_entry(
            history_key(user_id, &call.id),
            &call.id,
        )?);
    }
    let due_unix_ms =
        u64::try_from(now_micros / 1000).unwrap_or(0) + u64::from(ring_timeout_seconds) * 1000;
    let job = RingTimeoutJob {
        call_id: call.id.clone(),
    };
    let job_payload = tessera_sdk::serde_json::to_vec(&job).map_err(ApiError::internal)?;
    storage::write_batch(&sets, &[], &[(due_unix_ms, job_payload)])?;
    publish("call.started", &call, Some(&ctx.user_id))?;
    Ok(Response::created(&call))
}

/// `GET /api/v1/calls/{id}`: participants only (404 for anyone else).
pub fn show(ctx: &Context, req: &Request) -> HandlerResult {
    req.query(&[])?;
    Ok(Response::ok(&load_for(req.param("id"), &ctx.user_id)?))
}

/// `GET /api/v1/calls?status=&cursor=&limit=`: the caller's calls, newest first. Calls of
/// another status are skipped and reading goes on, so pages stay full.
pub fn list(ctx: &Context, req: &Request) -> HandlerResult {
    let query = req.query(&["status", "cursor", "limit"])?;
    let status = match query.get("status") {
        None | Some("") => None,
        Some(text) => {
            Some(CallStatus::parse(text).ok_or_else(|| ApiError::invalid("status", "in"))?)
        }
    };
    let page = CursorPage::from_query(query)?;
    let prefix = history_prefix(&ctx.user_id);
    // At most a bounded number of history entries per request: then a short page with a cursor.
    let found = storage::find::<_, ApiError>(
        &prefix,
        page.after.as_deref(),
        true,
        page.fetch_limit() as usize,
        storage::LIST_SCAN_BOUND,
        SCAN_BATCH,
        |key, _| {
            let Some(call) = load(&key[prefix.len()..])? else {
                return Ok(None);
            };
            Ok(status
                .is_none_or(|status| call.status == status)
                .then_some((key, call)))
        },
    )?;
    let (rows, meta) = page.finish_found(found.items, |(key, _)| key.clone(), found.stopped_after);
    let calls: Vec<Call> = rows.into_iter().map(|(_, call)| call).collect();
    Ok(Response::ok_with_meta(&calls, &meta))
}

/// `POST /api/v1/calls/{id}/join`, `…/leave` and `…/end`.
pub fn act(action: Action) -> impl Fn(&Context, &Request) -> HandlerResult {
    move |ctx, req| {
        req.query(&[])?;
        ctx.require_writer()?;
        let now_micros = time::now_unix_micros();
        let (call, status_change) = change_call(req.param("id"), |call| {
            call.act(&ctx.user_id, action, now_micros)
        })?;
        if let Some(status_change) = status_change {
            publish(status_change.event_type(), &call, Some(&ctx.user_id))?;
        }
        Ok(Response::ok(&call))
    }
}

/// The ring timeout job: the call becomes `missed` if it is still ringing. Idempotent: an
/// answered, ended or deleted call is left alone.
pub fn run_ring_timeout(job: &Job) -> Result<(), String> {
    let request: RingTimeoutJob = job.payload_json()?;
    let now_micros = time::now_unix_micros();
    match change_call(&request.call_id, |call| call.expire(now_micros).map(Some)) {
        Ok((call, _)) => {
            publish(StatusChange::Missed.event_type(), &call, None)?;
            Ok(())
        }
        Err(ApiError::NotFound(_) | ApiError::Conflict(_)) => Ok(()),
        Err(error) => Err(error.to_string()),
    }
}

/// Forgets what `chunk` allows of a user's call history, at most [`REMOVAL_CALLS`] calls. A
/// call they are still joined in continues without them (and ends when fewer than two remain);
/// a call none of whose other participants still has it in their history is deleted with it;
/// others keep it unchanged. Each call's history entry goes as it is forgotten, so the next
/// chunk starts again at the first entry left; the last call's deletions come back
/// uncommitted, for the batch that carries the removal on.
pub fn forget_user(chunk: &RemovalChunk) -> Result<RemovedChunk, ApiError> {
    let user_id = chunk.user_id();
    let prefix = history_prefix(user_id);
    let mut after: Option<String> = None;
    let mut last_writes = RemovalWrites::default();
    let mut forgotten = 0;
    loop {
        let wanted = SCAN_BATCH.min(u32::try_from(REMOVAL_CALLS - forgotten).unwrap_or(0));
        let limit = if wanted == 0 {
            0
        } else {
            chunk.next_scan(wanted)?
        };
        if limit == 0 {
            return Ok(RemovedChunk {
                finished: false,
                after: None,
                last_writes,
            });
        }
        let scan = storage::scan(&prefix, after.as_deref(), limit, false)?;
        for (key, _) in scan.entries {
            std::mem::take(&mut last_writes).commit()?;
            last_writes.deletes = forget_call(user_id, &key[prefix.len()..])?;
            forgotten += 1;
            after = Some(key);
        }
        if scan.exhausted {
            return Ok(RemovedChunk {
                finished: true,
                after: None,
                last_writes,
            });
        }
    }
}

/// Takes `user_id` out of a call: they leave it when joined; returns the deletions that
/// finish it (their history entry, and the call when no other participant keeps it), for the
/// caller to commit.
fn forget_call(user_id: &str, call_id: &str) -> Result<Vec<String>, ApiError> {
    let now_micros = time::now_unix_micros();
    match change_call(call_id, |call| call.act(user_id, Action::Leave, now_micros)) {
        Ok((call, Some(status_change))) => publish(status_change.event_type(), &call, None)?,
        Ok((_, None)) | Err(ApiError::NotFound(_) | ApiError::Conflict(_)) => {}
        Err(error) => return Err(error),
    }
    let mut deletes = vec![history_key(user_id, call_id)];
    if let Some(call) = load(call_id)? {
        let mut kept_by_others = false;
        for participant_id in call.participant_ids() {
            if participant_id != user_id && storage::exists(&history_key(participant_id, call_id))?
            {
                kept_by_others = true;
                break;
            }
        }
        if !kept_by_others {
            deletes.push(call_key(call_id));
        }
    }
    Ok(deletes)
}
