//! Deliveries: signed POSTs of identifiers-only bodies, their automatic attempts on the host's
//! durable scheduler, the dead letter queue, manual and DLQ retries, test pings, and the
//! consecutive-failure count that disables a webhook.
//!
//! A delivery is created with the job of its first attempt in one storage transaction, and each
//! failed automatic attempt records its outcome together with the job of the next one, so a
//! crash never separates a delivery from its next attempt. A job carries the number of the
//! automatic attempt it makes and does nothing when the delivery has moved past it (delivered,
//! dead-lettered, or that attempt already made: a job the host runs again after a crash), so
//! no attempt is made twice once recorded. The one window left is a crash between the
//! receiver's answer and the record of it: the attempt is then made again with the same
//! `X-Webhook-Delivery` id, which receivers use to ignore repeats.
//!
//! An automatic attempt that comes due while its webhook is disabled parks the delivery, on
//! the condition that the webhook record is still the one it read; the webhook's re-enabling
//! (which changes the record) resumes the parked ones, a chunk per job (`jobs.rs`). So a
//! delivery is never parked after the re-enabling's chain went past it.
//!
//! Every write of a delivery is announced on its webhook's realtime topic (`delivery.updated`
//! on `webhook.<id>`, `topics.rs`) with the delivery as the REST API answers it, in the same
//! unit of work: after an unconditional write, or once a conditional transaction committed.

use serde::{Deserialize, Serialize};
use tessera_sdk::serde_json::{self, json};
use tessera_sdk::storage::{self, Committed, Transaction, Update};
use tessera_sdk::{
    ApiError, Context, CursorPage, HandlerResult, HostError, Request, Response, http, settings,
    time,
};

use super::{DISABLE_AFTER_FAILURES, TRANSACTION_ROUNDS, Webhook, failures_key, webhook_key};
use crate::batch::Batch;
use crate::events::{ChatEvent, TEST_PING};
use crate::{new_ordered_id, topics};

/// How long the receiver has to answer.
pub const DELIVERY_TIMEOUT_MS: u32 = 10_000;
/// The delays before automatic attempts 2.. when the host does not say
/// (`webhook.retry-schedule-ms`).
const DEFAULT_RETRY_SCHEDULE_MS: [u64; 4] = [30_000, 120_000, 600_000, 1_800_000];

/// The delays before automatic attempts 2, 3, …: the host's setting, else the default.
fn retry_schedule_ms() -> Vec<u64> {
    settings::get("webhook.retry-schedule-ms")
        .and_then(|text| {
            text.split(',')
                .map(|delay| delay.trim().parse::<u64>().ok())
                .collect::<Option<Vec<u64>>>()
        })
        .filter(|delays| !delays.is_empty())
        .unwrap_or_else(|| DEFAULT_RETRY_SCHEDULE_MS.to_vec())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pending,
    Delivered,
    Failed,
}

