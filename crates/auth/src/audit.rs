//! The audit trail of authentication events: logins and their failures, lockouts, MFA,
//! refresh-token reuse, logouts, context switches. Handlers record an [`AuditEntry`] with
//! [`record`] (or [`record_in`] inside their own transaction, so the entry commits or rolls
//! back with the change it describes); owners read their tenant's trail at
//! `GET /auth/api/v1/audit` (`routes/audit.rs`), newest first, cursor-paged, and follow it
//! live on the realtime topic [`AUDIT_TOPIC`] (`core.audit`): an entry of a tenant is
//! published in the transaction that stores it (`tessera_storage::realtime_events`).
//!
//! The same trail holds the engines' audited operations: an operation an engine's API
//! description marks with `x-tessera-audit: "<name>"` is recorded by the host as
//! `<code>.<name>` ([`EngineAuditEntry`], [`record_engine_in`], written by the runtime's batch
//! writer with the call's unit of work) when it answers with a success; `engine` says whose it
//! is, and no engine name can equal a host event ([`engine_event_name`]).
//!
//! An entry never holds a password, a code or a token: `details` keys whose name ends in
//! `password`, `token`, `secret`, `code`, `codes` or `otp` (and `authorization`, `cookie`,
//! `credentials`) are dropped before storing, at any depth, with a warning; `login` is stored
//! trimmed and lower-cased, and only when it is shaped like an e-mail address (so a password
//! typed into the login field is not kept).
//!
//! Calling it from a handler (take [`RequestOrigin`] among the extractors):
//!
//! ```text
//! audit::record(
//!     &state.database,
//!     &AuditEntry::new(AuditEvent::LoginFailed)
//!         .tenant(&tenant_id)
//!         .user(&user_id)
//!         .login(&body.login)
//!         .origin(&origin)
//!         .detail("reason", "wrong_password"),
//! )
//! .await?;
//! ```
//!
//! What each event is expected to carry (`origin` everywhere a request is at hand):
//!
//! | event | tenant / user | login | details |
//! |---|---|---|---|
//! | `login.succeeded` | the tenant the tokens are for | yes | `session_id` |
//! | `login.failed` | when the account is known (else none: only operators see it) | yes | `reason`: `unknown_account`, `wrong_password`, `locked`, … |
//! | `account.locked_out` | when known | yes | `failures`, `locked_until` |
//! | `mfa.challenged` | yes | yes | |
//! | `mfa.succeeded` / `mfa.failed` | yes | | `method` (`totp`, `recovery_code`), `reason` |
//! | `mfa.recovery_code_used` | yes | | `remaining` |
//! | `mfa.enabled` / `mfa.disabled` | [`AuditEntry::caller`] | | |
//! | `token.refreshed` / `token.refresh_reused` | the session's | | `session_id` (reuse: in the revoking transaction) |
//! | `session.logged_out` / `session.logged_out_everywhere` | [`AuditEntry::caller`] | | `session_id` / `sessions` |
//! | `session.evicted` | the user's new login tenant | | `session_id` (in the opening transaction) |
//! | `context.switched` | the target tenant | | `from_tenant_id`, `workspace_id` |
//! | `session.revoked` | [`AuditEntry::caller`] | | `session_id`, `current` |
//! | `member.created`, `member.role_changed`, `member.mfa_reset`, `member.disabled`, `member.enabled` | the owner | | `member_id`, … |
//! | `workspace.created` | the owner | | `workspace_id`, `name` |
//!
//! A failed login of an unknown account has no tenant, so no owner sees it (an owner must not
//! learn which addresses strangers try); its normalized login is kept anyway, because repeated
//! failures across many logins from one IP are how password spraying shows.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use anyhow::Context as _;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::identity::{is_valid_email, normalize_email};
pub use crate::request_origin::{MAX_USER_AGENT_CHARS, RequestOrigin};
use crate::store::audit::{self as store, AuditRow, EventFilter, ListFilter, NewAuditRow};
use tessera_http::conventions::is_well_formed_correlation_id;
use tessera_http::paging::{CursorMeta, CursorPage};
use tessera_storage::realtime_events::{self, NewPublished, PublishedKind};
use tessera_storage::{Database, Tx, time};

