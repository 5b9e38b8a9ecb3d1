//! Wiring: configuration → store → HTTP server and worker, under one cancellation token. Used by
//! `main`, by this crate's integration tests (which bind `127.0.0.1:0`), and, through the
//! `Runtime` functions, by the API's integration tests.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use swapd_api::AppState;
use swapd_api::business::guards::Guards;
use swapd_api::limits::Sharing;
use swapd_core::market::Market;
use swapd_core::market::venue::Venue;
use swapd_core::secrets::MasterKey;
use swapd_core::{Clock, Store, SystemClock};
use swapd_sandbox::{Fault, Faults};
use swapd_store::StoreOptions;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::config::value::Secret;
use crate::config::{Config, NodeId, X402Accept};
use crate::master_key;

/// Asks every provider for its catalog once (one cheap authenticated call each) and says in the
/// log which answered. A provider that did not stops nothing: its routes are unavailable, and
/// readiness shows it, until it answers.
async fn check_providers(market: &dyn Market, now_ms: i64) {
    market.catalog(now_ms).await;
    for health in market.health(now_ms) {
        match health.state {
            swapd_core::market::breaker::ProviderState::Up => {
                tracing::info!(provider = health.id, "provider answered at start");
            }
            _ => tracing::warn!(
                provider = health.id,
                reason = health.last_failure.as_deref().unwrap_or_default(),
                "provider did not answer at start; its routes are unavailable until it does"
            ),
        }
    }
}

/// The live desks `providers.live` names, each with its own settings.
fn live_providers(config: &crate::config::Config) -> anyhow::Result<Vec<Venue>> {
    let providers = &config.providers;
    let chains = chains(config)?;
    providers
        .live
        .iter()
        .map(|name| live_provider(name, providers, &chains))
        .collect()
}

/// The live provider `name`, with its settings.
fn live_provider(
    name: &str,
    providers: &crate::config::ProvidersConfig,
    chains: &swapd_onchain::Chains,
) -> anyhow::Result<Venue> {
    use swapd_desks::{changenow, fixedfloat};
    use swapd_onchain::{jupiter, lifi, relay, zerox};
    let failed = |e: String| anyhow::anyhow!("providers.{name}: {e}");
    let timeout = |ms: u64| Duration::from_millis(ms);
    Ok(match name {
        changenow::ID => {
            let desk = &providers.changenow;
            let client = changenow::ChangeNow::new(
                desk.base_url.as_str(),
                required(&desk.api_key, "providers.changenow.api_key")?,
                timeout(desk.timeout_ms),
            )
            .and_then(|client| {
                // Looks up exchanges whose create answer was lost.
                client.with_lookup(
                    desk.base_url.as_str(),
                    desk.private_api_key.as_ref().map(Secret::expose),
                    desk.payload_reference,
                    timeout(desk.timeout_ms),
                )
            })
            .map_err(failed)?;
            Venue::Desk(Arc::new(changenow::ChangeNowDesk::new(client)))
        }
        fixedfloat::ID => {
            let desk = &providers.fixedfloat;
            let client = fixedfloat::FixedFloat::new(
                desk.base_url.as_str(),
                required(&desk.api_key, "providers.fixedfloat.api_key")?,
                required(&desk.api_secret, "providers.fixedfloat.api_secret")?,
                timeout(desk.timeout_ms),
            )
            .map_err(failed)?;
            let desk_with_fees = match &desk.refcode {
                Some(refcode) => fixedfloat::FixedFloatDesk::new(client).with_refcode(refcode),
                None => fixedfloat::FixedFloatDesk::new(client),
            };
            Venue::Desk(Arc::new(desk_with_fees))
        }
        lifi::ID => {
            let (url, key, timeout, chains) = router_settings(&providers.lifi, chains);
            let integrator = &providers.lifi.integrator;
            Venue::Router(Arc::new(
                lifi::LiFi::new(url, key, integrator, timeout, chains).map_err(failed)?,
            ))
        }
        relay::ID => {
            let (url, key, timeout, chains) = router_settings(&providers.relay, chains);
            let referrer = &providers.relay.integrator;
            Venue::Router(Arc::new(
                relay::Relay::new(url, key, referrer, timeout, chains).map_err(failed)?,
            ))
        }
        jupiter::ID => {
            let (url, key, timeout, chains) = router_settings(&providers.jupiter, chains);
            Venue::Router(Arc::new(
                jupiter::Jupiter::new(url, key, timeout, chains).map_err(failed)?,
            ))
        }
        zerox::ID => {
            let (url, key, timeout, chains) = router_settings(&providers.zerox, chains);
            Venue::Router(Arc::new(
                zerox::ZeroX::new(url, key, timeout, chains).map_err(failed)?,
            ))
        }
        other => anyhow::bail!("providers.live: no adapter `{other}` in this build"),
    })
}

