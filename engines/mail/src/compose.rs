//! `POST /api/v1/messages`: sending. Recipients who are users of the tenant get their own copy
//! in their inbox at once (internal delivery); the others are external, handed to the
//! operator's SMTP relay by a job (`outbound.rs`) when one is configured, and otherwise kept
//! `queued` in the sender's outbox. The sender's copy, every recipient's copy, the body and the
//! first delivery job are one storage transaction: a send happens entirely or not at all.

use std::collections::HashSet;

use tessera_sdk::serde_json::{Map, Value, json};
use tessera_sdk::{
    ApiError, Context, HandlerResult, Request, Response, ValidationErrors, settings, time,
};

use crate::store::{self, Batch, Delivery, Folder, Message, Recipient, Status};
use crate::{new_ordered_id, object_body, outbound, publish, view};

/// Most distinct recipients of one message (`to` and `cc` together).
pub const MAX_RECIPIENTS: usize = 100;
/// Longest subject, in characters (RFC 5322's line limit).
pub const MAX_SUBJECT_CHARS: usize = 998;
/// Largest body, in bytes of UTF-8.
const MAX_BODY_BYTES: usize = 1_000_000;
/// Longest address (RFC 5321's path limit less the angle brackets).
pub const MAX_ADDRESS_CHARS: usize = 254;

/// An address the relay and every mail system accept: `local@domain`, the local part of
/// letters, digits and ``.!#$%&'*+/=?^_`{|}~-``, the domain of dot-separated labels of
/// letters, digits and `-`, with a dot.
pub fn is_address(address: &str) -> bool {
    let Some((local, domain)) = address.rsplit_once('@') else {
        return false;
    };
    let local_ok = !local.is_empty()
        && local
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._!#$%&'*+/=?^`{|}~-".contains(c));
    let labels: Vec<&str> = domain.split('.').collect();
    let domain_ok = labels.len() >= 2
        && labels.iter().all(|label| {
            !label.is_empty()
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        });
    local_ok && domain_ok && address.len() <= MAX_ADDRESS_CHARS
}

/// The addresses of `field` (`to`, `cc`): an array of 0 (or, when `required`, 1) to
/// [`MAX_RECIPIENTS`] addresses, each trimmed.
fn addresses(
    body: &Map<String, Value>,
    field: &str,
    required: bool,
    errors: &mut ValidationErrors,
) -> Vec<String> {
    let items = match body.get(field) {
        None | Some(Value::Null) => {
            if required {
                errors.add(field, "required");
            }
            return Vec::new();
        }
        Some(Value::Array(items)) => items,
        Some(_) => {
            errors.add(field, "array");
            return Vec::new();
        }
    };
    if required && items.is_empty() {
        errors.add(field, "min:1");
    }
    if items.len() > MAX_RECIPIENTS {
        errors.add(field, format!("max:{MAX_RECIPIENTS}"));
        return Vec::new();
    }
    let mut found = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        match item.as_str().map(str::trim) {
            Some(address) if is_address(address) => found.push(address.to_owned()),
            Some(_) => errors.add(format!("{field}.{index}"), "email"),
            None => errors.add(format!("{field}.{index}"), "string"),
        }
    }
    found
}

/// An optional text field (`""` when absent).
fn optional_text<'a>(
    body: &'a Map<String, Value>,
    field: &str,
    errors: &mut ValidationErrors,
) -> &'a str {
    match body.get(field) {
        None | Some(Value::Null) => "",
        Some(Value::String(text)) => text,
        Some(_) => {
            errors.add(field, "string");
            ""
        }
    }
}

/// What a valid request asks to send.
struct Draft {
    to: Vec<String>,
    cc: Vec<String>,
    subject: String,
    body: String,
    /// `to` then `cc`, each address once (case-insensitively).
    recipients: Vec<String>,
}

