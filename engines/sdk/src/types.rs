//! Plain Rust types for what crosses the engine boundary besides requests: the engine's
//! [`Descriptor`] and the arguments of the lifecycle hooks ([`TenantInfo`], [`UserInfo`],
//! [`Event`], [`Job`]). All but [`Job`] are `tessera-wire`'s, the same types the host converts
//! the WIT records into on its side.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

pub use tessera_wire::engine::{
    Descriptor, Event, Permission, Setting, SettingKind, TenantInfo, UserInfo,
};

/// A job the engine scheduled, now due.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Job {
    /// The id `scheduler::schedule` returned.
    pub id: String,
    /// The tenant it was scheduled for (storage is scoped to it during `run_job`).
    pub tenant_id: String,
    /// The payload given to `schedule`.
    pub payload: Vec<u8>,
    /// 1 on the first run; higher when a previous run failed or the host stopped mid-run.
    pub attempt: u32,
}

impl Job {
    /// The payload parsed as JSON into `T`.
    pub fn payload_json<T: DeserializeOwned>(&self) -> Result<T, String> {
        serde_json::from_slice(&self.payload).map_err(|error| format!("job payload: {error}"))
    }
}