/// A router's base URL, API key, timeout and the chains it follows.
fn router_settings<'a>(
    settings: &'a crate::config::RouterConfig,
    chains: &swapd_onchain::Chains,
) -> (&'a str, Option<&'a str>, Duration, swapd_onchain::Chains) {
    (
        settings.base_url.as_str(),
        settings.api_key(),
        Duration::from_millis(settings.timeout_ms),
        chains.clone(),
    )
}

/// A credential live mode requires (the configuration checked it is set).
fn required<'a>(secret: &'a Option<Secret>, key: &str) -> anyhow::Result<&'a str> {
    secret
        .as_ref()
        .map(Secret::expose)
        .with_context(|| format!("{key} is required"))
}

/// The chain readers of `[chains.<network>]`.
fn chains(config: &crate::config::Config) -> anyhow::Result<swapd_onchain::Chains> {
    use swapd_core::address::Network;
    let mut evm: Vec<Arc<dyn swapd_core::onchain::chain::EvmChain>> = Vec::new();
    let mut solana = None;
    for (name, chain) in &config.chains {
        let failed = |e: String| anyhow::anyhow!("chains.{name}: {e}");
        let network = crate::config::chain_network(name).map_err(failed)?;
        let (url, timeout) = (
            chain.rpc_url.as_str(),
            Duration::from_millis(chain.timeout_ms),
        );
        if network == Network::Solana {
            use swapd_onchain::solana_rpc::{Commitment, SolanaRpc};
            let commitment = Commitment::for_confirmations(chain.confirmations);
            solana = Some(Arc::new(
                SolanaRpc::new(url, timeout, commitment).map_err(failed)?,
            ));
            continue;
        }
        let confirmations = chain.confirmations(network);
        let reader = swapd_onchain::evm_rpc::EvmRpc::new(network, url, confirmations, timeout)
            .map_err(failed)?;
        evm.push(Arc::new(reader));
    }
    let chains = swapd_onchain::Chains::new(evm);
    Ok(match solana {
        Some(reader) => chains.with_solana(reader),
        None => chains,
    })
}

/// Which halves of the service this process runs. Several processes may share one PostgreSQL
/// database, each with its own roles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Roles {
    pub api: bool,
    pub worker: bool,
}

impl Roles {
    pub const ALL: Roles = Roles {
        api: true,
        worker: true,
    };

    /// `--api` and `--worker` select roles; neither flag means both.
    pub fn from_flags(api: bool, worker: bool) -> Roles {
        if api || worker {
            Roles { api, worker }
        } else {
            Roles::ALL
        }
    }

    pub fn describe(self) -> &'static str {
        match (self.api, self.worker) {
            (true, true) => "api + worker",
            (true, false) => "api",
            (false, true) => "worker",
            (false, false) => "none",
        }
    }
}

/// The opened, migrated store and the secrets every command needs.
pub struct Runtime {
    pub config: Config,
    /// This node's name on its idempotency claims: as set, or generated into the data dir.
    pub node_id: NodeId,
    pub store: Arc<dyn Store>,
    pub master_key: MasterKey,
    pub clock: Arc<dyn Clock>,
    /// This process's worker loops' health, recorded by the worker and reported by readiness.
    pub worker_health: swapd_core::health::WorkerHealth,
}

impl Runtime {
    /// Opens the database named by the configuration and brings its schema up to date.
    pub async fn open(config: Config) -> anyhow::Result<Runtime> {
        let master_key = master_key::load_or_create(&config)?;
        let node_id = match &config.node_id {
            Some(id) => id.clone(),
            None => generated_node_id(&config)?,
        };
        let store = open_store(&config).await?;
        store
            .migrate()
            .await
            .context("cannot migrate the database")?;
        Ok(Runtime {
            config,
            node_id,
            store,
            master_key,
            clock: Arc::new(SystemClock),
            worker_health: Default::default(),
        })
    }
}

/// This data dir's node id: generated once into `node.id`.
fn generated_node_id(config: &Config) -> anyhow::Result<NodeId> {
    let path = config.data_path("node.id");
    let parsed = |text: &str| {
        text.parse::<NodeId>()
            .map_err(|problem| anyhow::anyhow!("{}: {problem}", path.display()))
    };
    match std::fs::read_to_string(&path) {
        Ok(id) if !id.trim().is_empty() => return parsed(id.trim()),
        Ok(_) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => {
            return Err(error).with_context(|| format!("cannot read {}", path.display()));
        }
    }
    let id = swapd_core::ids::new_id("node_");
    std::fs::create_dir_all(config.data_dir())
        .and_then(|()| std::fs::write(&path, &id))
        .with_context(|| format!("cannot write {}", path.display()))?;
    parsed(&id)
}

pub async fn open_store(config: &Config) -> anyhow::Result<Arc<dyn Store>> {
    let options = StoreOptions {
        max_connections: config.database.max_connections,
        acquire_timeout: Duration::from_millis(config.database.acquire_timeout_ms),
        statement_timeout: Duration::from_millis(config.database.statement_timeout_ms),
    };
    let url = config.database();
    swapd_store::open(url.expose(), &options)
        .await
        .with_context(|| format!("database_url = {url}"))
}

