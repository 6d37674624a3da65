//! External delivery: a job hands the sender's copy's external recipients to the operator's
//! SMTP relay (`mail_transport::send`). Accepted: they are `sent` and the copy moves from the
//! outbox to `sent`. Refused or unreachable: the reason is recorded and the next attempt is
//! scheduled after 1 min, 5 min and 30 min; after the fourth attempt they are `failed` and the
//! copy stays in the outbox. Every attempt sends the same `Message-ID`, so a receiver can drop a
//! repeat.
//!
//! A job names the attempt it makes and does nothing when the copy is gone or has moved past
//! it; an attempt's outcome and the job of the next one are one storage transaction, so a
//! crash never loses a retry.

use serde::{Deserialize, Serialize};
use tessera_sdk::mail_transport::{self, OutgoingMail};
use tessera_sdk::{HostError, Job, log, time};

use crate::store::{self, Batch, Folder, Message, Status};

/// The delays before attempts 2, 3 and 4.
const RETRY_DELAYS_MS: [u64; 3] = [60_000, 300_000, 1_800_000];

/// What a job asks: attempt `attempt` of the external delivery of `user_id`'s copy `copy_id`.
#[derive(Debug, Serialize, Deserialize)]
struct DeliveryJob {
    user_id: String,
    copy_id: String,
    attempt: u32,
}

/// Adds the job of the first attempt, due now, to `batch`.
pub fn schedule_first(batch: &mut Batch, user_id: &str, copy_id: &str) -> Result<(), HostError> {
    let job = DeliveryJob {
        user_id: user_id.to_owned(),
        copy_id: copy_id.to_owned(),
        attempt: 1,
    };
    batch.job(time::now_unix_ms(), &job)
}

/// The `Message-ID` header of a message: `<message_id@sender's domain>`.
pub fn internet_message_id(message: &Message) -> String {
    let domain = message
        .from
        .rsplit_once('@')
        .map_or("localhost", |(_, d)| d);
    format!("<{}@{domain}>", message.message_id)
}

/// True when `attempt` is still to be made on `message`.
fn is_due(message: &Message, attempt: u32) -> bool {
    message
        .delivery
        .as_ref()
        .is_some_and(|delivery| delivery.status == Status::Queued && delivery.attempts < attempt)
}

/// `run-job`: one attempt.
pub fn run(job: &Job) -> Result<(), String> {
    let request: DeliveryJob = job.payload_json()?;
    let Some(message) = store::load_message(&request.user_id, &request.copy_id)? else {
        return Ok(());
    };
    let Some(delivery) = message
        .delivery
        .as_ref()
        .filter(|_| is_due(&message, request.attempt))
    else {
        return Ok(());
    };
    let mail = OutgoingMail {
        sender: message.from.clone(),
        recipients: delivery.external_addresses(),
        subject: message.subject.clone(),
        text: store::load_body(&message.message_id)?,
        message_id: internet_message_id(&message),
    };
    let outcome = mail_transport::send(mail).map_err(|error| error.message().to_owned());
    if let Err(reason) = &outcome {
        log::warn(format!(
            "attempt {} of message {} failed: {reason}",
            request.attempt, message.message_id
        ));
    }
    // The owner may move or delete the copy while the relay answers and while the outcome is
    // recorded: record it on the copy as it is now.
    for _ in 0..store::CHANGE_ROUNDS {
        let Some(stored) = store::load_stored(&request.user_id, &request.copy_id)? else {
            return Ok(());
        };
        if !is_due(&stored.message, request.attempt) {
            return Ok(());
        }
        if record_outcome(&request, &stored, &outcome)? {
            return Ok(());
        }
    }
    Err(format!(
        "message copy {} kept changing while attempt {} was recorded",
        request.copy_id, request.attempt
    ))
}

/// Records the outcome of attempt `request.attempt` on the copy `stored`, scheduling the next
/// attempt after a failure; false when the copy changed since it was read (nothing written).
fn record_outcome(
    request: &DeliveryJob,
    stored: &store::Stored,
    outcome: &Result<(), String>,
) -> Result<bool, HostError> {
    let mut message = stored.message.clone();
    let now = time::now_rfc3339();
    let mut batch = Batch::new();
    if let Some(delivery) = message.delivery.as_mut() {
        delivery.attempts = request.attempt;
        delivery.last_attempt_at = Some(now.clone());
        delivery.next_attempt_at = None;
        match outcome {
            Ok(()) => {
                delivery.set_external_status(Status::Sent);
                delivery.sent_at = Some(now.clone());
                delivery.last_error = None;
            }
            Err(reason) => {
                delivery.last_error = Some(reason.clone());
                match RETRY_DELAYS_MS.get(request.attempt as usize - 1) {
                    Some(delay) => {
                        let due = time::now_unix_ms() + delay;
                        delivery.next_attempt_at = Some(format_unix_ms(due));
                        batch.job(
                            due,
                            &DeliveryJob {
                                user_id: request.user_id.clone(),
                                copy_id: request.copy_id.clone(),
                                attempt: request.attempt + 1,
                            },
                        )?;
                    }
                    None => delivery.set_external_status(Status::Failed),
                }
            }
        }
    }
    if message.folder != Folder::Trash {
        message.folder = message.home();
    }
    message.updated_at = now;
    batch.change_copy(&request.user_id, stored, &message)?;
    batch.commit()
}

fn format_unix_ms(unix_ms: u64) -> String {
    time::format_rfc3339_micros(
        i64::try_from(unix_ms)
            .unwrap_or(i64::MAX)
            .saturating_mul(1000),
    )
}
