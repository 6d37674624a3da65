//! Wrappers for the smaller host imports: the durable [`scheduler`], [`blobs`], the event bus
//! ([`events`]), events pushed to subscribed clients ([`realtime`]), policy-checked outbound HTTP ([`http`]), outbound e-mail
//! ([`mail_transport`]), secrets at rest ([`vault`]) and the operator's [`settings`]. Each is
//! scoped by the host to this engine and the tenant of the current call.

/// The durable scheduler: a job survives host restarts and is delivered to
/// [`Engine::run_job`](crate::Engine::run_job) at or after its time, for the tenant of the call
/// that scheduled it.
pub mod scheduler {
    use serde::Serialize;

    use crate::error::HostError;
    use crate::imports::scheduler as host;

    /// Schedules `payload` for `at_unix_ms`; returns the job id.
    pub fn schedule(at_unix_ms: u64, payload: &[u8]) -> Result<String, HostError> {
        host::schedule(at_unix_ms, payload)
            .map_err(|error| HostError::new("scheduler.schedule", error))
    }

    /// Schedules `payload` serialized as JSON (read it back with
    /// [`Job::payload_json`](crate::Job::payload_json)).
    pub fn schedule_json<T: Serialize + ?Sized>(
        at_unix_ms: u64,
        payload: &T,
    ) -> Result<String, HostError> {
        let bytes = serde_json::to_vec(payload)
            .map_err(|error| HostError::new("scheduler.encode", error.to_string()))?;
        schedule(at_unix_ms, &bytes)
    }

    /// Cancels a job; true when it was still pending.
    pub fn cancel(job_id: &str) -> Result<bool, HostError> {
        host::cancel(job_id).map_err(|error| HostError::new("scheduler.cancel", error))
    }
}

/// Publishing to the host's event bus, as the tenant of the current call.
pub mod events {
    use serde::Serialize;

    use crate::error::HostError;
    use crate::imports::events as host;

    /// Publishes an event of `event_type` whose payload is `payload` as JSON (an object).
    pub fn publish<T: Serialize + ?Sized>(event_type: &str, payload: &T) -> Result<(), HostError> {
        let payload = serde_json::to_string(payload)
            .map_err(|error| HostError::new("events.encode", error.to_string()))?;
        host::publish(event_type, &payload).map_err(|error| HostError::new("events.publish", error))
    }
}

/// Realtime: events pushed to the clients subscribed to the engine's topics (CONTRACT §9).
/// A topic is named here without the engine code (`conversation.c1`; clients subscribe to
/// `chat.conversation.c1`) and must match a pattern of [`Engine::topics`](crate::Engine::topics).
/// What a call publishes is part of its unit of work, as its writes are: delivered to the
/// subscribers on every host if and only if the call commits, in the order published. Who may
/// subscribe is [`Engine::authorize_subscription`](crate::Engine::authorize_subscription)'s
/// decision.
///
/// Realtime events are for people watching: `data` may carry what a client shows (a message's
/// text), unlike what goes to webhooks and the event bus, and only to subscribers the engine
/// authorized.
pub mod realtime {
    use serde::Serialize;

    use crate::error::HostError;
    use crate::imports::realtime as host;

    /// The most bytes of one event's `data` (as JSON text).
    pub const MAX_DATA_BYTES: usize = 64 * 1024;

    fn encode<T: Serialize + ?Sized>(data: &T) -> Result<String, HostError> {
        serde_json::to_string(data)
            .map_err(|error| HostError::new("realtime.encode", error.to_string()))
    }

    /// Publishes an event of `event_type` (as the event bus's types: `message.created`) with
    /// `data` as JSON (an object, at most [`MAX_DATA_BYTES`]) to every subscriber of `topic`
    /// in the tenant of the call.
    pub fn publish<T: Serialize + ?Sized>(
        topic: &str,
        event_type: &str,
        data: &T,
    ) -> Result<(), HostError> {
        host::publish(topic, event_type, &encode(data)?)
            .map_err(|error| HostError::new("realtime.publish", error))
    }

    /// As [`publish`], to the subscribers of `topic` who are `user_id` only: for a topic every
    /// user has one of, such as chat's `me` (each subscriber of `chat.me` hears what is
    /// theirs).
    pub fn publish_to_user<T: Serialize + ?Sized>(
        user_id: &str,
        topic: &str,
        event_type: &str,
        data: &T,
    ) -> Result<(), HostError> {
        host::publish_to_user(user_id, topic, event_type, &encode(data)?)
            .map_err(|error| HostError::new("realtime.publish-to-user", error))
    }

