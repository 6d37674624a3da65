//! The state of one call's store and the host side of the engine world's imports. Every import
//! acts in the call's scope (engine code, tenant) as the host set it; an engine has no way to
//! name another engine or another tenant.

use std::sync::Arc;

use wasmtime::component::ResourceTable;
use wasmtime::{StoreLimits, StoreLimitsBuilder};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use super::batch_reader::BatchReader;
use super::batch_writer::{BatchWriter, StorageBatch};
use super::bindings::v0_2::tessera::engine as world;
use super::bus::{BusEvent, EventBus, check_event_type};
use super::engine_settings::SharedSettingValues;
use super::mail_transport::MailTransport;
use super::outbound::{AllowedHosts, FetchCaller, FetchRequest, OutboundClient};
use super::vault::Vault;
use super::work::{MAX_PAYLOAD_BYTES, NewWork, WorkKind, WorkQueue};
use tessera_storage::Database;
use tessera_storage::engine_kv::{self, KvScope};

/// Longest key an engine may store, in bytes.
pub const MAX_KEY_BYTES: usize = 1024;
/// Largest value an engine may store, in bytes.
pub const MAX_VALUE_BYTES: usize = 4 * 1024 * 1024;
/// Most sets, deletes and jobs in one `write-batch`.
pub const MAX_BATCH_ENTRIES: usize = 10_000;
/// Largest total of the values of one `write-batch`.
pub const MAX_BATCH_BYTES: usize = 16 * 1024 * 1024;

/// Who a call acts for, set by the host before the call.
#[derive(Debug, Clone)]
pub struct CallScope {
    pub engine_code: String,
    /// `None` for calls outside any tenant (`describe`): storage is refused there.
    pub tenant_id: Option<String>,
    pub correlation_id: Option<String>,
    /// The user whose request this call serves (`handle`); events the call publishes carry
    /// them as their actor. `None` for jobs, events and lifecycle calls.
    pub actor_id: Option<String>,
    /// The outbound hosts the engine declared (`LoadedEngine::outbound_hosts`); the operator's
    /// list replaces them at call time when it names the engine. Empty outside an engine.
    pub outbound_hosts: Arc<AllowedHosts>,
    /// The engine's declared settings and their values (`settings.get`).
    pub settings: SharedSettingValues,
    /// Whether `mail-transport.send` is granted to the engine (`MailTransport::grants`).
    pub may_send_mail: bool,
}

impl CallScope {
    /// The scope of a call outside any engine and tenant (`describe`).
    pub fn outside_engines() -> Self {
        Self {
            engine_code: String::new(),
            tenant_id: None,
            correlation_id: None,
            actor_id: None,
            outbound_hosts: Arc::default(),
            settings: Arc::default(),
            may_send_mail: false,
        }
    }
}

/// What the host lends every store.
#[derive(Clone)]
pub struct HostServices {
    pub database: Database,
    /// The one outbound HTTP client and its policy.
    pub outbound: Arc<OutboundClient>,
    /// Durable jobs and event deliveries.
    pub queue: WorkQueue,
    /// Batched reads of `storage.get` and `storage.get-many` calls.
    pub batch_reader: BatchReader,
    /// Group commit of `storage.write-batch` calls.
    pub batch_writer: BatchWriter,
    /// The event bus (subscriptions kept in step with the registry).
    pub bus: EventBus,
    /// Seals and opens engines' secrets.
    pub vault: Vault,
    /// What the `settings` import answers.
    pub settings: Arc<EngineSettings>,
    /// The SMTP relay of the `mail-transport` import.
    pub mail_transport: Arc<MailTransport>,
}

/// The host's own settings every engine may read (`settings.get` of a name with a dot); names
/// in `wit/engine.wit`. An engine's declared settings are in its call scope.
#[derive(Debug, Clone)]
pub struct EngineSettings {
    /// `webhook.retry-schedule-ms`.
    pub webhook_retry_schedule_ms: String,
    /// `engine.max-body-bytes`.
    pub max_body_bytes: u64,
    /// Whether an SMTP relay is configured (half of `mail-transport.available`).
    pub mail_relay_configured: bool,
    /// `storage.scan-page` and `storage.scan-budget`: what one call may scan.
    pub scans: crate::config::EngineScanConfig,
}