/// A built server: every start-up check passed (the database, the facilitator, the nonce set),
/// the address is bound, nothing is served yet.
pub struct Node {
    worker: Option<swapd_worker::Worker>,
    api: Option<Api>,
    /// How long readiness says "stopping" before the listener closes, and how long in-flight
    /// work may take after that (`[shutdown]`).
    drain: Duration,
    grace: Duration,
}

/// The API role, ready to serve.
struct Api {
    listener: TcpListener,
    state: AppState,
    marker: RunMarker,
    /// How often the observed figures are made anew (`market.observed_refresh_secs`).
    observed_refresh: Duration,
}

impl Node {
    pub async fn build(runtime: Runtime, roles: Roles) -> anyhow::Result<Node> {
        let (market, _faults) = runtime.market()?;
        check_providers(market.as_ref(), runtime.clock.now_ms()).await;
        let worker = if roles.worker {
            let parts = runtime
                .worker_parts(&market, runtime.webhook_sender())
                .await?;
            Some(
                swapd_worker::Worker::new(runtime.store.clone(), runtime.clock.clone())
                    .with_orders(parts.engine)
                    .with_notifier(parts.notifier)
                    .with_executions(parts.tracker)
                    .with_webhooks(
                        parts.dispatcher,
                        Duration::from_millis(runtime.config.webhooks.poll_interval_ms),
                    )
                    .with_jobs(parts.jobs, Duration::from_millis(500))
                    .with_reconciler(
                        swapd_worker::Reconciler::new(
                            runtime.store.clone(),
                            runtime.clock.clone(),
                            runtime.config.fees.rules(),
                        ),
                        Duration::from_secs(runtime.config.fees.reconcile_interval_secs),
                    )
                    .with_event_retention(Duration::from_secs(
                        u64::from(runtime.config.webhooks.retention_days) * 86_400,
                    ))
                    .with_outcome_retention(Duration::from_millis(
                        runtime.config.market.window_ms().unsigned_abs(),
                    ))
                    .with_health(runtime.worker_health.clone()),
            )
        } else {
            None
        };
        let api = if roles.api {
            Some(Api::prepare(&runtime, market.clone()).await?)
        } else {
            None
        };
        // Assemble the catalog now, so the first caller does not wait for the providers.
        market.catalog(runtime.clock.now_ms()).await;
        Ok(Node {
            worker,
            api,
            drain: Duration::from_secs(runtime.config.shutdown.drain_secs),
            grace: Duration::from_secs(runtime.config.shutdown.grace_secs),
        })
    }

    /// The bound address, when the API role runs.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.api
            .as_ref()
            .and_then(|api| api.listener.local_addr().ok())
    }

    /// Serves until `shutdown` is cancelled, then stops (docs/deploy.md, "Stopping"): readiness
    /// answers not ready at once and the listener keeps serving for the drain time; then
    /// in-flight requests and worker passes get the grace time to finish, after which the
    /// node stops regardless.
    pub async fn run_until_stopped(self, shutdown: CancellationToken) -> anyhow::Result<()> {
        let (drain, grace) = (self.drain, self.grace);
        let grace_over = CancellationToken::new();
        tokio::spawn({
            let (shutdown, grace_over) = (shutdown.clone(), grace_over.clone());
            async move {
                shutdown.cancelled().await;
                tokio::time::sleep(drain + grace).await;
                grace_over.cancel();
            }
        });
        let worker = self
            .worker
            .map(|worker| tokio::spawn(worker.run(shutdown.clone())));
        if let Some(Api {
            listener,
            state,
            marker,
            observed_refresh,
        }) = self.api
        {
            let flusher = tokio::spawn(state.guards.clone().run_nonce_flusher(shutdown.clone()));
            tokio::spawn(refresh_observed(
                state.clone(),
                observed_refresh,
                shutdown.clone(),
            ));
            // Open MCP streams end with the server, or the graceful shutdown would wait on them.
            let mcp_sessions = state.mcp.shutdown.clone();
            let stopping = shutdown.clone();
            tokio::spawn(async move {
                stopping.cancelled().await;
                mcp_sessions.cancel();
            });
            let revocations =
                tokio::spawn(state.guards.clone().follow_revocations(shutdown.clone()));
            let stopping = state.stopping.clone();
            let app = swapd_api::router(state).into_make_service_with_connect_info::<SocketAddr>();
            let stop = shutdown.clone();
            let serving = axum::serve(listener, app).with_graceful_shutdown(async move {
                stop.cancelled().await;
                stopping.cancel();
                tracing::info!(?drain, "not ready any more; draining");
                tokio::time::sleep(drain).await;
            });
            tokio::select! {
                served = serving => served.context("HTTP server failed")?,
                () = grace_over.cancelled() => {
                    tracing::warn!(?grace, "in-flight requests did not finish in the grace time; stopping");
                }
            }
            flusher.await.context("nonce flusher panicked")?;
            revocations.await.context("revocation follower panicked")?;
            // Every accepted nonce is on disk now.
            marker.remove();
        }
        if let Some(worker) = worker {
            tokio::select! {
                finished = worker => finished.context("worker task panicked")?,
                () = grace_over.cancelled() => {
                    tracing::warn!(?grace, "worker passes did not finish in the grace time; their leases end on their own");
                }
            }
        }
        Ok(())
    }
}

