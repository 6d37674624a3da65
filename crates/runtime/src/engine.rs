//! The wasmtime side: one `wasmtime::Engine` (pooling allocator, epoch interruption), the
//! compiled-artifact cache in the data dir, and calls into a component with a store of their
//! own (fresh, or kept warm: `warm_instances.rs`), a deadline and a memory cap, each admitted
//! first (`admission.rs`: the pool's size in all, a share of it per tenant).

use std::hash::{Hash as _, Hasher as _};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context as _;
use tracing::Instrument as _;
use wasmtime::component::{Component, Linker};
use wasmtime::{
    Config, InstanceAllocationStrategy, PoolingAllocationConfig, Store, UpdateDeadline,
};

use super::admission::{Admission, CallKind, Permit};
use super::bindings::{v0_1, v0_2, v0_3, wasi_standard};
use super::imports::{CallScope, HostServices, StoreState};
use super::unit_of_work::UnitOfWork;
use super::warm_instances::{InstanceKey, WarmInstance, WarmInstances};
use crate::call_metrics::CallOutcome;
pub use crate::config::{
    DEFAULT_MAX_CORE_INSTANCES, DEFAULT_MAX_MEMORIES, DEFAULT_MAX_TABLE_ELEMENTS,
    DEFAULT_MAX_TABLES, RuntimeConfig,
};
pub use crate::guest::Guest;
use crate::instance_limits::InstanceLimits;

/// How often the epoch advances: the granularity of deadlines and of yielding to other tasks.
pub const EPOCH_TICK: Duration = Duration::from_millis(1);

/// Bytes of each pooled linear memory kept resident between instances (reset in place).
const KEEP_RESIDENT_BYTES: usize = 4 * 1024 * 1024;

/// How often instances idle past their timeout are retired on a quiet host.
const WARM_SWEEP_INTERVAL: Duration = Duration::from_secs(1);

/// Ids of prepared components, so a warm instance is never reused by another version.
static NEXT_PREPARED_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// Why a call into an engine did not return a value.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("the call exceeded its deadline of {0:?}")]
    Timeout(Duration),
    #[error("the engine trapped: {0}")]
    Trap(String),
    /// No slot was free in time (the call never started).
    #[error("no engine capacity: {0}")]
    Busy(#[from] super::admission::Refused),
    /// The call's unit of work could not be committed (nothing of it is visible).
    #[error("committing the call's writes failed: {0}")]
    Commit(String),
}

impl CallError {
    /// The reason recorded for a lifecycle, job or event call that returned nothing: the
    /// deadline, or "trap" (the trap's detail goes to the log, not to the record).
    pub fn into_reason(self, engine_code: &str) -> String {
        match self {
            Self::Timeout(deadline) => format!("the engine did not answer within {deadline:?}"),
            Self::Trap(detail) => {
                tracing::error!(engine = %engine_code, error = %detail, "engine call trapped");
                "the engine failed (trap)".into()
            }
            Self::Busy(refused) => format!("the call did not start: {refused}"),
            Self::Commit(detail) => {
                tracing::error!(engine = %engine_code, error = %detail, "committing an engine call failed");
                "the engine's writes could not be committed".into()
            }
        }
    }
}

/// Stops the epoch ticker thread when the runtime goes away.
struct Ticker {
    stop: Arc<AtomicBool>,
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

pub struct EngineRuntime {
    engine: wasmtime::Engine,
    linker: Linker<StoreState>,
    /// What a `wasi:http` component engine is linked against: WASI 0.2, `wasi:http`,
    /// `wasi:keyvalue` and `wasi:config` (`wasi_http.rs`), and nothing of the engine world.
    http_linker: Linker<StoreState>,
    config: RuntimeConfig,
    services: HostServices,
    admission: Admission,
    warm: Arc<WarmInstances>,
    _ticker: Ticker,
}

fn base_config() -> Config {
    let mut config = Config::new();
    config.wasm_component_model(true);
    config.epoch_interruption(true);
    config
}

impl EngineRuntime {
    pub fn new(config: RuntimeConfig, services: HostServices) -> anyhow::Result<Self> {
        let engine = Self::create_engine(&config)?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)
            .map_err(|error| anyhow::anyhow!("{error:#}"))
            .context("adding WASI to the linker")?;
        v0_3::Engine::add_to_linker::<_, wasmtime::component::HasSelf<_>>(&mut linker, |state| {
            state
        })
        .map_err(|error| anyhow::anyhow!("{error:#}"))
        .context("adding the engine world 0.3 to the linker")?;
        v0_2::Engine::add_to_linker::<_, wasmtime::component::HasSelf<_>>(&mut linker, |state| {
            state
        })
        .map_err(|error| anyhow::anyhow!("{error:#}"))
        .context("adding the engine world 0.2 to the linker")?;
        v0_1::Engine::add_to_linker::<_, wasmtime::component::HasSelf<_>>(&mut linker, |state| {
            state
        })
        .map_err(|error| anyhow::anyhow!("{error:#}"))
        .context("adding the engine world 0.1 to the linker")?;
        let http_linker = Self::http_linker(&engine)?;

