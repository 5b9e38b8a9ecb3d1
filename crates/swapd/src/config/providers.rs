//! `[providers]`: the sandbox's providers and faults, and the live desks and routers with
//! their endpoints and credentials (docs/providers.md).

use serde::{Deserialize, Serialize};

use super::value::{self, HttpUrl, Secret};
use super::{ConfigError, setting, within};

/// Live provider adapters compiled into this build.
pub const LIVE_PROVIDER_ADAPTERS: &[&str] = &[
    swapd_desks::changenow::ID,
    swapd_desks::fixedfloat::ID,
    swapd_onchain::jupiter::ID,
    swapd_onchain::lifi::ID,
    swapd_onchain::relay::ID,
    swapd_onchain::zerox::ID,
];

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
    pub base_url: HttpUrl,
    /// LI.FI, Relay: optional (raises their rate limits); 0x: required; Jupiter: required by
    /// its keyed host.
    #[serde(default, with = "value::optional")]
    pub api_key: Option<Secret>,
    /// How swapd names itself to the router (LI.FI's `integrator`, Relay's `referrer`); unused
    /// by 0x and Jupiter.
    pub integrator: String,
    /// How long one call may take, in milliseconds.
    pub timeout_ms: u64,
}

impl RouterConfig {
    fn with_base_url(base_url: &str) -> Self {
        Self {
            base_url: base_url.parse().expect("a shipped base URL"),
            api_key: None,
            integrator: "swapd".into(),
            timeout_ms: 10_000,
        }
    }

    pub fn api_key(&self) -> Option<&str> {
        self.api_key.as_ref().map(Secret::expose)
    }
}

/// Where a live desk's API is and how swapd signs in to it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeskConfig {
    /// The API's base URL: the desk's public API by default; a proxy, or a recorded-response
    /// server in tests.
    pub base_url: HttpUrl,
    /// The partner API key. Required when the desk is in `providers.live`.
    #[serde(default, with = "value::optional")]
    pub api_key: Option<Secret>,
    /// The key's secret (FixedFloat signs every request with it; ChangeNOW has none).
    #[serde(default, with = "value::optional")]
    pub api_secret: Option<Secret>,
    /// ChangeNOW only: the partner's private API key, which lists the account's exchanges
    /// (`GET /v2/exchanges`), so a create whose answer was lost is found and adopted.
    #[serde(default, with = "value::optional")]
    pub private_api_key: Option<Secret>,
    /// ChangeNOW only: the account has the `payload` partner field enabled, so creates carry
    /// swapd's order reference and a lost create is matched by it.
    pub payload_reference: bool,
    /// FixedFloat only: the operator's referral code, under which FixedFloat takes the service
    /// fee out of the output (`refcode` and `afftax`, docs/fees.md). Unset: FixedFloat carries
    /// no fee.
    #[serde(default, with = "value::optional")]
    pub refcode: Option<String>,
    /// How long one call may take, in milliseconds.
    pub timeout_ms: u64,
}

impl DeskConfig {
    fn with_base_url(base_url: &str) -> Self {
        Self {
            base_url: base_url.parse().expect("a shipped base URL"),
            api_key: None,
            api_secret: None,
            private_api_key: None,
            payload_reference: false,
            refcode: None,
            timeout_ms: 10_000,
        }
    }
}

impl Default for ProvidersConfig {
    fn default() -> Self {
        Self {
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
        }
    }
}

impl ProvidersConfig {
    pub fn enabled(&self, id: &str) -> bool {
        self.live.iter().any(|name| name == id)
    }

    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        for (key, timeout_ms) in [
            ("providers.changenow", self.changenow.timeout_ms),
            ("providers.fixedfloat", self.fixedfloat.timeout_ms),
            ("providers.lifi", self.lifi.timeout_ms),
            ("providers.zerox", self.zerox.timeout_ms),
            ("providers.relay", self.relay.timeout_ms),
            ("providers.jupiter", self.jupiter.timeout_ms),
        ] {
            if timeout_ms == 0 {
                return Err(setting(key, "timeout_ms must be at least 1"));
            }
        }
        if self.fixedfloat.private_api_key.is_some() || self.fixedfloat.payload_reference {
            return Err(setting(
                "providers.fixedfloat",
                "private_api_key and payload_reference are ChangeNOW's: FixedFloat has no \
                 exchange lookup",
            ));
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
                    LIVE_PROVIDER_ADAPTERS.join(", ")
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

    /// The live requirements of the enabled adapters: `(setting, environment variable)`.
    pub(super) fn missing_credentials(&self) -> Vec<(&'static str, &'static str)> {
        let mut missing = Vec::new();
        if self.enabled(swapd_desks::changenow::ID) && self.changenow.api_key.is_none() {
            missing.push((
                "providers.changenow.api_key",
                "SWAPD_PROVIDERS__CHANGENOW__API_KEY",
            ));
        }
        if self.enabled(swapd_desks::fixedfloat::ID) {
            if self.fixedfloat.api_key.is_none() {
                missing.push((
                    "providers.fixedfloat.api_key",
                    "SWAPD_PROVIDERS__FIXEDFLOAT__API_KEY",
                ));
            }
            if self.fixedfloat.api_secret.is_none() {
                missing.push((
                    "providers.fixedfloat.api_secret",
                    "SWAPD_PROVIDERS__FIXEDFLOAT__API_SECRET",
                ));
            }
        }
        if self.enabled(swapd_onchain::zerox::ID) && self.zerox.api_key.is_none() {
            missing.push(("providers.zerox.api_key", "SWAPD_PROVIDERS__ZEROX__API_KEY"));
        }
        missing
    }
}