/// Makes the observed figures anew every `every` until `stop` (docs/market.md, "Observed
/// figures"); a failed refresh keeps the last figures.
async fn refresh_observed(state: AppState, every: Duration, stop: CancellationToken) {
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(every) => {}
        }
        let refreshed = state
            .observed
            .refresh(state.store.as_ref(), state.clock.now_ms())
            .await;
        if let Err(error) = refreshed {
            tracing::warn!(%error, "observed figures could not be refreshed; keeping the last ones");
        }
    }
}

impl Api {
    /// Binds the address and runs the API's start-up checks.
    async fn prepare(runtime: &Runtime, market: Arc<dyn Market>) -> anyhow::Result<Api> {
        let config = &runtime.config;
        let listen = config.listen;
        let listener = TcpListener::bind(listen).await.with_context(|| {
            format!("cannot listen on {listen}; is another swapd running? choose another address with --listen")
        })?;
        let marker = RunMarker::place(config)?;
        // Without a configured public URL (or with the one derived from `--listen`, maybe
        // `127.0.0.1:0`), the origin is the address actually bound.
        let derived =
            config.public_url.is_none() || config.origin() == format!("http://{}", config.listen);
        let origin = match listener.local_addr() {
            Ok(bound) if derived => format!("http://{bound}"),
            _ => config.origin(),
        };
        let x402 = runtime
            .x402_surface(&origin)
            .await
            .context("cannot start the x402 API")?;
        let sharing = runtime.sharing().await?;
        // Claims this node holds now were taken by a process that died mid-request.
        let released = runtime
            .store
            .release_claims_of(runtime.node_id.as_str())
            .await
            .context("cannot release the idempotency claims of the previous run")?;
        if released > 0 {
            tracing::warn!(
                released,
                "released the Idempotency-Keys the previous run left in flight; their retries execute afresh"
            );
        }
        let guards = Arc::new(
            Guards::new(
                runtime.store.clone(),
                runtime.clock.clone(),
                runtime.master_key.clone(),
                sharing,
                marker.found_unclean,
            )
            .await
            .context("cannot load the nonce set")?,
        );
        let state = runtime.api_state(market, guards, x402, runtime.webhook_sender());
        // The first requests see the figures too.
        if let Err(error) = state
            .observed
            .refresh(state.store.as_ref(), runtime.clock.now_ms())
            .await
        {
            tracing::warn!(%error, "observed figures could not be read; routes rank by quotes until the next refresh");
        }
        Ok(Api {
            listener,
            state,
            marker,
            observed_refresh: Duration::from_secs(config.market.observed_refresh_secs),
        })
    }
}

/// The background loops' parts, each on the runtime's store and clock.
pub struct WorkerParts {
    pub engine: swapd_worker::OrderEngine,
    pub notifier: swapd_worker::Notifier,
    pub tracker: swapd_worker::ExecutionTracker,
    pub dispatcher: swapd_worker::WebhookDispatcher,
    pub jobs: swapd_worker::JobRunner,
}

/// How a node is wired from its runtime: `Node` runs these parts, and the API's integration
/// tests build theirs with the same functions (driving the worker parts themselves).
impl Runtime {
    /// The providers of the configured mode behind the market, and the switch of the sandbox
    /// providers' faults: the sandbox world, or the live desks `providers.live` names.
    pub fn market(&self) -> anyhow::Result<(Arc<dyn Market>, Faults)> {
        let config = &self.config;
        let faults = Faults::default();
        let providers = match config.mode {
            swapd_core::Mode::Sandbox => {
                for id in &config.providers.sandbox_stalled {
                    faults.set(id, Fault::Stall);
                }
                for id in &config.providers.sandbox_failing {
                    faults.set(
                        id,
                        Fault::Fail("failing by configuration (providers.sandbox_failing)".into()),
                    );
                }
                let feed = swapd_sandbox::price_feed::PriceFeed::new(config.providers.sandbox_seed);
                let world = swapd_sandbox::SandboxWorld {
                    store: self.store.clone(),
                    block_ms: config.providers.sandbox_block_ms,
                    tolerance_bps: swapd_sandbox::DEFAULT_TOLERANCE_BPS,
                    pause_after_payout: config.orders.sandbox_pause_after_payout,
                    behaviours: config.sandbox.behaviours(),
                };
                swapd_sandbox::providers(feed, &faults, &world)
            }
            swapd_core::Mode::Live => live_providers(config)?,
        };
        let market = swapd_market::Aggregator::new(
            providers,
            swapd_market::MarketOptions {
                deadline: Duration::from_millis(config.providers.deadline_ms),
                ..Default::default()
            },
        );
        Ok((Arc::new(market), faults))
    }

