//! swapd's live onchain route providers and the chain readers that follow their executions.
//! Each provider's module holds its wire format (`wire`) and the pure functions that map it
//! onto `swapd_core::market::provider`; its client sends them over the shared HTTP transport
//! (`swapd-http`). Chain readers implement `swapd_core::onchain::chain` over a node's JSON-RPC.

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
use swapd_core::fees::{FeeSchedule, OnchainFee, Payee};
use swapd_core::market::currencies::CurrencyDef;
use swapd_core::market::provider::{ProviderError, QuoteRequest};
use swapd_core::onchain::chain::{EvmChain, SolanaChain};

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

    /// The EVM networks swapd reads.
    pub fn evm_networks(&self) -> Vec<Network> {
        self.evm.iter().map(|chain| chain.network()).collect()
    }

    pub fn solana(&self) -> Option<&Arc<dyn SolanaChain>> {
        self.solana.as_ref()
    }
}

/// The fees a router collects for `request`, and to whom (docs/fees.md): the operator's
/// service fee (the affiliate's share inside it) to `operator` (empty for a router that pays
/// an account it knows; `None`: none set), and, where the router pays several recipients, the
/// partner's markup to the address its key names; each at most `max_bps`. A party without a
/// recipient, or past the bound, is left out of the router's quotes. With the schedule the
/// fees add up to; `None` when there is nothing to collect.
fn onchain_fees(
    request: &QuoteRequest,
    provider: &str,
    (operator, pays_partner): (Option<String>, bool),
    max_bps: u32,
) -> Option<(Vec<OnchainFee>, FeeSchedule)> {
    let asked = request.fees.schedule_for(provider);
    let within = |bps: u32| bps > 0 && bps <= max_bps;
    let mut fees = Vec::new();
    let mut carried = FeeSchedule::NONE;
    if let Some(recipient) = operator.filter(|_| within(asked.service_bps)) {
        carried.service_bps = asked.service_bps;
        carried.affiliate_share_bps = asked.affiliate_share_bps;
        fees.push(OnchainFee {
            payee: Payee::Operator,
            bps: asked.service_bps,
            recipient,
        });
    }
    let partner = request.fees.recipients.partner_evm;
    if let Some(recipient) = partner.filter(|_| pays_partner && within(asked.partner_bps)) {
        carried.partner_bps = asked.partner_bps;
        fees.push(OnchainFee {
            payee: Payee::Partner,
            bps: asked.partner_bps,
            recipient: recipient.to_checksum(None),
        });
    }
    (!fees.is_empty()).then_some((fees, carried))
}

/// The operator's EVM fee recipient, as the routers write it.
fn evm_recipient(request: &QuoteRequest) -> Option<String> {
    request
        .fees
        .recipients
        .evm
        .map(|address| address.to_checksum(None))
}

sol! {
    /// ERC-20.
    function approve(address spender, uint256 amount) external returns (bool);
}

/// The calldata of an ERC-20 `approve(spender, amount)`, `0x`-prefixed hex.
fn approve_calldata(spender: Address, amount: U256) -> String {
    alloy_primitives::hex::encode_prefixed(approveCall { spender, amount }.abi_encode())
}

/// A transaction's calldata as a plan shows it (`0x` and lowercase hex); `None` when it is not
/// `0x`-prefixed hex of whole bytes.
fn calldata(text: &str) -> Option<String> {
    text.strip_prefix("0x")
        .filter(|hex| hex.len() % 2 == 0 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
        .map(|hex| format!("0x{}", hex.to_ascii_lowercase()))
}

/// How LI.FI and Relay name a currency: its token contract or mint, or the chain's native
/// address (the zero address on EVM chains, the system program on Solana).
fn zero_native_address(currency: &CurrencyDef) -> &'static str {
    match (currency.contract, currency.network) {
        (Some(contract), _) => contract,
        (None, Network::Solana) => "11111111111111111111111111111111",
        (None, _) => "0x0000000000000000000000000000000000000000",
    }
}

/// The swapd currency at `address` on the chain a router calls `chain` (`chain_id` is the
/// router's numbering), named as [`zero_native_address`] names it; EVM addresses in any
/// letter case.
fn currency_at(
    chain_id: impl Fn(Network) -> Option<u64>,
    chain: u64,
    address: &str,
) -> Option<&'static CurrencyDef> {
    swapd_core::market::currencies::CURRENCIES
        .iter()
        .find(|def| {
            chain_id(def.network) == Some(chain) && {
                let ours = zero_native_address(def);
                if def.network == Network::Solana {
                    ours == address
                } else {
                    ours.eq_ignore_ascii_case(address)
                }
            }
        })
}

/// `units` base units of `currency` in its display precision, rounded as `rounding` says.
fn display(units: U256, currency: &CurrencyDef, rounding: Rounding) -> Amount {
    Amount::from_base_units(units, currency.decimals, rounding)
        .rescale(currency.precision, rounding)
}

/// The provider's state kept with `plan` (`swapd_core::onchain::router::BuiltPlan`), as `T`.
fn provider_state<T: DeserializeOwned>(
    plan: &swapd_core::onchain::plan::ExecutionPlan,
    provider: &str,
) -> Result<T, ProviderError> {
    plan.provider_state
        .clone()
        .and_then(|state| serde_json::from_value(state).ok())
        .ok_or_else(|| ProviderError::Unavailable(format!("the plan lacks {provider}'s state")))
}

/// A transaction's gas limit as a provider gave it (decimal or `0x` hex): `None` when it gave
/// none, or 0, which no transaction can be mined with; the wallet then estimates it.
fn gas_limit(text: Option<&str>) -> Result<Option<String>, ProviderError> {
    let Some(text) = text.map(str::trim).filter(|text| !text.is_empty()) else {
        return Ok(None);
    };
    let gas = quantity(text)
        .ok_or_else(|| ProviderError::Unavailable("a gas limit that is not a number".into()))?;
    Ok((!gas.is_zero()).then(|| gas.to_string()))
}

/// An integer as EVM providers write them: decimal, or `0x` hex (JSON-RPC quantities).
fn quantity(text: &str) -> Option<U256> {
    match text.strip_prefix("0x") {
        Some(hex) => U256::from_str_radix(hex, 16),
        None => U256::from_str_radix(text, 10),
    }
    .ok()
}

/// `amount` of `currency` in its base units (an amount never holds more digits than these).
fn units(amount: Amount, currency: &CurrencyDef) -> U256 {
    amount.rescale(currency.decimals, Rounding::Down).units()
}

/// A provider's JSON answer, or `Unavailable` when it is not the shape documented.
/// How a router words a refusal (a non-2xx answer) of a swap from a currency.
type Refusal = fn(u16, &[u8], &CurrencyDef) -> ProviderError;

/// A router's 2xx answer read by `map`; anything else as the router's `refusal` of a swap from
/// `from`.
fn read<T>(
    answer: swapd_http::Answer,
    from: &CurrencyDef,
    refusal: Refusal,
    map: impl FnOnce(&[u8]) -> Result<T, ProviderError>,
) -> Result<T, ProviderError> {
    answer.read(map, |refused| refusal(refused.status, &refused.body, from))
}

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
