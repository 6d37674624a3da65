//! Chat webhooks: CRUD (owners only), validation of the URL against the host's outbound policy
//! (HTTPS only; a private address refused unless the host allows private targets; the host
//! checks again on every connection), and secrets sealed by the host's vault. A PATCH that
//! changes the secret keeps the previous one signing beside it for [`ROTATION_OVERLAP_MS`].
//!
//! A PATCH and a DELETE read the webhook record, decide, and commit everything the change
//! needs in one conditional storage transaction that expects the record as read: the new
//! record (or its deletion), the failures count forgiven, and the first job of the chain that
//! resumes the parked deliveries (on a re-enabling) or purges them (on a deletion). When
//! another call changed the record in between (a delivery disabling the webhook, another
//! PATCH, a DELETE), nothing is written and the request reads and decides again, at most
//! [`TRANSACTION_ROUNDS`] times (then 409).

pub mod delivery;
pub mod jobs;

use serde::{Deserialize, Serialize};
use tessera_sdk::serde_json::Value;
use tessera_sdk::storage::{self, Committed};
use tessera_sdk::{
    ApiError, Context, HandlerResult, HostError, Request, Response, ValidationErrors, http, time,
    vault,
};

use crate::batch::Batch;
use crate::events::SUBSCRIBABLE;
use crate::{new_ordered_id, object_body};

/// Shortest secret, in characters.
pub const MIN_SECRET_CHARS: usize = 32;
/// Longest secret, in characters.
pub const MAX_SECRET_CHARS: usize = 256;
/// Longest URL, in characters.
pub const MAX_URL_CHARS: usize = 2048;
/// Most webhooks of a tenant.
pub const MAX_WEBHOOKS: usize = 100;
/// How long a replaced secret keeps signing beside the new one.
pub const ROTATION_OVERLAP_MS: u64 = 24 * 60 * 60 * 1000;
/// Consecutive failed attempts that disable a webhook.
pub const DISABLE_AFTER_FAILURES: u32 = 10;
/// Most rounds (read, decide, commit) a change of a webhook record tries while other calls
/// keep changing it.
pub const TRANSACTION_ROUNDS: usize = 16;

/// A secret as stored: the bytes the host's vault sealed, hex-encoded (never the secret).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct SealedSecret(String);

impl SealedSecret {
    fn seal(secret: &str) -> Result<Self, HostError> {
        Ok(Self(hex::encode(vault::seal(secret.as_bytes())?)))
    }

    pub fn open(&self) -> Result<Vec<u8>, HostError> {
        let bytes = hex::decode(&self.0)
            .map_err(|_| HostError::new("vault.open", "a stored secret is not hex"))?;
        vault::open(&bytes)
    }
}

/// A replaced secret and until when it still signs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PreviousSecret {
    pub secret: SealedSecret,
    pub until_unix_ms: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Webhook {
    pub id: String,
    pub url: String,
    pub events: Vec<String>,
    pub secret: SealedSecret,
    #[serde(default)]
    pub previous_secret: Option<PreviousSecret>,
    pub is_active: bool,
    /// The resume chain (`jobs::ChunkJob::ResumeParked`) the latest re-enabling started, in
    /// the same transaction: the only one that may resume the parked deliveries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_chain: Option<String>,
    pub created_by: String,
    pub created_at: String,
    pub updated_at: String,
}

impl Webhook {
    /// The secrets that sign a delivery now: the current one, then the previous one while its
    /// overlap lasts.
    pub fn signing_secrets(&self, now_unix_ms: u64) -> Result<Vec<Vec<u8>>, HostError> {
        let mut secrets = vec![self.secret.open()?];
        if let Some(previous) = &self.previous_secret
            && now_unix_ms < previous.until_unix_ms
        {
            secrets.push(previous.secret.open()?);
        }
        Ok(secrets)
    }
}

/// The API shape (`secret` only in the create response).
#[derive(Serialize)]
struct WebhookView<'a> {
    id: &'a str,
    url: &'a str,
    events: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    secret: Option<&'a str>,
    is_active: bool,
    created_at: &'a str,
    updated_at: &'a str,
}