        let warm = Arc::new(WarmInstances::new(config.warm_instances));
        let stop = Arc::new(AtomicBool::new(false));
        let ticking = engine.clone();
        let stopped = stop.clone();
        let sweeping = warm.clone();
        let publish_rate = services.realtime_rate.clone();
        std::thread::Builder::new()
            .name("tessera-epoch".into())
            .spawn(move || {
                let mut last_sweep = std::time::Instant::now();
                while !stopped.load(Ordering::Relaxed) {
                    std::thread::sleep(EPOCH_TICK);
                    ticking.increment_epoch();
                    if last_sweep.elapsed() >= WARM_SWEEP_INTERVAL {
                        sweeping.retire_expired();
                        publish_rate.sweep();
                        last_sweep = std::time::Instant::now();
                    }
                }
            })
            .context("starting the epoch ticker")?;
        Ok(Self {
            engine,
            linker,
            http_linker,
            admission: Admission::with_engine_caps(config.admission_limits(), config.engine_caps()),
            config,
            services,
            warm,
            _ticker: Ticker { stop },
        })
    }

    /// The linker of `wasi:http` component engines.
    fn http_linker(engine: &wasmtime::Engine) -> anyhow::Result<Linker<StoreState>> {
        let mut linker = Linker::new(engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)
            .map_err(|error| anyhow::anyhow!("{error:#}"))
            .context("adding WASI to the wasi:http linker")?;
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)
            .map_err(|error| anyhow::anyhow!("{error:#}"))
            .context("adding wasi:http to the linker")?;
        wasi_standard::Standard::add_to_linker::<_, wasmtime::component::HasSelf<_>>(
            &mut linker,
            |state| state,
        )
        .map_err(|error| anyhow::anyhow!("{error:#}"))
        .context("adding wasi:keyvalue and wasi:config to the linker")?;
        Ok(linker)
    }

    /// The pooling allocator when the machine lets us reserve its address space, else the
    /// on-demand allocator (logged), as Spin does.
    ///
    /// The pool is sized from the limits, not guessed per slot: each of `max_instances` slots
    /// can hold a component at the loosest per-component limits any engine has (its core
    /// instances, memories, tables), so the totals never bind before `max_instances` does and
    /// admission (which bounds calls alive to `max_instances`) is the only bound a call meets.
    /// A component over those maxima never reaches wasmtime's own check: the registry refuses
    /// it first by name (`component_limits.rs`).
    fn create_engine(config: &RuntimeConfig) -> anyhow::Result<wasmtime::Engine> {
        let loosest = config.loosest_limits();
        // The calls admission lets run, and the idle instances kept warm beside them.
        let slots = config
            .max_instances
            .max(1)
            .saturating_add(config.warm_instances.pool_slots());
        let mut pooling = PoolingAllocationConfig::default();
        pooling
            .total_component_instances(slots)
            .total_core_instances(slots.saturating_mul(loosest.max_core_instances))
            .total_memories(slots.saturating_mul(loosest.max_memories))
            .total_tables(slots.saturating_mul(loosest.max_tables))
            .total_stacks(slots)
            .max_memory_size(loosest.memory_limit_bytes)
            .table_elements(usize::try_from(loosest.max_table_elements).unwrap_or(usize::MAX))
            .max_core_instances_per_component(loosest.max_core_instances)
            .max_memories_per_component(loosest.max_memories)
            .max_tables_per_component(loosest.max_tables)
            // A module may hold as many as its component may.
            .max_memories_per_module(loosest.max_memories)
            .max_tables_per_module(loosest.max_tables)
            // Reset a slot's memory by rewriting only the pages the last instance touched
            // (PAGEMAP_SCAN, Linux 6.7+) instead of unmapping them: the next instance then
            // takes no page faults, and no `madvise` (a process-wide TLB shootdown) runs per
            // request. Up to this many bytes per memory stay resident.
            // What is decommitted anyway (beyond the resident part) is batched.
            .decommit_batch_size(16);
        // Without PAGEMAP_SCAN a resident part would be `memset` whole on every reuse, which
        // costs more than the page faults it saves: keep the default (`madvise`) there.
        if PoolingAllocationConfig::is_pagemap_scan_available() {
            pooling
                .pagemap_scan(wasmtime::Enabled::Yes)
                .linear_memory_keep_resident(KEEP_RESIDENT_BYTES)
                .table_keep_resident(64 * 1024);
        } else {
            tracing::info!(
                "PAGEMAP_SCAN is unavailable (Linux < 6.7): pooled memories are reset with madvise"
            );
        }
        let mut pooled = base_config();
        pooled.allocation_strategy(InstanceAllocationStrategy::Pooling(pooling));
        match wasmtime::Engine::new(&pooled) {
            Ok(engine) => Ok(engine),
            Err(error) => {
                tracing::warn!(
                    error = format!("{error:#}"),
                    "the pooling allocator is unavailable; using on-demand allocation"
                );
                wasmtime::Engine::new(&base_config()).map_err(|error| anyhow::anyhow!("{error:#}"))
            }
        }
    }

    pub fn config(&self) -> &RuntimeConfig {
        &self.config
    }

    /// Who may start an engine call now: every call holds one of its permits while it runs.
    pub fn admission(&self) -> &Admission {
        &self.admission
    }

    /// What every call's store is lent: database, work queue, event bus, outbound client.
    pub fn services(&self) -> &HostServices {
        &self.services
    }

    /// Compiles a component, or loads its compiled artifact from the cache when the same bytes
    /// were compiled before by a compatible wasmtime (a restart does not recompile).
    /// `sha256` is the hex digest of `bytes`, the cache key.
    pub async fn compile(&self, bytes: Vec<u8>, sha256: &str) -> anyhow::Result<Component> {
        let mut compatibility = std::collections::hash_map::DefaultHasher::new();
        self.engine
            .precompile_compatibility_hash()
            .hash(&mut compatibility);
        let cached = self
            .config
            .cache_dir
            .join(format!("{sha256}-{:016x}.cwasm", compatibility.finish()));
        let engine = self.engine.clone();
        let component = tokio::task::spawn_blocking(move || -> anyhow::Result<Component> {
            if cached.exists() {
                // SAFETY: the file was written by `Component::serialize` of an engine with the
                // same compatibility hash, into the host's own data dir.
                match unsafe { Component::deserialize_file(&engine, &cached) } {
                    Ok(component) => return Ok(component),
                    Err(error) => tracing::warn!(
                        error = format!("{error:#}"),
                        "discarding an unreadable compiled artifact"
                    ),
                }
            }
            let component =
                Component::new(&engine, &bytes).map_err(|error| anyhow::anyhow!("{error:#}"))?;
            let serialized = component
                .serialize()
                .map_err(|error| anyhow::anyhow!("{error:#}"))?;
            if let Some(dir) = cached.parent() {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("creating {}", dir.display()))?;
            }
            let temporary = cached.with_extension(format!("{}.tmp", uuid::Uuid::new_v4()));
            std::fs::write(&temporary, serialized).context("writing a compiled artifact")?;
            std::fs::rename(&temporary, &cached).context("storing a compiled artifact")?;
            Ok(component)
        })
        .await
        .context("the compilation task failed")??;
        Ok(component)
    }

    /// Links a component against the host's imports once, so each call only instantiates. The
    /// world version is the one whose `guest` the component exports.
    pub fn prepare(&self, component: &Component) -> anyhow::Result<EnginePre> {
        let exports: Vec<String> = component
            .component_type()
            .exports(&self.engine)
            .map(|(name, _)| name.to_owned())
            .collect();
        let exports_guest = |version: &str| {
            exports
                .iter()
                .any(|name| name == &format!("tessera:engine/guest@{version}"))
        };
        let exports_incoming_handler = exports
            .iter()
            .any(|name| name.starts_with("wasi:http/incoming-handler@0.2."));
        let world = if exports_guest("0.3.0") {
            WorldVersion::V0_3
        } else if exports_guest("0.2.0") {
            WorldVersion::V0_2
        } else if exports_guest("0.1.0") {
            WorldVersion::V0_1
        } else if exports_incoming_handler {
            return self.prepare_wasi_http(component);
        } else {
            anyhow::bail!(
                "the component exports neither a tessera:engine/guest of a world this host serves (0.1.0, 0.2.0, 0.3.0) nor wasi:http/incoming-handler@0.2; it exports {exports:?}"
            );
        };
        let instance_pre = self
            .linker
            .instantiate_pre(component)
            .map_err(|error| anyhow::anyhow!("{error:#}"))
            .with_context(|| {
                format!(
                    "the component does not fit the tessera:engine@{} world",
                    world.as_str()
                )
            })?;
        let linked = match world {
            WorldVersion::V0_1 => LinkedPre::V0_1(
                v0_1::EnginePre::new(instance_pre).map_err(|error| anyhow::anyhow!("{error:#}"))?,
            ),
            WorldVersion::V0_2 => LinkedPre::V0_2(
                v0_2::EnginePre::new(instance_pre).map_err(|error| anyhow::anyhow!("{error:#}"))?,
            ),
            WorldVersion::V0_3 => LinkedPre::V0_3(
                v0_3::EnginePre::new(instance_pre).map_err(|error| anyhow::anyhow!("{error:#}"))?,
            ),
            WorldVersion::WasiHttp => return self.prepare_wasi_http(component),
        };
        Ok(EnginePre {
            id: NEXT_PREPARED_ID.fetch_add(1, Ordering::Relaxed),
            linked,
        })
    }

    /// Links a `wasi:http` component against [`Self::http_linker`]'s imports.
    fn prepare_wasi_http(&self, component: &Component) -> anyhow::Result<EnginePre> {
        let instance_pre = self
            .http_linker
            .instantiate_pre(component)
            .map_err(|error| anyhow::anyhow!("{error:#}"))
            .context(
                "the wasi:http component imports more than WASI 0.2, wasi:http, wasi:keyvalue and wasi:config",
            )?;
        let pre = wasmtime_wasi_http::p2::bindings::ProxyPre::new(instance_pre)
            .map_err(|error| anyhow::anyhow!("{error:#}"))?;
        Ok(EnginePre {
            id: NEXT_PREPARED_ID.fetch_add(1, Ordering::Relaxed),
            linked: LinkedPre::WasiHttp(pre),
        })
    }

    /// Runs `call` once admitted (in its tenant's share, or the global budget alone outside a
    /// tenant), waiting at most `timeout` for a slot ([`CallError::Busy`] then), then as
    /// [`Self::call_admitted`] within `timeout`. Lifecycle calls and `describe` come here; HTTP
    /// requests and engine work admit themselves with their own bounds.
    pub async fn call<R>(
        &self,
        pre: &EnginePre,
        scope: CallScope,
        timeout: Duration,
        commits: fn(&R) -> bool,
        call: impl AsyncFnOnce(&Guest, &mut Store<StoreState>) -> wasmtime::Result<R>,
    ) -> Result<R, CallError> {
        let engine = Some(scope.engine_code.as_str()).filter(|code| !code.is_empty());
        let permit = self
            .admission
            .admit_to(
                scope.tenant_id.as_deref(),
                engine,
                CallKind::Background,
                timeout,
            )
            .await?;
        self.call_admitted(permit, pre, scope, timeout, commits, call)
            .await
    }

    /// Runs `call` as one unit of work in the slot `permit` holds: on a fresh instance (see
    /// [`Self::run_once`]), then, when `commits` says its answer keeps its writes, commits what
    /// it buffered (`unit_of_work.rs`) before answering. A call that traps, times out or
    /// answers what `commits` refuses leaves nothing behind but what its synchronisation points
    /// (`compare-and-swap`, `transact`) committed. The commit can still be refused when the
    /// call's blobs no longer fit their quota (a concurrent upload took the room).
    ///
    /// A call running engine work marks each item it ran to completion in its unit
    /// (`UnitOfWork::complete`): the item is deleted in the transaction of the unit, so its
    /// effect and its completion commit together (only when the call's answer commits;
    /// otherwise the caller records the failure).
    pub async fn call_admitted<R>(
        &self,
        permit: Permit,
        pre: &EnginePre,
        scope: CallScope,
        timeout: Duration,
        commits: fn(&R) -> bool,
        call: impl AsyncFnOnce(&Guest, &mut Store<StoreState>) -> wasmtime::Result<R>,
    ) -> Result<R, CallError> {
        let (engine_code, tenant_id) = (scope.engine_code.clone(), scope.tenant_id.clone());
        let started = std::time::Instant::now();
        // One span per call (a trace's step into the engine, with what the engine does inside
        // it: its outbound requests are its children).
        let span = tracing::info_span!("engine call", engine = %engine_code);
        let outcome = self
            .run_once(&permit, pre, scope, timeout, call)
            .instrument(span.clone())
            .await;
        let answered = outcome
            .as_ref()
            .map(|(value, _)| commits(value))
            .unwrap_or(false);
        let outcome = match outcome {
            Ok((value, unit)) if !unit.is_empty() && commits(&value) => {
                let Some(tenant_id) = tenant_id else {
                    return Err(CallError::Commit("writes outside a tenant".into()));
                };
                let batch = unit.into_batch(engine_code.clone(), tenant_id, Vec::new());
                match self.services.batch_writer.commit_unit(batch).await {
                    Ok(true) => Ok(value),
                    Ok(false) => Err(CallError::Commit(
                        "its blob writes no longer fit the quota at commit".into(),
                    )),
                    Err(error) => Err(CallError::Commit(format!("{error:#}"))),
                }
            }
            Ok((value, _)) => Ok(value),
            Err(error) => Err(error),
        };
        drop(permit);
        let call_outcome = match &outcome {
            Ok(_) if answered => CallOutcome::Ok,
            Ok(_) | Err(CallError::Commit(_)) => CallOutcome::Error,
            Err(CallError::Trap(_)) => CallOutcome::Trap,
            Err(CallError::Timeout(_)) => CallOutcome::Timeout,
            Err(CallError::Busy(_)) => CallOutcome::Rejected,
        };
        crate::call_metrics::record_call(&engine_code, call_outcome, started.elapsed());
        // On the trace only: the call's outcome is in the metrics, and the callers log failures.
        tessera_http::trace_context::set_attribute(&span, "outcome", call_outcome.label());
        outcome
    }

    /// Runs `call` once within `timeout` on an instance of `pre`: one kept warm for the same
    /// engine version in the same tenant (`warm_instances.rs`), else a fresh one in a fresh
    /// store; returns its value with the unit of work it buffered. The engine yields to the
    /// async runtime every epoch tick, so a busy loop never holds a worker thread, and the
    /// deadline drops the call (and its store, with everything it buffered) when it expires.
    /// Only a call that returned a value gives its instance back to be kept warm.
    async fn run_once<R>(
        &self,
        permit: &Permit,
        pre: &EnginePre,
        scope: CallScope,
        timeout: Duration,
        call: impl AsyncFnOnce(&Guest, &mut Store<StoreState>) -> wasmtime::Result<R>,
    ) -> Result<(R, UnitOfWork), CallError> {
        // The engine's own limits; a call outside any engine (`describe`, before the code is
        // known) runs under the loosest, which the component was already checked against.
        let limits = if scope.engine_code.is_empty() {
            self.config.loosest_limits()
        } else {
            self.config.limits_of(&scope.engine_code)
        };
        let instance_limits =
            InstanceLimits::new(limits.memory_limit_bytes, limits.max_table_elements);
        // Calls outside a tenant (`describe`) and `wasi:http` components' requests always run
        // on a fresh instance.
        let key = scope
            .tenant_id
            .clone()
            .filter(|_| !pre.is_wasi_http())
            .map(|tenant_id| InstanceKey {
                prepared_id: pre.id(),
                tenant_id,
            });
        let started = self.warm.call_start();
        let warm = key.as_ref().and_then(|key| self.warm.take(key));
        let (mut store, warm_guest, calls) = match warm {
            Some(WarmInstance {
                mut store,
                guest,
                calls,
            }) => {
                store.data_mut().begin_call(scope, instance_limits);
                (store, Some(guest), calls)
            }
            None => {
                let state = StoreState::new(scope, self.services.clone(), instance_limits);
                let mut store = Store::new(&self.engine, state);
                store.limiter(|state| &mut state.limits);
                (store, None, 0)
            }
        };
        store.set_epoch_deadline(1);
        // At every tick: yield as many times as the tenant runs calls per call of the tenant
        // running fewest (admission.rs, `TenantLoad`), so tenants share the CPU by turns, not by
        // how many calls each has running.
        let tenant_load = permit.tenant_load();
        store.epoch_deadline_callback(move |_| {
            let turns = tenant_load.turns();
            Ok(UpdateDeadline::YieldCustom(
                1,
                Box::pin(async move {
                    for _ in 0..turns {
                        tokio::task::yield_now().await;
                    }
                }),
            ))
        });
        let work = async {
            let guest = match warm_guest {
                Some(guest) => guest,
                None => pre.instantiate(&mut store).await?,
            };
            let value = call(&guest, &mut store).await?;
            Ok::<_, wasmtime::Error>((value, guest))
        };
        let outcome = tokio::time::timeout(timeout, work).await;
        let unit = store.data_mut().take_unit();
        // A call that did not return a value drops its store here: the instance goes back to
        // the pool, reset.
        match outcome {
            Err(_) => Err(CallError::Timeout(timeout)),
            Ok(Err(error)) => Err(CallError::Trap(format!("{error:#}"))),
            Ok(Ok((value, guest))) => {
                if let Some(key) = key.filter(|_| store.data().limits.keeps_warm()) {
                    self.warm.give_back(
                        key,
                        WarmInstance {
                            store,
                            guest,
                            calls: calls.saturating_add(1),
                        },
                        started,
                    );
                }
                Ok((value, unit))
            }
        }
    }

    /// Retires the idle instances of `tenant_id` (its provisioning changed: an instance may
    /// hold what the engine read of it before).
    pub fn retire_warm_tenant(&self, tenant_id: &str) {
        self.warm.retire_tenant(tenant_id);
    }

    /// Retires the idle instances of the prepared component `prepared_id` (unloaded, or
    /// replaced by another version).
    pub fn retire_warm_prepared(&self, prepared_id: u64) {
        self.warm.retire_prepared(prepared_id);
    }

    /// How many instances are kept warm now.
    pub fn warm_instance_count(&self) -> usize {
        self.warm.idle_count()
    }
}

