//! The resource limiter of an engine call's store: the call's memory and table caps, and how
//! large the instance's memories grew, which decides whether it is kept warm
//! (`warm_instances.rs`).

use wasmtime::{ResourceLimiter, StoreLimits, StoreLimitsBuilder};

/// A store's resource limiter: the call's [`StoreLimits`], and the size the instance's largest
/// linear memory reached (wasmtime asks the limiter when a memory is created and whenever it
/// grows), which decides whether the instance is kept warm ([`Self::keeps_warm`]).
pub struct InstanceLimits {
    limits: StoreLimits,
    /// The cap of each memory, in bytes.
    memory_limit_bytes: usize,
    /// The largest size any of the instance's memories reached, in bytes.
    largest_memory_bytes: usize,
}

impl InstanceLimits {
    /// A call's limits: each memory capped at `memory_limit_bytes` and each table at
    /// `max_table_elements`, a failed growth trapping.
    pub fn new(memory_limit_bytes: usize, max_table_elements: u32) -> Self {
        Self {
            limits: StoreLimitsBuilder::new()
                .memory_size(memory_limit_bytes)
                .table_elements(usize::try_from(max_table_elements).unwrap_or(usize::MAX))
                .trap_on_grow_failure(true)
                .build(),
            memory_limit_bytes,
            largest_memory_bytes: 0,
        }
    }

    /// The next call's limits (`next`); what the instance's memories reached stays.
    pub fn renew(&mut self, next: InstanceLimits) {
        self.limits = next.limits;
        self.memory_limit_bytes = next.memory_limit_bytes;
    }

    /// Whether the instance may be kept for another call: its memories stayed within half their
    /// cap.
    pub fn keeps_warm(&self) -> bool {
        self.largest_memory_bytes <= self.memory_limit_bytes / 2
    }
}

impl ResourceLimiter for InstanceLimits {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let allowed = self.limits.memory_growing(current, desired, maximum)?;
        if allowed {
            self.largest_memory_bytes = self.largest_memory_bytes.max(desired);
        }
        Ok(allowed)
    }

    fn memory_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.limits.memory_grow_failed(error)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.limits.table_growing(current, desired, maximum)
    }

    fn table_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.limits.table_grow_failed(error)
    }

    fn instances(&self) -> usize {
        self.limits.instances()
    }

    fn tables(&self) -> usize {
        self.limits.tables()
    }

    fn memories(&self) -> usize {
        self.limits.memories()
    }
}
