//! The running host: builds the state, binds the listener, serves every router, and shuts
//! down gracefully (in-flight requests finish; background workers stop at a safe point).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use axum::Router;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::auth::keys::SigningKeys;
use crate::auth::passkeys::RelyingParty;
use crate::auth::password::PasswordHasher;
use crate::auth::sessions::Sessions;
use crate::auth::sign_in_mail::SignInMailer;
use crate::auth::tokens::AccessTokens;
use crate::auth::{AuthServices, AuthState};
use crate::config::Config;
use crate::core::intention_writer::IntentionWriter;
use crate::core::projections::signal::EventSignal;
use crate::core::workers::WorkerRegistry;
use crate::core::{CoreServices, CoreState};
use crate::http::backpressure::{self, Backpressure};
use crate::orchestrator::Orchestrator;
use crate::runtime::RegistryRole;
use crate::secrets;
use crate::state::{AppState, Services};
use crate::storage::Database;
use crate::storage::cache::Cache;

/// How many argon2 hashes may run at once (19 MiB each).
fn password_hash_concurrency() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// Opens the database, runs migrations and assembles the shared state.
pub async fn build_state(config: Config) -> anyhow::Result<AppState> {
    // The data dir holds the database and secrets: 0700, everything in it private.
    secrets::prepare_data_dir(&config.data_dir)?;
    let database = Database::connect_and_migrate(&config.database).await?;
    let service_secret = secrets::service_secret(&config)?;
    let signing_keys = SigningKeys::load_or_create(database.clone(), &config.auth, &service_secret)
        .await
        .context("loading the token signing keys")?;
    let access_tokens = AccessTokens::new(signing_keys);
    let sessions = Sessions::new(database.clone(), access_tokens.clone(), config.auth.clone());
    let usage = crate::http::usage::UsageMeter::default();
    let engines = crate::runtime::start_engines(
        crate::runtime::RuntimeSetup {
            usage: Some(&usage),
            ..config.runtime_setup(&service_secret)
        },
        &database,
        RegistryRole::Serving,
    )
    .await?;
    let runtime = crate::runtime::state::RuntimeState {
        engines: engines.clone(),
        public_url: Arc::from(config.public_url.as_str()),
        max_request_bytes: config.runtime.max_request_bytes,
    };
    let orchestrator = Orchestrator::new(database.clone(), engines.clone());
    let workers = WorkerRegistry::new(config.projections.degraded_lag);
    let event_signal = EventSignal::default();
    let intention_writer = IntentionWriter::start(database.clone(), event_signal.clone());
    let auth = AuthState::new(AuthServices {
        config: config.auth.clone(),
        public_url: config.public_url.clone(),
        database: database.clone(),
        password_hasher: PasswordHasher::new(password_hash_concurrency()),
        service_secret: service_secret.clone(),
        access_tokens,
        sessions,
        engines: Arc::new(crate::app::LoadedEngines(engines.clone())),
        dummy_password_hash: Arc::from(
            tokio::task::spawn_blocking(crate::auth::password::dummy_hash)
                .await
                .context("computing the dummy password hash")?,
        ),
        sign_in_mailer: SignInMailer::new(config.smtp.url.as_ref(), &config.sign_in_mail)?
            .map(Arc::new),
        relying_party: RelyingParty::new(&config.public_url, &config.webauthn)?.map(Arc::new),
    });
    let cache = Cache::new(100_000, Duration::from_secs(60));
    let core = CoreState::new(CoreServices {
        database: database.clone(),
        cache: cache.clone(),
        projections: config.projections.clone(),
        workflows: config.workflows,
        search: config.search,
        realtime: crate::core::realtime::Hub::new(
            database.clone(),
            event_signal.clone(),
            config.realtime.clone(),
            crate::core::realtime::access::Verifier::of(&auth),
            Some(Arc::new(crate::app::EngineRealtime {
                engines: engines.clone(),
                feed: engines.runtime().services().realtime_feed(),
            })),
            usage.clone(),
        ),
        event_signal,
        intention_writer,
        workers,
        event_sink: Arc::new(crate::app::EngineBus(
            engines.runtime().services().bus.clone(),
        )),
        backpressure: Backpressure::new(config.backlog),
    });
    let tenancy = crate::tenancy::TenancyService::new(
        database.clone(),
        config.auth.password_policy.clone(),
        auth.password_hasher.clone(),
        orchestrator.clone(),
    );
    Ok(AppState::new(Services {
        tenancy,
        usage,
        config: Arc::new(config),
        database,
        cache,
        auth,
        core,
        runtime,
        operator_token: secrets::operator_token(&service_secret),
        service_secret,
        engines,
        orchestrator,
    }))
}