/// The engine world versions the host serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorldVersion {
    V0_1,
    V0_2,
    V0_3,
    /// A `wasi:http/proxy` component (`wasi_http.rs`), not of the engine world.
    WasiHttp,
}

impl WorldVersion {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V0_1 => "0.1.0",
            Self::V0_2 => "0.2.0",
            Self::V0_3 => "0.3.0",
            Self::WasiHttp => "wasi:http@0.2",
        }
    }
}

/// A component linked against the host's imports, for the world version it was built against,
/// with an id no other prepared component has (what warm instances are keyed by).
pub struct EnginePre {
    id: u64,
    linked: LinkedPre,
}

enum LinkedPre {
    V0_1(v0_1::EnginePre<StoreState>),
    V0_2(v0_2::EnginePre<StoreState>),
    V0_3(v0_3::EnginePre<StoreState>),
    WasiHttp(wasmtime_wasi_http::p2::bindings::ProxyPre<StoreState>),
}

impl EnginePre {
    pub fn world(&self) -> WorldVersion {
        match self.linked {
            LinkedPre::V0_1(_) => WorldVersion::V0_1,
            LinkedPre::V0_2(_) => WorldVersion::V0_2,
            LinkedPre::V0_3(_) => WorldVersion::V0_3,
            LinkedPre::WasiHttp(_) => WorldVersion::WasiHttp,
        }
    }