    /// The order engine, notifier, execution tracker, webhook dispatcher (sending through
    /// `webhooks`) and market-intel job runner (settling `upto` payments through the
    /// facilitators of the `upto` ways to pay).
    pub async fn worker_parts(
        &self,
        market: &Arc<dyn Market>,
        webhooks: swapd_delivery::Sender,
    ) -> anyhow::Result<WorkerParts> {
        let (config, store, clock) = (&self.config, &self.store, &self.clock);
        let rules = config.orders.rules();
        let jobs = swapd_worker::JobRunner::new(store.clone(), market.clone(), clock.clone());
        Ok(WorkerParts {
            engine: swapd_worker::OrderEngine::new(
                store.clone(),
                market.clone(),
                clock.clone(),
                self.master_key.clone(),
                rules,
            ),
            notifier: swapd_worker::Notifier::new(store.clone(), mailer(config)?, clock.clone()),
            tracker: swapd_worker::ExecutionTracker::new(
                store.clone(),
                market.clone(),
                clock.clone(),
                config.orders.poll_interval_ms,
            ),
            dispatcher: swapd_worker::WebhookDispatcher::new(
                store.clone(),
                clock.clone(),
                self.master_key.clone(),
                webhooks,
                swapd_worker::DispatchLimits {
                    batch: config.webhooks.batch,
                    concurrency: config.webhooks.concurrency,
                },
            ),
            jobs: match self.job_settler().await? {
                Some(settler) => jobs.with_settler(settler),
                None => jobs,
            },
        })
    }

    /// Webhook deliveries under the mode's URL policy: live reaches public https endpoints
    /// only; sandbox also reaches loopback, so a local receiver works.
    pub fn webhook_sender(&self) -> swapd_delivery::Sender {
        let policy = match self.config.mode {
            swapd_core::Mode::Live => swapd_core::webhooks::url_policy::UrlPolicy::Live,
            swapd_core::Mode::Sandbox => swapd_core::webhooks::url_policy::UrlPolicy::Sandbox,
        };
        let sender = swapd_delivery::Sender::new(
            policy,
            Duration::from_millis(self.config.webhooks.timeout_ms),
        );
        match self.config.webhooks.dns_server {
            Some(server) => sender.with_dns_server(server),
            None => sender,
        }
    }

    /// Where nonces and rate limits live (docs/operations.md, "Several nodes"): Redis when
    /// configured, else memory for one SQLite node and the database for PostgreSQL nodes.
    pub async fn sharing(&self) -> anyhow::Result<Sharing> {
        let shared = &self.config.shared;
        let Some(url) = &shared.redis_url else {
            return Ok(match self.config.shared_state() {
                Sharing::Database => Sharing::Database,
                _ => Sharing::Local,
            });
        };
        let redis =
            swapd_redis::SharedRedis::connect(url.expose(), &shared.redis_prefix, self.clock.now_secs())
                .await
                .with_context(|| {
                    format!(
                        "cannot reach Redis at {url} (shared.redis_url); start it, or unset the setting to keep this state in the database"
                    )
                })?;
        // The shared limits decide on Redis's clock, whatever this node's says.
        redis.measure_clock(&*self.clock).await?;
        let redis = Arc::new(redis);
        tokio::spawn(swapd_redis::SharedRedis::keep_measuring_clock(
            Arc::downgrade(&redis),
            self.clock.clone(),
        ));
        Ok(Sharing::Redis(redis))
    }