impl Status {
    fn parse(text: &str) -> Option<Self> {
        match text {
            "pending" => Some(Self::Pending),
            "delivered" => Some(Self::Delivered),
            "failed" => Some(Self::Failed),
            _ => None,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Delivered => "delivered",
            Self::Failed => "failed",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Delivery {
    pub id: String,
    pub webhook_id: String,
    pub event: String,
    pub conversation_id: Option<String>,
    pub status: Status,
    pub response_code: u16,
    pub response_time_ms: u64,
    /// Attempts made, automatic and manual.
    pub attempt: u32,
    /// Automatic attempts made (the schedule's position).
    pub automatic_attempts: u32,
    pub next_retry_at: Option<String>,
    pub last_error: Option<String>,
    /// In the dead letter queue.
    pub in_dead_letters: bool,
    pub failed_at: Option<String>,
    /// An automatic attempt came due while the webhook was disabled: it waits for re-enabling.
    pub parked: bool,
    /// The request body, identical on every attempt.
    pub body: String,
    pub created_at: String,
}

impl Delivery {
    fn key(&self) -> String {
        delivery_key(&self.webhook_id, &self.id)
    }
}

/// The API shape of a delivery (history item).
#[derive(Serialize)]
struct DeliveryView<'a> {
    id: &'a str,
    event: &'a str,
    status: &'static str,
    response_code: u16,
    response_time_ms: u64,
    attempt: u32,
    next_retry_at: Option<&'a str>,
    created_at: &'a str,
}

/// Tells the subscribers of `delivery`'s webhook its state as written (`delivery.updated`).
fn announce(delivery: &Delivery) -> Result<(), HostError> {
    topics::delivery_updated(&delivery.webhook_id, &delivery_view(delivery))
}

fn delivery_view(delivery: &Delivery) -> DeliveryView<'_> {
    DeliveryView {
        id: &delivery.id,
        event: &delivery.event,
        status: delivery.status.as_str(),
        response_code: delivery.response_code,
        response_time_ms: delivery.response_time_ms,
        attempt: delivery.attempt,
        next_retry_at: delivery.next_retry_at.as_deref(),
        created_at: &delivery.created_at,
    }
}

/// The API shape of a dead letter queue item.
fn dead_letter_view(delivery: &Delivery) -> serde_json::Value {
    json!({
        "id": delivery.id,
        "webhook_id": delivery.webhook_id,
        "event": delivery.event,
        "attempts": delivery.attempt,
        "last_response_code": delivery.response_code,
        "last_error": delivery.last_error.as_deref().unwrap_or(""),
        "payload_summary": {
            "event_type": delivery.event,
            "conversation_id": delivery.conversation_id,
        },
        "failed_at": delivery.failed_at,
        "created_at": delivery.created_at,
    })
}

/// What a job asks: automatic attempt `attempt` of a delivery. Its payload has no `kind`
/// (the format of the jobs queued before other kinds existed, see `jobs.rs`).
#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttemptJob {
    pub webhook_id: String,
    pub delivery_id: String,
    pub attempt: u32,
}

pub fn deliveries_prefix(webhook_id: &str) -> String {
    format!("deliveries/{webhook_id}/")
}

fn delivery_key(webhook_id: &str, delivery_id: &str) -> String {
    format!("deliveries/{webhook_id}/{delivery_id}")
}

pub fn dead_letter_key(delivery_id: &str) -> String {
    format!("dlq/{delivery_id}")
}

/// What the dead letter queue keeps per item.
#[derive(Debug, Serialize, Deserialize)]
struct DeadLetter {
    webhook_id: String,
}

/// The request body of a delivery (CONTRACT §7, in that order): identifiers only.
#[derive(Serialize)]
struct DeliveryBody<'a> {
    id: &'a str,
    event_type: &'a str,
    tenant_id: &'a str,
    occurred_at: &'a str,
    data: serde_json::Value,
}

fn body_of(delivery_id: &str, tenant_id: &str, event: &ChatEvent) -> String {
    let body = DeliveryBody {
        id: delivery_id,
        event_type: event.event_type,
        tenant_id,
        occurred_at: &event.occurred_at,
        data: event.data(),
    };
    serde_json::to_string(&body).expect("a delivery body serializes")
}

fn new_delivery(tenant_id: &str, webhook: &Webhook, event: &ChatEvent) -> Delivery {
    let id = new_ordered_id();
    Delivery {
        body: body_of(&id, tenant_id, event),
        id,
        webhook_id: webhook.id.clone(),
        event: event.event_type.to_owned(),
        conversation_id: event.conversation_id.clone(),
        status: Status::Pending,
        response_code: 0,
        response_time_ms: 0,
        attempt: 0,
        automatic_attempts: 0,
        next_retry_at: None,
        last_error: None,
        in_dead_letters: false,
        failed_at: None,
        parked: false,
        created_at: time::now_rfc3339(),
    }
}

/// Adds a new delivery of `event` to `webhook`, and the job of its first attempt (now), to
/// `batch`, and announces it: `batch` is committed as it is, or the call fails.
pub fn stage_new(
    batch: &mut Batch,
    tenant_id: &str,
    webhook: &Webhook,
    event: &ChatEvent,
) -> Result<(), HostError> {
    let delivery = new_delivery(tenant_id, webhook, event);
    batch.put(delivery.key(), &delivery)?;
    batch.job(
        time::now_unix_ms(),
        &AttemptJob {
            webhook_id: webhook.id.clone(),
            delivery_id: delivery.id.clone(),
            attempt: 1,
        },
    )?;
    announce(&delivery)
}

