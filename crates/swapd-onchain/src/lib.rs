//! swapd's live onchain route providers and the chain readers that follow their executions.
//! Each provider's module holds its wire format (`wire`) and the pure functions that map it
//! onto `swapd_core::provider`; its client sends them over the shared HTTP transport
//! (`swapd-http`). Chain readers implement `swapd_core::chain` over a node's JSON-RPC.

pub mod evm_rpc;
pub mod jupiter;
pub mod lifi;
pub mod relay;
#[cfg(test)]
mod scripted;
pub mod solana_rpc;
mod tracking;
pub mod zerox;

use std::sync::Arc;

use alloy_primitives::{Address, U256};
use alloy_sol_types::{SolCall, sol};
use serde::de::DeserializeOwned;
use swapd_core::address::Network;
use swapd_core::amount::{Amount, Rounding};
use swapd_core::chain::{EvmChain, SolanaChain};
use swapd_core::market::currencies::CurrencyDef;
use swapd_core::provider::ProviderError;
use swapd_http::reqwest::header::{HeaderMap, HeaderValue};

/// The chains swapd reads, by network (`[chains.<network>]`).
#[derive(Clone, Default)]
pub struct Chains {
    evm: Vec<Arc<dyn EvmChain>>,
    solana: Option<Arc<dyn SolanaChain>>,
}

impl Chains {
    pub fn new(evm: Vec<Arc<dyn EvmChain>>) -> Self {
        Self { evm, solana: None }
    }

    pub fn with_solana(mut self, solana: Arc<dyn SolanaChain>) -> Self {
        self.solana = Some(solana);
        self
    }

    /// The reader of `network`, when one is configured.
    pub fn evm(&self, network: Network) -> Option<&Arc<dyn EvmChain>> {
        self.evm.iter().find(|chain| chain.network() == network)
    }

    pub fn solana(&self) -> Option<&Arc<dyn SolanaChain>> {
        self.solana.as_ref()
    }
}

sol! {
    /// ERC-20.
    function approve(address spender, uint256 amount) external returns (bool);
}

/// The calldata of an ERC-20 `approve(spender, amount)`, `0x`-prefixed hex.
fn approve_calldata(spender: Address, amount: U256) -> String {
    hex(&approveCall { spender, amount }.abi_encode())
}

/// `0x`-prefixed lowercase hex.
fn hex(bytes: &[u8]) -> String {
    let digits: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("0x{digits}")
}

/// `units` base units of `currency` in its display precision, rounded as `rounding` says.
fn display(units: U256, currency: &CurrencyDef, rounding: Rounding) -> Amount {
    Amount::from_units(units, currency.decimals).rescale(currency.precision, rounding)
}

/// The headers that carry an API key (when one is set), marked sensitive so they are never
/// logged.
fn key_headers(name: &'static str, api_key: &str) -> Result<HeaderMap, String> {
    let mut headers = HeaderMap::new();
    if !api_key.is_empty() {
        let mut key = HeaderValue::from_str(api_key)
            .map_err(|_| "the API key holds characters a header cannot carry".to_owned())?;
        key.set_sensitive(true);
        headers.insert(name, key);
    }
    Ok(headers)
}

/// The provider's state kept with `plan` (`swapd_core::provider::BuiltPlan`), as `T`.
fn provider_state<T: DeserializeOwned>(
    plan: &swapd_core::onchain::ExecutionPlan,
    provider: &str,
) -> Result<T, ProviderError> {
    plan.provider_state
        .clone()
        .and_then(|state| serde_json::from_value(state).ok())
        .ok_or_else(|| ProviderError::Unavailable(format!("the plan lacks {provider}'s state")))
}

/// `amount` of `currency` in its base units (an amount never holds more digits than these).
fn units(amount: Amount, currency: &CurrencyDef) -> U256 {
    amount.rescale(currency.decimals, Rounding::Down).units()
}

/// A provider's JSON answer, or `Unavailable` when it is not the shape documented.
fn parse_json<T: DeserializeOwned>(body: &[u8]) -> Result<T, ProviderError> {
    serde_json::from_slice(body).map_err(|error| {
        use serde_json::error::Category;
        let what = match error.classify() {
            Category::Syntax | Category::Io => "not JSON",
            Category::Eof => "cut short",
            Category::Data => "unexpected fields or types",
        };
        ProviderError::Unavailable(format!("the provider answered malformed JSON ({what})"))
    })
}