    /// The state both HTTP surfaces share.
    pub fn api_state(
        &self,
        market: Arc<dyn Market>,
        guards: Arc<Guards>,
        x402: swapd_api::x402::X402,
        webhooks: swapd_delivery::Sender,
    ) -> AppState {
        let config = &self.config;
        // The operator's secret signs execution access tokens; without one, a key derived from
        // the master key does.
        let access_tokens = match &config.x402.access_token_secret {
            Some(secret) => swapd_core::onchain::access::AccessTokens::from_secret(secret.expose()),
            None => swapd_core::onchain::access::AccessTokens::new(
                self.master_key
                    .derive(swapd_core::onchain::access::ACCESS_TOKEN_KEY_PURPOSE),
            ),
        };
        let ip_limits = swapd_api::limits::address_limits(
            swapd_core::rate_limit::AddressLimits {
                requests_per_second: config.security.ip_requests_per_second,
                auth_failures_per_minute: config.security.ip_auth_failures_per_minute,
            },
            guards.sharing(),
        );
        let console = config.console.password_hash.as_ref().map(|hash| {
            Arc::new(swapd_api::console::Console::new(
                hash.expose(),
                &self.master_key,
                &config.origin(),
            ))
        });
        AppState::new(swapd_api::AppParts {
            store: self.store.clone(),
            clock: self.clock.clone(),
            mode: config.mode,
            limits: guards.limits(),
            guards,
            trusted_proxies: config.security.trusted_proxies.clone().into(),
            market,
            access_tokens,
            master_key: self.master_key.clone(),
            webhooks,
            x402: Arc::new(x402),
            ip_limits,
            order_rules: config.orders.rules(),
            node_id: self.node_id.as_str().into(),
            sandbox_fault_header: config.sandbox_fault_header,
            request_timeout: Duration::from_millis(config.security.request_timeout_ms),
            worker_health: self.worker_health.clone(),
            replays_per_minute: config.webhooks.replays_per_minute,
            console,
            fees: config.fees.policy(),
            fee_rules: config.fees.rules(),
            observed: Arc::new(swapd_app::observed::ObservedFigures::new(
                config.market.window_ms(),
                config.market.observed_min_samples,
            )),
            mcp: swapd_api::mcp::Settings {
                max_sessions: config.mcp.max_sessions,
                session_idle: Duration::from_secs(config.mcp.session_idle_secs),
                allowed_hosts: config.mcp.allowed_hosts.clone(),
                shutdown: CancellationToken::new(),
            },
            stopping: CancellationToken::new(),
        })
    }

    /// The x402 surface: every configured way to pay whose facilitator (asked at start for
    /// its `/supported`) settles it, in order, the others left out and said so; SIWX on those
    /// networks and Solana.
    pub async fn x402_surface(&self, origin: &str) -> anyhow::Result<swapd_api::x402::X402> {
        let x402 = &self.config.x402;
        let mut options = Vec::new();
        let mut left_out = Vec::new();
        for way in x402.ways_to_pay(self.config.mode)? {
            let (network, scheme) = (way.network.as_str(), way.scheme.as_str());
            match self.x402_option(&way).await? {
                Ok(option) => options.push(option),
                Err(reason) => {
                    tracing::warn!(network, scheme, %reason, "x402: a way to pay is left out");
                    left_out.push(swapd_types::readiness::X402LeftOut {
                        scheme: scheme.into(),
                        network: network.into(),
                        reason,
                    });
                }
            }
        }
        let Some(accepts) = swapd_x402::Accepts::new(options) else {
            let reasons: Vec<String> = left_out
                .iter()
                .map(|out| format!("{} `{}`: {}", out.network, out.scheme, out.reason))
                .collect();
            anyhow::bail!(
                "x402.facilitator: no way to pay can be settled ({})",
                reasons.join("; ")
            );
        };
        let mut siwx_chains: Vec<String> = Vec::new();
        let networks = accepts.options().iter().map(|o| o.pricing.network.as_str());
        for network in networks.chain([swapd_x402::siwx::SOLANA_MAINNET]) {
            if !siwx_chains.iter().any(|chain| chain == network) {
                siwx_chains.push(network.to_owned());
            }
        }
        Ok(swapd_api::x402::X402 {
            accepts,
            left_out,
            origin: origin.trim_end_matches('/').to_owned(),
            siwx_chains,
            challenges: swapd_core::challenges::Challenges::new(
                self.master_key.derive("siwx challenge nonces"),
            ),
            wallet_routes_enabled: self.config.mode == swapd_core::Mode::Sandbox
                || x402.access_token_secret.is_some(),
        })
    }

