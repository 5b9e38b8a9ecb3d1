//! Layered configuration: built-in defaults → `swapd.toml` (or `--config FILE`) → `SWAPD_*`
//! environment → command-line flags. Validated once at start; every error names the setting.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use ipnet::IpNet;
use serde::{Deserialize, Serialize};
use swapd_core::Mode;
use swapd_store::{Backend, redact_url};

pub const DEFAULT_CONFIG_FILE: &str = "swapd.toml";
pub const ENV_PREFIX: &str = "SWAPD_";
const REDACTED: &str = "<redacted>";

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// `sandbox` (simulated outside world, the default) or `live`.
    pub mode: Mode,
    /// Address the HTTP server binds.
    pub listen: SocketAddr,
    /// Where the embedded database, the sandbox master key and sandbox e-mails live.
    pub data_dir: PathBuf,
    /// `sqlite://PATH` or `postgres://...`; empty means `sqlite://<data_dir>/swapd.db`.
    pub database_url: String,
    /// The origin clients use to reach this server (used in x402 resources and SIWX domains);
    /// empty means `http://<listen>`.
    pub public_url: String,
    /// 64 hex digits sealing every stored secret. Sandbox: generated into the data dir when
    /// empty. Live: required.
    pub master_key: String,
    /// Names this node on the idempotency claims it takes, so that after a crash it releases
    /// its own at start. Empty: generated once into `<data_dir>/node.id`. Nodes sharing a
    /// database need distinct ids (distinct data dirs, or set this).
    pub node_id: String,
    /// Sandbox fault: a mutation sent with `X-Sandbox-Fault: pause-after-commit` stops dead
    /// once its effect is written and before it is answered, so a crash at that moment can be
    /// staged (kill the process, restart it, retry).
    pub sandbox_fault_header: bool,
    pub log: LogConfig,
    pub database: DatabaseConfig,
    pub security: SecurityConfig,
    pub x402: X402Config,
    pub providers: ProvidersConfig,
    /// The chains swapd reads to follow onchain executions, by network code (`[chains.base]`).
    pub chains: BTreeMap<String, ChainConfig>,
    pub orders: OrdersConfig,
    pub mail: MailConfig,
    pub webhooks: WebhooksConfig,
    pub shared: SharedConfig,
    pub console: ConsoleConfig,
    pub mcp: McpConfig,
    pub fees: FeesConfig,
    pub shutdown: ShutdownConfig,
    pub telemetry: TelemetryConfig,
}

/// OpenTelemetry traces (docs/deploy.md, "Traces"): off unless an endpoint is set.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetryConfig {
    /// The OTLP/HTTP collector's base URL (`http://127.0.0.1:4318`); spans go to its
    /// `/v1/traces`. Empty: no traces.
    pub otlp_endpoint: String,
    /// `service.name` on every span.
    pub service_name: String,
    /// The share of new traces recorded, 0 to 1 (a trace a caller started keeps its caller's
    /// decision).
    pub sample_ratio: f64,
    /// Spans waiting for export at most; past it new ones are dropped.
    pub queue_size: usize,
    /// How long one export may take, in milliseconds.
    pub export_timeout_ms: u64,
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        Self {
            otlp_endpoint: String::new(),
            service_name: "swapd".into(),
            sample_ratio: 1.0,
            queue_size: 2048,
            export_timeout_ms: 3_000,
        }
    }
}

impl TelemetryConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        if !self.otlp_endpoint.is_empty() && !self.otlp_endpoint.starts_with("http://") {
            return Err(setting(
                "telemetry.otlp_endpoint",
                "must be an http:// URL of an OTLP/HTTP collector (an agent next to the node); https is not supported",
            ));
        }
        if !(0.0..=1.0).contains(&self.sample_ratio) {
            return Err(setting("telemetry.sample_ratio", "must be from 0 to 1"));
        }
        if self.queue_size == 0 || self.export_timeout_ms == 0 {
            return Err(setting(
                "telemetry.queue_size",
                "queue_size and export_timeout_ms must be at least 1",
            ));
        }
        Ok(())
    }
}

/// How a node stops on SIGTERM (docs/deploy.md, "Stopping"): `/readyz` answers not ready at
/// once, the listener keeps serving for `drain_secs` (so load balancers stop sending first),
/// then in-flight requests and worker passes get `grace_secs` more before the process exits
/// regardless (leases left behind end on their own and another node takes the work).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShutdownConfig {
    pub drain_secs: u64,
    pub grace_secs: u64,
}

impl Default for ShutdownConfig {
    fn default() -> Self {
        Self {
            drain_secs: 5,
            grace_secs: 25,
        }
    }
}

/// What swapd earns on the swaps it routes, and what partners may add (docs/fees.md).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeesConfig {
    /// The operator's service fee, in bps of each swap's output.
    pub service_bps: u32,
    /// A provider's own service fee in bps, by provider id (for ChangeNOW: the commission set
    /// on the account, which its quotes already hold).
    pub provider_service_bps: BTreeMap<String, u32>,
    /// The most a partner's markup (`swapd keys create --markup-bps`) may be, in bps.
    pub max_markup_bps: u32,
    /// The most the service fee and a markup may take together, in bps.
    pub max_total_bps: u32,
    /// Where the onchain routers that pay the fee to an address pay the operator's.
    pub recipients: FeeRecipientsConfig,
    /// How far a realized fee may be off the expected one, in bps of it, before the
    /// reconciliation flags it (metric and console).
    pub reconcile_tolerance_bps: u32,
    /// How often the reconciliation looks at the ledger, in seconds.
    pub reconcile_interval_secs: u64,
}

/// Where the operator's fee is paid on chain (docs/fees.md, "Recipients"): a router without
/// the recipient it needs leaves the fee out of its quotes.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeeRecipientsConfig {
    /// An EVM address (0x's `swapFeeRecipient`, Relay's `appFees`).
    pub evm: Option<String>,
    /// Solana token accounts by the catalog code of the currency each holds (Jupiter's
    /// `feeAccount`, which must hold the output's mint).
    pub solana: BTreeMap<String, String>,
}

impl Default for FeesConfig {
    fn default() -> Self {
        Self {
            service_bps: 0,
            provider_service_bps: BTreeMap::new(),
            max_markup_bps: 300,
            max_total_bps: 1_000,
            recipients: FeeRecipientsConfig::default(),
            reconcile_tolerance_bps: 100,
            reconcile_interval_secs: 300,
        }
    }
}

