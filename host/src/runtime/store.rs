//! The state of one call's store and the host side of the engine world's imports. Every import
//! acts in the call's scope (engine code, tenant) as the host set it; an engine has no way to
//! name another engine or another tenant.

use wasmtime::component::ResourceTable;
use wasmtime::{StoreLimits, StoreLimitsBuilder};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use super::bindings::v0_1::tessera::engine as world;
use crate::storage::Database;
use crate::storage::engine_kv::{self, KvScope};

/// Longest key an engine may store, in bytes.
pub const MAX_KEY_BYTES: usize = 1024;
/// Largest value an engine may store, in bytes.
pub const MAX_VALUE_BYTES: usize = 4 * 1024 * 1024;
/// Most entries one `list` returns.
pub const MAX_LIST_LIMIT: u32 = 1000;

/// Who a call acts for, set by the host before the call.
#[derive(Debug, Clone)]
pub struct CallScope {
    pub engine_code: String,
    /// `None` for calls outside any tenant (`describe`): storage is refused there.
    pub tenant_id: Option<String>,
    pub correlation_id: Option<String>,
}

/// What the host lends every store.
#[derive(Clone)]
pub struct HostServices {
    pub database: Database,
}

pub struct StoreState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub(super) limits: StoreLimits,
    scope: CallScope,
    services: HostServices,
}

impl StoreState {
    /// A store state with WASI clocks and randomness only (no filesystem, environment,
    /// arguments or sockets) and a cap on linear memory.
    pub fn new(scope: CallScope, services: HostServices, memory_limit_bytes: usize) -> Self {
        Self {
            wasi: WasiCtx::builder().build(),
            table: ResourceTable::new(),
            limits: StoreLimitsBuilder::new()
                .memory_size(memory_limit_bytes)
                .trap_on_grow_failure(true)
                .build(),
            scope,
            services,
        }
    }

    fn kv_scope(&self) -> Result<KvScope<'_>, String> {
        match &self.scope.tenant_id {
            Some(tenant_id) => Ok(KvScope {
                engine_code: &self.scope.engine_code,
                tenant_id,
            }),
            None => Err("storage is only available in calls made for a tenant".into()),
        }
    }

    /// Logs a failure of the host side of an import and hands the engine a plain message.
    fn storage_failure(&self, error: anyhow::Error) -> String {
        tracing::error!(
            engine = %self.scope.engine_code,
            correlation_id = self.scope.correlation_id.as_deref().unwrap_or(""),
            error = format!("{error:#}"),
            "engine storage failed"
        );
        "storage is temporarily unavailable".into()
    }
}

impl WasiView for StoreState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

fn check_key(key: &str) -> Result<(), String> {
    if key.len() > MAX_KEY_BYTES {
        return Err(format!("keys are at most {MAX_KEY_BYTES} bytes"));
    }
    Ok(())
}

impl world::types::Host for StoreState {}

impl world::storage::Host for StoreState {
    async fn get(&mut self, key: String) -> wasmtime::Result<Result<Option<Vec<u8>>, String>> {
        let scope = match self.kv_scope() {
            Ok(scope) => scope,
            Err(message) => return Ok(Err(message)),
        };
        Ok(
            match engine_kv::get(&self.services.database, &scope, &key).await {
                Ok(value) => Ok(value),
                Err(error) => Err(self.storage_failure(error)),
            },
        )
    }

    async fn set(&mut self, key: String, value: Vec<u8>) -> wasmtime::Result<Result<(), String>> {
        if let Err(message) = check_key(&key) {
            return Ok(Err(message));
        }
        if value.len() > MAX_VALUE_BYTES {
            return Ok(Err(format!("values are at most {MAX_VALUE_BYTES} bytes")));
        }
        let scope = match self.kv_scope() {
            Ok(scope) => scope,
            Err(message) => return Ok(Err(message)),
        };
        Ok(
            match engine_kv::set(&self.services.database, &scope, &key, &value).await {
                Ok(()) => Ok(()),
                Err(error) => Err(self.storage_failure(error)),
            },
        )
    }