    /// One way to pay with its facilitator, once the facilitator says it settles it and, on
    /// Solana, `payTo`'s token account exists: `Ok(Err(reason))` when it is left out, `Err`
    /// for a configuration that cannot work.
    async fn x402_option(
        &self,
        way: &X402Accept,
    ) -> anyhow::Result<Result<swapd_x402::PaymentOption, String>> {
        let x402 = &self.config.x402;
        let (network, scheme) = (way.network.as_str(), way.scheme.as_str());
        let solana = swapd_x402::is_solana(network);
        let pricing = self.x402_pricing(way)?;
        let facilitator: Arc<dyn swapd_x402::Facilitator> = match &way.facilitator_url {
            Some(url) => Arc::new(
                swapd_x402::HttpFacilitator::new(
                    url.as_str(),
                    swapd_x402::Timeouts {
                        verify: Duration::from_millis(x402.verify_timeout_ms),
                        settle: Duration::from_millis(x402.settle_timeout_ms),
                    },
                )
                .map_err(|e| anyhow::anyhow!("x402 facilitator_url: {e}"))?,
            ),
            None if solana => Arc::new(swapd_api::x402::LedgerFacilitator::solana(
                self.store.clone(),
                self.clock.clone(),
                network,
                swapd_x402::exact_svm::SigningKey::from_bytes(
                    &self.master_key.derive("x402 sandbox Solana fee payer"),
                ),
                pricing.decimals,
            )),
            None => {
                let ledger = swapd_api::x402::LedgerFacilitator::new(
                    self.store.clone(),
                    self.clock.clone(),
                    network,
                );
                Arc::new(match way.scheme {
                    swapd_x402::Scheme::Upto => ledger.with_upto(
                        self.x402_sandbox_address("x402 sandbox upto facilitator")
                            .parse()
                            .expect("a derived address"),
                    ),
                    swapd_x402::Scheme::Exact => ledger,
                })
            }
        };
        let kind = facilitator.kind();
        let supported =
            match swapd_x402::facilitator::check_supported(facilitator.as_ref(), scheme, network)
                .await
            {
                Ok(supported) => supported,
                Err(reason) => return Ok(Err(format!("{kind} facilitator: {reason}"))),
            };
        if way.scheme == swapd_x402::Scheme::Upto {
            // The payer's permit names the facilitator that may settle it.
            let Some(address) = supported
                .extra
                .get("facilitatorAddress")
                .and_then(|a| a.as_str())
                .and_then(|a| a.parse::<alloy_primitives::Address>().ok())
            else {
                return Ok(Err(format!(
                    "{kind} facilitator: its /supported names no facilitatorAddress for upto on {network}"
                )));
            };
            let pricing = pricing.upto(&address.to_checksum(None));
            return Ok(Ok(swapd_x402::PaymentOption::new(pricing, facilitator)));
        }
        if !solana {
            return Ok(Ok(swapd_x402::PaymentOption::new(pricing, facilitator)));
        }
        // Solana: the facilitator pays the fees, and payTo's token account must exist (a
        // transfer cannot create it).
        let Some(fee_payer) = supported
            .extra
            .get("feePayer")
            .and_then(|f| f.as_str())
            .filter(|f| swapd_x402::exact_svm::pubkey(f).is_some())
        else {
            return Ok(Err(format!(
                "{kind} facilitator: its /supported names no feePayer for {network}"
            )));
        };
        let mut pricing = pricing.with_extra("feePayer", fee_payer.into());
        if way.facilitator_url.is_none() {
            // The ledger is the sandbox's chain: every account exists, any blockhash is fresh;
            // its own is the hint clients without a Solana node build on.
            let blockhash = self.master_key.derive("x402 sandbox Solana blockhash");
            let blockhash = swapd_x402::exact_svm::base58(&blockhash);
            pricing = pricing.with_extra("recentBlockhash", blockhash.into());
        } else if let Err(reason) = self.x402_token_account_exists(&pricing).await {
            return Ok(Err(reason));
        }
        Ok(Ok(swapd_x402::PaymentOption::new(pricing, facilitator)))
    }

    /// Whether `pricing`'s `payTo` has a token account for its mint, asked of `[chains.SOL]`
    /// (under the Token program, or Token-2022).
    async fn x402_token_account_exists(&self, pricing: &swapd_x402::Pricing) -> Result<(), String> {
        use swapd_x402::exact_svm::{self, TOKEN_2022_PROGRAM, TOKEN_PROGRAM};
        let chains = chains(&self.config).map_err(|e| format!("{e:#}"))?;
        let Some(chain) = chains.solana() else {
            return Err("no [chains.SOL] node to check that payTo's token account exists".into());
        };
        let (owner, mint) = (
            exact_svm::pubkey(&pricing.pay_to).ok_or("payTo is not a Solana key")?,
            exact_svm::pubkey(&pricing.asset).ok_or("the asset is not a Solana mint")?,
        );
        for program in [TOKEN_PROGRAM, TOKEN_2022_PROGRAM] {
            let program = exact_svm::pubkey(program).expect("a program id");
            let account = exact_svm::associated_token_account(&owner, &mint, &program);
            let account = exact_svm::base58(&account);
            match chain.account_exists(&account).await {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(error) => return Err(format!("[chains.SOL] could not be asked: {error}")),
            }
        }
        Err(format!(
            "payTo {} has no token account for {}: create it (a payment cannot)",
            pricing.pay_to, pricing.asset
        ))
    }

    /// An EVM address of the sandbox's, derived from the master key for `purpose`: stable for
    /// a data directory, and nobody's.
    fn x402_sandbox_address(&self, purpose: &str) -> String {
        swapd_x402::sandbox_pay_to(self.master_key.derive(purpose))
    }

    /// Settles what market-intel jobs paid with `upto` used, through the facilitators of the
    /// `upto` ways to pay that are offered; `None` without any.
    pub async fn job_settler(
        &self,
    ) -> anyhow::Result<Option<Arc<dyn swapd_core::market_intel::UptoSettler>>> {
        let mut options = Vec::new();
        for way in self.config.x402.ways_to_pay(self.config.mode)? {
            if way.scheme != swapd_x402::Scheme::Upto {
                continue;
            }
            match self.x402_option(&way).await? {
                Ok(option) => options.push(option),
                Err(reason) => {
                    tracing::warn!(network = %way.network, %reason, "x402: upto payments of jobs on this network cannot be settled");
                }
            }
        }
        Ok((!options.is_empty()).then(|| {
            Arc::new(swapd_api::x402::JobSettler::new(&options))
                as Arc<dyn swapd_core::market_intel::UptoSettler>
        }))
    }

