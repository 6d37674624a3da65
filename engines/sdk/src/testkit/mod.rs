//! The test kit (feature `test-kit`): run an engine natively, without a host, a database or a
//! wasm build, against in-memory fakes of every host import ([`fakes`]) that keep the host's
//! semantics. `cargo test` in an engine crate then exercises its routes, jobs and event
//! handlers in milliseconds:
//!
//! ```toml
//! [dev-dependencies]
//! tessera-sdk = { version = "0.1", features = ["test-kit"] }
//! ```
//!
//! ```
//! use tessera_sdk::serde_json::json;
//! use tessera_sdk::testkit::TestHost;
//! use tessera_sdk::{Context, Descriptor, Engine, Response, Router, storage};
//!
//! struct Counter;
//!
//! impl Engine for Counter {
//!     fn describe() -> Descriptor {
//!         Descriptor::new("counter", "Counter", "0.1.0")
//!     }
//!
//!     fn router() -> Router {
//!         Router::new().post("/api/v1/count", |ctx, _| {
//!             let mut counted = storage::Transaction::new();
//!             counted.add(format!("count/{}", ctx.user_id), 1);
//!             counted.commit()?;
//!             let count = storage::get(&format!("count/{}", ctx.user_id))?;
//!             Ok(Response::ok(&json!({ "count": String::from_utf8(count.unwrap()).unwrap() })))
//!         })
//!     }
//! }
//!
//! let host = TestHost::<Counter>::new();
//! let ada = Context::for_tests("tenant-1", "ada", "editor");
//! assert_eq!(host.post_json(&ada, "/api/v1/count", &json!({})).json()["data"]["count"], "1");
//! assert_eq!(host.post_json(&ada, "/api/v1/count", &json!({})).json()["data"]["count"], "2");
//! assert_eq!(host.stored("tenant-1", "count/ada"), Some(b"2".to_vec()));
//! ```
//!
//! Each call is a unit of work as on the host: what a request writes, publishes (on the bus
//! and to realtime topics) and schedules is kept only when it answers 2xx or 3xx (a job, an
//! event or a provisioning call: `Ok`); a panic is a trap (500, nothing kept).
//! [`TestHost::realtime_events`] reads what reached the engine's topics, and
//! [`TestHost::authorize_subscription`] asks the engine whether a caller may subscribe. The state lives on the test's thread: every
//! [`TestHost::new`] starts empty.

pub mod fakes;
#[cfg(test)]
mod tests;

use std::marker::PhantomData;
use std::panic::AssertUnwindSafe;

use serde::Serialize;

use crate::context::Context;
use crate::engine::Engine;
use crate::generated::bindings::exports::tessera::engine::guest::{self as wit, Guest as _};
use crate::guest::Adapter;
use crate::types::{Descriptor, Event, Job, TenantInfo, UserInfo};

pub use fakes::log::Level;
pub use fakes::mail_transport::OutgoingMail;
pub use fakes::outbound_http::{OutboundRequest, OutboundResponse};
pub use fakes::{EndedSubscription, PublishedEvent, RealtimeEvent, ScheduledJob};

use fakes::{CannedResponse, with_host};

/// The WIT caller of `ctx`.
fn wit_caller(ctx: &Context) -> wit::Caller {
    wit::Caller {
        tenant_id: ctx.tenant_id.clone(),
        workspace_id: ctx.workspace_id.clone(),
        user_id: ctx.user_id.clone(),
        role: ctx.role.clone(),
        token_type: ctx.token_type.clone(),
        correlation_id: ctx.correlation_id.clone(),
    }
}

/// An engine `E` served by in-memory fakes of the host, on this thread.
pub struct TestHost<E: Engine> {
    engine: PhantomData<E>,
}

/// What the host makes of a client's subscription to one of the engine's topics
/// ([`TestHost::authorize_subscription`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subscription {
    /// The engine's `authorize-subscription` said `true`: the client is subscribed.
    Allowed,
    /// It said `false`, or trapped: an `error` frame with status 403.
    Forbidden,
    /// None of the engine's topic patterns match: 404, without asking the engine.
    UnknownTopic,
}

