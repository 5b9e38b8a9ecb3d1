//! Sandbox onchain providers: DEX aggregators that swap on one chain (an EVM one on Ethereum,
//! Base, Arbitrum, BNB Chain and Polygon; one on Solana), and a bridge between those chains,
//! EVM ↔ Solana included, with gasless permit signatures for USDC on EVM chains. The signing
//! wallet pays gas on the source chain; the pool or bridge fee is part of the rate.

use async_trait::async_trait;
use swapd_core::address::Network;
use swapd_core::amount::Amount;
use swapd_core::fees::entry::{Fee, FeeKind};
use swapd_core::market::currencies::CurrencyDef;
use swapd_core::market::pricing::Conversion;
use swapd_core::market::provider::{
    CurrencyOffer, Provider, ProviderError, ProviderInfo, ProviderQuote, QuoteRequest,
};
use swapd_core::market::routes::less_bps;
use swapd_core::market::{ExecutionType, RateType};
use swapd_core::onchain::plan::{DEFAULT_SLIPPAGE_BPS, ExecutionPlan, SignedStep, Tracked};
use swapd_core::onchain::router::{BuiltPlan, OnchainRouter, PlanRequest, TrackRequest};

use crate::behaviour::{Behaviour, Behaviours};
use crate::plans;
use crate::price_feed::PriceFeed;
use crate::quoting::{limits, priced_catalog, usd_price, with_fees};

/// One sandbox block unless configured otherwise (`providers.sandbox_block_ms`).
pub const DEFAULT_BLOCK_MS: i64 = 2_000;

/// What a transaction costs the signer on `network`: (currency code, amount).
fn gas(network: Network) -> (&'static str, &'static str) {
    match network {
        Network::Ethereum => ("ETH", "0.0015"),
        Network::Base => ("ETHBASE", "0.00001"),
        Network::Arbitrum => ("ETHARB", "0.00002"),
        Network::BnbChain => ("BNB", "0.0002"),
        Network::Polygon => ("POL", "0.02"),
        Network::Solana => ("SOL", "0.00001"),
        other => unreachable!("no onchain routes on {other}"),
    }
}

fn gas_fee(network: Network) -> Fee {
    let (code, amount) = gas(network);
    let currency = swapd_core::market::currencies::currency(code).expect("gas currency");
    Fee::cost(
        FeeKind::Network,
        Amount::parse(amount, currency.precision).expect("shipped gas fits"),
        currency,
    )
}

struct Terms {
    spread_bps: u32,
    deducted_fee: Amount,
    min_usd: &'static str,
    max_usd: &'static str,
    duration_secs: u32,
    gasless: bool,
}

/// Prices a wallet-signed route; shared by DEXes and the bridge.
fn quote_onchain(
    provider: &str,
    feed: &PriceFeed,
    request: &QuoteRequest,
    terms: Terms,
) -> Result<ProviderQuote, ProviderError> {
    let (from, to) = (request.from, request.to);
    let from_price = usd_price(feed, from, request.now_ms)?;
    let conversion = Conversion {
        from_price,
        to_price: usd_price(feed, to, request.now_ms)?,
        from_precision: from.precision,
        to_precision: to.precision,
        spread_bps: terms.spread_bps,
        network_fee: terms.deducted_fee,
    };
    let (min, max) = limits(terms.min_usd, terms.max_usd, from_price, from);
    let out_of_range = || ProviderError::OutOfRange {
        min,
        max: Some(max),
        code: from.code,
    };
    let (from_amount, to_amount, parties) =
        with_fees(&conversion, request, request.fees.schedule_for(provider))
            .ok_or_else(out_of_range)?;
    if from_amount < min || from_amount > max {
        return Err(out_of_range());
    }
    let mut fees = Vec::new();
    if !terms.deducted_fee.is_zero() {
        fees.push(Fee::cost(FeeKind::Provider, terms.deducted_fee, to));
    }
    if !terms.gasless {
        fees.push(gas_fee(from.network));
    }
    fees.extend(parties);
    Ok(ProviderQuote {
        from_amount,
        to_amount,
        min_output: less_bps(to_amount, DEFAULT_SLIPPAGE_BPS),
        // Onchain prices are whatever the pool pays when the transaction lands, bounded by
        // `min_output`: a float rate.
        rate_type: RateType::Float,
        network_fee: Amount::zero(to.precision),
        fees,
        min,
        max: Some(max),
        estimated_duration_secs: terms.duration_secs,
        valid_for_secs: 60,
        gasless: terms.gasless,
        rate_lock: None,
        onchain_fees: Vec::new(),
    })
}

