//! The state of one call's store and the host side of the engine world's imports. Every import
//! acts in the call's scope (engine code, tenant) as the host set it; an engine has no way to
//! name another engine or another tenant. Writes, events and jobs go into the call's unit of
//! work (`unit_of_work.rs`), committed by `engine.rs` when the call succeeds; reads see them.

use std::sync::Arc;

use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use super::batch_reader::BatchReader;
use super::batch_writer::BatchWriter;
use super::bindings::v0_3::tessera::engine as world;
use super::bus::{BusEvent, EventBus, check_event_type};
use super::engine_settings::SharedSettingValues;
use super::mail_transport::MailTransport;
use super::outbound::{AllowedHosts, FetchCaller, FetchRequest, OutboundClient};
use super::realtime::{Publication, PublishedKind, TopicPatterns, check_publication};
use super::unit_of_work::{Known, UnitOfWork};
use super::vault::Vault;
use crate::instance_limits::InstanceLimits;
use crate::work_queue::{MAX_PAYLOAD_BYTES, NewWork, WorkKind, WorkQueue};
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
    /// The engine's realtime topic patterns (`describe-topics`): what `realtime` may name.
    pub topics: Arc<TopicPatterns>,
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
            topics: Arc::default(),
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
    /// Each engine's realtime publish rate in each tenant.
    pub realtime_rate: Arc<super::realtime::PublishRate>,
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
    /// What the engines' calls published to their realtime topics, for the core's hub.
    pub fn realtime_feed(&self) -> super::realtime::RealtimeFeed {
        super::realtime::RealtimeFeed::new(self.database.clone(), self.batch_writer.published())
    }

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
            realtime_rate: Arc::new(super::realtime::PublishRate::new(
                config.runtime.realtime_publish_per_second,
                config.usage.cloned(),
            )),
        })
    }
}

pub struct StoreState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub(super) limits: InstanceLimits,
    pub(super) scope: CallScope,
    pub(super) services: HostServices,
    /// Entries the `storage.scan` calls of this call returned so far (its scan budget).
    scanned: u64,
    /// What the call wrote, published and scheduled so far, and the conditions it compared.
    pub(super) unit: UnitOfWork,
    /// Synchronisation points this store committed, ever (`work.rs` tells by it which
    /// deliveries of a run had their effects committed).
    commit_points: u64,
    /// The `wasi:http` context of a component engine's call, made when first used.
    http: Option<crate::wasi_http_outbound::HttpGuestState>,
}

impl StoreState {
    /// A store state with WASI clocks and randomness only (no filesystem, environment,
    /// arguments or sockets) and the call's `limits` (its memory and table caps).
    pub fn new(scope: CallScope, services: HostServices, limits: InstanceLimits) -> Self {
        Self {
            wasi: WasiCtx::builder().build(),
            table: ResourceTable::new(),
            limits,
            scope,
            services,
            scanned: 0,
            unit: UnitOfWork::default(),
            commit_points: 0,
            http: None,
        }
    }

    /// Starts a call on a store kept warm from an earlier call (`warm_instances.rs`): the new
    /// call's scope and limits, a fresh scan budget and an empty unit of work. The WASI context
    /// and resource table stay: the instance may hold handles into them.
    pub(super) fn begin_call(&mut self, scope: CallScope, limits: InstanceLimits) {
        self.scope = scope;
        self.limits.renew(limits);
        self.scanned = 0;
        self.unit = UnitOfWork::default();
        self.http = None;
    }

    /// Starts the next event of a batch delivered on this store (`work.rs`): each event is a
    /// call of its own, with its correlation id and a fresh scan budget, in the batch's unit.
    pub(super) fn begin_delivery(&mut self, correlation_id: String) {
        self.scope.correlation_id = Some(correlation_id);
        self.scanned = 0;
    }

    /// How many synchronisation points this store committed so far.
    /// Adds the audit entry of the call's audited operation to its unit of work (the host's
    /// routes do, once the engine answered with a success).
    pub(super) fn record_audit(&mut self, entry: tessera_auth::audit::EngineAuditEntry) {
        self.unit.record_audit(entry);
    }

