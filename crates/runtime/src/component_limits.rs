//! Sandbox limits an operator sets: what one component may hold (core instances, linear
//! memories, tables, table elements, linear memory bytes), how long its calls may run and how
//! many of them may be alive at once, globally (`TESSERA_ENGINE_<LIMIT>`) and per engine
//! (`TESSERA_ENGINE_LIMITS__<CODE>__<LIMIT>`).
//!
//! A component's figures are read from its bytes ([`ComponentFigures::of`], with wasmparser)
//! before wasmtime compiles it, so a component over a limit is refused with a message naming
//! the limit, its figure and the setting to change ([`LimitExceeded`]) instead of wasmtime's
//! generic pooling-allocator error. The check runs twice: before compiling, against the largest
//! value any engine may use ([`SandboxLimits::loosest`], which is also what the pool is sized
//! for, since the engine code is known only once the component described itself); then, once
//! `describe` named its code, against that engine's own limits.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use wasmparser::{
    ComponentAlias, ComponentExternalKind, ComponentInstance, ComponentOuterAliasKind,
    ComponentTypeRef, Encoding, Instance, Parser, Payload,
};

/// The prefix of the per-engine limits: `TESSERA_ENGINE_LIMITS__<CODE>__<LIMIT>`.
pub const ENGINE_LIMITS_PREFIX: &str = "TESSERA_ENGINE_LIMITS__";

/// The limits an operator can set, globally and per engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Limit {
    /// Core module instances one component instantiates (transitively).
    MaxCoreInstances,
    /// Linear memories one component defines (transitively).
    MaxMemories,
    /// Tables one component defines (transitively).
    MaxTables,
    /// Elements of one table, at start and when it grows.
    MaxTableElements,
    /// Bytes of one linear memory, at start and when it grows.
    MemoryLimitBytes,
    /// Deadline of a `handle` call.
    HandleTimeout,
    /// Deadline of lifecycle calls, jobs and event deliveries.
    LifecycleTimeout,
    /// Calls (instances) alive at once: the pool's size globally, a cap per engine.
    MaxInstances,
}

impl Limit {
    pub const ALL: [Limit; 8] = [
        Limit::MaxCoreInstances,
        Limit::MaxMemories,
        Limit::MaxTables,
        Limit::MaxTableElements,
        Limit::MemoryLimitBytes,
        Limit::HandleTimeout,
        Limit::LifecycleTimeout,
        Limit::MaxInstances,
    ];

    /// Its name in both variables, e.g. `MAX_CORE_INSTANCES`.
    pub fn name(self) -> &'static str {
        match self {
            Self::MaxCoreInstances => "MAX_CORE_INSTANCES",
            Self::MaxMemories => "MAX_MEMORIES",
            Self::MaxTables => "MAX_TABLES",
            Self::MaxTableElements => "MAX_TABLE_ELEMENTS",
            Self::MemoryLimitBytes => "MEMORY_LIMIT_BYTES",
            Self::HandleTimeout => "HANDLE_TIMEOUT",
            Self::LifecycleTimeout => "LIFECYCLE_TIMEOUT",
            Self::MaxInstances => "MAX_INSTANCES",
        }
    }

    fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|limit| limit.name() == name)
    }

    /// The global variable, e.g. `TESSERA_ENGINE_MAX_CORE_INSTANCES`.
    pub fn global_variable(self) -> String {
        format!("TESSERA_ENGINE_{}", self.name())
    }

    /// The variable of engine `code`, e.g. `TESSERA_ENGINE_LIMITS__NOTES__MAX_CORE_INSTANCES`
    /// (the code upper-cased, `-` as `_`).
    pub fn engine_variable(self, code: &str) -> String {
        format!(
            "{ENGINE_LIMITS_PREFIX}{}__{}",
            code.to_ascii_uppercase().replace('-', "_"),
            self.name()
        )
    }

    /// The values a count limit accepts (inclusive).
    pub fn count_range(self) -> Option<(u64, u64)> {
        match self {
            Self::MaxCoreInstances => Some((1, 1000)),
            Self::MaxMemories => Some((1, 100)),
            Self::MaxTables => Some((1, 1000)),
            Self::MaxTableElements => Some((1, 10_000_000)),
            // One 64 KiB page up to the 4 GiB a 32-bit memory can address.
            Self::MemoryLimitBytes => Some((64 * 1024, 4 * 1024 * 1024 * 1024)),
            Self::MaxInstances => Some((1, 10_000)),
            Self::HandleTimeout | Self::LifecycleTimeout => None,
        }
    }

    /// Checks a count (`value`) against its range; the message names `variable`.
    pub fn check_count(self, variable: &str, value: u64) -> Result<u64, String> {
        match self.count_range() {
            Some((low, high)) if !(low..=high).contains(&value) => {
                Err(format!("{variable} must be between {low} and {high}"))
            }
            _ => Ok(value),
        }
    }

    /// Checks a deadline: at least 1 ms, at most 1 hour.
    pub fn check_duration(variable: &str, value: Duration) -> Result<Duration, String> {
        if value < Duration::from_millis(1) || value > Duration::from_secs(3600) {
            return Err(format!("{variable} must be between 1ms and 1h"));
        }
        Ok(value)
    }
}