/// A same-chain DEX aggregator.
#[derive(Debug, Clone)]
pub struct Dex {
    id: &'static str,
    feed: PriceFeed,
    chains: &'static [Network],
    pool_fee_bps: u32,
    max_usd: &'static str,
    duration_secs: u32,
    block_ms: i64,
    behaviour: Behaviour,
}

impl Dex {
    /// EVM DEX aggregator on Ethereum, Base, Arbitrum, BNB Chain and Polygon.
    pub fn meridian(feed: PriceFeed) -> Self {
        Self {
            id: "meridian",
            feed,
            chains: &[
                Network::Ethereum,
                Network::Base,
                Network::Arbitrum,
                Network::BnbChain,
                Network::Polygon,
            ],
            pool_fee_bps: 30,
            max_usd: "1000000",
            duration_secs: 30,
            block_ms: DEFAULT_BLOCK_MS,
            behaviour: Behaviour::PUNCTUAL,
        }
    }

    /// Solana DEX aggregator.
    pub fn sunfish(feed: PriceFeed) -> Self {
        Self {
            id: "sunfish",
            feed,
            chains: &[Network::Solana],
            pool_fee_bps: 25,
            max_usd: "500000",
            duration_secs: 5,
            block_ms: DEFAULT_BLOCK_MS,
            behaviour: Behaviour::PUNCTUAL,
        }
    }

    /// Executions advance one stage per `block_ms` (see `plans::track`).
    pub fn with_block_ms(mut self, block_ms: i64) -> Self {
        self.block_ms = block_ms;
        self
    }

    /// How its executions end and how long they take (docs/sandbox.md, "Behaviour").
    pub fn with_behaviour(mut self, behaviours: &Behaviours) -> Self {
        self.behaviour = behaviours.of(self.id);
        self
    }

    fn trades(&self, currency: &CurrencyDef) -> bool {
        self.chains.contains(&currency.network)
    }
}

#[async_trait]
impl Provider for Dex {
    fn info(&self) -> ProviderInfo {
        ProviderInfo {
            id: self.id,
            execution_type: ExecutionType::Onchain,
        }
    }

    async fn catalog(&self, now_ms: i64) -> Result<Vec<CurrencyOffer>, ProviderError> {
        priced_catalog(&self.feed, now_ms, |c| self.trades(c), ("1", self.max_usd))
    }

    async fn quote(&self, request: &QuoteRequest) -> Result<ProviderQuote, ProviderError> {
        let (from, to) = (request.from, request.to);
        if !self.trades(from) || from.network != to.network || from.code == to.code {
            return Err(ProviderError::PairUnsupported(format!(
                "{} swaps two different assets on one of its chains",
                self.id
            )));
        }
        request.check_signer(self.id)?;
        quote_onchain(
            self.id,
            &self.feed,
            request,
            Terms {
                spread_bps: self.pool_fee_bps,
                deducted_fee: Amount::zero(to.precision),
                min_usd: "1",
                max_usd: self.max_usd,
                duration_secs: self.duration_secs,
                gasless: false,
            },
        )
    }
}

#[async_trait]
impl OnchainRouter for Dex {
    fn unconfigured(&self) -> Option<String> {
        None
    }

    async fn build_plan(&self, request: &PlanRequest) -> Result<BuiltPlan, ProviderError> {
        plans::dex_plan(self.id, request).map(|steps| BuiltPlan::of(steps, request))
    }