/// What one attempt got.
struct Outcome {
    delivered: bool,
    response_code: u16,
    response_time_ms: u64,
    error: Option<String>,
}

/// Sends `delivery` to `webhook` now, signed with every secret that signs at this moment.
fn send(webhook: &Webhook, delivery: &Delivery) -> Result<Outcome, HostError> {
    let now_ms = time::now_unix_ms();
    let timestamp = i64::try_from(now_ms / 1000).unwrap_or(i64::MAX);
    let body = delivery.body.as_bytes();
    let mut signature = format!("t={timestamp}");
    let mut standard = Vec::new();
    for secret in webhook.signing_secrets(now_ms)? {
        signature.push(',');
        signature.push_str(&tessera_signature::v1_entry(&secret, timestamp, body));
        standard.push(tessera_signature::standard_v1_entry(
            &secret,
            &delivery.id,
            timestamp,
            body,
        ));
    }
    let request = http::OutboundRequest::new("POST", &webhook.url)
        .header("content-type", "application/json")
        .header("x-service-signature", &signature)
        // Standard Webhooks (CONTRACT §10): the delivery id, the same timestamp, and one
        // `v1,<base64>` entry per signing secret.
        .header("webhook-id", &delivery.id)
        .header("webhook-timestamp", &timestamp.to_string())
        .header("webhook-signature", &standard.join(" "))
        .header("x-webhook-event", &delivery.event)
        .header("x-webhook-delivery", &delivery.id)
        .body(body.to_vec())
        .timeout_ms(DELIVERY_TIMEOUT_MS);
    Ok(match http::fetch(request) {
        Ok(response) => Outcome {
            delivered: response.is_success(),
            response_code: response.status,
            response_time_ms: u64::from(response.elapsed_ms),
            error: (!response.is_success())
                .then(|| format!("the receiver answered HTTP {}", response.status)),
        },
        Err(error) => Outcome {
            delivered: false,
            response_code: 0,
            response_time_ms: time::now_unix_ms().saturating_sub(now_ms),
            error: Some(error.message().to_owned()),
        },
    })
}

/// Records the outcome of an attempt on `delivery` (its counters and response fields).
fn apply(delivery: &mut Delivery, outcome: &Outcome) {
    delivery.attempt += 1;
    delivery.response_code = outcome.response_code;
    delivery.response_time_ms = outcome.response_time_ms;
    delivery.last_error = outcome.error.clone();
    if outcome.delivered {
        delivery.status = Status::Delivered;
        delivery.next_retry_at = None;
        delivery.in_dead_letters = false;
        delivery.parked = false;
    } else {
        delivery.status = Status::Failed;
    }
}

/// What the webhook's consecutive-failure count was known to be before an attempt.
#[derive(Debug, Clone, Copy)]
enum KnownFailures {
    /// Not read: read it when counting.
    Unknown,
    /// Read (in the same snapshot as the webhook and the delivery) before the attempt:
    /// `None` when nothing was counted.
    Read(Option<u32>),
}

/// Counts the attempt for the webhook: a success resets the consecutive failures, a failure
/// adds one, and the [`DISABLE_AFTER_FAILURES`]th disables the webhook. Compare-and-swap, so
/// attempts running at once do not lose a count. A success whose attempt began with no
/// failures counted writes nothing (it counts as made when it read: a failure recorded by
/// another attempt since then stays, to be reset by the next success).
fn count_for_webhook(
    webhook_id: &str,
    delivered: bool,
    known: KnownFailures,
) -> Result<(), HostError> {
    let key = failures_key(webhook_id);
    if delivered {
        if matches!(known, KnownFailures::Read(None | Some(0))) {
            return Ok(());
        }
        storage::update_json::<u32, _>(&key, |current| match current {
            Some(failures) if failures > 0 => Update::Delete,
            _ => Update::Keep,
        })?;
        return Ok(());
    }
    let counted =
        storage::update_json::<u32, _>(&key, |current| Update::Set(current.unwrap_or(0) + 1))?;
    if matches!(counted, Update::Set(failures) if failures >= DISABLE_AFTER_FAILURES) {
        storage::update_json::<Webhook, _>(&webhook_key(webhook_id), |current| match current {
            Some(mut webhook) if webhook.is_active => {
                webhook.is_active = false;
                Update::Set(webhook)
            }
            _ => Update::Keep,
        })?;
        tessera_sdk::log::warn(format!(
            "webhook {webhook_id} disabled after {DISABLE_AFTER_FAILURES} consecutive failed attempts"
        ));
    }
    Ok(())
}