/// The effective limits of one engine (or the loosest of all, or the global ones).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SandboxLimits {
    pub max_core_instances: u32,
    pub max_memories: u32,
    pub max_tables: u32,
    pub max_table_elements: u32,
    pub memory_limit_bytes: usize,
    pub handle_timeout: Duration,
    pub lifecycle_timeout: Duration,
    /// The engine's calls alive at once; `None`: no cap of its own (the pool's size binds).
    pub max_instances: Option<u32>,
}

/// One engine's own values (`TESSERA_ENGINE_LIMITS__<CODE>__<LIMIT>`), each replacing the
/// global one, above or below it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EngineLimits {
    pub max_core_instances: Option<u32>,
    pub max_memories: Option<u32>,
    pub max_tables: Option<u32>,
    pub max_table_elements: Option<u32>,
    pub memory_limit_bytes: Option<usize>,
    pub handle_timeout: Option<Duration>,
    pub lifecycle_timeout: Option<Duration>,
    pub max_instances: Option<u32>,
}

impl SandboxLimits {
    /// `self` (the global limits) with engine `overrides` applied.
    pub fn with(&self, overrides: &EngineLimits) -> Self {
        Self {
            max_core_instances: overrides
                .max_core_instances
                .unwrap_or(self.max_core_instances),
            max_memories: overrides.max_memories.unwrap_or(self.max_memories),
            max_tables: overrides.max_tables.unwrap_or(self.max_tables),
            max_table_elements: overrides
                .max_table_elements
                .unwrap_or(self.max_table_elements),
            memory_limit_bytes: overrides
                .memory_limit_bytes
                .unwrap_or(self.memory_limit_bytes),
            handle_timeout: overrides.handle_timeout.unwrap_or(self.handle_timeout),
            lifecycle_timeout: overrides
                .lifecycle_timeout
                .unwrap_or(self.lifecycle_timeout),
            max_instances: overrides.max_instances.or(self.max_instances),
        }
    }

    /// The largest value of each limit that any engine may use: the global one, raised by
    /// every engine's own. The pool's per-component maxima are these; `max_instances` stays
    /// the global one.
    pub fn loosest<'a>(&self, engines: impl IntoIterator<Item = &'a EngineLimits>) -> Self {
        let mut loosest = *self;
        for engine in engines {
            let own = self.with(engine);
            loosest.max_core_instances = loosest.max_core_instances.max(own.max_core_instances);
            loosest.max_memories = loosest.max_memories.max(own.max_memories);
            loosest.max_tables = loosest.max_tables.max(own.max_tables);
            loosest.max_table_elements = loosest.max_table_elements.max(own.max_table_elements);
            loosest.memory_limit_bytes = loosest.memory_limit_bytes.max(own.memory_limit_bytes);
            loosest.handle_timeout = loosest.handle_timeout.max(own.handle_timeout);
            loosest.lifecycle_timeout = loosest.lifecycle_timeout.max(own.lifecycle_timeout);
        }
        loosest
    }

    fn per_component(&self, limit: Limit) -> u64 {
        match limit {
            Limit::MaxCoreInstances => u64::from(self.max_core_instances),
            Limit::MaxMemories => u64::from(self.max_memories),
            Limit::MaxTables => u64::from(self.max_tables),
            Limit::MaxTableElements => u64::from(self.max_table_elements),
            Limit::MemoryLimitBytes => u64::try_from(self.memory_limit_bytes).unwrap_or(u64::MAX),
            Limit::HandleTimeout | Limit::LifecycleTimeout | Limit::MaxInstances => u64::MAX,
        }
    }
}