    async fn delete(&mut self, key: String) -> wasmtime::Result<Result<bool, String>> {
        let scope = match self.kv_scope() {
            Ok(scope) => scope,
            Err(message) => return Ok(Err(message)),
        };
        Ok(
            match engine_kv::delete(&self.services.database, &scope, &key).await {
                Ok(existed) => Ok(existed),
                Err(error) => Err(self.storage_failure(error)),
            },
        )
    }

    async fn scan(
        &mut self,
        prefix: String,
        after: Option<String>,
        limit: u32,
        reverse: bool,
    ) -> wasmtime::Result<Result<Vec<(String, Vec<u8>)>, String>> {
        let scope = match self.kv_scope() {
            Ok(scope) => scope,
            Err(message) => return Ok(Err(message)),
        };
        let limit = limit.min(MAX_LIST_LIMIT);
        Ok(
            match engine_kv::list(
                &self.services.database,
                &scope,
                &prefix,
                after.as_deref(),
                limit,
                reverse,
            )
            .await
            {
                Ok(entries) => Ok(entries),
                Err(error) => Err(self.storage_failure(error)),
            },
        )
    }

    async fn delete_prefix(&mut self, prefix: String) -> wasmtime::Result<Result<u64, String>> {
        let scope = match self.kv_scope() {
            Ok(scope) => scope,
            Err(message) => return Ok(Err(message)),
        };
        Ok(
            match engine_kv::delete_prefix(&self.services.database, &scope, &prefix).await {
                Ok(count) => Ok(count),
                Err(error) => Err(self.storage_failure(error)),
            },
        )
    }
}

impl world::scheduler::Host for StoreState {
    async fn schedule(
        &mut self,
        _at_unix_ms: u64,
        _payload: Vec<u8>,
    ) -> wasmtime::Result<Result<String, String>> {
        Ok(Err(
            "this host does not offer the durable scheduler yet".into()
        ))
    }

    async fn cancel(&mut self, _job_id: String) -> wasmtime::Result<Result<bool, String>> {
        Ok(Err(
            "this host does not offer the durable scheduler yet".into()
        ))
    }
}

impl world::events::Host for StoreState {
    async fn publish(
        &mut self,
        event_type: String,
        _payload: String,
    ) -> wasmtime::Result<Result<(), String>> {
        tracing::debug!(engine = %self.scope.engine_code, %event_type, "event publishing refused: no bus yet");
        Ok(Err("this host does not offer the event bus yet".into()))
    }
}

impl world::outbound_http::Host for StoreState {
    async fn fetch(
        &mut self,
        request: world::outbound_http::OutboundRequest,
    ) -> wasmtime::Result<Result<world::outbound_http::OutboundResponse, String>> {
        // Deny by default: no engine has an outbound allow-list yet.
        tracing::warn!(engine = %self.scope.engine_code, url = %request.url, "outbound HTTP refused by policy");
        Ok(Err(format!(
            "outbound HTTP is not allowed for the engine {}",
            self.scope.engine_code
        )))
    }
}

impl world::log::Host for StoreState {
    async fn log(&mut self, level: world::log::Level, message: String) -> wasmtime::Result<()> {
        let engine = self.scope.engine_code.as_str();
        let correlation_id = self.scope.correlation_id.as_deref().unwrap_or("");
        match level {
            world::log::Level::Trace => tracing::trace!(engine, correlation_id, "{message}"),
            world::log::Level::Debug => tracing::debug!(engine, correlation_id, "{message}"),
            world::log::Level::Info => tracing::info!(engine, correlation_id, "{message}"),
            world::log::Level::Warn => tracing::warn!(engine, correlation_id, "{message}"),
            world::log::Level::Error => tracing::error!(engine, correlation_id, "{message}"),
        }
        Ok(())
    }
}