/// What happened. Stored and served as a stable dotted name ([`AuditEvent::as_str`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AuditEvent {
    /// `login.succeeded`: a password login issued tokens (no MFA, or before the MFA step
    /// record [`AuditEvent::MfaChallenged`] instead).
    #[serde(rename = "login.succeeded")]
    LoginSucceeded,
    /// `login.failed`: wrong password, unknown account, or refused while locked out
    /// (`details.reason`).
    #[serde(rename = "login.failed")]
    LoginFailed,
    /// `account.locked_out`: the failure that locked the account.
    #[serde(rename = "account.locked_out")]
    LockedOut,
    /// `mfa.challenged`: the password was right and an MFA token was handed out.
    #[serde(rename = "mfa.challenged")]
    MfaChallenged,
    /// `mfa.succeeded`: an MFA verify issued tokens.
    #[serde(rename = "mfa.succeeded")]
    MfaSucceeded,
    /// `mfa.failed`: a wrong or expired MFA code or token.
    #[serde(rename = "mfa.failed")]
    MfaFailed,
    /// `mfa.recovery_code_used`: a recovery code was spent.
    #[serde(rename = "mfa.recovery_code_used")]
    RecoveryCodeUsed,
    /// `mfa.enabled`: TOTP was confirmed and turned on.
    #[serde(rename = "mfa.enabled")]
    MfaEnabled,
    /// `mfa.disabled`: TOTP was turned off.
    #[serde(rename = "mfa.disabled")]
    MfaDisabled,
    /// `token.refreshed`: a refresh token was rotated.
    #[serde(rename = "token.refreshed")]
    Refreshed,
    /// `token.refresh_reused`: an already rotated refresh token was presented; the session was
    /// revoked.
    #[serde(rename = "token.refresh_reused")]
    RefreshReused,
    /// `session.logged_out`: one session ended by its user.
    #[serde(rename = "session.logged_out")]
    LoggedOut,
    /// `session.logged_out_everywhere`: every session of the user ended.
    #[serde(rename = "session.logged_out_everywhere")]
    LoggedOutEverywhere,
    /// `session.evicted`: the oldest session ended because of the active-session limit.
    #[serde(rename = "session.evicted")]
    SessionEvicted,
    /// `context.switched`: tokens re-issued for another tenant or workspace.
    #[serde(rename = "context.switched")]
    ContextSwitched,
    /// `password.changed`: a user replaced their password; their other sessions ended
    /// (`details.sessions_ended`).
    #[serde(rename = "password.changed")]
    PasswordChanged,
    /// `password.change_failed`: a password change with a wrong current password (it counts
    /// toward the lockout as a failed login).
    #[serde(rename = "password.change_failed")]
    PasswordChangeFailed,
    /// `password.reset_requested`: a reset mail was asked for (`details.account`: `found` or
    /// `unknown`; only `found` sends one).
    #[serde(rename = "password.reset_requested")]
    PasswordResetRequested,
    /// `password.reset`: a reset token set a new password; every session of the user ended
    /// (`details.sessions_ended`).
    #[serde(rename = "password.reset")]
    PasswordReset,
    /// `password.reset_failed`: a reset with an unknown, used or expired token.
    #[serde(rename = "password.reset_failed")]
    PasswordResetFailed,
    /// `magic_link.requested`: a sign-in link was asked for (`details.account`: `found` or
    /// `unknown`; only `found` sends one).
    #[serde(rename = "magic_link.requested")]
    MagicLinkRequested,
    /// `magic_link.used`: a magic link signed the user in (no second factor).
    #[serde(rename = "magic_link.used")]
    MagicLinkUsed,
    /// `magic_link.failed`: a magic link with an unknown, used or expired token.
    #[serde(rename = "magic_link.failed")]
    MagicLinkFailed,
    /// `passkey.used`: a passkey signed the user in without a password (`details.credential`).
    #[serde(rename = "passkey.used")]
    PasskeyUsed,
    /// `passkey.failed`: a passwordless sign-in was refused (`details.reason`: `invalid`, or
    /// `counter` when the signature counter did not advance: a cloned authenticator).
    #[serde(rename = "passkey.failed")]
    PasskeyFailed,
    /// `member.created`: an owner created an account in the tenant (`details.member_id`,
    /// `details.role`; the entry's user is the owner).
    #[serde(rename = "member.created")]
    MemberCreated,
    /// `member.role_changed`: an owner changed a member's role (`details.member_id`,
    /// `details.previous_role`, `details.role`).
    #[serde(rename = "member.role_changed")]
    MemberRoleChanged,
    /// `session.revoked`: a user ended one of their own sessions from their sessions list
    /// (`details.session_id`, `details.current`).
    #[serde(rename = "session.revoked")]
    SessionRevoked,
    /// `member.mfa_reset`: an owner removed a member's second factors (TOTP, recovery codes,
    /// passkeys) and ended their sessions (`details.member_id`, `details.sessions_ended`).
    #[serde(rename = "member.mfa_reset")]
    MemberMfaReset,
    /// `member.disabled`: an owner disabled a member's account (`details.member_id`,
    /// `details.sessions_ended`).
    #[serde(rename = "member.disabled")]
    MemberDisabled,
    /// `member.enabled`: an owner let a disabled member sign in again (`details.member_id`).
    #[serde(rename = "member.enabled")]
    MemberEnabled,
    /// `workspace.created`: an owner added a workspace (`details.workspace_id`,
    /// `details.name`).
    #[serde(rename = "workspace.created")]
    WorkspaceCreated,
}

