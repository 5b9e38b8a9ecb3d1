//! Layered configuration: built-in defaults → `swapd.toml` (or `--config FILE`) → `SWAPD_*`
//! environment → command-line flags. Parsed once at start into typed settings (`value`): what
//! the wiring reads is already a URL, an address, a secret; every error names the setting.
//! One file per section.

mod chains;
mod console;
mod database;
mod fees;
mod log;
mod mail;
mod market;
mod mcp;
mod orders;
mod providers;
mod sandbox;
mod security;
mod shared;
mod shutdown;
mod telemetry;
pub mod value;
mod webhooks;
mod x402;

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use serde::{Deserialize, Serialize};
use swapd_core::Mode;
use swapd_core::secrets::MasterKey;
use swapd_store::Backend;

pub use chains::{ChainConfig, RpcUrl, chain_network};
pub use console::{ConsoleConfig, PasswordHash};
pub use database::{DatabaseConfig, DatabaseUrl};
pub use fees::{FeeRecipientsConfig, FeesConfig};
pub use log::{LogConfig, LogFormat};
pub use mail::{MailConfig, Sender, SmtpUrl};
pub use market::MarketConfig;
pub use mcp::McpConfig;
pub use orders::OrdersConfig;
pub use providers::{DeskConfig, LIVE_PROVIDER_ADAPTERS, ProvidersConfig, RouterConfig};
pub use sandbox::{SandboxConfig, SandboxProfile};
pub use security::SecurityConfig;
pub use shared::{RedisUrl, SharedConfig};
pub use shutdown::ShutdownConfig;
pub use telemetry::TelemetryConfig;
pub use webhooks::WebhooksConfig;
pub use x402::{FacilitatorKind, X402Accept, X402AssetConfig, X402Config};

use value::{Origin, REDACTED, through_text};

pub const DEFAULT_CONFIG_FILE: &str = "swapd.toml";
pub const ENV_PREFIX: &str = "SWAPD_";

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// `sandbox` (simulated outside world, the default) or `live`.
    pub mode: Mode,
    /// Address the HTTP server binds.
    pub listen: SocketAddr,
    /// Where the embedded database, the sandbox master key and sandbox e-mails live.
    pub data_dir: PathBuf,
    /// `sqlite://PATH` or `postgres://...`; unset: `sqlite://<data_dir>/swapd.db`
    /// ([`Config::database`]).
    #[serde(default, with = "value::optional")]
    pub database_url: Option<DatabaseUrl>,
    /// The origin clients use to reach this server (used in x402 resources and SIWX domains);
    /// unset: `http://<listen>` ([`Config::origin`]).
    #[serde(default, with = "value::optional")]
    pub public_url: Option<Origin>,
    /// 64 hex digits sealing every stored secret. Sandbox: generated into the data dir when
    /// unset. Live: required.
    #[serde(default, with = "value::optional")]
    pub master_key: Option<MasterKeySetting>,
    /// Names this node on the idempotency claims it takes, so that after a crash it releases
    /// its own at start. Unset: generated once into `<data_dir>/node.id`. Nodes sharing a
    /// database need distinct ids (distinct data dirs, or set this).
    #[serde(default, with = "value::optional")]
    pub node_id: Option<NodeId>,
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
    pub market: MarketConfig,
    pub sandbox: SandboxConfig,
    pub telemetry: TelemetryConfig,
}

/// The master key, as set: parsed from its 64 hex digits, never shown.
#[derive(Clone)]
pub struct MasterKeySetting(pub MasterKey);

impl FromStr for MasterKeySetting {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        MasterKey::from_hex(text)
            .map(Self)
            .map_err(|e| e.to_string())
    }
}

impl fmt::Debug for MasterKeySetting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl fmt::Display for MasterKeySetting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

/// A node's name on its claims: at most 64 of `A-Z a-z 0-9 - _ .`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeId(String);