impl FeesConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        // Below 10 000 bps a quote always leaves the user something.
        if self.max_total_bps >= 10_000 {
            return Err(setting("fees.max_total_bps", "must be below 10000 (100 %)"));
        }
        let services = std::iter::once(("fees.service_bps".to_owned(), self.service_bps)).chain(
            self.provider_service_bps
                .iter()
                .map(|(id, bps)| (format!("fees.provider_service_bps.{id}"), *bps)),
        );
        for (key, bps) in services {
            if bps + self.max_markup_bps > self.max_total_bps {
                return Err(setting(
                    &key,
                    format!(
                        "{bps} bps with the largest markup ({} bps, fees.max_markup_bps) is more \
                         than fees.max_total_bps ({})",
                        self.max_markup_bps, self.max_total_bps
                    ),
                ));
            }
        }
        if self.reconcile_interval_secs == 0 {
            return Err(setting(
                "fees.reconcile_interval_secs",
                "must be at least 1",
            ));
        }
        self.evm_recipient()?;
        for (code, account) in &self.recipients.solana {
            let key = format!("fees.recipients.solana.{code}");
            match swapd_core::market::currencies::currency(code) {
                Some(def) if def.network.chain_namespace() == "solana" => {}
                _ => return Err(setting(&key, "names no Solana currency swapd lists")),
            }
            swapd_core::address::Network::Solana
                .validate_address(account)
                .map_err(|_| setting(&key, "is not a Solana account address"))?;
        }
        Ok(())
    }

    fn evm_recipient(&self) -> Result<Option<alloy_primitives::Address>, ConfigError> {
        self.recipients
            .evm
            .as_deref()
            .map(|text| {
                text.parse::<alloy_primitives::Address>()
                    .ok()
                    .filter(|address| !address.is_zero())
                    .ok_or_else(|| setting("fees.recipients.evm", "is not an EVM address"))
            })
            .transpose()
    }

    pub fn rules(&self) -> swapd_core::fees::FeeRules {
        swapd_core::fees::FeeRules {
            max_markup_bps: self.max_markup_bps,
            reconcile_tolerance_bps: self.reconcile_tolerance_bps,
        }
    }

    /// The operator's part of every quote's fees.
    pub fn policy(&self) -> swapd_core::fees::FeePolicy {
        swapd_core::fees::FeePolicy {
            service_bps: self.service_bps,
            per_provider: self.provider_service_bps.clone(),
            recipients: swapd_core::fees::FeeRecipients {
                evm: self.evm_recipient().ok().flatten(),
                solana: self.recipients.solana.clone(),
                partner_evm: None,
            },
            ..Default::default()
        }
    }
}

/// The MCP server at `/mcp` (docs/mcp.md, "Limits").
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpConfig {
    /// MCP sessions this node holds at once; a new one past it is refused (503) until one ends.
    pub max_sessions: usize,
    /// How long a session may stay idle before it is closed, in seconds.
    pub session_idle_secs: u64,
    /// Host names (`host` or `host:port`) `/mcp` answers besides `public_url`'s and loopback
    /// (any other `Host` is refused: DNS rebinding).
    pub allowed_hosts: Vec<String>,
}

impl Default for McpConfig {
    fn default() -> Self {
        Self {
            max_sessions: 1_000,
            session_idle_secs: 600,
            allowed_hosts: Vec::new(),
        }
    }
}

impl McpConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        if self.max_sessions == 0 {
            return Err(setting("mcp.max_sessions", "must be at least 1"));
        }
        if self.session_idle_secs == 0 {
            return Err(setting("mcp.session_idle_secs", "must be at least 1"));
        }
        Ok(())
    }
}

/// The operator console at `/console` (docs/operations.md, "The console").
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConsoleConfig {
    /// The operator password's argon2 hash (PHC string, from `swapd console hash-password`).
    /// Empty: the console is off and `/console` answers 404.
    pub password_hash: String,
}

/// Where several nodes keep the state every request touches (docs/operations.md, "Several
/// nodes").
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SharedConfig {
    /// `redis://[user:password@]host[:port][/db]` (or `rediss://`): nonces, rate limits, the
    /// per-address limits, the x402 windows and key revocations live there. Empty: one SQLite
    /// node keeps them in memory, PostgreSQL nodes in the database.
    pub redis_url: String,
    /// Names every key and channel swapd uses in Redis, so deployments may share one.
    pub redis_prefix: String,
}

/// A chain's node (docs/configuration.md, "Chains").
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChainConfig {
    /// The node's JSON-RPC URL (an API key in its path is redacted when shown).
    pub rpc_url: String,
    /// Blocks on top of a transaction's own before it counts as final; the network's default
    /// (docs/configuration.md) when unset. On Solana, the commitment: fewer than 31 is
    /// `confirmed`, unset or more `finalized`.
    #[serde(default)]
    pub confirmations: Option<u64>,
    /// How long one call may take, in milliseconds.
    #[serde(default = "ChainConfig::default_timeout_ms")]
    pub timeout_ms: u64,
}

impl ChainConfig {
    fn default_timeout_ms() -> u64 {
        5_000
    }

