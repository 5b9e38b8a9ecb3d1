//! `[chains.<network>]`: the chain nodes swapd reads to follow onchain executions
//! (docs/configuration.md, "Chains").

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use swapd_core::address::Network;

use super::value::{HttpUrl, through_text};
use super::{ConfigError, setting};

/// A chain's node.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChainConfig {
    /// The node's JSON-RPC URL (an API key in its path is redacted when shown).
    pub rpc_url: RpcUrl,
    /// Blocks on top of a transaction's own before it counts as final; the network's default
    /// (docs/configuration.md) when unset. On Solana, the commitment: fewer than 31 is
    /// `confirmed`, unset or more `finalized`.
    #[serde(default)]
    pub confirmations: Option<u64>,
    /// How long one call may take, in milliseconds.
    #[serde(default = "ChainConfig::default_timeout_ms")]
    pub timeout_ms: u64,
}

/// A node's JSON-RPC URL: providers put API keys in the path (`/v2/<key>`), so it shows only
/// the scheme, host and port.
#[derive(Debug, Clone)]
pub struct RpcUrl(HttpUrl);

impl RpcUrl {
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

impl FromStr for RpcUrl {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        text.parse()
            .map(Self)
            .map_err(|problem| format!("rpc_url: {problem}"))
    }
}

impl fmt::Display for RpcUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let url = self.0.url();
        if url.path() != "/" || url.query().is_some() {
            write!(f, "{}/<redacted>", url.origin().ascii_serialization())
        } else {
            f.write_str(&swapd_store::redact_url(self.as_str()))
        }
    }
}

through_text!(RpcUrl);

impl ChainConfig {
    fn default_timeout_ms() -> u64 {
        5_000
    }

    /// The confirmations `network` needs when the operator sets none.
    pub fn default_confirmations(network: Network) -> u64 {
        match network {
            Network::Ethereum => 12,
            Network::BnbChain => 15,
            Network::Polygon => 32,
            _ => 3,
        }
    }

    /// The confirmations this chain's node counts as final.
    pub fn confirmations(&self, network: Network) -> u64 {
        self.confirmations
            .unwrap_or_else(|| Self::default_confirmations(network))
    }

    pub(super) fn validate(&self, name: &str) -> Result<(), ConfigError> {
        let key = format!("chains.{name}");
        chain_network(name).map_err(|problem| setting(&key, problem))?;
        if self.timeout_ms == 0 {
            return Err(setting(&key, "timeout_ms must be at least 1"));
        }
        Ok(())
    }
}

/// The network a `[chains.<name>]` table names (its catalog code, any letter case): an EVM
/// network or Solana.
pub fn chain_network(name: &str) -> Result<Network, String> {
    let network: Network = name.parse()?;
    if network.caip2().is_none() {
        return Err(format!(
            "swapd reads EVM chains and Solana only; `{name}` is neither (readable: {})",
            Network::ALL
                .iter()
                .filter(|n| n.caip2().is_some())
                .map(|n| n.code().to_ascii_lowercase())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(network)
}
