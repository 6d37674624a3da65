//! The state every handler shares: one allocation behind an `Arc`, so the clone axum makes
//! for each request's extractors is one reference count, not one per service.

use std::sync::Arc;

use crate::auth::AuthState;
use crate::config::{Config, Secret};
use crate::core::CoreState;
use crate::orchestrator::Orchestrator;
use crate::runtime::EngineRegistry;
use crate::runtime::state::RuntimeState;
use crate::storage::Database;
use crate::storage::cache::Cache;

/// The shared services; handlers reach them through [`AppState`]'s `Deref`.
#[derive(Clone)]
pub struct AppState(Arc<Services>);

impl AppState {
    pub fn new(services: Services) -> Self {
        Self(Arc::new(services))
    }
}

/// The authentication service's state, for its routes and the `Caller` extractor.
impl axum::extract::FromRef<AppState> for AuthState {
    fn from_ref(state: &AppState) -> Self {
        state.auth.clone()
    }
}

/// The core service's state, for its routes.
impl axum::extract::FromRef<AppState> for CoreState {
    fn from_ref(state: &AppState) -> Self {
        state.core.clone()
    }
}

/// Tenancy, for the members routes.
impl axum::extract::FromRef<AppState> for crate::tenancy::TenancyService {
    fn from_ref(state: &AppState) -> Self {
        state.tenancy.clone()
    }
}

/// The orchestrator, for the orchestration routes.
impl axum::extract::FromRef<AppState> for crate::orchestrator::Orchestrator {
    fn from_ref(state: &AppState) -> Self {
        state.orchestrator.clone()
    }
}

/// What `/livez` and `/readyz` check.
impl axum::extract::FromRef<AppState> for crate::probes::ProbeState {
    fn from_ref(state: &AppState) -> Self {
        Self {
            database: state.database.clone(),
            engines: state.engines.clone(),
            workers: state.core.workers.clone(),
            runs_projection_workers: state.config.projections.run_workers,
        }
    }
}

/// What `/metrics` reads on the main listener: open to a bearer of `TESSERA_METRICS_TOKEN`,
/// closed without one.
impl axum::extract::FromRef<AppState> for crate::metrics::MetricsState {
    fn from_ref(state: &AppState) -> Self {
        state.metrics_state(match &state.config.metrics.token {
            Some(token) => crate::metrics::MetricsAccess::Token(token.clone()),
            None => crate::metrics::MetricsAccess::Closed,
        })
    }
}

impl AppState {
    /// `/metrics`'s state with `access`; the recorder's handle when metrics are on.
    pub fn metrics_state(
        &self,
        access: crate::metrics::MetricsAccess,
    ) -> crate::metrics::MetricsState {
        crate::metrics::MetricsState {
            handle: self.config.metrics.enabled().then(crate::metrics::recorder),
            access,
            database: self.database.clone(),
            engines: self.engines.clone(),
        }
    }
}

/// The cluster's hosts, for the operator endpoints.
impl axum::extract::FromRef<AppState> for crate::cluster::ClusterHosts {
    fn from_ref(state: &AppState) -> Self {
        Self {
            database: state.database.clone(),
        }
    }
}

/// The operator token the operator endpoints check (derived from the service secret).
impl axum::extract::FromRef<AppState> for crate::http::operator::OperatorCredential {
    fn from_ref(state: &AppState) -> Self {
        Self(state.operator_token.clone())
    }
}

/// The runtime routes' state.
impl axum::extract::FromRef<AppState> for RuntimeState {
    fn from_ref(state: &AppState) -> Self {
        state.runtime.clone()
    }
}

/// What the signed internal endpoints check against (`http::signature::SignedJson`).
impl axum::extract::FromRef<AppState> for crate::http::signature::InternalCalls {
    fn from_ref(state: &AppState) -> Self {
        Self {
            service_secret: state.service_secret.clone(),
            max_body_bytes: state.config.http.max_body_bytes,
        }
    }
}

impl std::ops::Deref for AppState {
    type Target = Services;

    fn deref(&self) -> &Services {
        &self.0
    }
}

/// Every service of the host, built once at start-up.
pub struct Services {
    pub config: Arc<Config>,
    /// Per-tenant usage counted since the last flush (`http::usage`; written by
    /// `server::flush_usage`).
    pub usage: crate::http::usage::UsageMeter,
    pub database: Database,
    pub cache: Cache,
    pub service_secret: Secret,
    /// The operator endpoints' bearer token (`secrets::operator_token`).
    pub operator_token: Secret,
    /// The authentication service: tokens, sessions, the password hasher (`state.auth.…`).
    pub auth: AuthState,
    pub engines: Arc<EngineRegistry>,
    pub orchestrator: Orchestrator,
    /// Tenants, users and memberships (the members routes; the admin CLI builds its own).
    pub tenancy: crate::tenancy::TenancyService,
    /// What the runtime's routes need (engine registry, public URL, engine body limit).
    pub runtime: RuntimeState,
    /// The core service: the event-log signal, the intention writer, the workers' registry
    /// (`state.core.…`).
    pub core: CoreState,
}