/// A host bound to its address, ready to serve.
pub struct Application {
    listener: TcpListener,
    /// `TESSERA_METRICS_LISTEN`: the address serving `/metrics` alone, without a token.
    metrics_listener: Option<TcpListener>,
    router: Router,
    state: AppState,
    /// This host's entry in the cluster's list of hosts (joined when built).
    membership: crate::cluster::Membership,
    shutdown: CancellationToken,
    background: TaskTracker,
}

impl Application {
    pub async fn build(config: Config) -> anyhow::Result<Self> {
        Self::build_with_routes(config, Router::new()).await
    }

    /// Like [`Application::build`], with extra routes that get every HTTP convention.
    pub async fn build_with_routes(
        config: Config,
        extra: Router<AppState>,
    ) -> anyhow::Result<Self> {
        let mut config = config;
        let listen = config.listen;
        let listener = TcpListener::bind(listen)
            .await
            .with_context(|| format!("binding {listen}"))?;
        // Listening on port 0 picks a free port: the default public URL names the real one.
        if config.public_url == format!("http://{listen}") {
            config.public_url = format!(
                "http://{}",
                listener.local_addr().context("reading the bound address")?
            );
        }
        let metrics_listener = match config.metrics.listen {
            Some(address) => Some(
                TcpListener::bind(address)
                    .await
                    .with_context(|| format!("binding TESSERA_METRICS_LISTEN ({address})"))?,
            ),
            None => None,
        };
        let state = build_state(config).await?;
        // An explicit engine-call share in a cluster is the cluster's total: divided among the
        // live hosts, as membership counts them.
        let cluster_share = match (
            state.config.rate_limit_scope,
            state.config.runtime.tenant_concurrency,
        ) {
            (crate::config::RateLimitScope::Cluster, Some(total)) => {
                Some(Arc::new(crate::app::ClusterTenantShare {
                    admission: state.engines.runtime().admission().clone(),
                    total: usize::try_from(total).unwrap_or(usize::MAX),
                })
                    as Arc<dyn crate::cluster::LiveHostsListener>)
            }
            _ => None,
        };
        // In the cluster's list of hosts from now until it stops (crates/cluster).
        let membership = crate::cluster::Membership::join(
            state.database.clone(),
            &crate::cluster::HostIdentity {
                listen_address: listener
                    .local_addr()
                    .context("reading the bound address")?
                    .to_string(),
                public_url: state.config.public_url.clone(),
                version: env!("CARGO_PKG_VERSION").to_owned(),
            },
            state.config.cluster,
            Arc::new(crate::app::LoadedEngines(state.engines.clone())),
            cluster_share,
        )
        .await?;
        let router = crate::app::router(state.clone(), extra);
        Ok(Self {
            listener,
            metrics_listener,
            router,
            state,
            membership,
            shutdown: CancellationToken::new(),
            background: TaskTracker::new(),
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("a bound listener has an address")
    }

    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// The address of the `TESSERA_METRICS_LISTEN` listener, when there is one.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_listener.as_ref().map(|listener| {
            listener
                .local_addr()
                .expect("a bound listener has an address")
        })
    }

    /// Serves until `stop` resolves, then stops accepting, lets in-flight requests finish and
    /// waits for background workers to reach a safe point.
    pub async fn run_until(
        self,
        stop: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let Self {
            listener,
            metrics_listener,
            router,
            state,
            membership,
            shutdown,
            background,
        } = self;
        let watcher = crate::runtime::watcher::watch_plugins(
            state.engines.clone(),
            state.config.plugins_dir.clone(),
            shutdown.clone(),
        );
        background.spawn(async move {
            if let Err(error) = watcher.await {
                tracing::error!(error = format!("{error:#}"), "the plugins watcher stopped");
            }
        });
        background.spawn(crate::runtime::published::run_reconciler(
            state.engines.clone(),
            state.config.plugins_dir.clone(),
            state.config.runtime.reconcile_interval,
            shutdown.clone(),
        ));
        background.spawn(crate::runtime::work::run_worker(
            state.engines.clone(),
            state.engines.runtime().services().queue.clone(),
            state.config.work.clone(),
            shutdown.clone(),
        ));
        crate::core::projections::spawn_workers(&state.core, &background, &shutdown);
        background.spawn(state.core.realtime.clone().run(shutdown.clone()));
        background.spawn(sample_backlog(state.clone(), shutdown.clone()));
        background.spawn(refresh_signing_keys(state.clone(), shutdown.clone()));
        background.spawn(flush_usage(state.clone(), shutdown.clone()));
        if let Some(metrics_listener) = metrics_listener {
            tracing::info!(address = %metrics_listener.local_addr()?, "serving /metrics");
            let metrics_router = crate::app::metrics_router(&state);
            let http = state.config.http.clone();
            let stop = shutdown.clone();
            background.spawn(async move {
                crate::http::connections::serve(metrics_listener, metrics_router, &http, stop)
                    .await;
            });
        }
        background.spawn(membership.clone().run(shutdown.clone()));
        tracing::info!(address = %listener.local_addr()?, "tessera is serving");
        // `stop` ends the listener (its own token) and tells the workers to stop; from then
        // on, in-flight requests and work have `shutdown_timeout` to finish (the work worker
        // hands back what it still runs at that deadline, which takes a moment more).
        let drain_timeout = state.config.shutdown_timeout;
        let stop_serving = CancellationToken::new();
        let stopping = async {
            stop.await;
            tracing::info!(
                timeout_ms = drain_timeout.as_millis() as u64,
                "shutting down: finishing in-flight requests and work"
            );
            shutdown.cancel();
            stop_serving.cancel();
        };
        let serving = crate::http::connections::serve(
            listener,
            router,
            &state.config.http,
            stop_serving.clone(),
        );
        let draining = async {
            serving.await;
            shutdown.cancel();
            background.close();
            background.wait().await;
        };
        let deadline = async {
            stop_serving.cancelled().await;
            tokio::time::sleep(drain_timeout + HAND_BACK_MARGIN).await;
        };
        let ((), drained) = tokio::join!(stopping, async {
            tokio::select! {
                () = draining => true,
                () = deadline => false,
            }
        });
        if let Err(error) = membership.leave().await {
            tracing::warn!(
                error = format!("{error:#}"),
                "marking this host stopped failed"
            );
        }
        // The usage counted while draining.
        if let Err(error) = crate::http::usage::flush(
            &state.usage,
            &crate::app::DatabaseUsage(state.database.clone()),
        )
        .await
        {
            tracing::warn!(
                error = format!("{error:#}"),
                "writing the last usage counters failed"
            );
        }
        if drained {
            state.database.close().await;
            tracing::info!("stopped");
        } else {
            // Requests still in flight are cut off with the process: their clients see the
            // connection close, and nothing they had not been answered is acknowledged.
            tracing::warn!(
                timeout_ms = drain_timeout.as_millis() as u64,
                "stopped at the shutdown deadline with requests or work still in flight"
            );
        }
        Ok(())
    }
}