impl EngineSettings {
    pub fn new(config: crate::config::RuntimeSetup<'_>) -> Self {
        Self {
            webhook_retry_schedule_ms: config
                .webhook
                .retry_schedule
                .iter()
                .map(|delay| delay.as_millis().to_string())
                .collect::<Vec<_>>()
                .join(","),
            max_body_bytes: u64::try_from(config.runtime.max_request_bytes).unwrap_or(u64::MAX),
            mail_relay_configured: config.smtp.url.is_some(),
            scans: config.engine_scans,
        }
    }

    /// The host setting `name` as `scope`'s engine reads it; `None` for a name the host does
    /// not have.
    pub fn get(&self, name: &str, scope: &CallScope) -> Option<String> {
        match name {
            "webhook.retry-schedule-ms" => Some(self.webhook_retry_schedule_ms.clone()),
            "engine.max-body-bytes" => Some(self.max_body_bytes.to_string()),
            "mail-transport.available" => {
                Some((self.mail_relay_configured && scope.may_send_mail).to_string())
            }
            "storage.scan-page" => Some(self.scans.page.to_string()),
            "storage.scan-budget" => Some(self.scans.budget.to_string()),
            _ => None,
        }
    }
}

impl HostServices {
    /// The services of a host (server or admin CLI) configured by `config`.
    pub fn new(
        config: crate::config::RuntimeSetup<'_>,
        database: Database,
    ) -> anyhow::Result<Self> {
        let queue = WorkQueue::new(database.clone());
        let service_secret = config.service_secret;
        Ok(Self {
            batch_reader: BatchReader::start(database.clone()),
            batch_writer: BatchWriter::start(database.clone(), queue.clone()),
            database,
            outbound: Arc::new(OutboundClient::new(config)?),
            bus: EventBus::new(queue.clone()),
            queue,
            vault: Vault::new(service_secret.expose()),
            settings: Arc::new(EngineSettings::new(config)),
            mail_transport: Arc::new(MailTransport::new(config.smtp)?),
        })
    }
}