    /// Its gasless plans need no relayer: nothing to pass on.
    async fn relay_signatures(
        &self,
        _plan: &ExecutionPlan,
        _signatures: &[SignedStep],
    ) -> Result<Option<serde_json::Value>, ProviderError> {
        Ok(None)
    }

    async fn track_execution(&self, request: TrackRequest<'_>) -> Result<Tracked, ProviderError> {
        plans::track(request, false, self.block_ms, &self.feed, &self.behaviour)
    }
}

/// A cross-chain bridge between the EVM chains and Solana.
#[derive(Debug, Clone)]
pub struct Bridge {
    id: &'static str,
    feed: PriceFeed,
    block_ms: i64,
    behaviour: Behaviour,
}

const BRIDGE_CHAINS: [Network; 6] = [
    Network::Ethereum,
    Network::Base,
    Network::Arbitrum,
    Network::BnbChain,
    Network::Polygon,
    Network::Solana,
];

impl Bridge {
    pub fn arcbridge(feed: PriceFeed) -> Self {
        Self {
            id: "arcbridge",
            feed,
            block_ms: DEFAULT_BLOCK_MS,
            behaviour: Behaviour::PUNCTUAL,
        }
    }

    /// Executions advance one stage per `block_ms` (see `plans::track`).
    pub fn with_block_ms(mut self, block_ms: i64) -> Self {
        self.block_ms = block_ms;
        self
    }

    /// How its executions end and how long they take (docs/sandbox.md, "Behaviour").
    pub fn with_behaviour(mut self, behaviours: &Behaviours) -> Self {
        self.behaviour = behaviours.of(self.id);
        self
    }

    /// Circle's USDC on EVM chains implements EIP-2612 `permit`, so the relayer can pull it
    /// with a signature and the user pays no gas. (BNB Chain's USDC is a bridged token without
    /// `permit`.)
    fn gasless(currency: &CurrencyDef) -> bool {
        currency.symbol == "USDC"
            && currency.network.evm_chain_id().is_some()
            && currency.network != Network::BnbChain
    }
}

#[async_trait]
impl Provider for Bridge {
    fn info(&self) -> ProviderInfo {
        ProviderInfo {
            id: self.id,
            execution_type: ExecutionType::Onchain,
        }
    }

    async fn catalog(&self, now_ms: i64) -> Result<Vec<CurrencyOffer>, ProviderError> {
        priced_catalog(
            &self.feed,
            now_ms,
            |c| BRIDGE_CHAINS.contains(&c.network),
            ("5", "250000"),
        )
    }

    async fn quote(&self, request: &QuoteRequest) -> Result<ProviderQuote, ProviderError> {
        let (from, to) = (request.from, request.to);
        if !BRIDGE_CHAINS.contains(&from.network)
            || !BRIDGE_CHAINS.contains(&to.network)
            || from.network == to.network
        {
            return Err(ProviderError::PairUnsupported(format!(
                "{} moves assets between two different chains among Ethereum, Base, Arbitrum, BNB Chain, Polygon and Solana",
                self.id
            )));
        }
        request.check_signer(self.id)?;
        request.check_recipient()?;
        // The relayer's fee: half a dollar of the output asset, deducted from it.
        let relayer_fee = swapd_core::market::pricing::from_usd(
            Amount::parse("0.5", 1).expect("literal"),
            usd_price(&self.feed, to, request.now_ms)?,
            to.precision,
            swapd_core::amount::Rounding::Up,
        );
        quote_onchain(
            self.id,
            &self.feed,
            request,
            Terms {
                spread_bps: 10,
                deducted_fee: relayer_fee,
                min_usd: "5",
                max_usd: "250000",
                duration_secs: if to.network == Network::Solana || from.network == Network::Solana {
                    45
                } else {
                    90
                },
                gasless: Self::gasless(from),
            },
        )
    }
}