/// How long past `TESSERA_SHUTDOWN_TIMEOUT` the host waits for the work worker to hand back
/// what it still runs before exiting anyway.
const HAND_BACK_MARGIN: Duration = Duration::from_secs(2);

/// Measures the platform's backlog every [`backpressure::SAMPLE_INTERVAL`] until `shutdown`:
/// engine work due (event deliveries and jobs) of the engines loaded here and events the
/// slowest projection has not applied, both read from the database, so every host of a cluster
/// running the same engines refuses writes alike.
/// Rereads the token signing keys every `signing_keys_refresh`: a rotation made by another
/// process signs this host's new tokens from then on, and revoked keys stop verifying.
async fn refresh_signing_keys(state: AppState, shutdown: CancellationToken) {
    let keys = state.auth.access_tokens.keys().clone();
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(state.config.auth.signing_keys_refresh) => {}
        }
        if let Err(error) = keys.reload().await {
            tracing::warn!(
                error = format!("{error:#}"),
                "rereading the token signing keys failed"
            );
        }
    }
}

/// Adds the usage counted in memory to the database every `TESSERA_USAGE_FLUSH_INTERVAL`
/// (a failed write keeps the counts for the next), and prunes days past
/// `TESSERA_USAGE_RETENTION_DAYS` about once an hour.
async fn flush_usage(state: AppState, shutdown: CancellationToken) {
    let config = state.config.usage;
    let sink = crate::app::DatabaseUsage(state.database.clone());
    let mut last_pruned: Option<tokio::time::Instant> = None;
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(config.flush_interval) => {}
        }
        if let Err(error) = crate::http::usage::flush(&state.usage, &sink).await {
            tracing::warn!(
                error = format!("{error:#}"),
                "writing usage counters failed; kept for the next try"
            );
        }
        if last_pruned.is_none_or(|at| at.elapsed() >= Duration::from_secs(3600)) {
            last_pruned = Some(tokio::time::Instant::now());
            let cutoff = (chrono::Utc::now()
                - chrono::Duration::days(i64::from(config.retention_days)))
            .format("%Y-%m-%d")
            .to_string();
            if let Err(error) =
                crate::storage::tenant_usage::prune_before(&state.database, &cutoff).await
            {
                tracing::warn!(
                    error = format!("{error:#}"),
                    "pruning old usage counters failed"
                );
            }
        }
    }
}