/// What an automatic attempt starts from, read together (one storage round trip); `None`
/// where absent.
struct AttemptState {
    /// The webhook and its record's stored bytes.
    webhook: Option<(Webhook, Vec<u8>)>,
    delivery: Option<Delivery>,
    /// The webhook's consecutive failures.
    failures: Option<u32>,
}

fn attempt_state(request: &AttemptJob) -> Result<AttemptState, HostError> {
    let keys = [
        webhook_key(&request.webhook_id),
        delivery_key(&request.webhook_id, &request.delivery_id),
        failures_key(&request.webhook_id),
    ];
    let values = storage::get_many(&[&keys[0], &keys[1], &keys[2]])?;
    let [webhook, delivery, failures]: [Option<Vec<u8>>; 3] = values
        .try_into()
        .map_err(|_| HostError::new("storage.get-many", "answered a different number of keys"))?;
    fn decode<T: serde::de::DeserializeOwned>(
        key: &str,
        bytes: Option<Vec<u8>>,
    ) -> Result<Option<T>, HostError> {
        bytes
            .map(|bytes| storage::decode_json(key, &bytes))
            .transpose()
    }
    Ok(AttemptState {
        webhook: webhook
            .map(|bytes| storage::decode_json(&keys[0], &bytes).map(|webhook| (webhook, bytes)))
            .transpose()?,
        delivery: decode(&keys[1], delivery)?,
        failures: decode(&keys[2], failures)?,
    })
}

/// `run-job`: automatic attempt `attempt` of a delivery.
pub fn run_attempt(request: AttemptJob) -> Result<(), HostError> {
    for _ in 0..TRANSACTION_ROUNDS {
        let AttemptState {
            webhook,
            delivery,
            failures,
        } = attempt_state(&request)?;
        // A deleted webhook took its deliveries along: nothing to do.
        let (Some((webhook, record)), Some(mut delivery)) = (webhook, delivery) else {
            return Ok(());
        };
        let stale = delivery.status == Status::Delivered
            || delivery.in_dead_letters
            || delivery.automatic_attempts >= request.attempt;
        if stale {
            return Ok(());
        }
        if webhook.is_active {
            return attempt_and_record(request, &webhook, delivery, failures);
        }
        // Scheduled retries wait while the webhook is disabled; enabling it resumes them. Only
        // if it is still disabled as read: a re-enabling committed meanwhile may have started
        // its resume past this delivery, so the attempt is decided again.
        delivery.parked = true;
        delivery.next_retry_at = None;
        let mut transaction = Transaction::new();
        transaction
            .expect(webhook_key(&webhook.id), Some(record.as_slice()))
            .set_json(delivery.key(), &delivery)?;
        if let Committed::Yes { .. } = transaction.commit()? {
            return announce(&delivery);
        }
    }
    // The host runs the job again.
    Err(HostError::new(
        "storage.transact",
        format!(
            "webhook {} kept changing; gave up after {TRANSACTION_ROUNDS} rounds",
            request.webhook_id
        ),
    ))
}

/// Makes automatic attempt `request.attempt` of `delivery` to the active `webhook`, and
/// records it with the job of the next attempt or the dead letter; `failures` as read before.
fn attempt_and_record(
    request: AttemptJob,
    webhook: &Webhook,
    mut delivery: Delivery,
    failures: Option<u32>,
) -> Result<(), HostError> {
    let key = delivery.key();
    let outcome = send(webhook, &delivery)?;
    apply(&mut delivery, &outcome);
    delivery.automatic_attempts = request.attempt;
    delivery.parked = false;
    let mut batch = Batch::new();
    if !outcome.delivered {
        let schedule = retry_schedule_ms();
        match schedule.get(request.attempt as usize - 1) {
            Some(delay) => {
                let due = time::now_unix_ms() + delay;
                delivery.next_retry_at = Some(format_unix_ms(due));
                batch.job(
                    due,
                    &AttemptJob {
                        attempt: request.attempt + 1,
                        ..request
                    },
                )?;
            }
            None => {
                delivery.next_retry_at = None;
                delivery.in_dead_letters = true;
                delivery.failed_at = Some(time::now_rfc3339());
                batch.put(
                    dead_letter_key(&delivery.id),
                    &DeadLetter {
                        webhook_id: delivery.webhook_id.clone(),
                    },
                )?;
            }
        }
    }
    batch.put(key, &delivery)?;
    batch.commit()?;
    announce(&delivery)?;
    count_for_webhook(
        &webhook.id,
        outcome.delivered,
        KnownFailures::Read(failures),
    )?;
    Ok(())
}