#[async_trait]
impl OnchainRouter for Bridge {
    fn unconfigured(&self) -> Option<String> {
        None
    }

    async fn build_plan(&self, request: &PlanRequest) -> Result<BuiltPlan, ProviderError> {
        plans::bridge_plan(self.id, request).map(|steps| BuiltPlan::of(steps, request))
    }

    /// Its gasless plans need no relayer: nothing to pass on.
    async fn relay_signatures(
        &self,
        _plan: &ExecutionPlan,
        _signatures: &[SignedStep],
    ) -> Result<Option<serde_json::Value>, ProviderError> {
        Ok(None)
    }

    async fn track_execution(&self, request: TrackRequest<'_>) -> Result<Tracked, ProviderError> {
        plans::track(request, true, self.block_ms, &self.feed, &self.behaviour)
    }
}

#[cfg(test)]
mod tests {
    use swapd_core::market::currencies::currency;
    use swapd_core::market::provider::Wallet;

    use super::*;
    use swapd_core::market::Direction;

    fn request(from: &str, to: &str, amount: &str) -> QuoteRequest {
        let (from, to) = (currency(from).unwrap(), currency(to).unwrap());
        QuoteRequest {
            from,
            to,
            amount: Amount::parse(amount, from.precision).unwrap(),
            direction: Direction::From,
            rate_type: RateType::Fixed,
            wallet: None,
            recipient: None,
            fees: Default::default(),
            now_ms: 1_800_000_000_000,
        }
    }

    #[tokio::test]
    async fn dexes_swap_within_one_chain_only() {
        let meridian = Dex::meridian(PriceFeed::new(1));
        for (from, to) in [
            ("ETH", "USDCETH"),
            ("USDCBASE", "ETHBASE"),
            ("ETHARB", "ARBARB"),
            ("BNB", "USDTBSC"),
            ("POL", "USDCPOL"),
        ] {
            let quote = meridian.quote(&request(from, to, "10")).await.unwrap();
            assert!(quote.min_output < quote.to_amount, "{from}->{to}");
            assert_eq!(quote.fees[0].kind, FeeKind::Network);
        }
        assert!(matches!(
            meridian.quote(&request("ETH", "ETHBASE", "1")).await,
            Err(ProviderError::PairUnsupported(_))
        ));
        let sunfish = Dex::sunfish(PriceFeed::new(1));
        assert!(sunfish.quote(&request("SOL", "JUPSOL", "1")).await.is_ok());
        let mut wrong_wallet = request("SOL", "USDCSOL", "1");
        wrong_wallet.wallet = Some(Wallet {
            namespace: "eip155",
            address: Some("0x0000000000000000000000000000000000000001".into()),
        });
        assert!(matches!(
            sunfish.quote(&wrong_wallet).await,
            Err(ProviderError::WalletUnsupported(_))
        ));
    }

    #[tokio::test]
    async fn bridge_needs_a_recipient_across_namespaces_and_is_gasless_for_usdc() {
        let bridge = Bridge::arcbridge(PriceFeed::new(1));
        let mut to_solana = request("USDCBASE", "USDCSOL", "100");
        assert!(matches!(
            bridge.quote(&to_solana).await,
            Err(ProviderError::RecipientRequired(_))
        ));
        to_solana.recipient = Some("9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM".into());
        let quote = bridge.quote(&to_solana).await.unwrap();
        assert!(quote.gasless);
        assert!(quote.fees.iter().all(|f| f.kind != FeeKind::Network));
        assert!(quote.to_amount < Amount::parse("100", 6).unwrap());

        let evm_only = bridge.quote(&request("ETH", "ETHARB", "1")).await.unwrap();
        assert!(!evm_only.gasless);
        assert!(evm_only.fees.iter().any(|f| f.kind == FeeKind::Network));
        assert!(matches!(
            bridge.quote(&request("BTC", "ETH", "1")).await,
            Err(ProviderError::PairUnsupported(_))
        ));
    }
}