/// Reads the per-engine limits from `variables` (the process environment in the host):
/// every `TESSERA_ENGINE_LIMITS__<CODE>__<LIMIT>`, the code lower-cased with `_` read as `-`.
/// An unknown limit name, a value that does not parse or is out of its range, is an error
/// naming the variable. `max_instances` is the pool's size: an engine's cap may not exceed it.
pub fn engine_limits(
    variables: impl IntoIterator<Item = (String, String)>,
    max_instances: u32,
) -> Result<BTreeMap<String, EngineLimits>, String> {
    let mut engines = BTreeMap::<String, EngineLimits>::new();
    for (variable, value) in variables {
        let Some(rest) = variable.strip_prefix(ENGINE_LIMITS_PREFIX) else {
            continue;
        };
        let (code, name) = rest
            .split_once("__")
            .ok_or_else(|| format!("{variable} is not {ENGINE_LIMITS_PREFIX}<CODE>__<LIMIT>"))?;
        if code.is_empty() {
            return Err(format!("{variable} names no engine"));
        }
        let limit = Limit::from_name(name).ok_or_else(|| {
            let names: Vec<&str> = Limit::ALL.iter().map(|limit| limit.name()).collect();
            format!(
                "{variable}: {name:?} is not a limit; the limits are {}",
                names.join(", ")
            )
        })?;
        let code = code.to_ascii_lowercase().replace('_', "-");
        let engine = engines.entry(code).or_default();
        let value = value.trim();
        match limit {
            Limit::HandleTimeout | Limit::LifecycleTimeout => {
                let duration: Duration = humantime::parse_duration(value)
                    .map_err(|_| format!("{variable}: {value:?} is not a duration like 5s"))?;
                let duration = Limit::check_duration(&variable, duration)?;
                if limit == Limit::HandleTimeout {
                    engine.handle_timeout = Some(duration);
                } else {
                    engine.lifecycle_timeout = Some(duration);
                }
            }
            _ => {
                let count: u64 = value
                    .parse()
                    .map_err(|_| format!("{variable}: {value:?} is not a whole number"))?;
                let count = limit.check_count(&variable, count)?;
                let narrow = |count: u64| u32::try_from(count).unwrap_or(u32::MAX);
                match limit {
                    Limit::MaxCoreInstances => engine.max_core_instances = Some(narrow(count)),
                    Limit::MaxMemories => engine.max_memories = Some(narrow(count)),
                    Limit::MaxTables => engine.max_tables = Some(narrow(count)),
                    Limit::MaxTableElements => engine.max_table_elements = Some(narrow(count)),
                    Limit::MemoryLimitBytes => {
                        engine.memory_limit_bytes =
                            Some(usize::try_from(count).unwrap_or(usize::MAX));
                    }
                    Limit::MaxInstances => {
                        if count > u64::from(max_instances) {
                            return Err(format!(
                                "{variable} must be between 1 and TESSERA_ENGINE_MAX_INSTANCES ({max_instances})"
                            ));
                        }
                        engine.max_instances = Some(narrow(count));
                    }
                    Limit::HandleTimeout | Limit::LifecycleTimeout => {}
                }
            }
        }
    }
    Ok(engines)
}

/// What instantiating a component takes, read from its bytes: the figures its limits are
/// checked against.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ComponentFigures {
    /// Core module instances it creates, its nested components' included.
    pub core_instances: u64,
    /// Linear memories its instances define.
    pub memories: u64,
    /// Tables its instances define.
    pub tables: u64,
    /// The initial size of its largest linear memory, in bytes.
    pub largest_initial_memory_bytes: u64,
    /// The initial sizes of all its linear memories together, in bytes.
    pub initial_memory_bytes: u64,
    /// The initial size of its largest table, in elements.
    pub largest_initial_table_elements: u64,
    /// False when it instantiates a module it imports or takes from another instance's
    /// exports: that module counts as a core instance, its memories and tables are unknown.
    pub complete: bool,
}

impl ComponentFigures {
    fn add(&mut self, other: &Self) {
        self.core_instances += other.core_instances;
        self.memories += other.memories;
        self.tables += other.tables;
        self.largest_initial_memory_bytes = self
            .largest_initial_memory_bytes
            .max(other.largest_initial_memory_bytes);
        self.initial_memory_bytes += other.initial_memory_bytes;
        self.largest_initial_table_elements = self
            .largest_initial_table_elements
            .max(other.largest_initial_table_elements);
        self.complete &= other.complete;
    }