async fn sample_backlog(state: AppState, shutdown: CancellationToken) {
    let backpressure = state.core.backpressure.clone();
    let cap = backpressure.count_cap();
    let queue = state.engines.runtime().services().queue.clone();
    let mut previous = tokio::time::Instant::now();
    loop {
        let sampled = async {
            let work = queue.backlog(&state.engines.codes(), cap).await?;
            let events = crate::core::projections::backlog(&state.database, cap).await?;
            anyhow::Ok((work, events))
        };
        match sampled.await {
            Ok((work, events)) => {
                let sample = work.and(events);
                let now = tokio::time::Instant::now();
                backpressure.record(sample, now - previous);
                previous = now;
                crate::metrics::record_backlog(work, events, backpressure.refusing());
                if backpressure.refusing()
                    && let Err(error) = hold_back_heaviest(&state, &queue, sample.items).await
                {
                    tracing::warn!(
                        error = format!("{error:#}"),
                        "finding the tenants that hold the backlog failed; every tenant's writes are refused"
                    );
                }
            }
            Err(error) => {
                tracing::warn!(error = format!("{error:#}"), "measuring the backlog failed");
            }
        }
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(backpressure::SAMPLE_INTERVAL) => {}
        }
    }
}

/// Narrows the refusal of writes to the tenants holding most of the backlog (`total` items
/// sampled): both parts of it per tenant, added up.
async fn hold_back_heaviest(
    state: &AppState,
    queue: &crate::runtime::work::WorkQueue,
    total: u64,
) -> anyhow::Result<()> {
    let backpressure = &state.core.backpressure;
    let cap = backpressure.count_cap();
    // Enough tenants of each part that the heaviest of both together are among them.
    let limit = (backpressure::MAX_HELD_TENANTS * 2) as u64;
    let work = queue
        .backlog_by_tenant(&state.engines.codes(), cap, limit)
        .await?;
    let events = crate::core::projections::backlog_by_tenant(&state.database, cap, limit).await?;
    let mut per_tenant: std::collections::BTreeMap<String, u64> = Default::default();
    for (tenant_id, items) in work.into_iter().chain(events) {
        *per_tenant.entry(tenant_id).or_default() += items;
    }
    backpressure.hold_back(total, per_tenant.into_iter().collect());
    Ok(())
}

/// Resolves on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let interrupt = async {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::error!(%error, "cannot listen for SIGINT");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(error) => {
                tracing::error!(%error, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {},
        () = terminate => {},
    }
}