impl AuditEvent {
    /// Every event, in documentation order.
    pub const ALL: [AuditEvent; 32] = [
        AuditEvent::LoginSucceeded,
        AuditEvent::LoginFailed,
        AuditEvent::LockedOut,
        AuditEvent::MfaChallenged,
        AuditEvent::MfaSucceeded,
        AuditEvent::MfaFailed,
        AuditEvent::RecoveryCodeUsed,
        AuditEvent::MfaEnabled,
        AuditEvent::MfaDisabled,
        AuditEvent::Refreshed,
        AuditEvent::RefreshReused,
        AuditEvent::LoggedOut,
        AuditEvent::LoggedOutEverywhere,
        AuditEvent::SessionEvicted,
        AuditEvent::ContextSwitched,
        AuditEvent::PasswordChanged,
        AuditEvent::PasswordChangeFailed,
        AuditEvent::PasswordResetRequested,
        AuditEvent::PasswordReset,
        AuditEvent::PasswordResetFailed,
        AuditEvent::MagicLinkRequested,
        AuditEvent::MagicLinkUsed,
        AuditEvent::MagicLinkFailed,
        AuditEvent::PasskeyUsed,
        AuditEvent::PasskeyFailed,
        AuditEvent::MemberCreated,
        AuditEvent::MemberRoleChanged,
        AuditEvent::SessionRevoked,
        AuditEvent::MemberMfaReset,
        AuditEvent::MemberDisabled,
        AuditEvent::MemberEnabled,
        AuditEvent::WorkspaceCreated,
    ];