impl NodeId {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for NodeId {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let valid = text.len() <= 64
            && text
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
        if valid {
            Ok(Self(text.to_owned()))
        } else {
            Err("at most 64 characters of A-Z, a-z, 0-9, `-`, `_` and `.`".into())
        }
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

through_text!(Origin, MasterKeySetting, NodeId);

impl Default for Config {
    fn default() -> Self {
        Self {
            mode: Mode::Sandbox,
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            data_dir: PathBuf::from("./data"),
            database_url: None,
            public_url: None,
            master_key: None,
            node_id: None,
            sandbox_fault_header: false,
            log: LogConfig::default(),
            database: DatabaseConfig::default(),
            security: SecurityConfig::default(),
            x402: X402Config::default(),
            providers: ProvidersConfig::default(),
            chains: BTreeMap::new(),
            orders: OrdersConfig::default(),
            mail: MailConfig::default(),
            webhooks: WebhooksConfig::default(),
            shared: SharedConfig::default(),
            console: ConsoleConfig::default(),
            mcp: McpConfig::default(),
            fees: FeesConfig::default(),
            shutdown: ShutdownConfig::default(),
            market: MarketConfig::default(),
            sandbox: SandboxConfig::default(),
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
    /// Loads and checks the configuration from every layer.
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
        let config: Config = figment.extract().map_err(describe_figment_error)?;
        config.validate()?;
        Ok(config)
    }

    /// The database: as set, or the embedded one in the data dir.
    pub fn database(&self) -> DatabaseUrl {
        self.database_url
            .clone()
            .unwrap_or_else(|| DatabaseUrl::embedded(&self.data_dir))
    }

    /// The origin clients reach this node at: as set, or `http://<listen>`.
    pub fn origin(&self) -> String {
        match &self.public_url {
            Some(origin) => origin.as_str().to_owned(),
            None => format!("http://{}", self.listen),
        }
    }

    /// Each section checks what its types do not; what spans sections (the mode's faults, the
    /// live requirements) is checked here.
    fn validate(&self) -> Result<(), ConfigError> {
        self.mcp.validate()?;
        self.fees.validate()?;
        self.telemetry.validate()?;
        self.log.validate()?;
        self.database.validate()?;
        self.shared.validate()?;
        self.x402.validate(self.mode)?;
        self.providers.validate()?;
        for (name, chain) in &self.chains {
            chain.validate(name)?;
        }
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
        self.orders.validate()?;
        self.market.validate()?;
        self.sandbox.validate()?;
        if self.mode == Mode::Live {
            self.check_live_requirements()?;
        }
        Ok(())
    }

    fn check_live_requirements(&self) -> Result<(), ConfigError> {
        let mut missing = Vec::new();
        if self.master_key.is_none() {
            missing.push(("master_key", "SWAPD_MASTER_KEY"));
        }
        if self.database().backend() != Backend::Postgres {
            missing.push(("database_url (a postgres:// URL)", "SWAPD_DATABASE_URL"));
        }
        missing.extend(self.x402.live_requirements());
        if self.mail.smtp_url.is_none() {
            missing.push(("mail.smtp_url", "SWAPD_MAIL__SMTP_URL"));
        }
        if self.providers.live.is_empty() {
            missing.push((
                "providers.live (at least one live provider adapter)",
                "SWAPD_PROVIDERS__LIVE",
            ));
        }
        missing.extend(self.providers.missing_credentials());
        if missing.is_empty() {
            Ok(())
        } else {
            Err(ConfigError::LiveRequirements(missing))
        }
    }

    /// The effective configuration as TOML: every secret shows as `<redacted>` and every
    /// password in a URL as `***`, by its type.
    pub fn redacted_toml(&self) -> String {
        let mut shown = self.clone();
        shown.x402 = self
            .x402
            .shown(self.mode)
            .expect("a loaded configuration's ways to pay are valid");
        shown.database_url = Some(self.database());
        shown.public_url = Some(self.origin().parse().expect("a derived origin"));
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
        if self.shared.redis_url.is_some() {
            SharedState::Redis(())
        } else if self.database().backend() == Backend::Postgres {
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

#[cfg(test)]
mod tests;
