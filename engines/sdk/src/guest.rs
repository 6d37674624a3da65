//! The exports of `tessera:engine/engine@0.3.0`: the [`Adapter`] that implements the generated
//! `Guest` trait for any [`Engine`] by converting between WIT records and the SDK's plain types.
//! The bindings themselves are generated in `generated.rs`; the host imports are `imports.rs`'s.

use std::marker::PhantomData;

use crate::context::Context;
use crate::engine::Engine;
use crate::generated::bindings;
use crate::request::Request;
use crate::response::Response;
use crate::types::{Descriptor, Event, Job, Permission, SettingKind, TenantInfo, UserInfo};

use bindings::exports::tessera::engine::guest as wit;

/// The plain [`Context`] of a WIT caller.
fn context_of(caller: wit::Caller) -> Context {
    Context {
        tenant_id: caller.tenant_id,
        workspace_id: caller.workspace_id,
        user_id: caller.user_id,
        role: caller.role,
        token_type: caller.token_type,
        correlation_id: caller.correlation_id,
    }
}

/// Implements the generated `Guest` trait for engine `E`; [`export_engine!`](crate::export_engine)
/// exports it.
#[doc(hidden)]
pub struct Adapter<E>(PhantomData<E>);

impl<E: Engine> wit::Guest for Adapter<E> {
    fn describe() -> wit::Descriptor {
        let Descriptor {
            code,
            name,
            version,
            requires_tenant_provision,
            requires_user_provision,
            subscriptions,
            outbound_hosts,
        } = E::describe();
        wit::Descriptor {
            code,
            name,
            version,
            requires_tenant_provision,
            requires_user_provision,
            subscriptions,
            outbound_hosts,
        }
    }

    fn describe_api() -> String {
        E::router().openapi().to_string()
    }

    fn describe_settings() -> Vec<wit::Setting> {
        E::settings()
            .into_iter()
            .map(|setting| wit::Setting {
                name: setting.name,
                kind: match setting.kind {
                    SettingKind::Text => bindings::tessera::engine::types::SettingKind::Text,
                    SettingKind::Integer => bindings::tessera::engine::types::SettingKind::Integer,
                    SettingKind::Boolean => bindings::tessera::engine::types::SettingKind::Boolean,
                    SettingKind::IntegerList => {
                        bindings::tessera::engine::types::SettingKind::IntegerList
                    }
                },
                default_value: setting.default_value,
                description: setting.description,
                secret: setting.secret,
            })
            .collect()
    }

    fn describe_permissions() -> Vec<wit::Permission> {
        E::permissions()
            .into_iter()
            .map(|permission| match permission {
                Permission::SendMail => wit::Permission::SendMail,
            })
            .collect()
    }

    fn describe_topics() -> Vec<String> {
        E::topics()
    }

    fn authorize_subscription(caller: wit::Caller, topic: String) -> bool {
        crate::storage::begin_call();
        E::authorize_subscription(&context_of(caller), &topic)
    }

    fn handle(caller: wit::Caller, request: wit::Request) -> wit::Response {
        crate::storage::begin_call();
        let ctx = context_of(caller);
        let mut plain = Request::new(&request.method, &request.path, &request.query);
        plain.headers = request.headers;
        plain.body = request.body;
        let Response {
            status,
            headers,
            body,
        } = E::handle(&ctx, plain);
        wit::Response {
            status,
            headers,
            body,
        }
    }

    fn provision_tenant(tenant: wit::TenantInfo) -> Result<(), String> {
        crate::storage::begin_call();
        E::provision_tenant(&TenantInfo {
            tenant_id: tenant.tenant_id,
            tenant_short_id: tenant.tenant_short_id,
            name: tenant.name,
        })
    }

    fn deprovision_tenant(tenant_id: String) -> Result<(), String> {
        crate::storage::begin_call();
        E::deprovision_tenant(&tenant_id)
    }

    fn provision_user(user: wit::UserInfo) -> Result<(), String> {
        crate::storage::begin_call();
        E::provision_user(&UserInfo {
            tenant_id: user.tenant_id,
            user_id: user.user_id,
            email: user.email,
            first_name: user.first_name,
            last_name: user.last_name,
            user_type: user.user_type,
        })
    }

    fn deprovision_user(tenant_id: String, user_id: String) -> Result<(), String> {
        crate::storage::begin_call();
        E::deprovision_user(&tenant_id, &user_id)
    }

    fn on_event(event: wit::Event) -> Result<(), String> {
        // The events of a batch are calls of their own on one instance, as are the calls on an
        // instance the host kept warm: each starts with the whole scan budget, as the host
        // counts it.
        crate::storage::begin_call();
        E::on_event(&Event {
            id: event.id,
            event_type: event.event_type,
            tenant_id: event.tenant_id,
            occurred_at: event.occurred_at,
            actor_id: event.actor_id,
            correlation_id: event.correlation_id,
            // The host publishes JSON objects only; text that is not JSON stays a string.
            payload: serde_json::from_str(&event.payload)
                .unwrap_or(serde_json::Value::String(event.payload)),
        })
    }

    fn run_job(job: wit::Job) -> Result<(), String> {
        crate::storage::begin_call();
        E::run_job(&Job {
            id: job.id,
            tenant_id: job.tenant_id,
            payload: job.payload,
            attempt: job.attempt,
        })
    }
}
