//! The `guest` exports of one engine instance, whatever the world version its component was
//! built for (0.1, 0.2 or 0.3), called on the store the instance lives in; or the
//! `incoming-handler` of a `wasi:http` component, which has no other export.

use wasmtime::Store;

use crate::bindings::v0_3::{self, tessera::engine::types as wit};
use crate::bindings::{v0_1, v0_2};
use crate::imports::StoreState;
use wasmtime_wasi_http::p2::bindings::exports::wasi::http::incoming_handler::Guest as IncomingHandler;

/// The `guest` exports of one instance, whatever its world version; 0.1's lack the
/// self-description of 0.2 (`describe-api` answers `{}`, `describe-settings` nothing), and
/// 0.1's and 0.2's the topics of 0.3 (none: every subscription is refused).
pub enum Guest {
    V0_1(v0_1::exports::tessera::engine::guest::Guest),
    V0_2(v0_2::exports::tessera::engine::guest::Guest),
    V0_3(v0_3::exports::tessera::engine::guest::Guest),
    /// A `wasi:http` component's handler (`wasi_http.rs`): it answers requests only; its
    /// self-description is the host's (`registry.rs`), and it gets no lifecycle calls, events
    /// or jobs.
    WasiHttp(IncomingHandler),
}

/// What a `wasi:http` component is asked for an engine-world export it does not have.
fn not_exported(export: &str) -> wasmtime::Error {
    wasmtime::Error::msg(format!(
        "a wasi:http component has no {export} export (only native engines get lifecycle calls, events and jobs)"
    ))
}

/// Forwards a `guest` export of 0.2 and later; 0.1 answers `$old`.
macro_rules! forward_since_0_2 {
    ($guest:expr, $store:expr, $name:ident, $old:expr) => {
        match $guest {
            Self::V0_1(_) | Self::WasiHttp(_) => Ok($old),
            Self::V0_2(guest) => guest.$name($store).await,
            Self::V0_3(guest) => guest.$name($store).await,
        }
    };
}

/// Forwards a `guest` export present in every world version.
macro_rules! forward {
    ($(#[$doc:meta])* $name:ident($($argument:ident: $type:ty),*) -> $output:ty) => {
        $(#[$doc])*
        pub async fn $name(
            &self,
            store: &mut Store<StoreState>,
            $($argument: $type),*
        ) -> wasmtime::Result<$output> {
            match self {
                Self::V0_1(guest) => guest.$name(store, $($argument),*).await,
                Self::V0_2(guest) => guest.$name(store, $($argument),*).await,
                Self::V0_3(guest) => guest.$name(store, $($argument),*).await,
                Self::WasiHttp(_) => Err(not_exported(stringify!($name))),
            }
        }
    };
}

impl Guest {
    forward!(call_describe() -> wit::Descriptor);
    forward!(call_handle(caller: &wit::Caller, request: &wit::Request) -> wit::Response);
    forward!(call_provision_tenant(tenant: &wit::TenantInfo) -> Result<(), String>);
    forward!(call_deprovision_tenant(tenant_id: &str) -> Result<(), String>);
    forward!(call_provision_user(user: &wit::UserInfo) -> Result<(), String>);
    forward!(call_deprovision_user(tenant_id: &str, user_id: &str) -> Result<(), String>);
    forward!(call_on_event(event: &wit::Event) -> Result<(), String>);
    forward!(call_run_job(job: &wit::Job) -> Result<(), String>);

    /// The engine's OpenAPI fragment (JSON text); `{}` from a 0.1 engine.
    pub async fn call_describe_api(
        &self,
        store: &mut Store<StoreState>,
    ) -> wasmtime::Result<String> {
        forward_since_0_2!(self, store, call_describe_api, "{}".to_owned())
    }

    /// The permissions the engine asks for; none from a 0.1 engine.
    pub async fn call_describe_permissions(
        &self,
        store: &mut Store<StoreState>,
    ) -> wasmtime::Result<Vec<tessera_wire::engine::Permission>> {
        let permissions: Vec<wit::Permission> =
            forward_since_0_2!(self, store, call_describe_permissions, Vec::new())?;
        Ok(permissions
            .into_iter()
            .map(|permission| match permission {
                wit::Permission::SendMail => tessera_wire::engine::Permission::SendMail,
            })
            .collect())
    }

    /// The settings the engine declares; none from a 0.1 engine.
    pub async fn call_describe_settings(
        &self,
        store: &mut Store<StoreState>,
    ) -> wasmtime::Result<Vec<tessera_wire::engine::Setting>> {
        use tessera_wire::engine::{Setting, SettingKind};
        let settings: Vec<wit::Setting> =
            forward_since_0_2!(self, store, call_describe_settings, Vec::new())?;
        Ok(settings
            .into_iter()
            .map(|setting| Setting {
                name: setting.name,
                kind: match setting.kind {
                    wit::SettingKind::Text => SettingKind::Text,
                    wit::SettingKind::Integer => SettingKind::Integer,
                    wit::SettingKind::Boolean => SettingKind::Boolean,
                    wit::SettingKind::IntegerList => SettingKind::IntegerList,
                },
                default_value: setting.default_value,
                description: setting.description,
                secret: setting.secret,
            })
            .collect())
    }

    /// The topic patterns the engine owns; none before 0.3.
    pub async fn call_describe_topics(
        &self,
        store: &mut Store<StoreState>,
    ) -> wasmtime::Result<Vec<String>> {
        match self {
            Self::V0_1(_) | Self::V0_2(_) | Self::WasiHttp(_) => Ok(Vec::new()),
            Self::V0_3(guest) => guest.call_describe_topics(store).await,
        }
    }

    /// Whether `caller` may subscribe to the engine's `topic`; never before 0.3.
    pub async fn call_authorize_subscription(
        &self,
        store: &mut Store<StoreState>,
        caller: &wit::Caller,
        topic: &str,
    ) -> wasmtime::Result<bool> {
        match self {
            Self::V0_1(_) | Self::V0_2(_) | Self::WasiHttp(_) => Ok(false),
            Self::V0_3(guest) => {
                guest
                    .call_authorize_subscription(store, caller, topic)
                    .await
            }
        }
    }

    /// Hands `request` to a `wasi:http` component (`wasi_http::handle`); an engine-world
    /// component has no `incoming-handler`.
    pub async fn call_incoming_handler(
        &self,
        store: &mut Store<StoreState>,
        request: http::Request<bytes::Bytes>,
        max_response_bytes: usize,
    ) -> wasmtime::Result<wit::Response> {
        match self {
            Self::WasiHttp(handler) => {
                crate::wasi_http::handle(handler, store, request, max_response_bytes).await
            }
            _ => Err(wasmtime::Error::msg(
                "an engine-world component has no wasi:http/incoming-handler",
            )),
        }
    }
}