pub struct StoreState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub(super) limits: StoreLimits,
    pub(super) scope: CallScope,
    pub(super) services: HostServices,
    /// Entries the `storage.scan` calls of this call returned so far (its scan budget).
    scanned: u64,
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
            scanned: 0,
        }
    }

    pub(super) fn kv_scope(&self) -> Result<KvScope<'_>, String> {
        Ok(KvScope {
            engine_code: &self.scope.engine_code,
            tenant_id: self.tenant("storage")?,
        })
    }

    /// The tenant of the call, for imports that act in one.
    pub(super) fn tenant(&self, what: &str) -> Result<&str, String> {
        self.scope
            .tenant_id
            .as_deref()
            .ok_or_else(|| format!("{what} is only available in calls made for a tenant"))
    }

    /// The values under `keys` in the call's scope, through the host's batched reader.
    async fn read(&mut self, keys: Vec<String>) -> Result<Vec<Option<Vec<u8>>>, String> {
        let scope = self.kv_scope()?;
        let (engine_code, tenant_id) = (scope.engine_code.to_owned(), scope.tenant_id.to_owned());
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let reader = self.services.batch_reader.clone();
        match reader.get(engine_code, tenant_id, keys).await {
            Ok(values) => Ok(values),
            Err(error) => Err(self.import_failure("storage", error)),
        }
    }

    /// Logs a failure of the host side of an import and hands the engine a plain message.
    pub(super) fn import_failure(&self, import: &str, error: anyhow::Error) -> String {
        tracing::error!(
            engine = %self.scope.engine_code,
            correlation_id = self.scope.correlation_id.as_deref().unwrap_or(""),
            error = format!("{error:#}"),
            "engine {import} failed"
        );
        format!("{import} is temporarily unavailable")
    }

    /// `(at-unix-ms, payload)` jobs of this engine and tenant, checked.
    fn new_jobs(&self, jobs: Vec<(u64, Vec<u8>)>) -> Result<Vec<NewWork>, String> {
        let tenant_id = self.tenant("the scheduler")?.to_owned();
        let mut work = Vec::with_capacity(jobs.len());
        for (at_unix_ms, payload) in jobs {
            if payload.len() > MAX_PAYLOAD_BYTES {
                return Err(format!(
                    "job payloads are at most {MAX_PAYLOAD_BYTES} bytes"
                ));
            }
            // A time in the past is due now; beyond what a timestamp holds is refused.
            let due_at = i64::try_from(at_unix_ms)
                .ok()
                .and_then(chrono::DateTime::from_timestamp_millis)
                .filter(|due_at| due_at.timestamp() < 253_402_300_800)
                .ok_or_else(|| format!("{at_unix_ms} is not a time the scheduler accepts"))?;
            work.push(NewWork {
                engine_code: self.scope.engine_code.clone(),
                tenant_id: tenant_id.clone(),
                kind: WorkKind::Job,
                payload,
                due_at,
            });
        }
        Ok(work)
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

pub(super) fn check_key(key: &str) -> Result<(), String> {
    if key.len() > MAX_KEY_BYTES {
        return Err(format!("keys are at most {MAX_KEY_BYTES} bytes"));
    }
    Ok(())
}

/// The limits of one batch of storage writes: `sets`, `deletes` and `others` further entries
/// (jobs, blobs) of the same transaction.
pub(super) fn check_batch(
    sets: &[(String, Vec<u8>)],
    deletes: &[String],
    others: usize,
) -> Result<(), String> {
    if sets.len() + deletes.len() + others > MAX_BATCH_ENTRIES {
        return Err(format!(
            "a batch holds at most {MAX_BATCH_ENTRIES} sets, deletes and jobs"
        ));
    }
    for key in sets.iter().map(|(key, _)| key).chain(deletes) {
        check_key(key)?;
    }
    let total: usize = sets.iter().map(|(_, value)| value.len()).sum();
    if sets.iter().any(|(_, value)| value.len() > MAX_VALUE_BYTES) || total > MAX_BATCH_BYTES {
        return Err(format!(
            "values are at most {MAX_VALUE_BYTES} bytes, and a batch at most {MAX_BATCH_BYTES}"
        ));
    }
    Ok(())
}

impl world::types::Host for StoreState {}

impl world::storage::Host for StoreState {
    async fn get(&mut self, key: String) -> wasmtime::Result<Result<Option<Vec<u8>>, String>> {
        Ok(self
            .read(vec![key])
            .await
            .map(|mut values| values.remove(0)))
    }

    async fn get_many(
        &mut self,
        keys: Vec<String>,
    ) -> wasmtime::Result<Result<Vec<Option<Vec<u8>>>, String>> {
        if keys.len() > engine_kv::MAX_GET_MANY {
            return Ok(Err(format!(
                "get-many reads at most {} keys",
                engine_kv::MAX_GET_MANY
            )));
        }
        Ok(self.read(keys).await)
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
                Err(error) => Err(self.import_failure("storage", error)),
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
                Err(error) => Err(self.import_failure("storage", error)),
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
        if limit == 0 {
            return Ok(Ok(Vec::new()));
        }
        // At most a page per scan, and at most the budget over all the scans of this call.
        let scans = self.services.settings.scans;
        let left = scans.budget.saturating_sub(self.scanned);
        if left == 0 {
            return Ok(Err(format!(
                "scan budget exhausted: this call already scanned {} entries, the most one \
                 engine call may (TESSERA_ENGINE_SCAN_BUDGET); continue in another call",
                scans.budget
            )));
        }
        let limit = limit
            .min(scans.page)
            .min(u32::try_from(left).unwrap_or(u32::MAX));
        let listed = engine_kv::list(
            &self.services.database,
            &scope,
            &prefix,
            after.as_deref(),
            limit,
            reverse,
        )
        .await;
        Ok(match listed {
            Ok(entries) => {
                self.scanned += entries.len() as u64;
                Ok(entries)
            }
            Err(error) => Err(self.import_failure("storage", error)),
        })
    }

    async fn delete_prefix(&mut self, prefix: String) -> wasmtime::Result<Result<u64, String>> {
        let scope = match self.kv_scope() {
            Ok(scope) => scope,
            Err(message) => return Ok(Err(message)),
        };
        Ok(
            match engine_kv::delete_prefix(&self.services.database, &scope, &prefix).await {
                Ok(count) => Ok(count),
                Err(error) => Err(self.import_failure("storage", error)),
            },
        )
    }

    async fn compare_and_swap(
        &mut self,
        key: String,
        expected: Option<Vec<u8>>,
        value: Option<Vec<u8>>,
    ) -> wasmtime::Result<Result<bool, String>> {
        if let Err(message) = check_key(&key) {
            return Ok(Err(message));
        }
        if value
            .as_ref()
            .is_some_and(|value| value.len() > MAX_VALUE_BYTES)
        {
            return Ok(Err(format!("values are at most {MAX_VALUE_BYTES} bytes")));
        }
        let scope = match self.kv_scope() {
            Ok(scope) => scope,
            Err(message) => return Ok(Err(message)),
        };
        Ok(
            match engine_kv::compare_and_swap(
                &self.services.database,
                &scope,
                &key,
                expected.as_deref(),
                value.as_deref(),
            )
            .await
            {
                Ok(swapped) => Ok(swapped),
                Err(error) => Err(self.import_failure("storage", error)),
            },
        )
    }

    async fn write_batch(
        &mut self,
        sets: Vec<(String, Vec<u8>)>,
        deletes: Vec<String>,
        jobs: Vec<(u64, Vec<u8>)>,
    ) -> wasmtime::Result<Result<Vec<String>, String>> {
        if let Err(message) = check_batch(&sets, &deletes, jobs.len()) {
            return Ok(Err(message));
        }
        let work = match self.new_jobs(jobs) {
            Ok(work) => work,
            Err(message) => return Ok(Err(message)),
        };
        let tenant_id = match self.tenant("storage") {
            Ok(tenant_id) => tenant_id.to_owned(),
            Err(message) => return Ok(Err(message)),
        };
        let batch = StorageBatch {
            engine_code: self.scope.engine_code.clone(),
            tenant_id,
            expect: Vec::new(),
            sets,
            deletes,
            add: Vec::new(),
            jobs: work,
        };
        Ok(match self.services.batch_writer.write(batch).await {
            Ok(ids) => Ok(ids),
            Err(error) => Err(self.import_failure("storage", error)),
        })
    }

    async fn transact(
        &mut self,
        transaction: world::storage::Transaction,
    ) -> wasmtime::Result<Result<Option<Vec<String>>, String>> {
        let world::storage::Transaction {
            expect,
            sets,
            deletes,
            add,
            jobs,
        } = transaction;
        if let Err(message) = check_transaction(&expect, &sets, &deletes, &add, jobs.len()) {
            return Ok(Err(message));
        }
        let work = match self.new_jobs(jobs) {
            Ok(work) => work,
            Err(message) => return Ok(Err(message)),
        };
        let tenant_id = match self.tenant("storage") {
            Ok(tenant_id) => tenant_id.to_owned(),
            Err(message) => return Ok(Err(message)),
        };
        let batch = StorageBatch {
            engine_code: self.scope.engine_code.clone(),
            tenant_id,
            expect,
            sets,
            deletes,
            add,
            jobs: work,
        };
        Ok(
            match self.services.batch_writer.write_conditional(batch).await {
                Ok(outcome) => Ok(outcome),
                Err(error) => Err(self.import_failure("storage", error)),
            },
        )
    }
}

/// The limits of a `transact`: those of `write-batch` over all its entries, and counters that
/// are neither set nor deleted by the same transaction.
fn check_transaction(
    expect: &[(String, Option<Vec<u8>>)],
    sets: &[(String, Vec<u8>)],
    deletes: &[String],
    add: &[(String, i64)],
    jobs: usize,
) -> Result<(), String> {
    check_batch(sets, deletes, jobs + expect.len() + add.len())?;
    for key in expect
        .iter()
        .map(|(key, _)| key)
        .chain(add.iter().map(|(key, _)| key))
    {
        check_key(key)?;
    }
    let written: std::collections::HashSet<&str> = sets
        .iter()
        .map(|(key, _)| key.as_str())
        .chain(deletes.iter().map(String::as_str))
        .collect();
    if let Some((key, _)) = add.iter().find(|(key, _)| written.contains(key.as_str())) {
        return Err(format!(
            "{key} is both added to and set or deleted by one transaction"
        ));
    }
    Ok(())
}

impl world::scheduler::Host for StoreState {
    async fn schedule(
        &mut self,
        at_unix_ms: u64,
        payload: Vec<u8>,
    ) -> wasmtime::Result<Result<String, String>> {
        let work = match self.new_jobs(vec![(at_unix_ms, payload)]) {
            Ok(work) => work,
            Err(message) => return Ok(Err(message)),
        };
        let queue = self.services.queue.clone();
        Ok(match queue.enqueue(&work).await {
            Ok(mut ids) => Ok(ids.remove(0)),
            Err(error) => Err(self.import_failure("the scheduler", error)),
        })
    }

    async fn cancel(&mut self, job_id: String) -> wasmtime::Result<Result<bool, String>> {
        let tenant_id = match self.tenant("the scheduler") {
            Ok(tenant_id) => tenant_id.to_owned(),
            Err(message) => return Ok(Err(message)),
        };
        Ok(
            match self
                .services
                .queue
                .cancel_job(&self.scope.engine_code, &tenant_id, &job_id)
                .await
            {
                Ok(cancelled) => Ok(cancelled),
                Err(error) => Err(self.import_failure("the scheduler", error)),
            },
        )
    }
}

impl world::events::Host for StoreState {
    async fn publish(
        &mut self,
        event_type: String,
        payload: String,
    ) -> wasmtime::Result<Result<(), String>> {
        let tenant_id = match self.tenant("publishing events") {
            Ok(tenant_id) => tenant_id.to_owned(),
            Err(message) => return Ok(Err(message)),
        };
        if let Err(message) = check_event_type(&event_type) {
            return Ok(Err(message));
        }
        if payload.len() > MAX_PAYLOAD_BYTES {
            return Ok(Err(format!("events are at most {MAX_PAYLOAD_BYTES} bytes")));
        }
        let payload = match serde_json::from_str::<serde_json::Value>(&payload) {
            Ok(payload @ serde_json::Value::Object(_)) => payload,
            _ => return Ok(Err("an event payload is a JSON object".into())),
        };
        let event = BusEvent {
            id: uuid::Uuid::new_v4().to_string(),
            event_type,
            tenant_id,
            occurred_at: tessera_storage::time::now(),
            actor_id: self.scope.actor_id.clone(),
            correlation_id: self
                .scope
                .correlation_id
                .clone()
                .unwrap_or_else(|| uuid::Uuid::new_v4().to_string()),
            payload,
        };
        Ok(
            match self
                .services
                .bus
                .publish(&event, Some(&self.scope.engine_code))
                .await
            {
                Ok(deliveries) => {
                    tracing::debug!(engine = %self.scope.engine_code, event_type = %event.event_type, deliveries, "event published");
                    Ok(())
                }
                Err(error) => Err(self.import_failure("publishing events", error)),
            },
        )
    }
}

impl world::outbound_http::Host for StoreState {
    async fn fetch(
        &mut self,
        request: world::outbound_http::OutboundRequest,
    ) -> wasmtime::Result<Result<world::outbound_http::OutboundResponse, String>> {
        let outbound = &self.services.outbound;
        let allowed = outbound.allowed_hosts(&self.scope.engine_code, &self.scope.outbound_hosts);
        let caller = FetchCaller {
            engine_code: &self.scope.engine_code,
            correlation_id: self.scope.correlation_id.as_deref().unwrap_or(""),
        };
        let request = FetchRequest {
            method: request.method,
            url: request.url,
            headers: request.headers,
            body: request.body,
            timeout_ms: request.timeout_ms,
        };
        Ok(outbound
            .fetch(caller, allowed, request)
            .await
            .map(|response| world::outbound_http::OutboundResponse {
                status: response.status,
                headers: response.headers,
                body: response.body,
                elapsed_ms: response.elapsed_ms,
            }))
    }

    async fn check_target(&mut self, url: String) -> wasmtime::Result<Result<(), String>> {
        let outbound = &self.services.outbound;
        let allowed = outbound.allowed_hosts(&self.scope.engine_code, &self.scope.outbound_hosts);
        let caller = FetchCaller {
            engine_code: &self.scope.engine_code,
            correlation_id: self.scope.correlation_id.as_deref().unwrap_or(""),
        };
        Ok(outbound.check_target(caller, allowed, &url).await)
    }
}

impl world::vault::Host for StoreState {
    async fn seal(&mut self, plaintext: Vec<u8>) -> wasmtime::Result<Result<Vec<u8>, String>> {
        let tenant_id = match self.tenant("the vault") {
            Ok(tenant_id) => tenant_id,
            Err(message) => return Ok(Err(message)),
        };
        Ok(self
            .services
            .vault
            .seal(&self.scope.engine_code, tenant_id, &plaintext)
            .map_err(|error| error.to_string()))
    }

    async fn open(&mut self, sealed: Vec<u8>) -> wasmtime::Result<Result<Vec<u8>, String>> {
        let tenant_id = match self.tenant("the vault") {
            Ok(tenant_id) => tenant_id,
            Err(message) => return Ok(Err(message)),
        };
        Ok(self
            .services
            .vault
            .open(&self.scope.engine_code, tenant_id, &sealed)
            .map_err(|error| error.to_string()))
    }
}

/// A name with a dot is one of the host's settings; any other, one the engine declared.
impl world::settings::Host for StoreState {
    async fn get(&mut self, name: String) -> wasmtime::Result<Option<String>> {
        Ok(if name.contains('.') {
            self.services.settings.get(&name, &self.scope)
        } else {
            self.scope.settings.get(&name).map(str::to_owned)
        })
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