    /// The confirmations `network` needs when the operator sets none.
    pub fn default_confirmations(network: swapd_core::address::Network) -> u64 {
        use swapd_core::address::Network;
        match network {
            Network::Ethereum => 12,
            Network::BnbChain => 15,
            Network::Polygon => 32,
            _ => 3,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhooksConfig {
    /// How often the dispatcher looks for due deliveries, in milliseconds.
    pub poll_interval_ms: u64,
    /// How long a receiver may take to answer, in milliseconds (success is a 2xx within it).
    pub timeout_ms: u64,
    /// Deliveries claimed per pass, and sent at once.
    pub batch: u32,
    pub concurrency: usize,
    /// How long events (and their deliveries) are kept for replay and the delivery log, in days.
    pub retention_days: u32,
    /// Replays one subscription may ask for per minute.
    pub replays_per_minute: u32,
    /// A DNS server (`IP:PORT`) that resolves webhook hosts instead of the system's resolver.
    #[serde(default)]
    pub dns_server: Option<SocketAddr>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MailConfig {
    /// SMTP server for status e-mails: `smtps://user:pass@host:465` or
    /// `smtp://user:pass@host:587?tls=required`. Sandbox: empty writes `.eml` files under
    /// `<data_dir>/mail`. Live: required.
    pub smtp_url: String,
    /// Sender of status e-mails.
    pub from: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OrdersConfig {
    /// How often the lifecycle engine looks for orders due for a step, in milliseconds.
    pub poll_interval_ms: i64,
    /// How long a user has to choose in an emergency before a refund, in seconds.
    pub emergency_window_secs: i64,
    /// How long a new fixed-rate order waits for its deposit (and keeps its rate), in seconds.
    pub fixed_lifetime_secs: i64,
    /// How long a new float-rate order waits for its deposit, in seconds.
    pub float_lifetime_secs: i64,
    /// Sandbox fault: a sandbox desk stops dead right after its next payout, before recording
    /// it, so a crash at the worst moment can be staged (kill it, restart it, see one payout).
    pub sandbox_pause_after_payout: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogConfig {
    pub format: LogFormat,
    /// A tracing filter, e.g. `info` or `swapd=debug,tower_http=info`.
    pub level: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatabaseConfig {
    pub max_connections: u32,
    pub acquire_timeout_ms: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecurityConfig {
    /// Peers whose `X-Forwarded-For` is believed. Empty: the TCP peer is the client.
    pub trusted_proxies: Vec<IpNet>,
    /// API requests per second per client address, before authentication (bursts of twice
    /// that); 0 turns the limit off.
    pub ip_requests_per_second: u32,
    /// Failed authentications (401s) per minute per client address; past it the address is
    /// refused (429 `ip_rate_limited`) until it has one to spare. 0 turns the limit off.
    pub ip_auth_failures_per_minute: u32,
    /// How long a request may run before it is answered 503 `service_unavailable`, in
    /// milliseconds.
    pub request_timeout_ms: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct X402Config {
    /// `ledger` (in-process, sandbox default) or `http`.
    pub facilitator: String,
    /// Base URL of the HTTP facilitator (`/verify`, `/settle`, `/supported`). Live: required.
    pub facilitator_url: String,
    /// How long the HTTP facilitator may take to verify a payment (and answer `/supported`).
    pub verify_timeout_ms: u64,
    /// How long the HTTP facilitator may take to settle one; past it the outcome is unknown
    /// and the same payment sent again finishes the purchase (docs/x402.md).
    pub settle_timeout_ms: u64,
    /// The seller address payments go to (0x + 40 hex). Live: required.
    pub pay_to: String,
    /// CAIP-2 network of the payment asset.
    pub network: String,
    /// Flat price of one paid call in USD, as a decimal string.
    pub price_usd: String,
    /// Signs execution access tokens. Live: x402 order and onchain routes stay disabled without it.
    pub access_token_secret: String,
    /// The token payments are made in; an empty address means USDC of `network`.
    pub asset: X402AssetConfig,
}

/// An EIP-3009 USD stablecoin on the payment network.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct X402AssetConfig {
    /// The token contract (0x + 40 hex digits); empty: USDC of `x402.network`.
    pub address: String,
    /// Its EIP-712 domain name and version, as the contract signs (USDC on Base: `USD Coin`, `2`).
    pub name: String,
    pub version: String,
    pub decimals: u8,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProvidersConfig {
    /// Live liquidity-provider adapters to enable. Live: at least one is required.
    pub live: Vec<String>,
    /// How long one provider may take to answer a quote or catalog request, in milliseconds.
    pub deadline_ms: u64,
    /// Seed of the sandbox price feed's random walk.
    pub sandbox_seed: u64,
    /// Sandbox providers that never answer (to see deadlines at work).
    pub sandbox_stalled: Vec<String>,
    /// Sandbox providers that fail every call.
    pub sandbox_failing: Vec<String>,
    /// Time between two blocks of the sandbox chain (one confirmation each), in milliseconds.
    pub sandbox_block_ms: i64,
    /// ChangeNOW API v2 (docs/providers.md).
    pub changenow: DeskConfig,
    /// FixedFloat API v2 (docs/providers.md).
    pub fixedfloat: DeskConfig,
    /// LI.FI (docs/providers.md).
    pub lifi: RouterConfig,
    /// 0x Swap API v2 (docs/providers.md).
    pub zerox: RouterConfig,
    /// Relay (docs/providers.md).
    pub relay: RouterConfig,
    /// Jupiter's swap API (docs/providers.md).
    pub jupiter: RouterConfig,
}

/// Where a live onchain router's API is and how swapd signs in to it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouterConfig {
    pub base_url: String,
    /// LI.FI, Relay: optional (raises their rate limits); 0x: required; Jupiter: required by
    /// its keyed host.
    pub api_key: String,
    /// How swapd names itself to the router (LI.FI's `integrator`, Relay's `referrer`); unused
    /// by 0x and Jupiter.
    pub integrator: String,
    /// How long one call may take, in milliseconds.
    pub timeout_ms: u64,
}

impl RouterConfig {
    fn with_base_url(base_url: &str) -> Self {
        Self {
            base_url: base_url.into(),
            api_key: String::new(),
            integrator: "swapd".into(),
            timeout_ms: 10_000,
        }
    }
}

/// Where a live desk's API is and how swapd signs in to it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeskConfig {
    /// The API's base URL: the desk's public API by default; a proxy, or a recorded-response
    /// server in tests.
    pub base_url: String,
    /// The partner API key. Required when the desk is in `providers.live`.
    pub api_key: String,
    /// The key's secret (FixedFloat signs every request with it; ChangeNOW has none).
    pub api_secret: String,
    /// ChangeNOW only: the partner's private API key, which lists the account's exchanges
    /// (`GET /v2/exchanges`), so a create whose answer was lost is found and adopted.
    pub private_api_key: String,
    /// ChangeNOW only: the account has the `payload` partner field enabled, so creates carry
    /// swapd's order reference and a lost create is matched by it.
    pub payload_reference: bool,
    /// FixedFloat only: the operator's referral code, under which FixedFloat takes the service
    /// fee out of the output (`refcode` and `afftax`, docs/fees.md). Empty: FixedFloat carries
    /// no fee.
    #[serde(default)]
    pub refcode: String,
    /// How long one call may take, in milliseconds.
    pub timeout_ms: u64,
}

impl DeskConfig {
    fn with_base_url(base_url: &str) -> Self {
        Self {
            base_url: base_url.into(),
            api_key: String::new(),
            api_secret: String::new(),
            private_api_key: String::new(),
            payload_reference: false,
            refcode: String::new(),
            timeout_ms: 10_000,
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            mode: Mode::Sandbox,
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            data_dir: PathBuf::from("./data"),
            database_url: String::new(),
            public_url: String::new(),
            master_key: String::new(),
            node_id: String::new(),
            sandbox_fault_header: false,
            log: LogConfig {
                format: LogFormat::Text,
                level: "info".into(),
            },
            database: DatabaseConfig {
                max_connections: 10,
                acquire_timeout_ms: 5_000,
            },
            security: SecurityConfig {
                trusted_proxies: Vec::new(),
                ip_requests_per_second: swapd_api::ip_limits::DEFAULT_REQUESTS_PER_SECOND,
                ip_auth_failures_per_minute: swapd_api::ip_limits::DEFAULT_AUTH_FAILURES_PER_MINUTE,
                request_timeout_ms: 60_000,
            },
            x402: X402Config {
                facilitator: "ledger".into(),
                facilitator_url: String::new(),
                verify_timeout_ms: 5_000,
                settle_timeout_ms: 20_000,
                asset: X402AssetConfig {
                    address: String::new(),
                    name: String::new(),
                    version: String::new(),
                    decimals: 6,
                },
                pay_to: String::new(),
                network: "eip155:8453".into(),
                price_usd: "0.05".into(),
                access_token_secret: String::new(),
            },
            providers: ProvidersConfig {
                live: Vec::new(),
                deadline_ms: 1_500,
                sandbox_seed: 0,
                sandbox_stalled: Vec::new(),
                sandbox_failing: Vec::new(),
                sandbox_block_ms: 2_000,
                changenow: DeskConfig::with_base_url(swapd_desks::changenow::BASE_URL),
                fixedfloat: DeskConfig::with_base_url(swapd_desks::fixedfloat::BASE_URL),
                lifi: RouterConfig::with_base_url(swapd_onchain::lifi::BASE_URL),
                zerox: RouterConfig::with_base_url(swapd_onchain::zerox::BASE_URL),
                relay: RouterConfig::with_base_url(swapd_onchain::relay::BASE_URL),
                jupiter: RouterConfig::with_base_url(swapd_onchain::jupiter::BASE_URL),
            },
            chains: BTreeMap::new(),
            orders: OrdersConfig {
                poll_interval_ms: 1_000,
                emergency_window_secs: 24 * 60 * 60,
                fixed_lifetime_secs: 30 * 60,
                float_lifetime_secs: 60 * 60,
                sandbox_pause_after_payout: false,
            },
            mail: MailConfig {
                smtp_url: String::new(),
                from: "swapd <noreply@localhost>".into(),
            },
            webhooks: WebhooksConfig {
                poll_interval_ms: 100,
                timeout_ms: swapd_core::webhooks::delivery::DELIVERY_TIMEOUT_MS,
                batch: 64,
                concurrency: 16,
                retention_days: 30,
                replays_per_minute: 10,
                dns_server: None,
            },
            shared: SharedConfig {
                redis_url: String::new(),
                redis_prefix: "swapd".into(),
            },
            console: ConsoleConfig::default(),
            mcp: McpConfig::default(),
            fees: FeesConfig::default(),
            shutdown: ShutdownConfig::default(),
            telemetry: TelemetryConfig::default(),
        }
    }
}

/// Whether `key` (lower case) is a top-level setting that `SWAPD_*` variables may set: a field
/// of [`Config`], as it serializes. Other `SWAPD_*` variables (e.g. the client's `SWAPD_URL` or
/// the tests' `SWAPD_TEST_POSTGRES_URL`) are not configuration of the server.
fn is_setting(key: &str) -> bool {
    static KEYS: std::sync::LazyLock<Vec<String>> =
        std::sync::LazyLock::new(|| match serde_json::to_value(Config::default()) {
            Ok(serde_json::Value::Object(fields)) => fields.keys().cloned().collect(),
            _ => unreachable!("the configuration serializes as a map"),
        });
    KEYS.iter().any(|setting| setting == key)
}

/// Live provider adapters compiled into this build.
pub const LIVE_PROVIDER_ADAPTERS: &[&str] = &[
    swapd_desks::changenow::ID,
    swapd_desks::fixedfloat::ID,
    swapd_onchain::jupiter::ID,
    swapd_onchain::lifi::ID,
    swapd_onchain::relay::ID,
    swapd_onchain::zerox::ID,
];

/// Command-line values that override every other layer.
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    pub config_file: Option<PathBuf>,
    pub data_dir: Option<PathBuf>,
    pub database_url: Option<String>,
    pub listen: Option<SocketAddr>,
    pub log_format: Option<LogFormat>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("configuration file {0} does not exist")]
    MissingFile(PathBuf),
    #[error("invalid configuration: {0}")]
    Invalid(String),
    #[error("invalid setting `{key}`: {problem}")]
    Setting { key: String, problem: String },
    #[error(
        "live mode cannot start: missing required settings: {}",
        .0.iter().map(|(key, env)| format!("`{key}` (env {env})")).collect::<Vec<_>>().join(", ")
    )]
    LiveRequirements(Vec<(&'static str, &'static str)>),
}

impl Config {
    /// Loads and validates the configuration from every layer.
    pub fn load(overrides: &Overrides) -> Result<Config, ConfigError> {
        Self::load_from(overrides, Env::prefixed(ENV_PREFIX))
    }

    fn load_from(overrides: &Overrides, env: Env) -> Result<Config, ConfigError> {
        let mut figment = Figment::from(Serialized::defaults(Config::default()));
        match &overrides.config_file {
            Some(path) if !path.exists() => return Err(ConfigError::MissingFile(path.clone())),
            Some(path) => figment = figment.merge(Toml::file(path)),
            None => figment = figment.merge(Toml::file(DEFAULT_CONFIG_FILE)),
        }
        figment = figment.merge(
            env.filter(|key| {
                let key = key.as_str().to_ascii_lowercase();
                let head = key.split("__").next().unwrap_or_default();
                is_setting(head)
            })
            .split("__"),
        );
        if let Some(dir) = &overrides.data_dir {
            figment = figment.merge(("data_dir", dir));
        }
        if let Some(url) = &overrides.database_url {
            figment = figment.merge(("database_url", url));
        }
        if let Some(listen) = overrides.listen {
            figment = figment.merge(("listen", listen.to_string()));
        }
        if let Some(format) = overrides.log_format {
            figment = figment.merge(("log.format", format));
        }
        let mut config: Config = figment.extract().map_err(describe_figment_error)?;
        config.resolve_defaults();
        config.validate()?;
        Ok(config)
    }

    fn resolve_defaults(&mut self) {
        if self.database_url.is_empty() {
            self.database_url = format!("sqlite://{}", self.data_dir.join("swapd.db").display());
        }
        if self.public_url.is_empty() {
            self.public_url = format!("http://{}", self.listen);
        }
    }

    /// Each section checks its own settings; what spans sections (the mode's faults, the live
    /// requirements) is checked here.
    fn validate(&self) -> Result<(), ConfigError> {
        Backend::from_url(&self.database_url)
            .map_err(|e| setting("database_url", e.to_string()))?;
        check_origin(&self.public_url).map_err(|p| setting("public_url", p))?;
        if !self.master_key.is_empty() {
            swapd_core::secrets::MasterKey::from_hex(&self.master_key)
                .map_err(|e| setting("master_key", e.to_string()))?;
        }
        self.console.validate()?;
        self.mcp.validate()?;
        self.fees.validate()?;
        self.telemetry.validate()?;
        self.log.validate()?;
        self.database.validate()?;
        self.shared.validate()?;
        self.x402.validate()?;
        self.providers.validate()?;
        for (name, chain) in &self.chains {
            chain.validate(name)?;
        }
        self.mail.validate()?;
        if self.mode == Mode::Live {
            let faults = [
                (
                    "orders.sandbox_pause_after_payout",
                    self.orders.sandbox_pause_after_payout,
                ),
                ("sandbox_fault_header", self.sandbox_fault_header),
                (
                    "providers.sandbox_stalled",
                    !self.providers.sandbox_stalled.is_empty(),
                ),
                (
                    "providers.sandbox_failing",
                    !self.providers.sandbox_failing.is_empty(),
                ),
            ];
            if let Some((name, _)) = faults.iter().find(|(_, set)| *set) {
                return Err(setting(name, "sandbox faults cannot be set in live mode"));
            }
        }
        self.webhooks.validate()?;
        self.security.validate()?;
        let node_id_valid = self.node_id.len() <= 64
            && self
                .node_id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
        if !node_id_valid {
            return Err(setting(
                "node_id",
                "at most 64 characters of A-Z, a-z, 0-9, `-`, `_` and `.`",
            ));
        }
        self.orders.validate()?;
        if self.mode == Mode::Live {
            self.check_live_requirements()?;
        }
        Ok(())
    }

    fn check_live_requirements(&self) -> Result<(), ConfigError> {
        let mut missing = Vec::new();
        if self.master_key.is_empty() {
            missing.push(("master_key", "SWAPD_MASTER_KEY"));
        }
        if Backend::from_url(&self.database_url).ok() != Some(Backend::Postgres) {
            missing.push(("database_url (a postgres:// URL)", "SWAPD_DATABASE_URL"));
        }
        if self.x402.facilitator != "http" {
            missing.push(("x402.facilitator = \"http\"", "SWAPD_X402__FACILITATOR"));
        }
        if self.x402.facilitator_url.is_empty() {
            missing.push(("x402.facilitator_url", "SWAPD_X402__FACILITATOR_URL"));
        }
        if self.x402.pay_to.is_empty() {
            missing.push(("x402.pay_to", "SWAPD_X402__PAY_TO"));
        }
        if self.mail.smtp_url.is_empty() {
            missing.push(("mail.smtp_url", "SWAPD_MAIL__SMTP_URL"));
        }
        if self.providers.live.is_empty() {
            missing.push((
                "providers.live (at least one live provider adapter)",
                "SWAPD_PROVIDERS__LIVE",
            ));
        }
        let enabled = |id: &str| self.providers.live.iter().any(|name| name == id);
        if enabled(swapd_desks::changenow::ID) && self.providers.changenow.api_key.is_empty() {
            missing.push((
                "providers.changenow.api_key",
                "SWAPD_PROVIDERS__CHANGENOW__API_KEY",
            ));
        }
        if enabled(swapd_desks::fixedfloat::ID) {
            if self.providers.fixedfloat.api_key.is_empty() {
                missing.push((
                    "providers.fixedfloat.api_key",
                    "SWAPD_PROVIDERS__FIXEDFLOAT__API_KEY",
                ));
            }
            if self.providers.fixedfloat.api_secret.is_empty() {
                missing.push((
                    "providers.fixedfloat.api_secret",
                    "SWAPD_PROVIDERS__FIXEDFLOAT__API_SECRET",
                ));
            }
        }
        if enabled(swapd_onchain::zerox::ID) && self.providers.zerox.api_key.is_empty() {
            missing.push(("providers.zerox.api_key", "SWAPD_PROVIDERS__ZEROX__API_KEY"));
        }
        if missing.is_empty() {
            Ok(())
        } else {
            Err(ConfigError::LiveRequirements(missing))
        }
    }

    /// The effective configuration as TOML, with secrets and database passwords redacted.
    pub fn redacted_toml(&self) -> String {
        let mut shown = self.clone();
        for secret in [
            &mut shown.master_key,
            &mut shown.x402.access_token_secret,
            &mut shown.providers.changenow.api_key,
            &mut shown.providers.changenow.api_secret,
            &mut shown.providers.changenow.private_api_key,
            &mut shown.providers.fixedfloat.api_key,
            &mut shown.providers.fixedfloat.api_secret,
            &mut shown.providers.lifi.api_key,
            &mut shown.providers.zerox.api_key,
            &mut shown.providers.relay.api_key,
            &mut shown.providers.jupiter.api_key,
            &mut shown.console.password_hash,
        ] {
            if !secret.is_empty() {
                *secret = REDACTED.into();
            }
        }
        for chain in shown.chains.values_mut() {
            chain.rpc_url = redact_rpc_url(&chain.rpc_url);
        }
        shown.database_url = redact_url(&shown.database_url);
        shown.mail.smtp_url = redact_url(&shown.mail.smtp_url);
        shown.shared.redis_url = redact_url(&shown.shared.redis_url);
        format!(
            "# shared state: {} (docs/operations.md, \"Several nodes\")\n{}",
            <&str>::from(self.shared_state()),
            toml::to_string_pretty(&shown).expect("configuration serializes to TOML")
        )
    }

    /// Where nonces and rate limits live: Redis when configured, else memory on SQLite (one
    /// node) and the database on PostgreSQL (several).
    pub fn shared_state(&self) -> swapd_api::limits::SharedState {
        use swapd_api::limits::SharedState;
        if !self.shared.redis_url.is_empty() {
            SharedState::Redis(())
        } else if matches!(Backend::from_url(&self.database_url), Ok(Backend::Postgres)) {
            SharedState::Database
        } else {
            SharedState::Local
        }
    }

    pub fn data_path(&self, name: &str) -> PathBuf {
        self.data_dir.join(name)
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }
}

/// The network a `[chains.<name>]` table names (its catalog code, any letter case): an EVM
/// network or Solana.
/// The error of setting `key`.
fn setting(key: &str, problem: impl Into<String>) -> ConfigError {
    ConfigError::Setting {
        key: key.to_owned(),
        problem: problem.into(),
    }
}

/// `Err` naming `key` unless `value` is in `range`.
fn within<T: PartialOrd>(
    key: &str,
    value: T,
    range: std::ops::RangeInclusive<T>,
    problem: &str,
) -> Result<(), ConfigError> {
    if range.contains(&value) {
        Ok(())
    } else {
        Err(setting(key, problem))
    }
}

impl ConsoleConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        if !self.password_hash.is_empty() {
            swapd_api::console::Console::check_hash(&self.password_hash)
                .map_err(|p| setting("console.password_hash", p))?;
        }
        Ok(())
    }
}

impl LogConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        if self.level.trim().is_empty() {
            return Err(setting("log.level", "must not be empty (e.g. `info`)"));
        }
        Ok(())
    }
}