    /// The call's `wasi:http` state (made for its scope on first use) and resource table.
    pub(super) fn http_parts(
        &mut self,
    ) -> (
        &mut crate::wasi_http_outbound::HttpGuestState,
        &mut ResourceTable,
    ) {
        let state = self.http.get_or_insert_with(|| {
            crate::wasi_http_outbound::HttpGuestState::new(
                self.services.outbound.clone(),
                self.scope.outbound_hosts.clone(),
                self.scope.engine_code.clone(),
                self.scope.correlation_id.clone().unwrap_or_default(),
            )
        });
        (state, &mut self.table)
    }

    /// The resources the call's instance holds (`wasi_keyvalue.rs`'s buckets among them).
    pub(super) fn resource_table(&mut self) -> &mut ResourceTable {
        &mut self.table
    }

    pub(super) fn commit_points(&self) -> u64 {
        self.commit_points
    }

    /// The call's unit of work, leaving an empty one.
    pub(super) fn take_unit(&mut self) -> UnitOfWork {
        std::mem::take(&mut self.unit)
    }

    pub(super) fn kv_scope(&self) -> Result<KvScope<'_>, String> {
        Ok(KvScope {
            engine_code: &self.scope.engine_code,
            tenant_id: self.tenant("storage")?,
        })
    }

    /// The call's (engine code, tenant id), owned: what an import holds across an await (a
    /// borrow of the whole store state would make its future not `Send`).
    pub(super) fn owned_scope(&self) -> Result<(String, String), String> {
        let scope = self.kv_scope()?;
        Ok((scope.engine_code.to_owned(), scope.tenant_id.to_owned()))
    }

    /// The tenant of the call, for imports that act in one.
    pub(super) fn tenant(&self, what: &str) -> Result<&str, String> {
        self.scope
            .tenant_id
            .as_deref()
            .ok_or_else(|| format!("{what} is only available in calls made for a tenant"))
    }

    /// The committed values under `keys` in the call's scope, through the host's batched
    /// reader.
    async fn read_committed(&mut self, keys: Vec<String>) -> Result<Vec<Option<Vec<u8>>>, String> {
        let (engine_code, tenant_id) = self.owned_scope()?;
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let reader = self.services.batch_reader.clone();
        match reader.get(engine_code, tenant_id, keys).await {
            Ok(values) => Ok(values),
            Err(error) => Err(self.import_failure("storage", error)),
        }
    }

    /// The values under `keys` in the call's view (its own buffered writes over the committed
    /// values), each with the committed value when one was read (`None`: the unit decided the
    /// key alone).
    async fn read(
        &mut self,
        keys: &[String],
    ) -> Result<Vec<(Option<Option<Vec<u8>>>, Option<Vec<u8>>)>, String> {
        let unread: Vec<String> = keys
            .iter()
            .filter(|key| matches!(self.unit.known(key), Known::Committed { .. }))
            .cloned()
            .collect();
        let mut committed = self.read_committed(unread).await?.into_iter();
        let mut values = Vec::with_capacity(keys.len());
        for key in keys {
            let read = match self.unit.known(key) {
                Known::Committed { .. } => Some(committed.next().flatten()),
                Known::Value(_) => None,
            };
            let view = self.unit.view(key, read.clone().flatten())?;
            values.push((read, view));
        }
        Ok(values)
    }

    /// The values under `keys` in the call's view, without the committed values behind them
    /// (`get`, `get-many`): a call that wrote nothing reads the committed values as they are.
    async fn read_view(&mut self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>, String> {
        if self.unit.is_empty() {
            return self.read_committed(keys.to_vec()).await;
        }
        Ok(self
            .read(keys)
            .await?
            .into_iter()
            .map(|(_, view)| view)
            .collect())
    }

    /// The view of `keys` (see [`Self::read`]) and the conditions a synchronisation point
    /// comparing them commits on: each key the unit does not decide must still hold the
    /// committed value read here.
    async fn compare(
        &mut self,
        keys: &[String],
    ) -> Result<(Vec<Option<Vec<u8>>>, Vec<(String, Option<Vec<u8>>)>), String> {
        let values = self.read(keys).await?;
        let mut views = Vec::with_capacity(values.len());
        let mut conditions = Vec::new();
        for (key, (committed, view)) in keys.iter().zip(values) {
            if let Some(committed) = committed {
                conditions.push((key.clone(), committed));
            }
            views.push(view);
        }
        Ok((views, conditions))
    }

    /// Commits `unit` (this call's unit so far with a synchronisation point's own writes) now,
    /// on `conditions`: true when it committed (the call's unit starts anew), false when a
    /// condition no longer held (nothing was written; the call's unit stays as it was).
    pub(super) async fn commit_point(
        &mut self,
        unit: UnitOfWork,
        conditions: Vec<(String, Option<Vec<u8>>)>,
    ) -> Result<bool, String> {
        let tenant_id = self.tenant("storage")?.to_owned();
        if unit.is_empty() && conditions.is_empty() {
            return Ok(true);
        }
        let batch = unit.into_batch(self.scope.engine_code.clone(), tenant_id, conditions);
        let writer = self.services.batch_writer.clone();
        match writer.commit_unit(batch).await {
            Ok(true) => {
                self.unit = UnitOfWork::default();
                self.commit_points += 1;
                Ok(true)
            }
            Ok(false) => Ok(false),
            Err(error) => Err(self.import_failure("storage", error)),
        }
    }

    /// Up to `limit` entries under `prefix` after `after` in the call's view: committed pages
    /// merged with the call's buffered writes, in key order (descending when `reverse`).
    async fn scan_view(
        &mut self,
        prefix: &str,
        after: Option<String>,
        limit: u32,
        reverse: bool,
    ) -> anyhow::Result<Vec<(String, Vec<u8>)>> {
        let (engine_code, tenant_id) = self.owned_scope().map_err(anyhow::Error::msg)?;
        let scope = KvScope {
            engine_code: &engine_code,
            tenant_id: &tenant_id,
        };
        let database = self.services.database.clone();
        if self.unit.is_empty() {
            let after = after.as_deref();
            return engine_kv::list(&database, &scope, prefix, after, limit, reverse).await;
        }
        let committed_hidden = self.unit.prefix_deleted(prefix);
        let beyond = |key: &str, cursor: &Option<String>| {
            cursor
                .as_deref()
                .is_none_or(|cursor| if reverse { key < cursor } else { key > cursor })
        };
        let within = |key: &str, bound: &Option<String>| {
            bound
                .as_deref()
                .is_none_or(|bound| if reverse { key >= bound } else { key <= bound })
        };
        let mut entries = Vec::new();
        let mut cursor = after;
        loop {
            let want = limit - u32::try_from(entries.len()).unwrap_or(limit);
            let page = if committed_hidden {
                Vec::new()
            } else {
                engine_kv::list(&database, &scope, prefix, cursor.as_deref(), want, reverse).await?
            };
            let exhausted = page.len() < want as usize;
            let bound = if exhausted {
                None
            } else {
                page.last().map(|(key, _)| key.clone())
            };
            let mut candidates = std::collections::BTreeMap::new();
            for (key, value) in page {
                if let Known::Committed { .. } = self.unit.known(&key)
                    && let Some(value) = self
                        .unit
                        .view(&key, Some(value))
                        .map_err(anyhow::Error::msg)?
                {
                    candidates.insert(key, value);
                }
            }
            for (key, _) in self.unit.writes_under(prefix) {
                if !beyond(key, &cursor) || !within(key, &bound) || candidates.contains_key(key) {
                    continue;
                }
                // A committed value of a counter key would have been on the page.
                if let Some(value) = self.unit.view(key, None).map_err(anyhow::Error::msg)? {
                    candidates.insert(key.clone(), value);
                }
            }
            let ordered: Box<dyn Iterator<Item = (String, Vec<u8>)>> = if reverse {
                Box::new(candidates.into_iter().rev())
            } else {
                Box::new(candidates.into_iter())
            };
            for entry in ordered {
                if entries.len() == limit as usize {
                    break;
                }
                entries.push(entry);
            }
            if entries.len() == limit as usize || exhausted {
                return Ok(entries);
            }
            cursor = bound;
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
                id: uuid::Uuid::new_v4().to_string(),
                engine_code: self.scope.engine_code.clone(),
                tenant_id: tenant_id.clone(),
                kind: WorkKind::Job,
                payload,
                due_at,
                // Scheduled during an engine call: its run continues the call's trace.
                traceparent: tessera_http::trace_context::current_traceparent(),
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

/// Every write goes into the call's unit of work; every read sees it. `compare-and-swap` and
/// `transact` are synchronisation points: they commit the unit so far with their own writes,
/// at once, when their conditions hold.
impl world::storage::Host for StoreState {
    async fn get(&mut self, key: String) -> wasmtime::Result<Result<Option<Vec<u8>>, String>> {
        Ok(self
            .read_view(std::slice::from_ref(&key))
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
        Ok(self.read_view(&keys).await)
    }

    async fn set(&mut self, key: String, value: Vec<u8>) -> wasmtime::Result<Result<(), String>> {
        let checked = check_key(&key)
            .and_then(|()| {
                if value.len() > MAX_VALUE_BYTES {
                    Err(format!("values are at most {MAX_VALUE_BYTES} bytes"))
                } else {
                    Ok(())
                }
            })
            .and_then(|()| self.kv_scope().map(drop))
            .and_then(|()| self.unit.check_room(1, value.len()));
        if let Err(message) = checked {
            return Ok(Err(message));
        }
        self.unit.write(key, Some(value));
        Ok(Ok(()))
    }

    async fn delete(&mut self, key: String) -> wasmtime::Result<Result<bool, String>> {
        if let Err(message) = self.unit.check_room(1, 0) {
            return Ok(Err(message));
        }
        let existed = match self.read(std::slice::from_ref(&key)).await {
            Ok(values) => values[0].1.is_some(),
            Err(message) => return Ok(Err(message)),
        };
        self.unit.write(key, None);
        Ok(Ok(existed))
    }

    async fn scan(
        &mut self,
        prefix: String,
        after: Option<String>,
        limit: u32,
        reverse: bool,
    ) -> wasmtime::Result<Result<Vec<(String, Vec<u8>)>, String>> {
        if let Err(message) = self.kv_scope() {
            return Ok(Err(message));
        }
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
        Ok(match self.scan_view(&prefix, after, limit, reverse).await {
            Ok(entries) => {
                self.scanned += entries.len() as u64;
                Ok(entries)
            }
            Err(error) => Err(self.import_failure("storage", error)),
        })
    }

    async fn delete_prefix(&mut self, prefix: String) -> wasmtime::Result<Result<u64, String>> {
        if let Err(message) = self.unit.check_room(1, 0) {
            return Ok(Err(message));
        }
        let counted = match self.count_in_view(&prefix).await {
            Ok(counted) => counted,
            Err(message) => return Ok(Err(message)),
        };
        self.unit.delete_prefix(&prefix);
        Ok(Ok(counted))
    }

    async fn compare_and_swap(
        &mut self,
        key: String,
        expected: Option<Vec<u8>>,
        value: Option<Vec<u8>>,
    ) -> wasmtime::Result<Result<bool, String>> {
        let size = value.as_ref().map_or(0, Vec::len);
        let checked = check_key(&key)
            .and_then(|()| {
                if size > MAX_VALUE_BYTES {
                    Err(format!("values are at most {MAX_VALUE_BYTES} bytes"))
                } else {
                    Ok(())
                }
            })
            .and_then(|()| self.unit.check_room(2, size));
        if let Err(message) = checked {
            return Ok(Err(message));
        }
        let (current, conditions) = match self.compare(std::slice::from_ref(&key)).await {
            Ok((mut values, conditions)) => (values.remove(0), conditions),
            Err(message) => return Ok(Err(message)),
        };
        if current != expected {
            return Ok(Ok(false));
        }
        let mut unit = self.unit.clone();
        unit.write(key, value);
        Ok(self.commit_point(unit, conditions).await)
    }

    async fn write_batch(
        &mut self,
        sets: Vec<(String, Vec<u8>)>,
        deletes: Vec<String>,
        jobs: Vec<(u64, Vec<u8>)>,
    ) -> wasmtime::Result<Result<Vec<String>, String>> {
        let entries = sets.len() + deletes.len() + jobs.len();
        let bytes = sets.iter().map(|(_, value)| value.len()).sum();
        let checked = check_batch(&sets, &deletes, jobs.len())
            .and_then(|()| self.kv_scope().map(drop))
            .and_then(|()| self.unit.check_room(entries, bytes));
        if let Err(message) = checked {
            return Ok(Err(message));
        }
        let work = match self.new_jobs(jobs) {
            Ok(work) => work,
            Err(message) => return Ok(Err(message)),
        };
        Ok(Ok(self.buffer(sets, deletes, work)))
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
        let entries = expect.len() + sets.len() + deletes.len() + add.len() + jobs.len();
        let bytes = sets.iter().map(|(_, value)| value.len()).sum();
        let checked = check_transaction(&expect, &sets, &deletes, &add, jobs.len())
            .and_then(|()| self.unit.check_room(entries, bytes));
        if let Err(message) = checked {
            return Ok(Err(message));
        }
        let work = match self.new_jobs(jobs) {
            Ok(work) => work,
            Err(message) => return Ok(Err(message)),
        };
        let keys: Vec<String> = expect.iter().map(|(key, _)| key.clone()).collect();
        let (current, conditions) = match self.compare(&keys).await {
            Ok(compared) => compared,
            Err(message) => return Ok(Err(message)),
        };
        let holds = expect
            .iter()
            .zip(&current)
            .all(|((_, expected), current)| expected == current);
        if !holds {
            return Ok(Ok(None));
        }
        let mut unit = self.unit.clone();
        let ids = match buffer_into(&mut unit, sets, deletes, add, work) {
            Ok(ids) => ids,
            Err(message) => return Ok(Err(message)),
        };
        Ok(self
            .commit_point(unit, conditions)
            .await
            .map(|committed| committed.then_some(ids)))
    }
}

/// Buffers one batch into `unit`: its sets, then its deletes, then its counters, then its
/// jobs; the jobs' ids. A counter that does not hold an integer fails it.
fn buffer_into(
    unit: &mut UnitOfWork,
    sets: Vec<(String, Vec<u8>)>,
    deletes: Vec<String>,
    add: Vec<(String, i64)>,
    jobs: Vec<NewWork>,
) -> Result<Vec<String>, String> {
    buffer_writes(unit, sets, deletes, Vec::new());
    for (key, amount) in add {
        unit.add(key, amount)?;
    }
    Ok(buffer_writes(unit, Vec::new(), Vec::new(), jobs))
}

/// Buffers sets, then deletes, then jobs into `unit`; the jobs' ids.
fn buffer_writes(
    unit: &mut UnitOfWork,
    sets: Vec<(String, Vec<u8>)>,
    deletes: Vec<String>,
    jobs: Vec<NewWork>,
) -> Vec<String> {
    for (key, value) in sets {
        unit.write(key, Some(value));
    }
    for key in deletes {
        unit.write(key, None);
    }
    let ids = jobs.iter().map(|job| job.id.clone()).collect();
    unit.push_jobs(jobs);
    ids
}

impl StoreState {
    /// Buffers one batch without counters into the call's unit; the jobs' ids.
    fn buffer(
        &mut self,
        sets: Vec<(String, Vec<u8>)>,
        deletes: Vec<String>,
        jobs: Vec<NewWork>,
    ) -> Vec<String> {
        buffer_writes(&mut self.unit, sets, deletes, jobs)
    }

    /// How many entries under `prefix` the call's view holds.
    async fn count_in_view(&mut self, prefix: &str) -> Result<u64, String> {
        let (engine_code, tenant_id) = self.owned_scope()?;
        let pending: Vec<String> = self
            .unit
            .writes_under(prefix)
            .map(|(key, _)| key.clone())
            .collect();
        let mut visible = 0_u64;
        for key in &pending {
            if self.unit.view(key, None)?.is_some()
                || matches!(self.unit.known(key), Known::Committed { .. })
            {
                visible += 1;
            }
        }
        if self.unit.prefix_deleted(prefix) {
            return Ok(visible);
        }
        // Keys the unit decides, where they are committed and not under a deleted prefix, are
        // counted by the unit, not the database.
        let decided: Vec<String> = pending
            .into_iter()
            .filter(|key| !self.unit.prefix_deleted(key))
            .collect();
        let inner = self.unit.deleted_prefixes_under(prefix);
        let database = self.services.database.clone();
        let scope = KvScope {
            engine_code: &engine_code,
            tenant_id: &tenant_id,
        };
        match count_committed(&database, &scope, prefix, &inner, &decided).await {
            Ok(committed) => Ok(committed + visible),
            Err(error) => Err(self.import_failure("storage", error)),
        }
    }
}

/// The committed entries under `prefix`, leaving out those under the disjoint prefixes
/// `inner` and the keys `decided`.
async fn count_committed(
    database: &Database,
    scope: &KvScope<'_>,
    prefix: &str,
    inner: &[String],
    decided: &[String],
) -> anyhow::Result<u64> {
    let mut committed = engine_kv::count_prefix(database, scope, prefix).await?;
    for inner in inner {
        committed =
            committed.saturating_sub(engine_kv::count_prefix(database, scope, inner).await?);
    }
    for chunk in decided.chunks(engine_kv::MAX_GET_MANY) {
        let values = engine_kv::get_many(database, scope, chunk).await?;
        let shadowed = values.iter().filter(|value| value.is_some()).count() as u64;
        committed = committed.saturating_sub(shadowed);
    }
    Ok(committed)
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

/// Jobs go into the call's unit of work: they exist once it commits.
impl world::scheduler::Host for StoreState {
    async fn schedule(
        &mut self,
        at_unix_ms: u64,
        payload: Vec<u8>,
    ) -> wasmtime::Result<Result<String, String>> {
        if let Err(message) = self.unit.check_room(1, 0) {
            return Ok(Err(message));
        }
        let work = match self.new_jobs(vec![(at_unix_ms, payload)]) {
            Ok(work) => work,
            Err(message) => return Ok(Err(message)),
        };
        Ok(Ok(self.buffer(Vec::new(), Vec::new(), work).remove(0)))
    }

    /// A job this call scheduled is dropped from its unit; a committed one is cancelled at once
    /// (not undone if the call fails).
    async fn cancel(&mut self, job_id: String) -> wasmtime::Result<Result<bool, String>> {
        let tenant_id = match self.tenant("the scheduler") {
            Ok(tenant_id) => tenant_id.to_owned(),
            Err(message) => return Ok(Err(message)),
        };
        if self.unit.cancel_job(&job_id) {
            return Ok(Ok(true));
        }
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

/// An event's deliveries go into the call's unit of work (a transactional outbox): they exist
/// if and only if the call's writes commit.
impl StoreState {
    /// Buffers a realtime publication of the call, checked against the engine's topics.
    fn publish_realtime(
        &mut self,
        topic: String,
        user_id: Option<String>,
        kind: PublishedKind,
    ) -> Result<(), String> {
        let tenant_id = self.tenant("publishing to realtime topics")?.to_owned();
        let event = match &kind {
            PublishedKind::Event { event_type, data } => Some((event_type.as_str(), data.as_str())),
            PublishedKind::End => None,
        };
        check_publication(&self.scope.topics, &topic, event)?;
        if let Some(user_id) = &user_id
            && (user_id.is_empty() || user_id.len() > 200)
        {
            return Err("a user id is 1 to 200 bytes".into());
        }
        if event.is_some() {
            self.services
                .realtime_rate
                .take(&self.scope.engine_code, &tenant_id)?;
        }
        self.unit.publish(Publication {
            topic,
            user_id,
            kind,
        })
    }
}

/// Realtime (0.3): publications join the call's unit of work and are delivered only if it
/// commits (`realtime.rs`).
impl world::realtime::Host for StoreState {
    async fn publish(
        &mut self,
        topic: String,
        event_type: String,
        data: String,
    ) -> wasmtime::Result<Result<(), String>> {
        Ok(self.publish_realtime(topic, None, PublishedKind::Event { event_type, data }))
    }

    async fn publish_to_user(
        &mut self,
        user_id: String,
        topic: String,
        event_type: String,
        data: String,
    ) -> wasmtime::Result<Result<(), String>> {
        Ok(self.publish_realtime(
            topic,
            Some(user_id),
            PublishedKind::Event { event_type, data },
        ))
    }

    async fn end_subscriptions(
        &mut self,
        topic: String,
        user_id: String,
    ) -> wasmtime::Result<Result<(), String>> {
        Ok(self.publish_realtime(topic, Some(user_id), PublishedKind::End))
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
            // Time-ordered like the core's event ids: subscribers may key what they record by it.
            id: uuid::Uuid::now_v7().to_string(),
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
        let deliveries = match self
            .services
            .bus
            .deliveries(&event, Some(&self.scope.engine_code))
        {
            Ok(deliveries) => deliveries,
            Err(error) => return Ok(Err(format!("{error:#}"))),
        };
        if let Err(message) = self.unit.check_room(deliveries.len(), 0) {
            return Ok(Err(message));
        }
        tracing::debug!(engine = %self.scope.engine_code, event_type = %event.event_type, deliveries = deliveries.len(), "event published");
        self.unit.push_jobs(deliveries);
        Ok(Ok(()))
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
            .map_err(|error| error.to_string())
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

impl world::mail_transport::Host for StoreState {
    async fn send(
        &mut self,
        mail: world::mail_transport::OutgoingMail,
    ) -> wasmtime::Result<Result<(), String>> {
        let transport = self.services.mail_transport.clone();
        Ok(transport
            .send(&self.scope.engine_code, self.scope.may_send_mail, mail)
            .await)
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
