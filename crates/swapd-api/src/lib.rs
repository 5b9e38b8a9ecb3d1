//! The HTTP surfaces of swapd: `/api/v3` (Business API), `/api/x402` (pay-per-call API) and the
//! operational endpoints (`/healthz`, `/readyz`, `/metrics`). Handlers stay thin: extractors
//! parse and check, handlers call one use case, [`ApiError`] decides what a failure looks like.

use std::sync::Arc;

use ipnet::IpNet;
use swapd_core::{Clock, Mode, Store};

pub mod business;
mod client_address;
pub mod console;
mod error;
mod handlers;
mod html;
pub mod idempotency;
pub mod ip_limits;
mod json;
pub mod keys;
mod layers;
pub mod limits;
pub mod mcp;
pub mod openapi;
mod ops;
mod order_page;
pub mod principal;
mod qr;
mod query;
mod route_doc;
mod router;
pub mod x402;

pub use error::ApiError;
pub use json::{ApiJson, MAX_BODY_BYTES, parse_json};
pub use order_page::token_matches as page_token_matches;
pub use query::SignedQuery;
pub use router::{router, router_with};

/// What every handler may use. Cloned for every layer and handler a request passes, so it is one
/// `Arc`: a clone is one reference count, not one per part.
#[derive(Clone)]
pub struct AppState(Arc<AppParts>);

impl AppState {
    pub fn new(parts: AppParts) -> Self {
        Self(Arc::new(parts))
    }

    /// The origin clients reach this server at (`public_url`), for links it hands out.
    pub fn public_url(&self) -> &str {
        &self.x402.origin
    }

    /// The use cases' view of this state.
    pub fn app(&self) -> swapd_app::Context<'_> {
        swapd_app::Context {
            store: &self.store,
            market: &self.market,
            clock: &self.clock,
            master_key: &self.master_key,
            access_tokens: &self.access_tokens,
            mode: self.mode,
            order_rules: self.order_rules,
            public_url: self.public_url(),
            courier: &self.webhooks,
            windows: self.limits.windows.as_ref(),
            replays_per_minute: self.replays_per_minute,
            fees: &self.fees,
            partner: swapd_core::fees::Markup::default(),
            observed: &self.observed,
        }
    }

    /// [`Self::app`] for `caller`: its quotes carry the partner's markup.
    pub fn app_for(&self, caller: &principal::Caller) -> swapd_app::Context<'_> {
        swapd_app::Context {
            partner: caller.markup(),
            ..self.app()
        }
    }
}

impl std::ops::Deref for AppState {
    type Target = AppParts;

    fn deref(&self) -> &AppParts {
        &self.0
    }
}

/// The parts of [`AppState`].
pub struct AppParts {
    pub store: Arc<dyn Store>,
    pub clock: Arc<dyn Clock>,
    pub mode: Mode,
    /// API keys, nonces and rate limits of the Business API.
    pub guards: Arc<business::Guards>,
    /// The limits' state every surface spends budgets from (the guards' own).
    pub limits: Arc<limits::Limits>,
    /// Peers whose `X-Forwarded-For` is believed.
    pub trusted_proxies: Arc<[IpNet]>,
    /// The liquidity providers, behind the aggregator.
    pub market: Arc<dyn swapd_core::market::Market>,
    /// Signs and checks onchain execution access tokens.
    pub access_tokens: swapd_core::onchain::access::AccessTokens,
    /// Seals webhook signing secrets.
    pub master_key: swapd_core::secrets::MasterKey,
    /// Checks webhook URLs and sends test deliveries, under the mode's URL policy.
    pub webhooks: swapd_delivery::Sender,
    /// The pay-per-call surface: pricing, facilitator, public origin, SIWX chains.
    pub x402: Arc<x402::X402>,
    /// Request and failed-authentication budgets per client address, before authentication.
    pub ip_limits: Arc<dyn swapd_core::rate_limit::Addresses>,
    /// How long new orders wait for their deposit, and how often the engine looks at them.
    pub order_rules: swapd_core::offchain::follow::LifecycleRules,
    /// Names this node on the idempotency claims it takes (released when it restarts).
    pub node_id: Arc<str>,
    /// Sandbox fault: honour `X-Sandbox-Fault: pause-after-commit` (see [`idempotency`]).
    pub sandbox_fault_header: bool,
    /// How long a request may run before it is answered 503.
    pub request_timeout: std::time::Duration,
    /// The background loops of this process, when it runs the worker (readiness names a loop
    /// that keeps failing).
    pub worker_health: swapd_core::health::WorkerHealth,
    /// Replays one webhook subscription may ask for per minute.
    pub replays_per_minute: u32,
    /// The operator console; `None` when it is off (`/console` answers 404).
    pub console: Option<Arc<console::Console>>,
    /// The MCP server at `/mcp`.
    pub mcp: mcp::Settings,
    /// Cancelled when the node starts shutting down: `/readyz` answers not ready from then on,
    /// while in-flight requests finish (docs/deploy.md, "Stopping").
    pub stopping: tokio_util::sync::CancellationToken,
    /// The operator's fees on every quote (docs/fees.md).
    pub fees: swapd_core::fees::FeePolicy,
    /// The operator's bounds on markups and on the ledger's reconciliation.
    pub fee_rules: swapd_core::fees::FeeRules,
    /// What providers delivered, refreshed in the background (docs/market.md).
    pub observed: Arc<swapd_app::observed::ObservedFigures>,
}