    /// What one way to pay asks: the price in its token (USDC of its network unless another
    /// is set), paid to its seller address (in the sandbox without one, an address derived
    /// from the master key).
    fn x402_pricing(&self, way: &X402Accept) -> anyhow::Result<swapd_x402::Pricing> {
        let network = way.network.as_str();
        let pay_to = match &way.pay_to {
            Some(address) => address.to_string(),
            None if swapd_x402::is_solana(network) => {
                let owner = swapd_x402::exact_svm::SigningKey::from_bytes(
                    &self.master_key.derive("x402 sandbox Solana payTo"),
                );
                swapd_x402::exact_svm::base58(owner.verifying_key().as_bytes())
            }
            None => self.x402_sandbox_address("x402 sandbox payTo"),
        };
        let asset = match way.asset.as_ref() {
            Some(asset) if asset.address.is_some() => swapd_x402::Asset {
                address: asset.address.as_ref().expect("checked").to_string(),
                domain: asset.name.clone().zip(asset.version.clone()),
                decimals: asset.decimals,
            },
            _ => swapd_x402::Asset::usdc(network).with_context(|| {
                format!(
                    "x402 network {network}: swapd knows USDC on eip155:8453, eip155:84532, \
                     eip155:1, eip155:42161, eip155:137 and Solana mainnet and devnet; for \
                     another network or token set x402.asset (or the asset of its \
                     [[x402.accepts]])"
                )
            })?,
        };
        swapd_x402::Pricing::new(network, self.config.x402.price_usd.as_str(), &pay_to, asset)
            .map_err(|problem| anyhow::anyhow!("x402.price_usd: {problem}"))
    }
}

/// SMTP when a server is configured (required in live mode), else `.eml` files under
/// `<data_dir>/mail`.
fn mailer(config: &Config) -> anyhow::Result<Arc<dyn swapd_core::notify::Mailer>> {
    let from = config.mail.from.to_string();
    Ok(match &config.mail.smtp_url {
        None => Arc::new(
            swapd_worker::FileMailer::new(config.data_path("mail"), &from)
                .context("cannot prepare the sandbox mail directory")?,
        ),
        Some(url) => Arc::new(
            swapd_worker::SmtpMailer::from_url(url.expose(), &from).context("mail.smtp_url")?,
        ),
    })
}

/// A file in the data dir that exists while the API role runs. Found at start, it means the
/// previous run stopped without its final nonce flush (crash, SIGKILL).
struct RunMarker {
    path: std::path::PathBuf,
    found_unclean: bool,
    /// Holds the exclusive lock on the marker while this process serves.
    _locked: std::fs::File,
}

impl RunMarker {
    const FILE: &'static str = "api.running";

    /// Takes the data dir for this API process: one process at a time, since its nonce set and
    /// rate limits live in its memory and its node id (`node.id`) names its idempotency claims.
    fn place(config: &Config) -> anyhow::Result<RunMarker> {
        let path = config.data_path(Self::FILE);
        let found_unclean = path.exists();
        std::fs::create_dir_all(config.data_dir())
            .with_context(|| format!("cannot create {}", config.data_dir().display()))?;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => anyhow::bail!(
                "another `swapd serve` is using the data directory {}: stop it, or give this one \
                 its own --data-dir (several API processes share a PostgreSQL database, each with \
                 its own data directory)",
                config.data_dir().display()
            ),
            Err(std::fs::TryLockError::Error(error)) => {
                return Err(error).with_context(|| format!("cannot lock {}", path.display()));
            }
        }
        if found_unclean {
            tracing::warn!(
                "the previous run did not stop cleanly; requests signed before now are refused"
            );
        }
        use std::io::Write;
        file.set_len(0)
            .and_then(|()| file.write_all(std::process::id().to_string().as_bytes()))
            .with_context(|| format!("cannot write {}", path.display()))?;
        Ok(RunMarker {
            path,
            found_unclean,
            _locked: file,
        })
    }

    fn remove(self) {
        if let Err(error) = std::fs::remove_file(&self.path) {
            tracing::warn!(%error, path = %self.path.display(), "cannot remove the run marker");
        }
    }
}

/// Cancels `token` on Ctrl-C or SIGTERM.
pub async fn cancel_on_signal(token: CancellationToken) {
    let interrupt = tokio::signal::ctrl_c();
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("install the SIGTERM handler");
    tokio::select! {
        _ = interrupt => tracing::info!("interrupted; shutting down"),
        _ = terminate.recv() => tracing::info!("terminated; shutting down"),
    }
    token.cancel();
}