    /// The stable name stored and served, e.g. `login.failed`.
    pub fn as_str(self) -> &'static str {
        match self {
            AuditEvent::LoginSucceeded => "login.succeeded",
            AuditEvent::LoginFailed => "login.failed",
            AuditEvent::LockedOut => "account.locked_out",
            AuditEvent::MfaChallenged => "mfa.challenged",
            AuditEvent::MfaSucceeded => "mfa.succeeded",
            AuditEvent::MfaFailed => "mfa.failed",
            AuditEvent::RecoveryCodeUsed => "mfa.recovery_code_used",
            AuditEvent::MfaEnabled => "mfa.enabled",
            AuditEvent::MfaDisabled => "mfa.disabled",
            AuditEvent::Refreshed => "token.refreshed",
            AuditEvent::RefreshReused => "token.refresh_reused",
            AuditEvent::LoggedOut => "session.logged_out",
            AuditEvent::LoggedOutEverywhere => "session.logged_out_everywhere",
            AuditEvent::SessionEvicted => "session.evicted",
            AuditEvent::ContextSwitched => "context.switched",
            AuditEvent::PasswordChanged => "password.changed",
            AuditEvent::PasswordResetRequested => "password.reset_requested",
            AuditEvent::PasswordReset => "password.reset",
            AuditEvent::PasswordResetFailed => "password.reset_failed",
            AuditEvent::MagicLinkRequested => "magic_link.requested",
            AuditEvent::MagicLinkUsed => "magic_link.used",
            AuditEvent::MagicLinkFailed => "magic_link.failed",
            AuditEvent::PasskeyUsed => "passkey.used",
            AuditEvent::PasskeyFailed => "passkey.failed",
            AuditEvent::MemberCreated => "member.created",
            AuditEvent::MemberRoleChanged => "member.role_changed",
            AuditEvent::PasswordChangeFailed => "password.change_failed",
            AuditEvent::SessionRevoked => "session.revoked",
            AuditEvent::MemberMfaReset => "member.mfa_reset",
            AuditEvent::MemberDisabled => "member.disabled",
            AuditEvent::MemberEnabled => "member.enabled",
            AuditEvent::WorkspaceCreated => "workspace.created",
        }
    }
}

impl fmt::Display for AuditEvent {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

/// Not one of [`AuditEvent::ALL`]'s names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown audit event {0:?}")]
pub struct UnknownAuditEvent(pub String);

impl FromStr for AuditEvent {
    type Err = UnknownAuditEvent;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        AuditEvent::ALL
            .into_iter()
            .find(|event| event.as_str() == name)
            .ok_or_else(|| UnknownAuditEvent(name.to_owned()))
    }
}

/// One event to record. Build it with [`AuditEntry::new`] and the chained setters, or as a
/// literal; [`record`] normalizes it (see the module docs) whichever way it was built.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditEntry {
    pub event: AuditEvent,
    /// The tenant the event belongs to; `None` when unknown (a failed login of an unknown
    /// account). Only entries with a tenant are served, to that tenant's owners.
    pub tenant_id: Option<String>,
    pub user_id: Option<String>,
    /// The e-mail attempted, as typed: stored trimmed and lower-cased, or not at all when it
    /// is not shaped like an e-mail address.
    pub login: Option<String>,
    pub client_ip: Option<IpAddr>,
    pub correlation_id: Option<String>,
    /// A JSON object of details (`reason`, `method`, `session_id`, …); never secrets.
    pub details: Value,
}

impl AuditEntry {
    /// An entry of `event` with nothing else known yet and empty details.
    pub fn new(event: AuditEvent) -> Self {
        Self {
            event,
            tenant_id: None,
            user_id: None,
            login: None,
            client_ip: None,
            correlation_id: None,
            details: Value::Object(Map::new()),
        }
    }

    pub fn tenant(mut self, tenant_id: impl Into<String>) -> Self {
        self.tenant_id = Some(tenant_id.into());
        self
    }

    pub fn user(mut self, user_id: impl Into<String>) -> Self {
        self.user_id = Some(user_id.into());
        self
    }

    /// The login (e-mail) attempted, as the client sent it.
    pub fn login(mut self, login: impl Into<String>) -> Self {
        self.login = Some(login.into());
        self
    }

    /// The client IP and correlation id of the request.
    pub fn origin(mut self, origin: &RequestOrigin) -> Self {
        self.client_ip = origin.client_ip;
        self.correlation_id = origin.correlation_id.clone();
        self
    }

    /// Adds one key to `details` (replacing a non-object `details`).
    pub fn detail(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        if !self.details.is_object() {
            self.details = Value::Object(Map::new());
        }
        if let Value::Object(map) = &mut self.details {
            map.insert(key.into(), value.into());
        }
        self
    }