    /// Whether the component is a `wasi:http` one: then every request gets a fresh instance,
    /// as `wasmtime serve` gives it (it may keep per-request state in its globals).
    pub fn is_wasi_http(&self) -> bool {
        matches!(self.linked, LinkedPre::WasiHttp(_))
    }

    /// This prepared component's id, unique in the process.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// A fresh instance of the component in `store`.
    async fn instantiate(&self, store: &mut Store<StoreState>) -> wasmtime::Result<Guest> {
        Ok(match &self.linked {
            LinkedPre::V0_1(pre) => Guest::V0_1(
                pre.instantiate_async(&mut *store)
                    .await?
                    .tessera_engine_guest()
                    .clone(),
            ),
            LinkedPre::V0_2(pre) => Guest::V0_2(
                pre.instantiate_async(&mut *store)
                    .await?
                    .tessera_engine_guest()
                    .clone(),
            ),
            LinkedPre::V0_3(pre) => Guest::V0_3(
                pre.instantiate_async(&mut *store)
                    .await?
                    .tessera_engine_guest()
                    .clone(),
            ),
            LinkedPre::WasiHttp(pre) => Guest::WasiHttp(
                pre.instantiate_async(&mut *store)
                    .await?
                    .wasi_http_incoming_handler()
                    .clone(),
            ),
        })
    }
}