impl DatabaseConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        within(
            "database.max_connections",
            self.max_connections,
            1..=1000,
            "must be 1 to 1000",
        )?;
        within(
            "database.acquire_timeout_ms",
            self.acquire_timeout_ms,
            100..=600_000,
            "must be 100 to 600000",
        )
    }
}

impl SharedConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        if !self.redis_url.is_empty()
            && !["redis://", "rediss://"]
                .iter()
                .any(|scheme| self.redis_url.starts_with(scheme))
        {
            return Err(setting(
                "shared.redis_url",
                "must start with redis:// or rediss://",
            ));
        }
        if self.redis_prefix.is_empty()
            || !self
                .redis_prefix
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            return Err(setting(
                "shared.redis_prefix",
                "must be 1 or more letters, digits, `-`, `_` or `.`",
            ));
        }
        Ok(())
    }
}

impl X402Config {
    fn validate(&self) -> Result<(), ConfigError> {
        if !matches!(self.facilitator.as_str(), "ledger" | "http") {
            return Err(setting("x402.facilitator", "must be `ledger` or `http`"));
        }
        if !self.facilitator_url.is_empty() {
            check_http_url(&self.facilitator_url)
                .map_err(|p| setting("x402.facilitator_url", p))?;
        }
        if !self.pay_to.is_empty() && !is_evm_address(&self.pay_to) {
            return Err(setting(
                "x402.pay_to",
                "must be an EVM address: 0x followed by 40 hex digits",
            ));
        }
        if !is_caip2(&self.network) {
            return Err(setting(
                "x402.network",
                "must be a CAIP-2 chain id such as `eip155:8453`",
            ));
        }
        if !is_positive_decimal(&self.price_usd) {
            return Err(setting(
                "x402.price_usd",
                "must be a positive decimal string such as `0.05`",
            ));
        }
        for (name, ms) in [
            ("x402.verify_timeout_ms", self.verify_timeout_ms),
            ("x402.settle_timeout_ms", self.settle_timeout_ms),
        ] {
            // Below the hold an attempt has on a purchase, so a slow settlement cannot outlive it.
            within(
                name,
                ms,
                100..=30_000,
                "must be from 100 to 30000 milliseconds",
            )?;
        }
        self.asset.validate()
    }
}