/// What a route answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestResponse {
    /// The HTTP status.
    pub status: u16,
    /// The response headers.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl TestResponse {
    /// The body as JSON (`Null` when it is empty or not JSON).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }

    /// The value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(header, _)| header.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

impl<E: Engine> Default for TestHost<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Engine> TestHost<E> {
    /// A host with nothing stored, the engine's declared settings at their defaults, its
    /// `outbound-hosts` allowed, no canned HTTP answers and no mail relay.
    ///
    /// Panics when the engine declares a malformed topic pattern ([`Engine::topics`]): the
    /// host would not load it.
    pub fn new() -> Self {
        let descriptor = E::describe();
        let topics: Vec<Vec<String>> = <Adapter<E>>::describe_topics()
            .iter()
            .map(|pattern| fakes::realtime::parse_pattern(pattern))
            .collect::<Result<_, _>>()
            .unwrap_or_else(|error| panic!("the host would not load this engine: {error}"));
        with_host(|host| {
            *host = fakes::FakeHost::default();
            host.topics = topics;
            host.outbound_hosts = descriptor.outbound_hosts;
            for setting in E::settings() {
                if let Some(default) = setting.default_value {
                    host.settings.insert(setting.name, default);
                }
            }
        });
        Self {
            engine: PhantomData,
        }
    }

    /// The engine's descriptor, as the host reads it.
    pub fn describe(&self) -> Descriptor {
        E::describe()
    }

    /// The engine's API description (`describe-api`) as the host merges it into its OpenAPI
    /// document.
    pub fn api(&self) -> serde_json::Value {
        serde_json::from_str(&<Adapter<E>>::describe_api()).unwrap_or_default()
    }

    /// The engine's topic patterns (`describe-topics`).
    pub fn topics(&self) -> Vec<String> {
        <Adapter<E>>::describe_topics()
    }

    /// Asks as the host does when `ctx`'s client subscribes to the engine's `topic` (named
    /// without the engine code: `conversation.c1`): [`Subscription::UnknownTopic`] when no
    /// pattern of [`topics`](Self::topics) matches it, else the engine's
    /// `authorize-subscription`, called as a read-only call of its own (what it writes or
    /// publishes is not kept; a trap refuses).
    pub fn authorize_subscription(&self, ctx: &Context, topic: &str) -> Subscription {
        let known = with_host(|host| fakes::realtime::matches(&host.topics, topic));
        if !known {
            return Subscription::UnknownTopic;
        }
        let caller = wit_caller(ctx);
        let topic = topic.to_owned();
        let answered = self.call(
            Some(&ctx.tenant_id),
            Some(&ctx.user_id),
            || <Adapter<E>>::authorize_subscription(caller, topic),
            |_| false,
        );
        match answered {
            Ok(true) => Subscription::Allowed,
            Ok(false) | Err(_) => Subscription::Forbidden,
        }
    }

    /// Sets a setting as the operator would (`TESSERA_ENGINES__<CODE>__<NAME>`), or one of the
    /// host's own (`storage.scan-page`, …).
    pub fn set_setting(&self, name: &str, value: &str) {
        with_host(|host| {
            host.settings.insert(name.to_owned(), value.to_owned());
        });
    }

    /// Lets `mail-transport.send` succeed (a relay, and this engine allowed).
    pub fn allow_mail(&self) {
        with_host(|host| host.mail_allowed = true);
    }

    /// Answers outbound `method url` with `status` and `body` from now on.
    pub fn respond(&self, method: &str, url: &str, status: u16, body: impl Into<Vec<u8>>) {
        self.canned(
            method,
            url,
            Ok(OutboundResponse {
                status,
                headers: Vec::new(),
                body: body.into(),
                elapsed_ms: 1,
            }),
        );
    }

    /// Fails outbound `method url` with `reason`, as the host does when no response came.
    pub fn fail_outbound(&self, method: &str, url: &str, reason: &str) {
        self.canned(method, url, Err(reason.to_owned()));
    }