    /// Replaces `details` (an object; anything else is stored as `{"value": …}`).
    pub fn details(mut self, details: Value) -> Self {
        self.details = details;
        self
    }
}

/// Key names (lower-cased) ending like this are never stored in `details`.
const SECRET_KEY_SUFFIXES: [&str; 6] = ["password", "token", "secret", "code", "codes", "otp"];

fn is_secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    SECRET_KEY_SUFFIXES
        .iter()
        .any(|suffix| key.ends_with(suffix))
        || matches!(key.as_str(), "authorization" | "cookie" | "credentials")
}

/// Drops every key naming a secret, at any depth, collecting the dropped names.
fn drop_secrets(value: &mut Value, dropped: &mut Vec<String>) {
    match value {
        Value::Object(map) => map.retain(|key, value| {
            if is_secret_key(key) {
                dropped.push(key.clone());
                false
            } else {
                drop_secrets(value, dropped);
                true
            }
        }),
        Value::Array(items) => items
            .iter_mut()
            .for_each(|item| drop_secrets(item, dropped)),
        _ => {}
    }
}

/// `details` as stored: a JSON object (`null` is `{}`, anything else `{"value": …}`) without
/// the keys naming secrets (a warning names the dropped keys), serialized.
fn stored_details(details: &Value, event: &str) -> anyhow::Result<String> {
    let mut details = match details {
        Value::Null => Value::Object(Map::new()),
        Value::Object(_) => details.clone(),
        other => serde_json::json!({ "value": other }),
    };
    let mut dropped = Vec::new();
    drop_secrets(&mut details, &mut dropped);
    if !dropped.is_empty() {
        tracing::warn!(
            event,
            keys = ?dropped,
            "audit details named secrets; they were not stored"
        );
    }
    serde_json::to_string(&details).context("serializing audit details")
}

/// The client IP and correlation id of `origin` as stored (IPv4-mapped addresses as IPv4,
/// malformed correlation ids not at all).
fn stored_origin(
    client_ip: Option<IpAddr>,
    correlation_id: Option<&String>,
) -> (Option<String>, Option<String>) {
    (
        client_ip.map(|ip| ip.to_canonical().to_string()),
        correlation_id
            .filter(|id| is_well_formed_correlation_id(id))
            .cloned(),
    )
}

/// The row an entry becomes: normalized, secrets dropped.
fn stored_row(entry: &AuditEntry) -> anyhow::Result<NewAuditRow> {
    let (client_ip, correlation_id) = stored_origin(entry.client_ip, entry.correlation_id.as_ref());
    let non_empty = |value: &Option<String>| {
        value
            .as_deref()
            .map(str::trim)
            .filter(|value| !value.is_empty())
            .map(str::to_owned)
    };
    Ok(NewAuditRow {
        id: uuid::Uuid::new_v4().to_string(),
        tenant_id: non_empty(&entry.tenant_id),
        user_id: non_empty(&entry.user_id),
        event: entry.event.as_str().to_owned(),
        engine_code: None,
        login: entry
            .login
            .as_deref()
            .map(normalize_email)
            .filter(|login| is_valid_email(login)),
        client_ip,
        correlation_id,
        details: stored_details(&entry.details, entry.event.as_str())?,
        created_at: time::now(),
    })
}

/// An entry of `event` about `user_id`, in their (first) tenant's trail, where its owners read
/// it (an entry without a tenant is in no one's).
pub async fn entry_for_user(
    database: &Database,
    event: AuditEvent,
    user_id: &str,
) -> anyhow::Result<AuditEntry> {
    let entry = AuditEntry::new(event).user(user_id);
    Ok(
        match crate::store::membership(database, user_id, None).await? {
            Some(membership) => entry.tenant(membership.tenant_id),
            None => entry,
        },
    )
}