fn format_unix_ms(unix_ms: u64) -> String {
    time::format_rfc3339_micros(
        i64::try_from(unix_ms)
            .unwrap_or(i64::MAX)
            .saturating_mul(1000),
    )
}

/// Gives the parked deliveries among `deliveries` (entries of one webhook's
/// `deliveries/<webhook_id>/` prefix) their next automatic attempt at `now_ms`, in `batch`: each
/// is un-parked together with the job of that attempt. Those not parked are left alone, so
/// resuming the same entries twice schedules nothing more. Returns the deliveries resumed, to
/// [`announce_resumed`] once `batch` committed.
pub fn stage_resumed(
    batch: &mut Batch,
    deliveries: Vec<(String, Delivery)>,
    now_ms: u64,
) -> Result<Vec<Delivery>, HostError> {
    let mut resumed = Vec::new();
    for (key, mut delivery) in deliveries
        .into_iter()
        .filter(|(_, delivery)| delivery.parked)
    {
        delivery.parked = false;
        delivery.next_retry_at = Some(format_unix_ms(now_ms));
        batch.job(
            now_ms,
            &AttemptJob {
                webhook_id: delivery.webhook_id.clone(),
                delivery_id: delivery.id.clone(),
                attempt: delivery.automatic_attempts + 1,
            },
        )?;
        batch.put(key, &delivery)?;
        resumed.push(delivery);
    }
    Ok(resumed)
}

/// Announces the deliveries [`stage_resumed`] resumed, once their batch committed.
pub fn announce_resumed(resumed: &[Delivery]) -> Result<(), HostError> {
    resumed.iter().try_for_each(announce)
}

/// Makes one attempt now, outside the schedule (manual, DLQ, test), and records it. A success
/// takes the delivery out of the dead letter queue; a failure leaves the schedule and the queue
/// as they were.
fn attempt_now(webhook: &Webhook, delivery: &mut Delivery) -> Result<Outcome, HostError> {
    let outcome = send(webhook, delivery)?;
    let was_dead_letter = delivery.in_dead_letters;
    apply(delivery, &outcome);
    let mut batch = Batch::new();
    batch.put(delivery.key(), &*delivery)?;
    if outcome.delivered && was_dead_letter {
        batch.delete(dead_letter_key(&delivery.id));
    }
    batch.commit()?;
    announce(delivery)?;
    count_for_webhook(&webhook.id, outcome.delivered, KnownFailures::Unknown)?;
    Ok(outcome)
}

fn find_delivery(webhook_id: &str, delivery_id: &str) -> Result<Delivery, ApiError> {
    storage::get_json(&delivery_key(webhook_id, delivery_id))?
        .ok_or_else(|| ApiError::not_found("Delivery"))
}

pub fn test_ping(ctx: &Context, req: &Request) -> HandlerResult {
    req.query(&[])?;
    ctx.require_owner()?;
    let webhook = super::find(req.param("id"))?;
    let event = ChatEvent {
        event_type: TEST_PING,
        conversation_id: None,
        message_id: None,
        user_id: None,
        occurred_at: time::now_rfc3339(),
    };
    let mut delivery = new_delivery(&ctx.tenant_id, &webhook, &event);
    // A ping is one synchronous attempt, never retried automatically.
    delivery.automatic_attempts = 1;
    let outcome = attempt_now(&webhook, &mut delivery)?;
    Ok(Response::ok(&json!({
        "delivery_id": delivery.id,
        "status": delivery.status.as_str(),
        "response_code": outcome.response_code,
        "response_time_ms": outcome.response_time_ms,
    })))
}