    /// The figures of a component's bytes. Each instantiation counts (a module instantiated
    /// three times is three core instances with three sets of memories and tables), and a
    /// nested component counts what it instantiates each time it is instantiated, as
    /// wasmtime's pooling allocator counts them.
    pub fn of(bytes: &[u8]) -> anyhow::Result<Self> {
        let mut stack: Vec<Frame> = Vec::new();
        let mut top: Option<ComponentFigures> = None;
        for payload in Parser::new(0).parse_all(bytes) {
            let payload = payload.map_err(|error| anyhow::anyhow!("{error}"))?;
            match payload {
                Payload::Version { encoding, .. } => {
                    if stack.is_empty() && encoding != Encoding::Component {
                        anyhow::bail!("the file is a core WebAssembly module, not a component");
                    }
                    stack.push(match encoding {
                        Encoding::Component => Frame::Component(ComponentFrame::default()),
                        Encoding::Module => Frame::Module(ComponentFigures {
                            complete: true,
                            ..ComponentFigures::default()
                        }),
                    });
                }
                Payload::MemorySection(reader) => {
                    if let Some(Frame::Module(module)) = stack.last_mut() {
                        for memory in reader {
                            let memory = memory.map_err(|error| anyhow::anyhow!("{error}"))?;
                            let bytes = memory
                                .initial
                                .saturating_mul(1u64 << memory.page_size_log2());
                            module.memories += 1;
                            module.initial_memory_bytes =
                                module.initial_memory_bytes.saturating_add(bytes);
                            module.largest_initial_memory_bytes =
                                module.largest_initial_memory_bytes.max(bytes);
                        }
                    }
                }
                Payload::TableSection(reader) => {
                    if let Some(Frame::Module(module)) = stack.last_mut() {
                        for table in reader {
                            let table = table.map_err(|error| anyhow::anyhow!("{error}"))?;
                            module.tables += 1;
                            module.largest_initial_table_elements =
                                module.largest_initial_table_elements.max(table.ty.initial);
                        }
                    }
                }
                Payload::InstanceSection(reader) => {
                    let component = current(&mut stack)?;
                    for instance in reader {
                        if let Instance::Instantiate { module_index, .. } =
                            instance.map_err(|error| anyhow::anyhow!("{error}"))?
                        {
                            let module = component.module(module_index);
                            component.figures.add(&module);
                        }
                    }
                }
                Payload::ComponentInstanceSection(reader) => {
                    let component = current(&mut stack)?;
                    for instance in reader {
                        if let ComponentInstance::Instantiate {
                            component_index, ..
                        } = instance.map_err(|error| anyhow::anyhow!("{error}"))?
                        {
                            let nested = component.component(component_index);
                            component.figures.add(&nested);
                        }
                    }
                }
                Payload::ComponentImportSection(reader) => {
                    let component = current(&mut stack)?;
                    for import in reader {
                        match import.map_err(|error| anyhow::anyhow!("{error}"))?.ty {
                            ComponentTypeRef::Module(_) => component.modules.push(None),
                            ComponentTypeRef::Component(_) => component.components.push(None),
                            _ => {}
                        }
                    }
                }
                Payload::ComponentExportSection(reader) => {
                    let component = current(&mut stack)?;
                    for export in reader {
                        let export = export.map_err(|error| anyhow::anyhow!("{error}"))?;
                        // An export is a new item of its kind, the same as the one exported.
                        match export.kind {
                            ComponentExternalKind::Module => {
                                let module = component.modules.get(index(export.index)).cloned();
                                component.modules.push(module.flatten());
                            }
                            ComponentExternalKind::Component => {
                                let nested = component.components.get(index(export.index)).cloned();
                                component.components.push(nested.flatten());
                            }
                            _ => {}
                        }
                    }
                }
                Payload::ComponentAliasSection(reader) => {
                    for alias in reader {
                        match alias.map_err(|error| anyhow::anyhow!("{error}"))? {
                            ComponentAlias::InstanceExport {
                                kind: ComponentExternalKind::Module,
                                ..
                            } => current(&mut stack)?.modules.push(None),
                            ComponentAlias::InstanceExport {
                                kind: ComponentExternalKind::Component,
                                ..
                            } => current(&mut stack)?.components.push(None),
                            ComponentAlias::Outer {
                                kind:
                                    kind @ (ComponentOuterAliasKind::CoreModule
                                    | ComponentOuterAliasKind::Component),
                                count,
                                index: item,
                            } => {
                                let components: Vec<&ComponentFrame> = stack
                                    .iter()
                                    .filter_map(|frame| match frame {
                                        Frame::Component(component) => Some(component),
                                        Frame::Module(_) => None,
                                    })
                                    .collect();
                                let outer = components
                                    .len()
                                    .checked_sub(1 + index(count))
                                    .and_then(|position| components.get(position));
                                if kind == ComponentOuterAliasKind::CoreModule {
                                    let module = outer
                                        .and_then(|outer| outer.modules.get(index(item)).cloned())
                                        .flatten();
                                    current(&mut stack)?.modules.push(module);
                                } else {
                                    let nested = outer
                                        .and_then(|outer| {
                                            outer.components.get(index(item)).cloned()
                                        })
                                        .flatten();
                                    current(&mut stack)?.components.push(nested);
                                }
                            }
                            _ => {}
                        }
                    }
                }
                Payload::End(_) => match stack.pop() {
                    Some(Frame::Module(module)) => current(&mut stack)?.modules.push(Some(module)),
                    Some(Frame::Component(component)) => match stack.last_mut() {
                        Some(Frame::Component(parent)) => {
                            parent.components.push(Some(component.figures));
                        }
                        Some(Frame::Module(_)) => anyhow::bail!("a component inside a module"),
                        None => top = Some(component.figures),
                    },
                    None => anyhow::bail!("an unbalanced end"),
                },
                _ => {}
            }
        }
        top.ok_or_else(|| anyhow::anyhow!("the component ends early"))
    }
}