/// Records one event in its own statement (committed at once, whatever the caller does next).
pub async fn record(database: &Database, entry: &AuditEntry) -> anyhow::Result<()> {
    let row = stored_row(entry)?;
    if row.tenant_id.is_none() {
        // Nothing to publish (no tenant's owners read it): one statement.
        store::insert(database, &row).await?;
    } else {
        let mut tx = database.begin().await?;
        insert_and_publish_in(&mut tx, &row).await?;
        tx.commit().await.context("committing an audit entry")?;
    }
    count(entry.event);
    Ok(())
}

/// The realtime topic of a tenant's audit trail: each entry as `GET /auth/api/v1/audit` lists
/// it, published in the transaction that stores it (so only a committed entry is delivered),
/// the frame's type being the entry's event. Owners subscribe, as they read the trail.
pub const AUDIT_TOPIC: &str = "core.audit";

/// Stores `row` and, for an entry of a tenant, publishes it on [`AUDIT_TOPIC`], in `tx`.
async fn insert_and_publish_in(tx: &mut Tx, row: &NewAuditRow) -> anyhow::Result<()> {
    store::insert_in(tx, row).await?;
    let Some(tenant_id) = &row.tenant_id else {
        return Ok(());
    };
    let item = AuditItem {
        id: row.id.clone(),
        event: row.event.clone(),
        engine: row.engine_code.clone(),
        user_id: row.user_id.clone(),
        login: row.login.clone(),
        client_ip: row.client_ip.clone(),
        correlation_id: row.correlation_id.clone(),
        details: serde_json::from_str(&row.details).context("reading an entry's details")?,
        created_at: row.created_at.clone(),
    };
    let kind = PublishedKind::Event {
        event_type: row.event.clone(),
        data: serde_json::to_string(&item).context("serializing an audit entry")?,
    };
    realtime_events::insert_in(
        tx,
        &[NewPublished {
            tenant_id,
            engine_code: "core",
            topic: AUDIT_TOPIC.to_owned(),
            user_id: None,
            kind: &kind,
            occurred_at: &row.created_at,
        }],
    )
    .await
}

/// `tessera_auth_events_total{event}`: logins succeeded and failed, lock-outs, MFA, refreshes…
/// counted as they are recorded (one inside a transaction that later rolls back is counted).
fn count(event: AuditEvent) {
    metrics::counter!("tessera_auth_events_total", "event" => event.as_str()).increment(1);
}

/// Records one event inside the caller's transaction: it is kept only if that commits.
pub async fn record_in(tx: &mut Tx, entry: &AuditEntry) -> anyhow::Result<()> {
    insert_and_publish_in(tx, &stored_row(entry)?).await?;
    count(entry.event);
    Ok(())
}

/// The longest name an engine may give one of its audited operations (`x-tessera-audit`).
pub const MAX_ENGINE_EVENT_CHARS: usize = 64;

/// The full name of engine `code`'s audited operation `name` (`x-tessera-audit`), as the trail
/// stores and serves it: `<code>.<name>`. `name` is 1 to [`MAX_ENGINE_EVENT_CHARS`] lower-case
/// letters, digits and `_`, in dot-separated words (`webhook.created`); the full name must not
/// be one of the host's own events, so no engine can write an entry that reads as a sign-in.
pub fn engine_event_name(code: &str, name: &str) -> Result<String, String> {
    let words_ok = name.split('.').all(|word| {
        !word.is_empty()
            && word
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    });
    if name.is_empty() || name.len() > MAX_ENGINE_EVENT_CHARS || !words_ok {
        return Err(format!(
            "the audit event name {name:?} is not 1 to {MAX_ENGINE_EVENT_CHARS} lower-case letters, digits and '_' in dot-separated words"
        ));
    }
    let full = format!("{code}.{name}");
    if full.parse::<AuditEvent>().is_ok() {
        return Err(format!(
            "the audit event name {full:?} is one of the host's own events"
        ));
    }
    Ok(full)
}