impl X402AssetConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        if self.address.is_empty() {
            if !self.name.is_empty() || !self.version.is_empty() {
                return Err(setting(
                    "x402.asset.address",
                    "set the token's address with its name and version (or none of them, for USDC)",
                ));
            }
        } else {
            if !is_evm_address(&self.address) {
                return Err(setting(
                    "x402.asset.address",
                    "must be a token contract address: 0x and 40 hex digits",
                ));
            }
            if self.name.is_empty() || self.version.is_empty() {
                return Err(setting(
                    "x402.asset.name",
                    "a custom token needs its EIP-712 domain `name` and `version` (x402.asset.name, x402.asset.version)",
                ));
            }
        }
        within(
            "x402.asset.decimals",
            self.decimals,
            0..=18,
            "must be from 0 to 18",
        )
    }
}

impl ProvidersConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        for (key, desk) in [
            ("providers.changenow", &self.changenow),
            ("providers.fixedfloat", &self.fixedfloat),
        ] {
            check_endpoint(key, &desk.base_url, desk.timeout_ms)?;
        }
        if !self.fixedfloat.private_api_key.is_empty() || self.fixedfloat.payload_reference {
            return Err(setting(
                "providers.fixedfloat",
                "private_api_key and payload_reference are ChangeNOW's: FixedFloat has no \
                 exchange lookup",
            ));
        }
        for (key, router) in [
            ("providers.lifi", &self.lifi),
            ("providers.zerox", &self.zerox),
            ("providers.relay", &self.relay),
            ("providers.jupiter", &self.jupiter),
        ] {
            check_endpoint(key, &router.base_url, router.timeout_ms)?;
        }
        if let Some(name) = self
            .live
            .iter()
            .find(|name| !LIVE_PROVIDER_ADAPTERS.contains(&name.as_str()))
        {
            return Err(setting(
                "providers.live",
                format!(
                    "unknown live provider adapter `{name}` (this build has: {})",
                    adapters_list()
                ),
            ));
        }
        within(
            "providers.sandbox_block_ms",
            self.sandbox_block_ms,
            1..=3_600_000,
            "must be from 1 to 3600000 milliseconds",
        )?;
        within(
            "providers.deadline_ms",
            self.deadline_ms,
            50..=30_000,
            "must be from 50 to 30000 milliseconds",
        )?;
        for (key, names) in [
            ("providers.sandbox_stalled", &self.sandbox_stalled),
            ("providers.sandbox_failing", &self.sandbox_failing),
        ] {
            if let Some(name) = names
                .iter()
                .find(|n| !swapd_sandbox::PROVIDER_IDS.contains(&n.as_str()))
            {
                return Err(setting(
                    key,
                    format!(
                        "unknown sandbox provider `{name}` (known: {})",
                        swapd_sandbox::PROVIDER_IDS.join(", ")
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// An upstream's base URL and call timeout, under `key`.
fn check_endpoint(key: &str, base_url: &str, timeout_ms: u64) -> Result<(), ConfigError> {
    check_http_url(base_url).map_err(|problem| setting(key, format!("base_url: {problem}")))?;
    if timeout_ms == 0 {
        return Err(setting(key, "timeout_ms must be at least 1"));
    }
    Ok(())
}

impl ChainConfig {
    fn validate(&self, name: &str) -> Result<(), ConfigError> {
        let key = format!("chains.{name}");
        chain_network(name).map_err(|problem| setting(&key, problem))?;
        check_http_url(&self.rpc_url)
            .map_err(|problem| setting(&key, format!("rpc_url: {problem}")))?;
        if self.timeout_ms == 0 {
            return Err(setting(&key, "timeout_ms must be at least 1"));
        }
        Ok(())
    }
}

impl MailConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        if self.from.parse::<lettre::message::Mailbox>().is_err() {
            return Err(setting(
                "mail.from",
                "must be an e-mail address, optionally with a name: `swapd <noreply@example.com>`",
            ));
        }
        if !self.smtp_url.is_empty()
            && !["smtp://", "smtps://"]
                .iter()
                .any(|s| self.smtp_url.starts_with(s))
        {
            return Err(setting(
                "mail.smtp_url",
                "must be an smtp:// or smtps:// URL",
            ));
        }
        Ok(())
    }
}

impl WebhooksConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        within(
            "webhooks.retention_days",
            self.retention_days,
            1..=3650,
            "must be from 1 to 3650 days",
        )?;
        within(
            "webhooks.replays_per_minute",
            self.replays_per_minute,
            1..=10_000,
            "must be from 1 to 10000",
        )?;
        within(
            "webhooks.poll_interval_ms",
            self.poll_interval_ms,
            10..=60_000,
            "must be from 10 to 60000 milliseconds",
        )?;
        within(
            "webhooks.timeout_ms",
            self.timeout_ms,
            100..=30_000,
            "must be from 100 to 30000 milliseconds",
        )?;
        within(
            "webhooks.batch",
            self.batch,
            1..=1_000,
            "must be from 1 to 1000",
        )?;
        within(
            "webhooks.concurrency",
            self.concurrency,
            1..=256,
            "must be from 1 to 256",
        )
    }
}

impl SecurityConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        within(
            "security.request_timeout_ms",
            self.request_timeout_ms,
            1_000..=600_000,
            "must be from 1000 to 600000 milliseconds",
        )
    }
}