fn view<'a>(webhook: &'a Webhook, secret: Option<&'a str>) -> WebhookView<'a> {
    WebhookView {
        id: &webhook.id,
        url: &webhook.url,
        events: &webhook.events,
        secret,
        is_active: webhook.is_active,
        created_at: &webhook.created_at,
        updated_at: &webhook.updated_at,
    }
}

pub fn webhook_key(id: &str) -> String {
    format!("webhooks/{id}")
}

pub fn failures_key(id: &str) -> String {
    format!("webhook-failures/{id}")
}

/// Every webhook of the tenant, oldest first.
pub fn all() -> Result<Vec<Webhook>, HostError> {
    Ok(
        storage::list_json::<Webhook>("webhooks/", None, MAX_WEBHOOKS as u32 + 1, false)?
            .into_iter()
            .map(|(_, webhook)| webhook)
            .collect(),
    )
}

/// The active webhooks of the tenant.
pub fn active() -> Result<Vec<Webhook>, HostError> {
    Ok(all()?
        .into_iter()
        .filter(|webhook| webhook.is_active)
        .collect())
}

pub fn load(id: &str) -> Result<Option<Webhook>, HostError> {
    storage::get_json(&webhook_key(id))
}

pub fn find(id: &str) -> Result<Webhook, ApiError> {
    load(id)?.ok_or_else(|| ApiError::not_found("Webhook"))
}

/// The stored bytes of webhook `id`'s record, to decide on and expect in a transaction.
fn find_stored(id: &str) -> Result<Vec<u8>, ApiError> {
    storage::get(&webhook_key(id))?.ok_or_else(|| ApiError::not_found("Webhook"))
}

/// Commits `transaction` on the condition that webhook `id`'s record still holds `stored`;
/// true when it did.
fn commit_expecting(
    mut transaction: storage::Transaction,
    id: &str,
    stored: &[u8],
) -> Result<bool, HostError> {
    transaction.expect(webhook_key(id), Some(stored));
    Ok(matches!(transaction.commit()?, Committed::Yes { .. }))
}

/// Changes webhook `id`'s record, `stored` as read: `change` decides on the record's bytes and
/// answers the transaction that applies the change (with what the request answers with),
/// committed on the condition that the record still holds them. When another call changed it
/// in between (a delivery disabling the webhook, another request), nothing is written and the
/// record is read and decided on again (gone: 404), at most [`TRANSACTION_ROUNDS`] times
/// (then 409).
fn change_in_rounds<T>(
    id: &str,
    mut stored: Vec<u8>,
    mut change: impl FnMut(&[u8]) -> Result<(storage::Transaction, T), ApiError>,
) -> Result<T, ApiError> {
    for _ in 0..TRANSACTION_ROUNDS {
        let (transaction, outcome) = change(&stored)?;
        if commit_expecting(transaction, id, &stored)? {
            return Ok(outcome);
        }
        stored = find_stored(id)?;
    }
    Err(kept_changing())
}

/// The answer when the record kept changing for [`TRANSACTION_ROUNDS`] rounds.
fn kept_changing() -> ApiError {
    ApiError::Conflict(format!(
        "The webhook kept changing while this request was applied ({TRANSACTION_ROUNDS} \
         attempts); try again."
    ))
}