/// An engine's audited operation (one its API description marks with `x-tessera-audit`),
/// answered with a success: the host records it in the unit of work of the call that answered
/// it, so the entry commits with the call's last writes or not at all. The engine never writes
/// an entry itself: tenant, user, address and correlation id come from the request.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineAuditEntry {
    pub engine_code: String,
    /// The full name, from [`engine_event_name`] (e.g. `chat.webhook.created`).
    pub event: String,
    pub tenant_id: String,
    /// The user whose request the operation answered.
    pub user_id: String,
    pub origin: RequestOrigin,
    /// A JSON object: the method, path, status, path parameters (see the runtime's routes).
    pub details: Value,
}

/// Records an engine's audited operation inside the caller's transaction (the batch writer's,
/// with the call's unit of work).
pub async fn record_engine_in(tx: &mut Tx, entry: &EngineAuditEntry) -> anyhow::Result<()> {
    let (client_ip, correlation_id) =
        stored_origin(entry.origin.client_ip, entry.origin.correlation_id.as_ref());
    let row = NewAuditRow {
        id: uuid::Uuid::new_v4().to_string(),
        tenant_id: Some(entry.tenant_id.clone()),
        user_id: Some(entry.user_id.clone()),
        event: entry.event.clone(),
        engine_code: Some(entry.engine_code.clone()),
        login: None,
        client_ip,
        correlation_id,
        details: stored_details(&entry.details, &entry.event)?,
        created_at: time::now(),
    };
    insert_and_publish_in(tx, &row).await
}

/// One entry as served.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct AuditItem {
    pub id: String,
    /// A dotted event name: one of the host's (e.g. `login.failed`), or an engine's audited
    /// operation as `<code>.<name>` (e.g. `chat.webhook.created`).
    pub event: String,
    /// The engine whose operation the entry records; `null` for the host's own events.
    pub engine: Option<String>,
    pub user_id: Option<String>,
    /// The normalized e-mail attempted, when the event had one.
    pub login: Option<String>,
    pub client_ip: Option<String>,
    pub correlation_id: Option<String>,
    /// A JSON object of event details.
    #[schema(value_type = Object)]
    pub details: Value,
    /// RFC 3339 UTC with microseconds.
    pub created_at: String,
}

/// The sort position of an entry: `(created_at, id)`, newest first.
pub type AuditPosition = (String, String);

/// An event a trail is filtered by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuditEventFilter {
    /// One of the host's own events.
    Host(AuditEvent),
    /// An engine's audited operation, by its full name (`<code>.<name>`).
    Engine(String),
}

impl FromStr for AuditEventFilter {
    type Err = UnknownAuditEvent;

    /// A host event's name, else a well-formed engine event name (`<code>.<name>`; whether an
    /// engine declares it is not checked: an engine's operations outlive its unloading).
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        if let Ok(event) = name.parse::<AuditEvent>() {
            return Ok(AuditEventFilter::Host(event));
        }
        let unknown = || UnknownAuditEvent(name.to_owned());
        let (code, rest) = name.split_once('.').ok_or_else(unknown)?;
        let code_ok = (1..=32).contains(&code.len())
            && code.as_bytes()[0].is_ascii_lowercase()
            && code
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        match code_ok.then(|| engine_event_name(code, rest)) {
            Some(Ok(full)) => Ok(AuditEventFilter::Engine(full)),
            _ => Err(unknown()),
        }
    }
}

/// Optional narrowing of a tenant's trail.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditFilter {
    pub event: Option<AuditEventFilter>,
    pub user_id: Option<String>,
    /// Only the entries of this engine's audited operations.
    pub engine: Option<String>,
}