fn index(value: u32) -> usize {
    usize::try_from(value).unwrap_or(usize::MAX)
}

/// A component or module being read: what instantiating it takes so far, and (for a
/// component) its module and component index spaces.
enum Frame {
    Component(ComponentFrame),
    Module(ComponentFigures),
}

struct ComponentFrame {
    figures: ComponentFigures,
    /// Its core module index space: what instantiating each takes (`None`: unknown).
    modules: Vec<Option<ComponentFigures>>,
    /// Its component index space: what instantiating each takes (`None`: unknown).
    components: Vec<Option<ComponentFigures>>,
}

impl Default for ComponentFrame {
    fn default() -> Self {
        Self {
            figures: ComponentFigures {
                complete: true,
                ..ComponentFigures::default()
            },
            modules: Vec::new(),
            components: Vec::new(),
        }
    }
}

impl ComponentFrame {
    /// What instantiating module `index` takes: one core instance, with its memories and
    /// tables when the module is known.
    fn module(&self, index: u32) -> ComponentFigures {
        let mut module = self
            .modules
            .get(self::index(index))
            .cloned()
            .flatten()
            .unwrap_or_default();
        module.core_instances = 1;
        module
    }

    /// What instantiating component `index` takes (nothing known of an imported one).
    fn component(&self, index: u32) -> ComponentFigures {
        self.components
            .get(self::index(index))
            .cloned()
            .flatten()
            .unwrap_or_default()
    }
}

fn current(stack: &mut [Frame]) -> anyhow::Result<&mut ComponentFrame> {
    match stack.last_mut() {
        Some(Frame::Component(component)) => Ok(component),
        _ => anyhow::bail!("a component section outside a component"),
    }
}

/// A component over one of its limits: the message names the limit, the component's figure,
/// the limit's value and the setting to change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitExceeded {
    pub file: String,
    pub limit: Limit,
    /// The component's figure.
    pub needs: u64,
    /// The limit it exceeds.
    pub allowed: u64,
    /// The engine code, when known (the second check); `None` before the component described
    /// itself, when its engine's limits are not known yet.
    pub engine: Option<String>,
    /// Before the engine is known: the global value, when some engine raises the limit above
    /// it (`allowed` is then that engine's).
    pub global: Option<u64>,
}

impl fmt::Display for LimitExceeded {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bytes = |count: u64| format!("{count} bytes ({} MiB)", mebibytes(count));
        let (needs, allowed) = match self.limit {
            Limit::MaxCoreInstances => (
                format!("{} core instances per component", self.needs),
                self.allowed.to_string(),
            ),
            Limit::MaxMemories => (
                format!("{} linear memories per component", self.needs),
                self.allowed.to_string(),
            ),
            Limit::MaxTables => (
                format!("{} tables per component", self.needs),
                self.allowed.to_string(),
            ),
            Limit::MaxTableElements => (
                format!("a table of {} elements at start", self.needs),
                format!("{} elements", self.allowed),
            ),
            Limit::MemoryLimitBytes => (
                format!("a linear memory of {} at start", bytes(self.needs)),
                bytes(self.allowed),
            ),
            Limit::HandleTimeout | Limit::LifecycleTimeout | Limit::MaxInstances => {
                (self.needs.to_string(), self.allowed.to_string())
            }
        };
        write!(
            formatter,
            "{} needs {needs}; the limit is {allowed}",
            self.file
        )?;
        match (&self.engine, self.global) {
            (Some(code), _) => write!(
                formatter,
                " ({} or {})",
                self.limit.engine_variable(code),
                self.limit.global_variable()
            ),
            (None, Some(global)) => write!(
                formatter,
                " for the engines whose own limit is highest, {global} for the others ({} for all, or {ENGINE_LIMITS_PREFIX}<CODE>__{} for its engine alone)",
                self.limit.global_variable(),
                self.limit.name()
            ),
            (None, None) => write!(
                formatter,
                " ({}, or {ENGINE_LIMITS_PREFIX}<CODE>__{} for its engine alone)",
                self.limit.global_variable(),
                self.limit.name()
            ),
        }
    }
}