fn read_draft(req: &Request) -> Result<Draft, ApiError> {
    let body = object_body(req)?;
    let mut errors = ValidationErrors::new();
    let to = addresses(&body, "to", true, &mut errors);
    let cc = addresses(&body, "cc", false, &mut errors);
    let subject = optional_text(&body, "subject", &mut errors).trim();
    if subject.chars().any(char::is_control) {
        errors.add("subject", "single_line");
    } else if subject.chars().count() > MAX_SUBJECT_CHARS {
        errors.add("subject", format!("max:{MAX_SUBJECT_CHARS}"));
    }
    let text = optional_text(&body, "body", &mut errors);
    if text.len() > MAX_BODY_BYTES {
        errors.add("body", format!("max:{MAX_BODY_BYTES}"));
    }
    let mut seen = HashSet::new();
    let recipients: Vec<String> = to
        .iter()
        .chain(&cc)
        .filter(|address| seen.insert(address.to_ascii_lowercase()))
        .cloned()
        .collect();
    if recipients.len() > MAX_RECIPIENTS {
        let distinct_to = to
            .iter()
            .map(|address| address.to_ascii_lowercase())
            .collect::<HashSet<_>>()
            .len();
        errors.add("cc", format!("max:{}", MAX_RECIPIENTS - distinct_to));
    }
    errors.into_result()?;
    Ok(Draft {
        subject: subject.to_owned(),
        body: text.to_owned(),
        to,
        cc,
        recipients,
    })
}

pub fn send(ctx: &Context, req: &Request) -> HandlerResult {
    req.query(&[])?;
    ctx.require_writer()?;
    let sender = store::mailbox_owner(ctx)?.user;
    let draft = read_draft(req)?;
    let mut internal = Vec::new();
    let mut recipients = Vec::with_capacity(draft.recipients.len());
    for address in &draft.recipients {
        let user_id = store::user_by_address(address)?;
        recipients.push(Recipient {
            address: address.clone(),
            internal: user_id.is_some(),
            status: if user_id.is_some() {
                Status::Delivered
            } else {
                Status::Queued
            },
        });
        if let Some(user_id) = user_id.filter(|user_id| !internal.contains(user_id)) {
            internal.push(user_id);
        }
    }
    let external_count = recipients.iter().filter(|r| !r.internal).count();
    let transport_available = settings::get("mail-transport.available").as_deref() == Some("true");
    let now = time::now_rfc3339();
    let template = Message {
        id: String::new(),
        message_id: new_ordered_id(),
        folder: Folder::Inbox,
        read: false,
        from: sender.email.clone(),
        sender_id: sender.user_id.clone(),
        to: draft.to,
        cc: draft.cc,
        subject: draft.subject,
        delivery: None,
        created_at: now.clone(),
        updated_at: now.clone(),
    };
    let mut own = Message {
        id: new_ordered_id(),
        read: true,
        delivery: Some(Delivery {
            status: if external_count == 0 {
                Status::Delivered
            } else {
                Status::Queued
            },
            recipients,
            attempts: 0,
            last_attempt_at: None,
            next_attempt_at: (external_count > 0 && transport_available).then(|| now.clone()),
            last_error: None,
            sent_at: None,
        }),
        ..template.clone()
    };
    own.folder = own.home();
    let mut batch = Batch::new();
    batch.put_body(&template.message_id, &draft.body);
    batch.add_copy(&sender.user_id, &own)?;
    let mut received = Vec::with_capacity(internal.len());
    for user_id in &internal {
        let copy = Message {
            id: new_ordered_id(),
            ..template.clone()
        };
        batch.add_copy(user_id, &copy)?;
        received.push((user_id, copy.id));
    }
    if external_count > 0 && transport_available {
        outbound::schedule_first(&mut batch, &sender.user_id, &own.id)?;
    }
    // New copies only: no condition that could fail.
    batch.commit()?;
    publish(
        "mail.sent",
        &json!({
            "message_id": template.message_id,
            "sender_id": sender.user_id,
            "internal_recipient_ids": internal,
            "external_count": external_count,
        }),
    )?;
    for (user_id, copy_id) in received {
        publish(
            "mail.received",
            &json!({
                "message_id": template.message_id,
                "recipient_id": user_id,
                "copy_id": copy_id,
            }),
        )?;
    }
    Ok(Response::created(&view(&own, &draft.body)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_plain_and_safe() {
        for good in [
            "ada@example.com",
            "a.b+c@mail.example.org",
            "x_y-z@sub-domain.example.co",
        ] {
            assert!(is_address(good), "{good}");
        }
        for bad in [
            "ada",
            "ada@example",
            "@example.com",
            "ada@@example.com",
            "a da@example.com",
            "<ada@example.com>",
            "ada@example.com, eve@example.com",
            "ada@example..com",
            "ada@-example.com",
            "ada\r\n@example.com",
            "\"ada\"@example.com",
        ] {
            assert!(!is_address(bad), "{bad}");
        }
        let long = format!("{}@example.com", "a".repeat(250));
        assert!(!is_address(&long));
    }
}