/// One page of `tenant_id`'s trail, newest first (ties by id, descending), after
/// `page.after`, matching `filter`.
pub async fn list(
    database: &Database,
    tenant_id: &str,
    filter: &AuditFilter,
    page: &CursorPage<AuditPosition>,
) -> anyhow::Result<(Vec<AuditItem>, CursorMeta)> {
    let rows = store::list(
        database,
        tenant_id,
        ListFilter {
            event: filter.event.as_ref().map(|event| match event {
                AuditEventFilter::Host(event) => EventFilter::Host(event.as_str()),
                AuditEventFilter::Engine(name) => EventFilter::Engine(name),
            }),
            user_id: filter.user_id.as_deref(),
            engine_code: filter.engine.as_deref(),
        },
        page.after
            .as_ref()
            .map(|(created_at, id)| (created_at.as_str(), id.as_str())),
        page.fetch_limit(),
    )
    .await?;
    let items = rows
        .into_iter()
        .map(|row: AuditRow| {
            let details = serde_json::from_str(&row.details)
                .with_context(|| format!("reading the details of audit entry {}", row.id))?;
            Ok(AuditItem {
                id: row.id,
                event: row.event,
                engine: row.engine_code,
                user_id: row.user_id,
                login: row.login,
                client_ip: row.client_ip,
                correlation_id: row.correlation_id,
                details,
                created_at: row.created_at,
            })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(page.finish(items, |item| (item.created_at.clone(), item.id.clone())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_names_are_stable_and_round_trip() {
        for event in AuditEvent::ALL {
            assert_eq!(event.as_str().parse::<AuditEvent>().unwrap(), event);
            assert_eq!(
                serde_json::to_value(event).unwrap(),
                Value::String(event.as_str().into())
            );
        }
        assert!("login".parse::<AuditEvent>().is_err());
    }

    #[test]
    fn stored_entries_hold_no_secrets_and_only_e_mail_shaped_logins() {
        let entry = AuditEntry::new(AuditEvent::LoginFailed)
            .login("  Ada@Example.COM ")
            .details(serde_json::json!({
                "reason": "wrong_password",
                "password": "hunter2",
                "mfa_token": "t",
                "nested": [{"recovery_code": "c", "method": "totp"}],
            }));
        let stored = stored_row(&entry).unwrap();
        assert_eq!(stored.login.as_deref(), Some("ada@example.com"));
        assert_eq!(
            serde_json::from_str::<Value>(&stored.details).unwrap(),
            serde_json::json!({"reason": "wrong_password", "nested": [{"method": "totp"}]})
        );

        let typed_a_password = AuditEntry::new(AuditEvent::LoginFailed).login("hunter2 secret");
        assert_eq!(stored_row(&typed_a_password).unwrap().login, None);
        let null_details = AuditEntry::new(AuditEvent::LoggedOut).details(Value::Null);
        assert_eq!(stored_row(&null_details).unwrap().details, "{}");
    }

    #[test]
    fn engine_event_names_are_prefixed_and_never_read_as_host_events() {
        assert_eq!(
            engine_event_name("chat", "webhook.created").unwrap(),
            "chat.webhook.created"
        );
        for bad in [
            "",
            "Webhook",
            "webhook..created",
            ".created",
            "a b",
            "x-y",
            &"a".repeat(65),
        ] {
            assert!(engine_event_name("chat", bad).is_err(), "{bad:?}");
        }
        // An engine coded `login` cannot write an entry that reads as a failed sign-in.
        assert!(engine_event_name("login", "failed").is_err());
        assert_eq!(
            engine_event_name("login", "denied").unwrap(),
            "login.denied"
        );

        assert_eq!(
            "mfa.enabled".parse::<AuditEventFilter>().unwrap(),
            AuditEventFilter::Host(AuditEvent::MfaEnabled)
        );
        assert_eq!(
            "chat.webhook.created".parse::<AuditEventFilter>().unwrap(),
            AuditEventFilter::Engine("chat.webhook.created".into())
        );
        for bad in ["login", "chat", "chat.", "Chat.x", "1chat.x", "chat.Web"] {
            assert!(bad.parse::<AuditEventFilter>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn ipv4_mapped_peers_are_stored_as_ipv4() {
        let entry = AuditEntry {
            client_ip: Some("::ffff:192.0.2.7".parse().unwrap()),
            ..AuditEntry::new(AuditEvent::LoginSucceeded)
        };
        assert_eq!(
            stored_row(&entry).unwrap().client_ip.as_deref(),
            Some("192.0.2.7")
        );
    }
}
