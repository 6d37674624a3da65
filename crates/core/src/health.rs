//! Core health: the statuses and the extended report of the database, the cache and the
//! background workers, which the worker registry (`workers.rs`) grades and the health
//! endpoints (`routes/health.rs`) answer.

use serde::Serialize;
use utoipa::ToSchema;

/// `ok`, `degraded` or `down`; ordered so the worst of several is their maximum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum HealthStatus {
    Ok,
    Degraded,
    Down,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ExtendedHealth {
    /// The worst of all checks.
    pub status: HealthStatus,
    pub checks: HealthChecks,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct HealthChecks {
    pub database: HealthStatus,
    pub cache: HealthStatus,
    pub workers: WorkerChecks,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct WorkerChecks {
    pub projector: HealthStatus,
    pub search: HealthStatus,
    pub workflow: HealthStatus,
}