impl OrdersConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        within(
            "orders.poll_interval_ms",
            self.poll_interval_ms,
            10..=600_000,
            "must be from 10 to 600000 milliseconds",
        )?;
        within(
            "orders.emergency_window_secs",
            self.emergency_window_secs,
            1..=30 * 24 * 3600,
            "must be from 1 second to 30 days",
        )?;
        for (name, secs) in [
            ("orders.fixed_lifetime_secs", self.fixed_lifetime_secs),
            ("orders.float_lifetime_secs", self.float_lifetime_secs),
        ] {
            within(
                name,
                secs,
                1..=7 * 24 * 3600,
                "must be from 1 second to 7 days",
            )?;
        }
        Ok(())
    }
}

pub fn chain_network(name: &str) -> Result<swapd_core::address::Network, String> {
    let network: swapd_core::address::Network = name.parse()?;
    if network.caip2().is_none() {
        return Err(format!(
            "swapd reads EVM chains and Solana only; `{name}` is neither (readable: {})",
            swapd_core::address::Network::ALL
                .iter()
                .filter(|n| n.caip2().is_some())
                .map(|n| n.code().to_ascii_lowercase())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(network)
}

/// A node URL as shown: providers put API keys in the path (`/v2/<key>`), so only the scheme,
/// host and port are kept.
fn redact_rpc_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(parsed) if parsed.path() != "/" || parsed.query().is_some() => {
            let mut origin = parsed.origin().ascii_serialization();
            origin.push_str("/<redacted>");
            origin
        }
        _ => redact_url(url),
    }
}

/// One line per problem, each naming the setting by its dotted path and where it came from.
fn describe_figment_error(error: figment::Error) -> ConfigError {
    let problems: Vec<String> = error
        .into_iter()
        .map(|e| {
            let source = e.metadata.as_ref().map(|m| match &m.source {
                Some(source) => format!(" (from {source})"),
                None => format!(" (from {})", m.name),
            });
            let kind = match &e.kind {
                figment::error::Kind::UnknownField(field, _) => {
                    format!("unknown setting `{field}`")
                }
                other => other.to_string(),
            };
            if e.path.is_empty() {
                format!("{kind}{}", source.unwrap_or_default())
            } else {
                format!(
                    "setting `{}`{}: {kind}",
                    e.path.join("."),
                    source.unwrap_or_default()
                )
            }
        })
        .collect();
    ConfigError::Invalid(problems.join("; "))
}

fn adapters_list() -> String {
    LIVE_PROVIDER_ADAPTERS.join(", ")
}

fn check_http_url(text: &str) -> Result<url::Url, String> {
    let url = url::Url::parse(text).map_err(|e| format!("`{text}` is not a URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(format!(
            "`{text}` must be an http:// or https:// URL with a host"
        ));
    }
    Ok(url)
}

fn check_origin(text: &str) -> Result<(), String> {
    let url = check_http_url(text)?;
    if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
        return Err(format!(
            "`{text}` must be an origin (scheme://host[:port]) without a path"
        ));
    }
    Ok(())
}