/// `url`: an absolute HTTPS URL with a host, that the host's outbound policy lets this engine
/// reach (rule `not_private` when it names or resolves to a non-public address).
fn check_url(value: Option<&Value>, errors: &mut ValidationErrors) -> Option<String> {
    let url = match value {
        None | Some(Value::Null) => {
            errors.add("url", "required");
            return None;
        }
        Some(Value::String(url)) => url.trim(),
        Some(_) => {
            errors.add("url", "string");
            return None;
        }
    };
    if url.chars().count() > MAX_URL_CHARS {
        errors.add("url", format!("max:{MAX_URL_CHARS}"));
        return None;
    }
    let Some(rest) = url
        .get(..8)
        .filter(|scheme| scheme.eq_ignore_ascii_case("https://"))
        .map(|_| &url[8..])
    else {
        errors.add("url", "https");
        return None;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if authority.is_empty() || authority.contains('@') || url.chars().any(char::is_whitespace) {
        errors.add("url", "url");
        return None;
    }
    if let Err(error) = http::check_target(url) {
        let message = error.message();
        errors.add(
            "url",
            if message.contains("non-public") {
                "not_private"
            } else {
                "url"
            },
        );
        return None;
    }
    Some(url.to_owned())
}

/// `events`: a non-empty array of subscribable event types, each once.
fn check_events(value: Option<&Value>, errors: &mut ValidationErrors) -> Option<Vec<String>> {
    let items = match value {
        None | Some(Value::Null) => {
            errors.add("events", "required");
            return None;
        }
        Some(Value::Array(items)) if items.is_empty() => {
            errors.add("events", "required");
            return None;
        }
        Some(Value::Array(items)) => items,
        Some(_) => {
            errors.add("events", "array");
            return None;
        }
    };
    let mut events: Vec<String> = Vec::with_capacity(items.len());
    let mut valid = true;
    for (index, item) in items.iter().enumerate() {
        match item.as_str() {
            Some(event) if SUBSCRIBABLE.contains(&event) => {
                if !events.iter().any(|known| known == event) {
                    events.push(event.to_owned());
                }
            }
            _ => {
                errors.add(format!("events.{index}"), "in");
                valid = false;
            }
        }
    }
    valid.then_some(events)
}

/// `secret`: a string of at least [`MIN_SECRET_CHARS`] characters.
fn check_secret(value: Option<&Value>, errors: &mut ValidationErrors) -> Option<String> {
    match value {
        None | Some(Value::Null) => errors.add("secret", "required"),
        Some(Value::String(secret)) if secret.chars().count() < MIN_SECRET_CHARS => {
            errors.add("secret", format!("min:{MIN_SECRET_CHARS}"));
        }
        Some(Value::String(secret)) if secret.chars().count() > MAX_SECRET_CHARS => {
            errors.add("secret", format!("max:{MAX_SECRET_CHARS}"));
        }
        Some(Value::String(secret)) => return Some(secret.clone()),
        Some(_) => errors.add("secret", "string"),
    }
    None
}

pub fn list(ctx: &Context, req: &Request) -> HandlerResult {
    req.query(&[])?;
    ctx.require_owner()?;
    let webhooks = all()?;
    let views: Vec<WebhookView<'_>> = webhooks.iter().map(|webhook| view(webhook, None)).collect();
    Ok(Response::ok(&views))
}

pub fn create(ctx: &Context, req: &Request) -> HandlerResult {
    req.query(&[])?;
    ctx.require_owner()?;
    let body = object_body(req)?;
    let mut errors = ValidationErrors::new();
    let url = check_url(body.get("url"), &mut errors);
    let events = check_events(body.get("events"), &mut errors);
    let secret = check_secret(body.get("secret"), &mut errors);
    errors.into_result()?;
    let (Some(url), Some(events), Some(secret)) = (url, events, secret) else {
        unreachable!("validated");
    };
    if all()?.len() >= MAX_WEBHOOKS {
        return Err(ApiError::Conflict(format!(
            "A tenant has at most {MAX_WEBHOOKS} webhooks."
        )));
    }
    let now = time::now_rfc3339();
    let webhook = Webhook {
        id: new_ordered_id(),
        url,
        events,
        secret: SealedSecret::seal(&secret)?,
        previous_secret: None,
        is_active: true,
        resume_chain: None,
        created_by: ctx.user_id.clone(),
        created_at: now.clone(),
        updated_at: now,
    };
    storage::put_json(&webhook_key(&webhook.id), &webhook)?;
    Ok(Response::created(&view(&webhook, Some(&secret))))
}

pub fn show(ctx: &Context, req: &Request) -> HandlerResult {
    req.query(&[])?;
    ctx.require_owner()?;
    let webhook = find(req.param("id"))?;
    Ok(Response::ok(&view(&webhook, None)))
}

pub fn update(ctx: &Context, req: &Request) -> HandlerResult {
    req.query(&[])?;
    ctx.require_owner()?;
    let id = req.param("id").to_owned();
    let stored = find_stored(&id)?;
    let body = object_body(req)?;
    let mut errors = ValidationErrors::new();
    let url = body
        .contains_key("url")
        .then(|| check_url(body.get("url"), &mut errors))
        .flatten();
    let events = body
        .contains_key("events")
        .then(|| check_events(body.get("events"), &mut errors))
        .flatten();
    let secret = body
        .contains_key("secret")
        .then(|| check_secret(body.get("secret"), &mut errors))
        .flatten();
    let is_active = match body.get("is_active") {
        None => None,
        Some(Value::Bool(active)) => Some(*active),
        Some(_) => {
            errors.add("is_active", "boolean");
            None
        }
    };
    errors.into_result()?;
    let sealed = secret.as_deref().map(SealedSecret::seal).transpose()?;

    let now_ms = time::now_unix_ms();
    let key = webhook_key(&id);
    let webhook = change_in_rounds(&id, stored, |stored| {
        let mut webhook: Webhook = storage::decode_json(&key, stored)?;
        let mut batch = Batch::new();
        if let Some(url) = &url {
            webhook.url = url.clone();
        }
        if let Some(events) = &events {
            webhook.events = events.clone();
        }
        if let Some(sealed) = &sealed {
            webhook.previous_secret = Some(PreviousSecret {
                secret: webhook.secret.clone(),
                until_unix_ms: now_ms + ROTATION_OVERLAP_MS,
            });
            webhook.secret = sealed.clone();
        }
        if is_active == Some(true) {
            if !webhook.is_active {
                // Re-enabling: a new chain resumes the deliveries parked meanwhile, its first
                // job committed with the record that names it (see
                // `jobs::ChunkJob::ResumeParked`); an older chain still running stops.
                let chain = new_ordered_id();
                jobs::stage_resume(&mut batch, &id, &chain)?;
                webhook.resume_chain = Some(chain);
            }
            // A fresh start: the failures that disabled it are forgiven.
            batch.delete(failures_key(&id));
        }
        if let Some(active) = is_active {
            webhook.is_active = active;
        }
        webhook.updated_at = time::now_rfc3339();
        batch.put(key.clone(), &webhook)?;
        Ok((batch.into_transaction(), webhook))
    })?;
    Ok(Response::ok(&view(&webhook, None)))
}

/// `POST /webhooks/{id}/secret` `{secret}`: a new signing secret, answered once with the
/// webhook; the replaced one keeps signing beside it for [`ROTATION_OVERLAP_MS`] (the
/// secret a `PATCH` sets rotates the same way).
pub fn rotate_secret(ctx: &Context, req: &Request) -> HandlerResult {
    req.query(&[])?;
    ctx.require_owner()?;
    let id = req.param("id").to_owned();
    let stored = find_stored(&id)?;
    let body = object_body(req)?;
    let mut errors = ValidationErrors::new();
    let secret = check_secret(body.get("secret"), &mut errors);
    errors.into_result()?;
    let secret = secret.expect("a valid secret");
    let sealed = SealedSecret::seal(&secret)?;
    let key = webhook_key(&id);
    let webhook = change_in_rounds(&id, stored, |stored| {
        let mut webhook: Webhook = storage::decode_json(&key, stored)?;
        webhook.previous_secret = Some(PreviousSecret {
            secret: webhook.secret.clone(),
            until_unix_ms: time::now_unix_ms() + ROTATION_OVERLAP_MS,
        });
        webhook.secret = sealed.clone();
        webhook.updated_at = time::now_rfc3339();
        let mut batch = Batch::new();
        batch.put(key.clone(), &webhook)?;
        Ok((batch.into_transaction(), webhook))
    })?;
    Ok(Response::ok(&view(&webhook, Some(&secret))))
}

pub fn destroy(ctx: &Context, req: &Request) -> HandlerResult {
    req.query(&[])?;
    ctx.require_owner()?;
    let id = req.param("id").to_owned();
    let stored = find_stored(&id)?;
    // The webhook, and the first job of the purge of its deliveries and their dead letters,
    // a chunk per job (`jobs.rs`), on the condition that the record is the one read: of
    // deletions racing, one commits and the others answer 404. From now on the jobs of its
    // deliveries find nothing to do, a PATCH that read it before finds it gone, and the dead
    // letter queue lists none of its items.
    let mut batch = Batch::new();
    batch.delete(webhook_key(&id));
    batch.delete(failures_key(&id));
    jobs::stage_purge(&mut batch, &id)?;
    let deletion = batch.into_transaction();
    change_in_rounds(&id, stored, |_| Ok((deletion.clone(), ())))?;
    Ok(Response::no_content())
}