    /// Ends `user_id`'s subscriptions to `topic` on every host when the call commits (a member
    /// removed from a conversation stops receiving it at once): each gets an `error` frame
    /// with status 403. A later subscription asks
    /// [`Engine::authorize_subscription`](crate::Engine::authorize_subscription) again.
    pub fn end_subscriptions(topic: &str, user_id: &str) -> Result<(), HostError> {
        host::end_subscriptions(topic, user_id)
            .map_err(|error| HostError::new("realtime.end-subscriptions", error))
    }
}

/// Outbound HTTP through the host's policy (allowed per engine, timeouts, TLS roots, refusal of
/// private addresses unless configured).
pub mod http {
    use serde::Serialize;

    use crate::error::HostError;
    use crate::imports::outbound_http as host;

    /// The default timeout of an outbound request.
    pub const DEFAULT_TIMEOUT_MS: u32 = 10_000;

    /// An outbound request.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct OutboundRequest {
        /// `GET`, `POST`, …
        pub method: String,
        /// An absolute `http(s)://` URL.
        pub url: String,
        /// Header names and values.
        pub headers: Vec<(String, String)>,
        /// The body.
        pub body: Vec<u8>,
        /// How long the host waits for the whole response.
        pub timeout_ms: u32,
    }

    impl OutboundRequest {
        /// A request without headers or body and the default timeout.
        pub fn new(method: &str, url: &str) -> Self {
            Self {
                method: method.to_ascii_uppercase(),
                url: url.to_owned(),
                headers: Vec::new(),
                body: Vec::new(),
                timeout_ms: DEFAULT_TIMEOUT_MS,
            }
        }

        /// A `GET`.
        pub fn get(url: &str) -> Self {
            Self::new("GET", url)
        }

        /// A `POST` of `body` as JSON with `content-type: application/json`.
        pub fn post_json<T: Serialize + ?Sized>(url: &str, body: &T) -> Result<Self, HostError> {
            let body = serde_json::to_vec(body)
                .map_err(|error| HostError::new("http.encode", error.to_string()))?;
            Ok(Self::new("POST", url)
                .header("content-type", "application/json")
                .body(body))
        }

        /// Adds a header.
        pub fn header(mut self, name: &str, value: &str) -> Self {
            self.headers.push((name.to_owned(), value.to_owned()));
            self
        }

        /// Replaces the body.
        pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
            self.body = body.into();
            self
        }

        /// Sets the timeout.
        pub fn timeout_ms(mut self, timeout_ms: u32) -> Self {
            self.timeout_ms = timeout_ms;
            self
        }
    }

    /// The response to an outbound request.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct OutboundResponse {
        /// The status code.
        pub status: u16,
        /// Header names and values.
        pub headers: Vec<(String, String)>,
        /// The body.
        pub body: Vec<u8>,
        /// How long the request took.
        pub elapsed_ms: u32,
    }

    impl OutboundResponse {
        /// True for a 2xx status.
        pub fn is_success(&self) -> bool {
            (200..300).contains(&self.status)
        }
    }

    /// Checks, without sending anything, that [`fetch`] could reach `url` now: an http(s) URL
    /// the engine's outbound hosts allow, not (an IP literal of, or a name resolving only to)
    /// a non-public address unless the host allows private targets. A name that does not
    /// resolve passes. `Err` carries the reason.
    pub fn check_target(url: &str) -> Result<(), HostError> {
        host::check_target(url).map_err(|error| HostError::new("http.check-target", error))
    }

    /// Sends `request`; `Err` when no HTTP response was obtained (refused by policy, DNS,
    /// connect, TLS, timeout), with the reason. Any status, 5xx included, is `Ok`.
    pub fn fetch(request: OutboundRequest) -> Result<OutboundResponse, HostError> {
        let request = host::OutboundRequest {
            method: request.method,
            url: request.url,
            headers: request.headers,
            body: request.body,
            timeout_ms: request.timeout_ms,
        };
        let response =
            host::fetch(&request).map_err(|error| HostError::new("http.fetch", error))?;
        Ok(OutboundResponse {
            status: response.status,
            headers: response.headers,
            body: response.body,
            elapsed_ms: response.elapsed_ms,
        })
    }
}

/// Secrets at rest: sealed by the host with a key engines never see, bound to this engine and
/// the tenant of the call. Store what [`seal`](vault::seal) returns; [`open`](vault::open) it
/// when needed, and keep the plaintext no longer than that.
pub mod vault {
    use crate::error::HostError;
    use crate::imports::vault as host;