fn is_evm_address(text: &str) -> bool {
    text.strip_prefix("0x")
        .is_some_and(|hex| hex.len() == 40 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn is_caip2(text: &str) -> bool {
    text.split_once(':').is_some_and(|(namespace, reference)| {
        (3..=8).contains(&namespace.len())
            && namespace
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && (1..=32).contains(&reference.len())
            && reference
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    })
}

fn is_positive_decimal(text: &str) -> bool {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    !whole.is_empty()
        && digits(whole)
        && digits(fraction)
        && text.contains('.') != fraction.is_empty()
        && text.bytes().any(|b| (b'1'..=b'9').contains(&b))
}

#[cfg(test)]
// `Jail::expect_with` fixes the closure's error type to figment's (large) `Error`.
#[allow(clippy::result_large_err)]
mod tests {
    use super::*;
    use figment::Jail;

    /// (environment, swapd.toml text, the setting the error must name)
    type BadCase<'a> = (&'a [(&'a str, &'a str)], Option<&'a str>, &'a str);

    fn load(jail_env: &[(&str, &str)], toml: Option<&str>) -> Result<Config, ConfigError> {
        let mut result = None;
        Jail::expect_with(|jail| {
            for (k, v) in jail_env {
                jail.set_env(k, v);
            }
            if let Some(text) = toml {
                jail.create_file(DEFAULT_CONFIG_FILE, text)?;
            }
            result = Some(Config::load(&Overrides::default()));
            Ok(())
        });
        result.unwrap()
    }

    #[test]
    fn zero_configuration_is_a_sandbox_on_localhost_with_sqlite_in_data() {
        let config = load(&[], None).unwrap();
        assert_eq!(config.mode, Mode::Sandbox);
        assert_eq!(config.listen.to_string(), "127.0.0.1:8080");
        assert_eq!(config.database_url, "sqlite://./data/swapd.db");
        assert_eq!(config.public_url, "http://127.0.0.1:8080");
    }

    #[test]
    fn layers_apply_in_order_file_then_env_then_flags() {
        let toml =
            "listen = \"127.0.0.1:9000\"\ndata_dir = \"from-file\"\n[log]\nformat = \"json\"\n";
        let config = load(
            &[
                ("SWAPD_DATA_DIR", "from-env"),
                ("SWAPD_DATABASE__MAX_CONNECTIONS", "3"),
            ],
            Some(toml),
        )
        .unwrap();
        assert_eq!(config.listen.port(), 9000);
        assert_eq!(config.data_dir, PathBuf::from("from-env"));
        assert_eq!(config.database.max_connections, 3);
        assert_eq!(config.log.format, LogFormat::Json);

        Jail::expect_with(|jail| {
            jail.create_file(DEFAULT_CONFIG_FILE, toml)?;
            jail.set_env("SWAPD_DATA_DIR", "from-env");
            let overrides = Overrides {
                data_dir: Some("from-flag".into()),
                listen: Some("127.0.0.1:7000".parse().unwrap()),
                ..Overrides::default()
            };
            let config = Config::load(&overrides).unwrap();
            assert_eq!(config.data_dir, PathBuf::from("from-flag"));
            assert_eq!(config.listen.port(), 7000);
            assert_eq!(config.database_url, "sqlite://from-flag/swapd.db");
            Ok(())
        });
    }

    #[test]
    fn every_section_is_set_from_the_environment() {
        let config = load(
            &[
                ("SWAPD_SHUTDOWN__DRAIN_SECS", "9"),
                ("SWAPD_TELEMETRY__OTLP_ENDPOINT", "http://127.0.0.1:4318"),
                ("SWAPD_FEES__RECONCILE_TOLERANCE_BPS", "7"),
                ("SWAPD_URL", "http://not-a-setting"),
            ],
            None,
        )
        .unwrap();
        assert_eq!(config.shutdown.drain_secs, 9);
        assert_eq!(config.telemetry.otlp_endpoint, "http://127.0.0.1:4318");
        assert_eq!(config.fees.reconcile_tolerance_bps, 7);
        let https = load(
            &[("SWAPD_TELEMETRY__OTLP_ENDPOINT", "https://collector")],
            None,
        );
        assert!(
            https
                .unwrap_err()
                .to_string()
                .contains("telemetry.otlp_endpoint")
        );
    }

    #[test]
    fn the_shipped_example_file_is_valid() {
        let example = include_str!("../../../swapd.example.toml");
        let config = load(&[], Some(example)).unwrap();
        assert_eq!(config.mode, Mode::Sandbox);
    }

    #[test]
    fn unrelated_swapd_variables_are_not_configuration() {
        let config = load(
            &[
                ("SWAPD_URL", "http://x"),
                ("SWAPD_TEST_POSTGRES_URL", "postgres://x"),
            ],
            None,
        );
        assert!(config.is_ok(), "{config:?}");
    }

    #[test]
    fn bad_values_name_the_setting() {
        let cases: [BadCase; 10] = [
            (&[("SWAPD_LISTEN", "not-an-address")], None, "listen"),
            (&[], Some("listne = \"x\""), "listne"),
            (&[("SWAPD_DATABASE_URL", "mysql://x")], None, "database_url"),
            (&[("SWAPD_MASTER_KEY", "short")], None, "master_key"),
            (&[("SWAPD_X402__PAY_TO", "0x123")], None, "x402.pay_to"),
            (
                &[("SWAPD_PUBLIC_URL", "https://a.example/path")],
                None,
                "public_url",
            ),
            (
                &[("SWAPD_DATABASE__MAX_CONNECTIONS", "0")],
                None,
                "database.max_connections",
            ),
            (
                &[("SWAPD_PROVIDERS__DEADLINE_MS", "10")],
                None,
                "providers.deadline_ms",
            ),
            (
                &[],
                Some("[providers]\nsandbox_stalled = [\"nobody\"]"),
                "providers.sandbox_stalled",
            ),
            (
                &[("SWAPD_MODE", "live")],
                Some("[providers]\nsandbox_failing = [\"atlas\"]"),
                "providers.sandbox_failing",
            ),
        ];
        for (env, toml, key) in cases {
            let err = load(env, toml).unwrap_err().to_string();
            assert!(err.contains(key), "`{err}` should name `{key}`");
        }
    }

    #[test]
    fn live_mode_lists_every_missing_requirement() {
        let err = load(&[("SWAPD_MODE", "live")], None)
            .unwrap_err()
            .to_string();
        for key in [
            "master_key",
            "database_url",
            "x402.facilitator_url",
            "x402.pay_to",
            "providers.live",
        ] {
            assert!(err.contains(key), "`{err}` should name `{key}`");
        }
        let err = load(
            &[
                ("SWAPD_MODE", "live"),
                ("SWAPD_MASTER_KEY", &"ab".repeat(32)),
                ("SWAPD_DATABASE_URL", "postgres://u@h/db"),
                ("SWAPD_X402__FACILITATOR", "http"),
                ("SWAPD_X402__FACILITATOR_URL", "https://facilitator.example"),
                (
                    "SWAPD_X402__PAY_TO",
                    "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
                ),
            ],
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("providers.live") && !err.contains("master_key"),
            "{err}"
        );
    }

    /// The other live requirements, met.
    const LIVE: [(&str, &str); 7] = [
        ("SWAPD_MODE", "live"),
        (
            "SWAPD_MASTER_KEY",
            "abababababababababababababababababababababababababababababababab",
        ),
        ("SWAPD_DATABASE_URL", "postgres://u@h/db"),
        ("SWAPD_X402__FACILITATOR", "http"),
        ("SWAPD_X402__FACILITATOR_URL", "https://facilitator.example"),
        (
            "SWAPD_X402__PAY_TO",
            "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
        ),
        ("SWAPD_MAIL__SMTP_URL", "smtp://mail.example"),
    ];

    #[test]
    fn each_live_desk_needs_its_credentials_and_takes_them_from_the_environment() {
        let with = |extra: &[(&'static str, &'static str)]| {
            let mut env: Vec<(&str, &str)> = LIVE.to_vec();
            env.extend_from_slice(extra);
            load(&env, None)
        };
        let err = with(&[("SWAPD_PROVIDERS__LIVE", "[changenow, fixedfloat]")])
            .unwrap_err()
            .to_string();
        for key in [
            "SWAPD_PROVIDERS__CHANGENOW__API_KEY",
            "SWAPD_PROVIDERS__FIXEDFLOAT__API_KEY",
            "SWAPD_PROVIDERS__FIXEDFLOAT__API_SECRET",
        ] {
            assert!(err.contains(key), "`{err}` should name `{key}`");
        }
        let config = with(&[
            ("SWAPD_PROVIDERS__LIVE", "[changenow]"),
            ("SWAPD_PROVIDERS__CHANGENOW__API_KEY", "cn-key"),
            (
                "SWAPD_PROVIDERS__CHANGENOW__BASE_URL",
                "http://127.0.0.1:9/v2/",
            ),
            ("SWAPD_PROVIDERS__CHANGENOW__TIMEOUT_MS", "2500"),
        ])
        .unwrap();
        assert_eq!(config.providers.live, ["changenow"]);
        assert_eq!(config.providers.changenow.api_key, "cn-key");
        assert_eq!(
            config.providers.changenow.base_url,
            "http://127.0.0.1:9/v2/"
        );
        assert_eq!(config.providers.changenow.timeout_ms, 2_500);
        assert_eq!(
            config.providers.fixedfloat.base_url,
            swapd_desks::fixedfloat::BASE_URL
        );
        let err = with(&[("SWAPD_PROVIDERS__LIVE", "[bitstamp]")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("changenow, fixedfloat"), "{err}");
        let err = with(&[("SWAPD_PROVIDERS__FIXEDFLOAT__BASE_URL", "ftp://x")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("providers.fixedfloat"), "{err}");
    }

    #[test]
    fn lifi_and_the_chains_it_follows_are_configured_by_file_or_environment() {
        let config = load(
            &[
                ("SWAPD_PROVIDERS__LIFI__API_KEY", "lifi-key"),
                (
                    "SWAPD_CHAINS__BASE__RPC_URL",
                    "https://base-mainnet.example/v2/node-key",
                ),
            ],
            Some(
                "[chains.eth]\nrpc_url = \"http://127.0.0.1:8545\"\nconfirmations = 20\n\n\
                 [providers.lifi]\nintegrator = \"acme\"\n",
            ),
        )
        .unwrap();
        assert_eq!(config.providers.lifi.api_key, "lifi-key");
        assert_eq!(config.providers.lifi.integrator, "acme");
        assert_eq!(
            config.providers.lifi.base_url,
            swapd_onchain::lifi::BASE_URL
        );
        let base = &config.chains["base"];
        assert_eq!(base.rpc_url, "https://base-mainnet.example/v2/node-key");
        assert_eq!(base.confirmations, None);
        assert_eq!(base.timeout_ms, 5_000);
        assert_eq!(config.chains["eth"].confirmations, Some(20));
        assert_eq!(
            ChainConfig::default_confirmations(chain_network("ETH").unwrap()),
            12
        );
        // Solana takes `confirmations` like every chain, as its commitment (fewer than 31:
        // confirmed; unset or more: finalized).
        for (section, confirmations) in [
            (
                "[chains.sol]\nrpc_url = \"http://127.0.0.1:8899\"\nconfirmations = 1\n",
                Some(1),
            ),
            ("[chains.sol]\nrpc_url = \"http://127.0.0.1:8899\"\n", None),
        ] {
            let config = load(&[], Some(section)).unwrap();
            assert_eq!(config.chains["sol"].confirmations, confirmations);
        }

        // Keys in a node's path and LI.FI's key are not shown.
        let shown = config.redacted_toml();
        assert!(
            !shown.contains("node-key") && !shown.contains("lifi-key"),
            "{shown}"
        );
        assert!(
            shown.contains("https://base-mainnet.example/<redacted>"),
            "{shown}"
        );
        assert!(shown.contains("http://127.0.0.1:8545"), "{shown}");

        for (toml, problem) in [
            (
                "[chains.mars]\nrpc_url = \"http://x\"\n",
                "unknown network `mars`",
            ),
            (
                "[chains.xrp]\nrpc_url = \"http://x\"\n",
                "EVM chains and Solana only",
            ),
            ("[chains.base]\nrpc_url = \"ftp://x\"\n", "chains.base"),
            (
                "[chains.base]\nrpc_url = \"http://x\"\nblocks = 3\n",
                "blocks",
            ),
        ] {
            let err = load(&[], Some(toml)).unwrap_err().to_string();
            assert!(err.contains(problem), "`{err}` should say `{problem}`");
        }
        let err = load(&[("SWAPD_PROVIDERS__LIVE", "[lifi, bitstamp]")], None)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("changenow, fixedfloat, jupiter, lifi, relay, zerox"),
            "{err}"
        );
        let err = load(
            &[("SWAPD_MODE", "live"), ("SWAPD_PROVIDERS__LIVE", "[zerox]")],
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("SWAPD_PROVIDERS__ZEROX__API_KEY"), "{err}");
    }

    #[test]
    fn show_redacts_secrets_and_passwords() {
        let config = load(
            &[
                ("SWAPD_MASTER_KEY", &"cd".repeat(32)),
                ("SWAPD_DATABASE_URL", "postgres://app:hunter2@db/swapd"),
                ("SWAPD_X402__ACCESS_TOKEN_SECRET", "tok-secret"),
                ("SWAPD_PROVIDERS__CHANGENOW__API_KEY", "cn-key-secret"),
                ("SWAPD_PROVIDERS__FIXEDFLOAT__API_KEY", "ff-key-secret"),
                ("SWAPD_PROVIDERS__FIXEDFLOAT__API_SECRET", "ff-hmac-secret"),
            ],
            None,
        )
        .unwrap();
        let shown = config.redacted_toml();
        for secret in ["cn-key-secret", "ff-key-secret", "ff-hmac-secret"] {
            assert!(!shown.contains(secret), "{secret} shown");
        }
        assert!(!shown.contains(&"cd".repeat(32)));
        assert!(!shown.contains("hunter2"));
        assert!(!shown.contains("tok-secret"));
        assert!(shown.contains("postgres://app:***@db/swapd"));
        assert!(shown.contains("master_key = \"<redacted>\""));
    }

    #[test]
    fn decimal_and_caip2_checks() {
        assert!(is_positive_decimal("0.05") && is_positive_decimal("1"));
        assert!(
            !is_positive_decimal("0")
                && !is_positive_decimal(".5")
                && !is_positive_decimal("1.")
                && !is_positive_decimal("1e3")
        );
        assert!(is_caip2("eip155:8453") && is_caip2("solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"));
        assert!(!is_caip2("8453") && !is_caip2("EIP155:1"));
    }
}