    fn canned(&self, method: &str, url: &str, result: Result<OutboundResponse, String>) {
        with_host(|host| {
            host.responses.retain(|canned| {
                !(canned.method.eq_ignore_ascii_case(method) && canned.url == url)
            });
            host.responses.push(CannedResponse {
                method: method.to_owned(),
                url: url.to_owned(),
                result,
            });
        });
    }

    /// Serves one call of the engine in `tenant_id`; what it buffered commits when
    /// `succeeded` says so of its outcome. A panic is a trap: nothing is kept.
    fn call<T>(
        &self,
        tenant_id: Option<&str>,
        actor_id: Option<&str>,
        call: impl FnOnce() -> T,
        succeeded: impl Fn(&T) -> bool,
    ) -> Result<T, String> {
        with_host(|host| host.begin(tenant_id, actor_id));
        crate::storage::begin_call();
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(call));
        let committed = outcome.as_ref().is_ok_and(&succeeded);
        with_host(|host| host.end(committed));
        outcome.map_err(|panic| {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|text| (*text).to_owned()))
                .unwrap_or_default();
            format!("the engine trapped: {message}")
        })
    }

    /// `provision-tenant`.
    pub fn provision_tenant(&self, tenant: &TenantInfo) -> Result<(), String> {
        let wit_tenant = wit::TenantInfo {
            tenant_id: tenant.tenant_id.clone(),
            tenant_short_id: tenant.tenant_short_id.clone(),
            name: tenant.name.clone(),
        };
        self.call(
            Some(&tenant.tenant_id),
            None,
            || <Adapter<E>>::provision_tenant(wit_tenant),
            Result::is_ok,
        )?
    }

    /// `deprovision-tenant`.
    pub fn deprovision_tenant(&self, tenant_id: &str) -> Result<(), String> {
        let owned = tenant_id.to_owned();
        self.call(
            Some(tenant_id),
            None,
            || <Adapter<E>>::deprovision_tenant(owned),
            Result::is_ok,
        )?
    }

    /// `provision-user`.
    pub fn provision_user(&self, user: &UserInfo) -> Result<(), String> {
        let wit_user = wit::UserInfo {
            tenant_id: user.tenant_id.clone(),
            user_id: user.user_id.clone(),
            email: user.email.clone(),
            first_name: user.first_name.clone(),
            last_name: user.last_name.clone(),
            user_type: user.user_type.clone(),
        };
        self.call(
            Some(&user.tenant_id),
            None,
            || <Adapter<E>>::provision_user(wit_user),
            Result::is_ok,
        )?
    }

    /// `deprovision-user`.
    pub fn deprovision_user(&self, tenant_id: &str, user_id: &str) -> Result<(), String> {
        let (tenant, user) = (tenant_id.to_owned(), user_id.to_owned());
        self.call(
            Some(tenant_id),
            None,
            || <Adapter<E>>::deprovision_user(tenant, user),
            Result::is_ok,
        )?
    }

    /// A request to the engine's route `path_and_query` (`/api/v1/…?…`, as the host passes
    /// it: without the `/<code>` prefix) from the caller `ctx`, with `body`.
    pub fn request(
        &self,
        ctx: &Context,
        method: &str,
        path_and_query: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> TestResponse {
        let (path, query) = path_and_query
            .split_once('?')
            .unwrap_or((path_and_query, ""));
        let caller = wit_caller(ctx);
        let request = wit::Request {
            method: method.to_owned(),
            path: path.to_owned(),
            query: query.to_owned(),
            headers: headers
                .iter()
                .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
                .collect(),
            body: body.to_vec(),
        };
        let answered = self.call(
            Some(&ctx.tenant_id),
            Some(&ctx.user_id),
            || <Adapter<E>>::handle(caller, request),
            |response| (200..400).contains(&response.status),
        );
        match answered {
            Ok(response) => TestResponse {
                status: response.status,
                headers: response.headers,
                body: response.body,
            },
            Err(trap) => TestResponse {
                status: 500,
                headers: vec![("content-type".into(), "application/json".into())],
                body: serde_json::to_vec(&serde_json::json!({ "message": trap }))
                    .unwrap_or_default(),
            },
        }
    }

    /// `GET path_and_query`.
    pub fn get(&self, ctx: &Context, path_and_query: &str) -> TestResponse {
        self.request(ctx, "GET", path_and_query, &[], &[])
    }

    /// `DELETE path_and_query`.
    pub fn delete(&self, ctx: &Context, path_and_query: &str) -> TestResponse {
        self.request(ctx, "DELETE", path_and_query, &[], &[])
    }

    /// `POST path_and_query` with `body` as JSON.
    pub fn post_json<T: Serialize + ?Sized>(
        &self,
        ctx: &Context,
        path_and_query: &str,
        body: &T,
    ) -> TestResponse {
        self.with_json(ctx, "POST", path_and_query, body)
    }

    /// `PATCH path_and_query` with `body` as JSON.
    pub fn patch_json<T: Serialize + ?Sized>(
        &self,
        ctx: &Context,
        path_and_query: &str,
        body: &T,
    ) -> TestResponse {
        self.with_json(ctx, "PATCH", path_and_query, body)
    }

    /// `PUT path_and_query` with `body` as JSON.
    pub fn put_json<T: Serialize + ?Sized>(
        &self,
        ctx: &Context,
        path_and_query: &str,
        body: &T,
    ) -> TestResponse {
        self.with_json(ctx, "PUT", path_and_query, body)
    }

    fn with_json<T: Serialize + ?Sized>(
        &self,
        ctx: &Context,
        method: &str,
        path_and_query: &str,
        body: &T,
    ) -> TestResponse {
        let body = serde_json::to_vec(body).unwrap_or_default();
        self.request(
            ctx,
            method,
            path_and_query,
            &[("content-type", "application/json")],
            &body,
        )
    }

    /// Delivers `event` to `on-event`, as the host delivers an event the engine subscribed to.
    pub fn deliver(&self, event: &Event) -> Result<(), String> {
        let wit_event = wit::Event {
            id: event.id.clone(),
            event_type: event.event_type.clone(),
            tenant_id: event.tenant_id.clone(),
            occurred_at: event.occurred_at.clone(),
            actor_id: event.actor_id.clone(),
            correlation_id: event.correlation_id.clone(),
            payload: match &event.payload {
                serde_json::Value::String(text) => text.clone(),
                other => other.to_string(),
            },
        };
        self.call(
            Some(&event.tenant_id),
            None,
            || <Adapter<E>>::on_event(wit_event),
            Result::is_ok,
        )?
    }

    /// Runs the jobs due at `now_unix_ms` (in the order they are due), each a call of its own:
    /// a job that succeeds is gone, one that fails stays with its attempt counted. Returns
    /// each job run with its outcome.
    pub fn run_due_jobs(&self, now_unix_ms: u64) -> Vec<(ScheduledJob, Result<(), String>)> {
        let mut due: Vec<ScheduledJob> = with_host(|host| {
            host.jobs
                .iter()
                .filter(|job| job.at_unix_ms <= now_unix_ms)
                .cloned()
                .collect()
        });
        due.sort_by_key(|job| job.at_unix_ms);
        let mut ran = Vec::with_capacity(due.len());
        for job in due {
            let attempt = job.attempt + 1;
            let wit_job = wit::Job {
                id: job.id.clone(),
                tenant_id: job.tenant_id.clone(),
                payload: job.payload.clone(),
                attempt,
            };
            let outcome = self
                .call(
                    Some(&job.tenant_id),
                    None,
                    || <Adapter<E>>::run_job(wit_job),
                    Result::is_ok,
                )
                .and_then(|outcome| outcome);
            with_host(|host| {
                if outcome.is_ok() {
                    host.jobs.retain(|held| held.id != job.id);
                } else if let Some(held) = host.jobs.iter_mut().find(|held| held.id == job.id) {
                    held.attempt = attempt;
                }
            });
            ran.push((job, outcome));
        }
        ran
    }

    /// The jobs scheduled and not run (or failed) yet.
    pub fn jobs(&self) -> Vec<ScheduledJob> {
        with_host(|host| host.jobs.clone())
    }

    /// The events the engine published, in order (committed ones only). The host delivers
    /// them to the other engines subscribed, never back to the engine that published them.
    pub fn published(&self) -> Vec<PublishedEvent> {
        with_host(|host| host.published.clone())
    }

    /// The realtime events the engine published (`publish`, `publish-to-user`), committed
    /// ones only, in order: what the host delivers to the topics' subscribers.
    pub fn realtime_events(&self) -> Vec<RealtimeEvent> {
        with_host(|host| {
            host.realtime
                .iter()
                .filter_map(|sent| match sent {
                    fakes::Realtime::Event(event) => Some(event.clone()),
                    fakes::Realtime::End(_) => None,
                })
                .collect()
        })
    }

    /// The subscriptions the engine ended (`end-subscriptions`), committed ones only, in order.
    pub fn ended_subscriptions(&self) -> Vec<EndedSubscription> {
        with_host(|host| {
            host.realtime
                .iter()
                .filter_map(|sent| match sent {
                    fakes::Realtime::End(ended) => Some(ended.clone()),
                    fakes::Realtime::Event(_) => None,
                })
                .collect()
        })
    }

    /// Forgets the realtime events and ended subscriptions captured so far, so a test can look
    /// at what the next calls send.
    pub fn clear_realtime(&self) {
        with_host(|host| host.realtime.clear());
    }

    /// The outbound requests the engine made.
    pub fn outbound_requests(&self) -> Vec<OutboundRequest> {
        with_host(|host| host.requests.clone())
    }

    /// The mail the engine handed to the relay.
    pub fn mails(&self) -> Vec<OutgoingMail> {
        with_host(|host| host.mails.clone())
    }

    /// What the engine logged.
    pub fn logs(&self) -> Vec<(Level, String)> {
        with_host(|host| host.logs.clone())
    }

    /// The committed value under `key` in `tenant_id`'s storage.
    pub fn stored(&self, tenant_id: &str, key: &str) -> Option<Vec<u8>> {
        with_host(|host| {
            host.tenants
                .get(tenant_id)
                .and_then(|tenant| tenant.entries.get(key).cloned())
        })
    }

    /// The committed keys of `tenant_id`'s storage under `prefix`, in order.
    pub fn stored_keys(&self, tenant_id: &str, prefix: &str) -> Vec<String> {
        with_host(|host| {
            host.tenants.get(tenant_id).map_or_else(Vec::new, |tenant| {
                tenant
                    .entries
                    .keys()
                    .filter(|key| key.starts_with(prefix))
                    .cloned()
                    .collect()
            })
        })
    }

    /// The committed blob under `key` in `tenant_id`.
    pub fn blob(&self, tenant_id: &str, key: &str) -> Option<Vec<u8>> {
        with_host(|host| {
            host.tenants
                .get(tenant_id)
                .and_then(|tenant| tenant.blobs.get(key).cloned())
        })
    }

    /// Runs `f` as a call of the engine in `tenant_id` (its unit commits when `f` returns
    /// `Ok`): for tests of an engine's own functions that use the host imports directly.
    pub fn in_call<T>(
        &self,
        tenant_id: &str,
        f: impl FnOnce() -> Result<T, String>,
    ) -> Result<T, String> {
        self.call(Some(tenant_id), None, f, Result::is_ok)?
    }

    /// A job as `run-job` receives it (for calling the engine's own job handler directly).
    pub fn job_of(scheduled: &ScheduledJob) -> Job {
        Job {
            id: scheduled.id.clone(),
            tenant_id: scheduled.tenant_id.clone(),
            payload: scheduled.payload.clone(),
            attempt: scheduled.attempt + 1,
        }
    }
}