    /// Encrypts `plaintext` (authenticated; sealing twice gives different bytes).
    pub fn seal(plaintext: &[u8]) -> Result<Vec<u8>, HostError> {
        host::seal(plaintext).map_err(|error| HostError::new("vault.seal", error))
    }

    /// Decrypts what [`seal`] returned in this engine and tenant.
    pub fn open(sealed: &[u8]) -> Result<Vec<u8>, HostError> {
        host::open(sealed).map_err(|error| HostError::new("vault.open", error))
    }
}

/// Operator settings: the engine's own, declared by [`Engine::settings`](crate::Engine::settings)
/// (plain names: `max-upload-bytes`), and the host's, which every engine may read (names with a
/// dot: `webhook.retry-schedule-ms`, `engine.max-body-bytes`, `mail-transport.available`,
/// `storage.scan-page`, `storage.scan-budget`; see `wit/engine.wit`).
pub mod settings {
    use crate::imports::settings as host;

    /// The setting `name` (the operator's value, else the declared default), or `None` when it
    /// is unset or not a setting of the engine or the host.
    pub fn get(name: &str) -> Option<String> {
        host::get(name)
    }
}

/// Binary content too large for storage values (the bytes of files), kept by the host in its
/// database and scoped like storage to this engine and the tenant of the call.
pub mod blobs {
    use crate::error::HostError;
    use crate::imports::blobs as host;

    /// What [`put`] did.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Put {
        /// The blob and the storage entries were written, in one transaction.
        Stored,
        /// The tenant's blobs would exceed the quota: nothing was written.
        OverQuota,
    }

    /// Stores `content` under `key` (replacing the blob there) and writes `sets` to storage in
    /// the same transaction, unless this engine's blobs of the tenant would then exceed
    /// `quota_bytes` in total (`None`: no quota).
    pub fn put(
        key: &str,
        content: &[u8],
        quota_bytes: Option<u64>,
        sets: &[(String, Vec<u8>)],
    ) -> Result<Put, HostError> {
        match host::put(key, content, quota_bytes, sets) {
            Ok(true) => Ok(Put::Stored),
            Ok(false) => Ok(Put::OverQuota),
            Err(error) => Err(HostError::new("blobs.put", error)),
        }
    }

    /// The blob under `key`, if any.
    pub fn get(key: &str) -> Result<Option<Vec<u8>>, HostError> {
        host::get(key).map_err(|error| HostError::new("blobs.get", error))
    }

    /// Removes the blobs `keys` and the storage entries `deletes` in one transaction; returns
    /// how many of the blobs existed.
    pub fn delete(keys: &[String], deletes: &[String]) -> Result<u64, HostError> {
        host::delete(keys, deletes).map_err(|error| HostError::new("blobs.delete", error))
    }

    /// Removes every blob whose key starts with `prefix` (`""`: all of the tenant's).
    pub fn delete_prefix(prefix: &str) -> Result<u64, HostError> {
        host::delete_prefix(prefix).map_err(|error| HostError::new("blobs.delete-prefix", error))
    }

    /// The bytes this engine's blobs take in the tenant.
    pub fn usage() -> Result<u64, HostError> {
        host::usage().map_err(|error| HostError::new("blobs.usage", error))
    }
}

/// E-mail out of the platform through the operator's SMTP relay; only for engines that ask for
/// [`Permission::SendMail`](crate::Permission::SendMail) (or, when the operator names engines in
/// `TESSERA_SMTP_ENGINES`, only those). Whether sending can succeed now:
/// `settings::get("mail-transport.available")`.
pub mod mail_transport {
    use crate::error::HostError;
    use crate::imports::mail_transport as host;

    /// One plain-text mail.
    #[derive(Debug, Clone)]
    pub struct OutgoingMail {
        /// `name@domain`.
        pub sender: String,
        /// `name@domain` each, 1 to 100.
        pub recipients: Vec<String>,
        /// The `Subject` header.
        pub subject: String,
        /// The plain-text body.
        pub text: String,
        /// Sent as `Message-ID`; keep it across retries so receivers can drop duplicates.
        pub message_id: String,
    }

    /// Hands `mail` to the relay; `Ok` once the relay accepted it.
    pub fn send(mail: OutgoingMail) -> Result<(), HostError> {
        host::send(&host::OutgoingMail {
            sender: mail.sender,
            recipients: mail.recipients,
            subject: mail.subject,
            text: mail.text,
            message_id: mail.message_id,
        })
        .map_err(|error| HostError::new("mail-transport.send", error))
    }
}