impl std::error::Error for LimitExceeded {}

/// `bytes` in MiB with one decimal (`13.1`).
fn mebibytes(bytes: u64) -> String {
    let tenths = bytes.saturating_mul(10).saturating_add(512 * 1024) / (1024 * 1024);
    format!("{}.{}", tenths / 10, tenths % 10)
}

/// Checks `figures` of the component `file` against `limits`: those of the engine `engine`
/// once it is known, else the loosest any engine may use (`global`: the global limits, to
/// tell the operator which value applies to an engine without its own). The first limit
/// exceeded is the error.
pub fn check(
    file: &str,
    figures: &ComponentFigures,
    limits: &SandboxLimits,
    engine: Option<&str>,
    global: &SandboxLimits,
) -> Result<(), LimitExceeded> {
    let checks = [
        (Limit::MaxCoreInstances, figures.core_instances),
        (Limit::MaxMemories, figures.memories),
        (Limit::MaxTables, figures.tables),
        (
            Limit::MaxTableElements,
            figures.largest_initial_table_elements,
        ),
        (
            Limit::MemoryLimitBytes,
            figures.largest_initial_memory_bytes,
        ),
    ];
    for (limit, needs) in checks {
        let allowed = limits.per_component(limit);
        if needs > allowed {
            let global = global.per_component(limit);
            return Err(LimitExceeded {
                file: file.to_owned(),
                limit,
                needs,
                allowed,
                engine: engine.map(str::to_owned),
                global: (engine.is_none() && global != allowed).then_some(global),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_encoder::{
        Component, ComponentInstanceSection, ComponentSectionId, InstanceSection, MemorySection,
        MemoryType, Module, ModuleSection, NestedComponentSection, RawSection, RefType,
        TableSection, TableType,
    };

    const GLOBAL: SandboxLimits = SandboxLimits {
        max_core_instances: 4,
        max_memories: 4,
        max_tables: 4,
        max_table_elements: 100,
        memory_limit_bytes: 4 * 65536,
        handle_timeout: Duration::from_secs(5),
        lifecycle_timeout: Duration::from_secs(30),
        max_instances: None,
    };

    /// A module with two memories (3 pages and 1 page) and a table of 10 elements.
    fn module() -> Module {
        let mut module = Module::new();
        let mut memories = MemorySection::new();
        for pages in [3, 1] {
            memories.memory(MemoryType {
                minimum: pages,
                maximum: None,
                memory64: false,
                shared: false,
                page_size_log2: None,
            });
        }
        let mut tables = TableSection::new();
        tables.table(TableType {
            element_type: RefType::FUNCREF,
            table64: false,
            minimum: 10,
            maximum: None,
            shared: false,
        });
        module.section(&tables);
        module.section(&memories);
        module
    }

    /// A component instantiating `module()` `times` times.
    fn component(times: u32) -> Component {
        let mut component = Component::new();
        component.section(&ModuleSection(&module()));
        let mut instances = InstanceSection::new();
        for _ in 0..times {
            instances.instantiate(0, Vec::<(&str, wasm_encoder::ModuleArg)>::new());
        }
        component.section(&instances);
        component
    }

    #[test]
    fn every_instantiation_counts() {
        let figures = ComponentFigures::of(&component(3).finish()).unwrap();
        assert_eq!(
            figures,
            ComponentFigures {
                core_instances: 3,
                memories: 6,
                tables: 3,
                largest_initial_memory_bytes: 3 * 65536,
                initial_memory_bytes: 12 * 65536,
                largest_initial_table_elements: 10,
                complete: true,
            }
        );
    }

    #[test]
    fn nested_components_count_once_per_instantiation() {
        let mut outer = Component::new();
        outer.section(&NestedComponentSection(&component(2)));
        let mut instances = ComponentInstanceSection::new();
        instances.instantiate(
            0,
            Vec::<(&str, wasm_encoder::ComponentExportKind, u32)>::new(),
        );
        instances.instantiate(
            0,
            Vec::<(&str, wasm_encoder::ComponentExportKind, u32)>::new(),
        );
        outer.section(&instances);
        // A module defined but never instantiated takes nothing.
        outer.section(&ModuleSection(&module()));
        let figures = ComponentFigures::of(&outer.finish()).unwrap();
        assert_eq!(figures.core_instances, 4);
        assert_eq!(figures.memories, 8);
        assert_eq!(figures.tables, 4);
        assert!(figures.complete);
    }

    #[test]
    fn the_figures_agree_with_wasmtime() {
        let mut outer = component(1);
        outer.section(&NestedComponentSection(&component(2)));
        let mut instances = ComponentInstanceSection::new();
        instances.instantiate(
            0,
            Vec::<(&str, wasm_encoder::ComponentExportKind, u32)>::new(),
        );
        outer.section(&instances);
        let bytes = outer.finish();
        let figures = ComponentFigures::of(&bytes).unwrap();
        assert_eq!((figures.core_instances, figures.memories), (3, 6));

        let mut config = wasmtime::Config::new();
        config.wasm_component_model(true).wasm_multi_memory(true);
        let engine = wasmtime::Engine::new(&config).unwrap();
        let compiled = wasmtime::component::Component::new(&engine, &bytes).unwrap();
        let resources = compiled.resources_required().unwrap();
        assert_eq!(u64::from(resources.num_memories), figures.memories);
        assert_eq!(u64::from(resources.num_tables), figures.tables);
        assert_eq!(
            resources.max_initial_memory_size.map(|pages| pages * 65536),
            Some(figures.largest_initial_memory_bytes)
        );
        assert_eq!(
            resources.max_initial_table_size,
            Some(figures.largest_initial_table_elements)
        );
        // The pooling allocator counts the same core instances: one fewer is refused.
        for (allowed, fits) in [(2, false), (3, true)] {
            let mut pooling = wasmtime::PoolingAllocationConfig::default();
            pooling
                .total_component_instances(1)
                .total_core_instances(4)
                .total_memories(8)
                .total_tables(4)
                .total_stacks(1)
                .max_memory_size(1 << 20)
                .max_memories_per_module(2)
                .max_core_instances_per_component(allowed);
            let mut config = wasmtime::Config::new();
            config
                .wasm_component_model(true)
                .wasm_multi_memory(true)
                .memory_reservation(1 << 20)
                .allocation_strategy(wasmtime::InstanceAllocationStrategy::Pooling(pooling));
            let engine = wasmtime::Engine::new(&config).unwrap();
            let compiled = wasmtime::component::Component::new(&engine, &bytes);
            assert_eq!(compiled.is_ok(), fits, "{:?}", compiled.err());
        }
    }

    #[test]
    fn a_core_module_is_not_a_component() {
        let error = ComponentFigures::of(&module().finish()).unwrap_err();
        assert!(error.to_string().contains("not a component"), "{error}");
        assert!(ComponentFigures::of(b"\0asm").is_err());
        // An unknown section in a component is wasmparser's error, not a panic.
        let mut odd = Component::new();
        odd.section(&RawSection {
            id: ComponentSectionId::CoreInstance as u8,
            data: &[0x05],
        });
        assert!(ComponentFigures::of(&odd.finish()).is_err());
    }

    #[test]
    fn the_first_limit_exceeded_is_named_with_its_figure_and_settings() {
        let figures = ComponentFigures::of(&component(3).finish()).unwrap();
        let engine = GLOBAL.with(&EngineLimits {
            max_core_instances: Some(2),
            ..EngineLimits::default()
        });
        let refused = check("notes.wasm", &figures, &engine, Some("notes"), &GLOBAL).unwrap_err();
        assert_eq!(
            refused.to_string(),
            "notes.wasm needs 3 core instances per component; the limit is 2 \
             (TESSERA_ENGINE_LIMITS__NOTES__MAX_CORE_INSTANCES or TESSERA_ENGINE_MAX_CORE_INSTANCES)"
        );
        // Raised for the engine, the same component passes.
        let raised = GLOBAL.with(&EngineLimits {
            max_memories: Some(6),
            ..EngineLimits::default()
        });
        let refused = check("a.wasm", &figures, &GLOBAL, Some("user-manager"), &GLOBAL)
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("needs 6 linear memories per component; the limit is 4")
                && refused.contains("TESSERA_ENGINE_LIMITS__USER_MANAGER__MAX_MEMORIES"),
            "{refused}"
        );
        assert_eq!(
            check("a.wasm", &figures, &raised, Some("user-manager"), &GLOBAL),
            Ok(())
        );

        // Initial memory over the memory limit, before the engine is known.
        let small = SandboxLimits {
            memory_limit_bytes: 2 * 65536,
            max_memories: 6,
            ..GLOBAL
        };
        let refused = check("big.wasm", &figures, &small, None, &small)
            .unwrap_err()
            .to_string();
        assert_eq!(
            refused,
            "big.wasm needs a linear memory of 196608 bytes (0.2 MiB) at start; the limit is \
             131072 bytes (0.1 MiB) (TESSERA_ENGINE_MEMORY_LIMIT_BYTES, or \
             TESSERA_ENGINE_LIMITS__<CODE>__MEMORY_LIMIT_BYTES for its engine alone)"
        );
        // Table elements.
        let short = SandboxLimits {
            max_table_elements: 9,
            max_memories: 6,
            ..GLOBAL
        };
        let refused = check("t.wasm", &figures, &short, Some("t"), &GLOBAL)
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("needs a table of 10 elements at start; the limit is 9 elements"),
            "{refused}"
        );
    }

    #[test]
    fn the_loosest_limits_are_the_largest_any_engine_may_use() {
        let engines = [
            EngineLimits {
                max_core_instances: Some(20),
                memory_limit_bytes: Some(65536),
                ..EngineLimits::default()
            },
            EngineLimits {
                max_core_instances: Some(2),
                max_tables: Some(9),
                lifecycle_timeout: Some(Duration::from_secs(60)),
                ..EngineLimits::default()
            },
        ];
        let loosest = GLOBAL.loosest(&engines);
        assert_eq!(loosest.max_core_instances, 20);
        assert_eq!(loosest.max_tables, 9);
        assert_eq!(loosest.memory_limit_bytes, GLOBAL.memory_limit_bytes);
        assert_eq!(loosest.lifecycle_timeout, Duration::from_secs(60));
        assert_eq!(GLOBAL.loosest(&[]), GLOBAL);
        // Before the engine is known, a raised limit is told apart from the global one.
        let figures = ComponentFigures {
            core_instances: 21,
            complete: true,
            ..ComponentFigures::default()
        };
        let refused = check("x.wasm", &figures, &loosest, None, &GLOBAL)
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains(
                "the limit is 20 for the engines whose own limit is highest, 4 for the others"
            ),
            "{refused}"
        );
    }

    #[test]
    fn per_engine_limits_are_read_and_checked() {
        let variables = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
                .collect::<Vec<_>>()
        };
        let engines = engine_limits(
            variables(&[
                ("TESSERA_ENGINE_LIMITS__NOTES__MAX_CORE_INSTANCES", "2"),
                (
                    "TESSERA_ENGINE_LIMITS__USER_MANAGER__HANDLE_TIMEOUT",
                    "750ms",
                ),
                ("TESSERA_ENGINE_LIMITS__USER_MANAGER__MAX_INSTANCES", "3"),
                (
                    "TESSERA_ENGINE_LIMITS__NOTES__MEMORY_LIMIT_BYTES",
                    "1048576",
                ),
                ("TESSERA_ENGINES__NOTES__MAX_CORE_INSTANCES", "ignored"),
                ("TESSERA_ENGINE_MAX_MEMORIES", "ignored"),
            ]),
            10,
        )
        .unwrap();
        assert_eq!(
            engines["notes"],
            EngineLimits {
                max_core_instances: Some(2),
                memory_limit_bytes: Some(1_048_576),
                ..EngineLimits::default()
            }
        );
        assert_eq!(
            engines["user-manager"],
            EngineLimits {
                handle_timeout: Some(Duration::from_millis(750)),
                max_instances: Some(3),
                ..EngineLimits::default()
            }
        );
        assert_eq!(engines.len(), 2);
        for (name, value, message) in [
            (
                "TESSERA_ENGINE_LIMITS__NOTES__MAX_CORES",
                "2",
                "is not a limit",
            ),
            (
                "TESSERA_ENGINE_LIMITS__NOTES",
                "2",
                "is not TESSERA_ENGINE_LIMITS__<CODE>",
            ),
            (
                "TESSERA_ENGINE_LIMITS____MAX_TABLES",
                "2",
                "names no engine",
            ),
            (
                "TESSERA_ENGINE_LIMITS__NOTES__MAX_TABLES",
                "0",
                "between 1 and 1000",
            ),
            (
                "TESSERA_ENGINE_LIMITS__NOTES__MAX_TABLES",
                "two",
                "not a whole number",
            ),
            (
                "TESSERA_ENGINE_LIMITS__NOTES__MAX_INSTANCES",
                "11",
                "TESSERA_ENGINE_MAX_INSTANCES (10)",
            ),
            (
                "TESSERA_ENGINE_LIMITS__NOTES__HANDLE_TIMEOUT",
                "soon",
                "not a duration",
            ),
            (
                "TESSERA_ENGINE_LIMITS__NOTES__LIFECYCLE_TIMEOUT",
                "2h",
                "between 1ms and 1h",
            ),
            (
                "TESSERA_ENGINE_LIMITS__NOTES__MEMORY_LIMIT_BYTES",
                "1024",
                "between 65536",
            ),
        ] {
            let error = engine_limits(variables(&[(name, value)]), 10).unwrap_err();
            assert!(
                error.contains(message) && error.contains(name),
                "{name}: {error}"
            );
        }
    }
}