pub fn retry_delivery(ctx: &Context, req: &Request) -> HandlerResult {
    req.query(&[])?;
    ctx.require_owner()?;
    let webhook = super::find(req.param("id"))?;
    let mut delivery = find_delivery(&webhook.id, req.param("delivery_id"))?;
    let outcome = attempt_now(&webhook, &mut delivery)?;
    Ok(Response::ok(&json!({
        "delivery_id": delivery.id,
        "status": delivery.status.as_str(),
        "response_code": outcome.response_code,
        "response_time_ms": outcome.response_time_ms,
    })))
}

pub fn deliveries(ctx: &Context, req: &Request) -> HandlerResult {
    let query = req.query(&["status", "cursor", "limit"])?;
    ctx.require_owner()?;
    let status = match query.get("status") {
        None | Some("") => None,
        Some(text) => Some(Status::parse(text).ok_or_else(|| ApiError::invalid("status", "in"))?),
    };
    let page = CursorPage::from_query(query)?;
    let webhook = super::find(req.param("id"))?;
    // Newest first; with a status filter, read on until the page is full, up to a bounded
    // number of deliveries per request (then a short page with a cursor).
    let prefix = deliveries_prefix(&webhook.id);
    let found = storage::find_json::<Delivery, _, ApiError>(
        &prefix,
        page.after.as_deref(),
        true,
        page.fetch_limit() as usize,
        storage::LIST_SCAN_BOUND,
        200,
        |key, delivery| {
            Ok(status
                .is_none_or(|status| delivery.status == status)
                .then_some((key, delivery)))
        },
    )?;
    let (rows, meta) = page.finish_found(found.items, |(key, _)| key.clone(), found.stopped_after);
    let views: Vec<DeliveryView<'_>> = rows
        .iter()
        .map(|(_, delivery)| delivery_view(delivery))
        .collect();
    Ok(Response::ok_with_meta(&views, &meta))
}

/// The dead letter queue, newest first. An item whose webhook is gone is left out: a deleted
/// webhook's dead letters are removed by its purge (`jobs.rs`) in the jobs that follow.
pub fn dead_letters(ctx: &Context, req: &Request) -> HandlerResult {
    let page = CursorPage::from_query(req.query(&["cursor", "limit"])?)?;
    ctx.require_owner()?;
    let (rows, meta) = storage::page_json::<DeadLetter>("dlq/", &page, true)?;
    // Each item's webhook and delivery, read in one round trip.
    let keys: Vec<String> = rows
        .iter()
        .flat_map(|(key, item)| {
            let delivery_id = key.trim_start_matches("dlq/");
            [
                webhook_key(&item.webhook_id),
                delivery_key(&item.webhook_id, delivery_id),
            ]
        })
        .collect();
    let values = if keys.is_empty() {
        Vec::new()
    } else {
        storage::get_many(&keys.iter().map(String::as_str).collect::<Vec<_>>())?
    };
    let mut items = Vec::with_capacity(rows.len());
    for (pair, keys) in values.chunks(2).zip(keys.chunks(2)) {
        if let [Some(_webhook), Some(delivery)] = pair {
            let delivery: Delivery = storage::decode_json(&keys[1], delivery)?;
            items.push(dead_letter_view(&delivery));
        }
    }
    Ok(Response::ok_with_meta(&items, &meta))
}

pub fn retry_dead_letter(ctx: &Context, req: &Request) -> HandlerResult {
    req.query(&[])?;
    ctx.require_owner()?;
    let id = req.param("id");
    let not_found = || ApiError::not_found("Dead letter");
    let item = storage::get_json::<DeadLetter>(&dead_letter_key(id))?.ok_or_else(not_found)?;
    let webhook = super::load(&item.webhook_id)?.ok_or_else(not_found)?;
    let mut delivery =
        storage::get_json::<Delivery>(&delivery_key(&webhook.id, id))?.ok_or_else(not_found)?;
    let outcome = attempt_now(&webhook, &mut delivery)?;
    Ok(Response::ok(&json!({
        "id": delivery.id,
        "status": delivery.status.as_str(),
        "response_code": outcome.response_code,
        "response_time_ms": outcome.response_time_ms,
    })))
}
