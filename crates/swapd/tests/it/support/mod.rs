//! A real server on 127.0.0.1:0 for the API's integration tests, wired by the production code
//! (`swapd::app::Runtime`: market, worker parts, x402 surface, shared state) on a real store
//! (SQLite in a temp dir, or a PostgreSQL schema) and a manual clock, plus a few test-only
//! signed routes behind the same gate. The worker parts are not looped: tests run their passes.

#![allow(dead_code)]

pub mod x402;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::http::Method;
use axum::{Extension, Json};
use ipnet::IpNet;
use reqwest::header::HeaderMap;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use swapd_api::business::BusinessRoutes;
use swapd_api::business::guards::Guards;
use swapd_api::limits::Sharing;
use swapd_api::{ApiJson, AppState, SignedQuery};
use swapd_core::api_keys::{ApiKey, ApiKeyPolicy, RateLimits};
use swapd_core::secrets::MasterKey;
use swapd_core::{Clock, ManualClock, Store};
use swapd_types::{Permission, Success, signing};
use tokio_util::sync::CancellationToken;

pub const T0_MS: i64 = 1_800_000_000_000;

/// Counts handler executions of the test routes.
#[derive(Default)]
pub struct Counters {
    pub echo: AtomicUsize,
    pub flaky: AtomicUsize,
    pub crash: AtomicUsize,
    pub slow: AtomicUsize,
    pub costly: AtomicUsize,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct EchoBody {
    amount: String,
    #[serde(default)]
    note: Option<Value>,
}

async fn echo(
    Extension(counters): Extension<Arc<Counters>>,
    ApiJson(body): ApiJson<EchoBody>,
) -> (axum::http::StatusCode, Json<Success<Value>>) {
    let execution = counters.echo.fetch_add(1, Ordering::SeqCst) + 1;
    (
        axum::http::StatusCode::CREATED,
        Json(Success::new(
            json!({"execution": execution, "amount": body.amount, "note": body.note}),
        )),
    )
}

async fn flaky(
    Extension(counters): Extension<Arc<Counters>>,
) -> Result<(axum::http::StatusCode, Json<Success<Value>>), swapd_api::ApiError> {
    let call = counters.flaky.fetch_add(1, Ordering::SeqCst) + 1;
    if call == 1 {
        return Err(swapd_api::ApiError::new(
            swapd_types::ErrorCode::InternalError,
            "failpoint: first call fails before commit",
        ));
    }
    Ok((
        axum::http::StatusCode::CREATED,
        Json(Success::new(json!({"call": call}))),
    ))
}

async fn crash(
    Extension(counters): Extension<Arc<Counters>>,
) -> (axum::http::StatusCode, Json<Success<Value>>) {
    let call = counters.crash.fetch_add(1, Ordering::SeqCst) + 1;
    if call == 1 {
        // A bug.
        panic!("failpoint: the handler panics mid-execution");
    }
    (
        axum::http::StatusCode::CREATED,
        Json(Success::new(json!({"call": call}))),
    )
}

async fn slow(
    Extension(counters): Extension<Arc<Counters>>,
) -> (axum::http::StatusCode, Json<Success<Value>>) {
    let call = counters.slow.fetch_add(1, Ordering::SeqCst) + 1;
    if call == 1 {
        // Longer than any test's request timeout.
        tokio::time::sleep(std::time::Duration::from_secs(30)).await;
    }
    (
        axum::http::StatusCode::CREATED,
        Json(Success::new(json!({"call": call}))),
    )
}

async fn costly(Extension(counters): Extension<Arc<Counters>>) -> Json<Success<Value>> {
    counters.costly.fetch_add(1, Ordering::SeqCst);
    Json(Success::new(json!({})))
}

/// Stands for a domain write that records the idempotent response in its own transaction.
async fn domain_write(
    axum::extract::State(state): axum::extract::State<AppState>,
    Extension(counters): Extension<Arc<Counters>>,
    Extension(claim): Extension<swapd_api::idempotency::IdempotencyClaim>,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let execution = counters.echo.fetch_add(1, Ordering::SeqCst) + 1;
    let body = serde_json::to_vec(&Success::new(json!({"domainExecution": execution}))).unwrap();
    let stored = swapd_core::idempotency::StoredResponse {
        status: 201,
        body: body.clone(),
    };
    // As a domain write does: the record commits with the effect, or neither does.
    if !state
        .store
        .finish_idempotent(claim.finish(&stored))
        .await
        .unwrap()
    {
        return swapd_api::ApiError::from(swapd_core::StoreError::LeaseLost).into_response();
    }
    let response = (
        axum::http::StatusCode::CREATED,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response();
    swapd_api::idempotency::committed(response)
}

async fn query(query: SignedQuery) -> Result<Json<Success<Value>>, swapd_api::ApiError> {
    let a = query.scalar("a")?.map(str::to_owned);
    Ok(Json(Success::new(json!({"pairs": query.0, "a": a}))))
}

/// Sandbox chain block time in tests: one confirmation per second of the manual clock.
pub const BLOCK_MS: i64 = 1_000;
/// Emergency choice window in tests.
pub const EMERGENCY_WINDOW_MS: i64 = 60 * 60 * 1000;

pub struct Options {
    pub sharing: Sharing,
    pub trusted_proxies: Vec<IpNet>,
    pub bind: &'static str,
    pub store: Option<Arc<dyn Store>>,
    pub clock: Option<Arc<ManualClock>>,
    pub master: Option<MasterKey>,
    pub after_unclean_stop: bool,
    /// Per-provider deadline of the aggregator.
    pub provider_deadline: std::time::Duration,
    /// Which webhook destinations are allowed (live: public https only).
    pub url_policy: swapd_core::webhooks::url_policy::UrlPolicy,
    /// The x402 facilitator of every way to pay (default: each one's as configured).
    pub facilitator: Option<Arc<dyn swapd_x402::Facilitator>>,
    /// `[[x402.accepts]]` (default: none, so Base USDC paid to [`PAY_TO`] by the ledger).
    pub x402_accepts: Vec<swapd::config::X402Accept>,
    /// Whether x402 order and onchain routes are enabled (live mode without an access-token
    /// secret: not).
    pub x402_wallet_routes: bool,
    /// `orders.fixed_lifetime_secs` and `orders.float_lifetime_secs`.
    pub order_lifetime_secs: (i64, i64),
    /// `[fees]`.
    pub fees: swapd::config::FeesConfig,
    /// Requests per second and failed authentications per minute per client address (the
    /// production defaults unless a test changes them).
    pub ip_limits: (u32, u32),
    /// `security.request_timeout_ms`.
    pub request_timeout_ms: u64,
    /// Live mode with these providers (`providers.live` and their settings) instead of the
    /// sandbox.
    pub live: Option<Live>,
    /// How the sandbox providers behave (punctual unless a test asks otherwise).
    pub sandbox: swapd::config::SandboxConfig,
    /// How providers are judged by their outcomes (docs/market.md).
    pub market: swapd::config::MarketConfig,
}

/// What a live-mode test server talks to: its providers, and the chains it reads.
pub struct Live {
    pub providers: swapd::config::ProvidersConfig,
    pub chains: std::collections::BTreeMap<String, swapd::config::ChainConfig>,
}

/// Where x402 test payments go.
pub const PAY_TO: &str = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";

/// A way to pay `scheme` on `network`, in USDC, settled by the ledger, to the sandbox's own
/// address (tests set `pay_to` or `facilitator_url` on it where they need them).
pub fn way_to_pay(network: &str, scheme: swapd_x402::Scheme) -> swapd::config::X402Accept {
    swapd::config::X402Accept {
        network: network.parse().unwrap(),
        scheme,
        asset: None,
        pay_to: None,
        facilitator_url: None,
    }
}

/// A receiver's time to answer in tests (15 s in production).
pub const WEBHOOK_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(500);

impl Default for Options {
    fn default() -> Self {
        Self {
            sharing: Sharing::Local,
            trusted_proxies: Vec::new(),
            bind: "127.0.0.1:0",
            store: None,
            clock: None,
            master: None,
            after_unclean_stop: false,
            provider_deadline: std::time::Duration::from_millis(1_500),
            url_policy: swapd_core::webhooks::url_policy::UrlPolicy::Sandbox,
            facilitator: None,
            x402_accepts: Vec::new(),
            x402_wallet_routes: true,
            order_lifetime_secs: (30 * 60, 60 * 60),
            fees: swapd::config::FeesConfig::default(),
            request_timeout_ms: 60_000,
            live: None,
            sandbox: swapd::config::SandboxConfig::punctual(),
            market: swapd::config::MarketConfig::default(),
            ip_limits: (
                swapd_api::ip_limits::DEFAULT_REQUESTS_PER_SECOND,
                swapd_api::ip_limits::DEFAULT_AUTH_FAILURES_PER_MINUTE,
            ),
        }
    }
}

pub struct TestServer {
    pub base: String,
    pub state: AppState,
    pub clock: Arc<ManualClock>,
    pub master: MasterKey,
    pub counters: Arc<Counters>,
    /// Faults of the sandbox providers, switchable while the server runs.
    pub faults: swapd_sandbox::Faults,
    /// The order lifecycle engine on the same store and clock; tests run its passes.
    pub engine: swapd_worker::OrderEngine,
    /// The onchain execution tracker on the same store and clock; tests run its passes.
    pub tracker: swapd_worker::ExecutionTracker,
    /// The webhook dispatcher on the same store and clock; tests run its passes.
    pub dispatcher: swapd_worker::WebhookDispatcher,
    /// The market-intel job runner on the same store, market and clock; tests run its passes.
    pub jobs: swapd_worker::JobRunner,
    /// Sends status e-mails as `.eml` files into `mail_dir`; tests run its passes.
    pub notifier: swapd_worker::Notifier,
    pub mail_dir: std::path::PathBuf,
    pub http: reqwest::Client,
    shutdown: CancellationToken,
    task: Option<tokio::task::JoinHandle<()>>,
    _dir: tempfile::TempDir,
}

#[derive(Clone)]
pub struct TestKey {
    pub id: String,
    pub secret: String,
}

impl TestKey {
    /// Whom the key's orders and other objects belong to.
    pub fn owner(&self) -> swapd_core::owner::Owner {
        swapd_core::owner::Owner::Key(self.id.clone())
    }
}

/// Text as the typed value a store method takes (an id, an owner): the tests' shorthand.
pub fn parsed<T: std::str::FromStr>(text: &str) -> T
where
    T::Err: std::fmt::Debug,
{
    text.parse().unwrap()
}

pub struct Resp {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Value,
}

impl Resp {
    pub fn code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or("")
    }

    pub fn message(&self) -> &str {
        self.body["error"]["message"].as_str().unwrap_or("")
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub fn remaining(&self) -> Option<u32> {
        self.header("x-ratelimit-remaining")
            .and_then(|v| v.parse().ok())
    }

    /// Asserts status and error code together, showing the body when they differ.
    #[track_caller]
    pub fn expect(&self, status: u16, code: &str) -> &Self {
        assert_eq!(
            (self.status, self.code()),
            (status, code),
            "body: {}",
            self.body
        );
        self
    }

    /// The success envelope's `data`, asserting the status first (showing the body when it
    /// differs).
    #[track_caller]
    pub fn data(&self, status: u16) -> &Value {
        assert_eq!(self.status, status, "body: {}", self.body);
        &self.body["data"]
    }
}

/// A JSON string's text, or a panic naming the value.
#[track_caller]
pub fn text(value: &Value) -> &str {
    value
        .as_str()
        .unwrap_or_else(|| panic!("not a string: {value}"))
}

/// A request ready to send; tests tamper with it before sending.
#[derive(Clone, Debug)]
pub struct Signed {
    pub method: String,
    pub path_and_query: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Signed {
    pub fn set(mut self, name: &str, value: &str) -> Self {
        self = self.without(name);
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    pub fn add(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    pub fn without(mut self, name: &str) -> Self {
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self
    }

    pub fn get(&self, name: &str) -> String {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    }

    pub fn body(mut self, body: &[u8]) -> Self {
        self.body = body.to_vec();
        self
    }
}

impl TestServer {
    pub async fn start() -> TestServer {
        Self::start_with(Options::default()).await
    }

    pub async fn start_with(options: Options) -> TestServer {
        let dir = tempfile::tempdir().unwrap();
        let listener = tokio::net::TcpListener::bind(options.bind).await.unwrap();
        let listener_address = listener.local_addr().unwrap();
        let mut config = swapd::config::Config {
            data_dir: dir.path().to_path_buf(),
            public_url: Some(format!("http://{listener_address}").parse().unwrap()),
            ..swapd::config::Config::default()
        };
        // Every sandbox provider delivers what it estimates, at once, unless a test says
        // otherwise (docs/sandbox.md, "Behaviour").
        config.sandbox = options.sandbox;
        config.market = options.market;
        config.providers.deadline_ms = options.provider_deadline.as_millis() as u64;
        config.providers.sandbox_seed = 0;
        config.providers.sandbox_block_ms = BLOCK_MS;
        config.orders.poll_interval_ms = 1_000;
        config.orders.emergency_window_secs = EMERGENCY_WINDOW_MS / 1000;
        (
            config.orders.fixed_lifetime_secs,
            config.orders.float_lifetime_secs,
        ) = options.order_lifetime_secs;
        config.webhooks.timeout_ms = WEBHOOK_TIMEOUT.as_millis() as u64;
        config.fees = options.fees;
        config.shutdown.drain_secs = 0;
        config.security.trusted_proxies = options.trusted_proxies;
        config.security.request_timeout_ms = options.request_timeout_ms;
        (
            config.security.ip_requests_per_second,
            config.security.ip_auth_failures_per_minute,
        ) = options.ip_limits;
        if let Some(live) = options.live {
            config.mode = swapd_core::Mode::Live;
            let providers = live.providers;
            config.providers.live = providers.live;
            config.providers.changenow = providers.changenow;
            config.providers.fixedfloat = providers.fixedfloat;
            config.providers.lifi = providers.lifi;
            config.providers.zerox = providers.zerox;
            config.providers.relay = providers.relay;
            config.providers.jupiter = providers.jupiter;
            config.chains = live.chains;
        }
        config.node_id = Some(swapd_core::ids::new_id("node_").parse().unwrap());
        config.x402.price_usd = "0.05".parse().unwrap();
        if options.x402_accepts.is_empty() {
            config.x402.network = Some("eip155:8453".parse().unwrap());
            config.x402.pay_to = Some(PAY_TO.parse().unwrap());
        } else {
            config.x402.accepts = options.x402_accepts.clone();
        }
        let store = match options.store {
            Some(store) => store,
            None => swapd::app::open_store(&config).await.unwrap(),
        };
        store.migrate().await.unwrap();
        let clock = options
            .clock
            .unwrap_or_else(|| Arc::new(ManualClock::new(T0_MS)));
        let master = options.master.unwrap_or_else(MasterKey::generate);
        // The production wiring (`swapd::app`), on this test's store, clock and key.
        let runtime = swapd::app::Runtime {
            node_id: config.node_id.clone().unwrap(),
            config,
            store: store.clone(),
            master_key: master.clone(),
            clock: clock.clone(),
            worker_health: Default::default(),
        };
        let guards = Arc::new(
            Guards::new(
                store.clone(),
                clock.clone(),
                master.clone(),
                options.sharing,
                options.after_unclean_stop,
            )
            .await
            .unwrap(),
        );
        let (market, faults) = runtime.market().unwrap();
        let webhooks = swapd_delivery::Sender::new(options.url_policy, WEBHOOK_TIMEOUT);
        let swapd::app::WorkerParts {
            engine,
            notifier,
            tracker,
            dispatcher,
            jobs,
        } = runtime
            .worker_parts(&market, webhooks.clone())
            .await
            .unwrap();
        let mail_dir = runtime.config.data_path("mail");
        let mut x402 = runtime
            .x402_surface(&runtime.config.origin())
            .await
            .unwrap();
        if let Some(facilitator) = options.facilitator.clone() {
            let options = x402.accepts.options().iter().map(|option| {
                swapd_x402::PaymentOption::new(option.pricing.clone(), facilitator.clone())
            });
            x402.accepts = swapd_x402::Accepts::new(options.collect()).unwrap();
        }
        x402.wallet_routes_enabled = options.x402_wallet_routes;
        let state = runtime.api_state(market, guards.clone(), x402, webhooks);
        // As a node does at start: the figures of the outcomes already stored.
        state
            .observed
            .refresh(state.store.as_ref(), clock.now_ms())
            .await
            .unwrap();
        let counters = Arc::new(Counters::default());
        let extra = BusinessRoutes::default()
            .undocumented(
                Method::POST,
                "/api/v3/test/echo",
                echo,
                Permission::OrdersCreate,
                1,
            )
            .undocumented(
                Method::POST,
                "/api/v3/test/echo/{target}",
                echo,
                Permission::OrdersCreate,
                1,
            )
            .undocumented(
                Method::POST,
                "/api/v3/test/other",
                echo,
                Permission::OrdersCreate,
                1,
            )
            .undocumented(
                Method::POST,
                "/api/v3/test/flaky",
                flaky,
                Permission::OrdersCreate,
                1,
            )
            .undocumented(
                Method::POST,
                "/api/v3/test/crash",
                crash,
                Permission::OrdersCreate,
                1,
            )
            .undocumented(
                Method::POST,
                "/api/v3/test/slow",
                slow,
                Permission::OrdersCreate,
                1,
            )
            .undocumented(
                Method::POST,
                "/api/v3/test/costly",
                costly,
                Permission::OrdersCreate,
                5,
            )
            .undocumented(
                Method::GET,
                "/api/v3/test/query",
                query,
                Permission::PricesRead,
                1,
            )
            .undocumented(
                Method::POST,
                "/api/v3/test/domain",
                domain_write,
                Permission::OrdersCreate,
                1,
            )
            .undocumented(
                Method::POST,
                "/api/v3/test/domain-at-commit",
                domain_write,
                Permission::OrdersCreate,
                1,
            )
            .claimed_at_commit()
            .into_router(&state)
            .layer(Extension(counters.clone()));
        let app = swapd_api::router_with(state.clone(), extra);
        let port = listener_address.port();
        let shutdown = CancellationToken::new();
        let stop = shutdown.clone();
        let flusher = tokio::spawn(guards.run_nonce_flusher(shutdown.clone()));
        let task = tokio::spawn(async move {
            axum::serve(
                listener,
                app.into_make_service_with_connect_info::<SocketAddr>(),
            )
            .with_graceful_shutdown(async move { stop.cancelled().await })
            .await
            .unwrap();
            flusher.await.unwrap();
        });
        TestServer {
            base: format!("http://127.0.0.1:{port}"),
            state,
            clock,
            master,
            counters,
            faults,
            engine,
            tracker,
            dispatcher,
            jobs,
            notifier,
            mail_dir,
            http: reqwest::Client::new(),
            shutdown,
            task: Some(task),
            _dir: dir,
        }
    }

    /// Stops gracefully (the final nonce flush included).
    pub async fn stop(mut self) {
        self.shutdown.cancel();
        if let Some(task) = self.task.take() {
            task.await.unwrap();
        }
    }

    pub fn now_secs(&self) -> i64 {
        swapd_core::Clock::now_secs(self.clock.as_ref())
    }

    pub async fn key(&self, permissions: &[Permission]) -> TestKey {
        self.key_with(permissions, &[], &[], RateLimits::default())
            .await
    }

    pub async fn key_with(
        &self,
        permissions: &[Permission],
        ip_allow: &[&str],
        origins: &[&str],
        limits: RateLimits,
    ) -> TestKey {
        self.key_with_markup(permissions, ip_allow, origins, limits, 0)
            .await
    }

    /// [`Self::key_with`] for a partner whose quotes carry `markup_bps`.
    pub async fn key_with_markup(
        &self,
        permissions: &[Permission],
        ip_allow: &[&str],
        origins: &[&str],
        limits: RateLimits,
        markup_bps: u32,
    ) -> TestKey {
        let ip_allow: Vec<String> = ip_allow.iter().map(|s| s.to_string()).collect();
        let origins: Vec<String> = origins.iter().map(|s| s.to_string()).collect();
        let policy = ApiKeyPolicy::new(
            "test",
            permissions.iter().copied(),
            &ip_allow,
            &origins,
            limits,
        )
        .unwrap()
        .with_markup_bps(markup_bps);
        self.key_with_policy(policy).await
    }

    /// A key of `policy`.
    pub async fn key_with_policy(&self, policy: ApiKeyPolicy) -> TestKey {
        let issued = ApiKey::issue(
            policy,
            &self.master,
            swapd_core::Clock::now_ms(self.clock.as_ref()),
        );
        self.state.store.insert_api_key(&issued.key).await.unwrap();
        TestKey {
            id: issued.key.id,
            secret: issued.secret,
        }
    }

    /// A correctly signed request: the query is sent as given and signed in canonical form; a
    /// POST gets a fresh Idempotency-Key.
    pub fn sign(
        &self,
        key: &TestKey,
        method: &str,
        path: &str,
        raw_query: &str,
        body: &[u8],
    ) -> Signed {
        self.sign_at(
            key,
            method,
            path,
            raw_query,
            body,
            self.now_secs(),
            &swapd_client::new_nonce(),
        )
    }

    #[allow(clippy::too_many_arguments)]
    pub fn sign_at(
        &self,
        key: &TestKey,
        method: &str,
        path: &str,
        raw_query: &str,
        body: &[u8],
        timestamp: i64,
        nonce: &str,
    ) -> Signed {
        let canonical = signing::canonical_query(raw_query).unwrap_or_default();
        let message = signing::string_to_sign(
            method,
            path,
            &canonical,
            &timestamp.to_string(),
            nonce,
            body,
        );
        let mut headers = vec![
            ("X-API-KEY".to_owned(), key.id.clone()),
            ("X-API-TIMESTAMP".to_owned(), timestamp.to_string()),
            ("X-API-NONCE".to_owned(), nonce.to_owned()),
            (
                "X-API-SIGN".to_owned(),
                signing::sign(key.secret.as_bytes(), &message),
            ),
        ];
        if !body.is_empty() {
            headers.push(("Content-Type".to_owned(), "application/json".to_owned()));
        }
        if method == "POST" || method == "PATCH" {
            headers.push((
                "Idempotency-Key".to_owned(),
                swapd_client::new_idempotency_key(),
            ));
        }
        let path_and_query = if raw_query.is_empty() {
            path.to_owned()
        } else {
            format!("{path}?{raw_query}")
        };
        Signed {
            method: method.to_owned(),
            path_and_query,
            headers,
            body: body.to_vec(),
        }
    }

    fn request(&self, request: &Signed) -> reqwest::RequestBuilder {
        let method = reqwest::Method::from_bytes(request.method.as_bytes()).unwrap();
        let mut builder = self
            .http
            .request(method, format!("{}{}", self.base, request.path_and_query));
        for (name, value) in &request.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        builder.body(request.body.clone())
    }

    pub async fn send(&self, request: &Signed) -> Resp {
        let response = self.request(request).send().await.unwrap();
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let bytes = response.bytes().await.unwrap();
        let body = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
        Resp {
            status,
            headers,
            body,
        }
    }

    /// Sends, and gives up (drops the connection) after `patience`, as an impatient client
    /// does: `None` then.
    pub async fn send_within(
        &self,
        request: &Signed,
        patience: std::time::Duration,
    ) -> Option<u16> {
        self.request(request)
            .timeout(patience)
            .send()
            .await
            .ok()
            .map(|response| response.status().as_u16())
    }

    /// Sends and returns `None` when the connection fails (a handler that crashed).
    pub async fn try_send(&self, request: &Signed) -> Option<u16> {
        self.request(request)
            .send()
            .await
            .ok()
            .map(|r| r.status().as_u16())
    }

    /// Sends the request over a plain TCP connection exactly as given: no client-side path
    /// normalization.
    pub async fn send_raw(&self, request: &Signed) -> Resp {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let address = self.base.trim_start_matches("http://");
        let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
        let mut head = format!(
            "{} {} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\nContent-Length: {}\r\n",
            request.method,
            request.path_and_query,
            request.body.len()
        );
        for (name, value) in &request.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).await.unwrap();
        stream.write_all(&request.body).await.unwrap();
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await.unwrap();
        let text = String::from_utf8_lossy(&raw);
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
        let body = serde_json::from_str(body).unwrap_or(Value::Null);
        Resp {
            status,
            headers: HeaderMap::new(),
            body,
        }
    }

    /// Every value of every table of this server's SQLite database, as text: what rests on disk,
    /// for scans that look for secrets in clear.
    pub async fn database_text(&self) -> String {
        use sqlx::Connection;
        let url = format!("sqlite://{}", self._dir.path().join("swapd.db").display());
        let mut db = sqlx::SqliteConnection::connect(&url).await.unwrap();
        let tables: Vec<String> =
            sqlx::query_scalar("SELECT name FROM sqlite_master WHERE type = 'table'")
                .fetch_all(&mut db)
                .await
                .unwrap();
        let mut text = String::new();
        for table in tables {
            let columns: Vec<String> = sqlx::query_scalar("SELECT name FROM pragma_table_info(?)")
                .bind(&table)
                .fetch_all(&mut db)
                .await
                .unwrap();
            for column in columns {
                // The names come from the database's own catalog.
                let values: Vec<Option<Vec<u8>>> = sqlx::query_scalar(sqlx::AssertSqlSafe(
                    format!("SELECT CAST(\"{column}\" AS BLOB) FROM \"{table}\""),
                ))
                .fetch_all(&mut db)
                .await
                .unwrap();
                for value in values.into_iter().flatten() {
                    text.push_str(&String::from_utf8_lossy(&value));
                    text.push('\n');
                }
            }
        }
        text
    }

    /// Signs and sends.
    pub async fn call(
        &self,
        key: &TestKey,
        method: &str,
        path: &str,
        raw_query: &str,
        body: &[u8],
    ) -> Resp {
        self.send(&self.sign(key, method, path, raw_query, body))
            .await
    }

    /// A signed `GET` of `path` with `raw_query`.
    pub async fn get(&self, key: &TestKey, path: &str, raw_query: &str) -> Resp {
        self.call(key, "GET", path, raw_query, b"").await
    }

    /// A signed `POST` of `body` as JSON.
    pub async fn post(&self, key: &TestKey, path: &str, body: &Value) -> Resp {
        self.call(key, "POST", path, "", &serde_json::to_vec(body).unwrap())
            .await
    }

    /// A signed `PATCH` of `body` as JSON.
    pub async fn patch(&self, key: &TestKey, path: &str, body: &Value) -> Resp {
        self.call(key, "PATCH", path, "", &serde_json::to_vec(body).unwrap())
            .await
    }

    /// The quota `key` has left, read without spending any.
    pub async fn quota(&self, key: &TestKey) -> swapd_core::rate_limit::Quota {
        let stored = self.state.store.api_key(&key.id).await.unwrap().unwrap();
        self.state.guards.peek_rate(&stored).await.unwrap()
    }
}
