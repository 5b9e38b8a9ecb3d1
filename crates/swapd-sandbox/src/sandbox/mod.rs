//! The sandbox world: providers that quote from the deterministic [`PriceFeed`], with the
//! spreads, limits, fees and coverage of real ones, and switchable faults for tests and
//! benchmarks. Everything above the [`Provider`] port runs unchanged in sandbox and live.

mod addresses;
mod chain;
mod desk;
mod faults;
mod offchain;
mod onchain;
pub mod plans;

use std::sync::Arc;

use swapd_core::amount::{Amount, Rounding};
use swapd_core::market::currencies::CurrencyDef;
use swapd_core::market::pricing;
use swapd_core::provider::{Provider, ProviderError};

pub use chain::{BURN_ADDRESSES, SandboxChain};
pub use desk::{SandboxDesk, SandboxWorld};
pub use faults::{Fault, Faults};
pub use offchain::OffchainDesk;
pub use onchain::{Bridge, DEFAULT_BLOCK_MS, Dex};

use crate::price_feed::PriceFeed;

/// The sandbox providers: two offchain desks, an EVM DEX, a Solana DEX and a bridge, each
/// behind `faults`. Onchain executions advance one stage per `block_ms`. The desks run their
/// exchanges in `world`; without one they only quote (for tests of the market alone).
pub fn providers(
    feed: PriceFeed,
    faults: &Faults,
    block_ms: i64,
    world: Option<&SandboxWorld>,
) -> Vec<Arc<dyn Provider>> {
    let desk = |quoter: OffchainDesk| -> Arc<dyn Provider> {
        match world {
            Some(world) => Arc::new(SandboxDesk::new(quoter, world)),
            None => Arc::new(quoter),
        }
    };
    let providers: Vec<Arc<dyn Provider>> = vec![
        desk(OffchainDesk::atlas(feed.clone())),
        desk(OffchainDesk::borealis(feed.clone())),
        Arc::new(Dex::meridian(feed.clone()).with_block_ms(block_ms)),
        Arc::new(Dex::sunfish(feed.clone()).with_block_ms(block_ms)),
        Arc::new(Bridge::arcbridge(feed).with_block_ms(block_ms)),
    ];
    providers
        .into_iter()
        .map(|provider| faults.wrap(provider))
        .collect()
}

/// The identifiers of [`providers`], for configuration checks.
pub const PROVIDER_IDS: [&str; 5] = ["atlas", "borealis", "meridian", "sunfish", "arcbridge"];

/// The payout fee a desk charges per currency, in that currency (what sending it costs).
fn network_fee(currency: &CurrencyDef) -> Amount {
    let fee = match currency.code {
        "BTC" => "0.00002",
        "LTC" => "0.0005",
        "ETH" => "0.0008",
        "ETHBASE" => "0.00002",
        "ETHARB" => "0.00003",
        "BNB" => "0.0003",
        "POL" => "0.05",
        "SOL" => "0.0005",
        "TRX" => "1",
        "XRP" => "0.2",
        "USDTETH" | "USDCETH" | "DAIETH" => "3",
        "USDTTRC" => "1",
        "USDTSOL" | "USDCSOL" => "0.5",
        "USDTBSC" | "USDCBSC" | "USDTARB" | "USDCARB" => "0.3",
        "USDTPOL" | "USDCPOL" => "0.2",
        "USDCBASE" => "0.1",
        _ => "0",
    };
    Amount::parse(fee, currency.precision).expect("shipped fees fit their precision")
}

/// USD price of `currency` from the feed.
fn usd_price(
    feed: &PriceFeed,
    currency: &CurrencyDef,
    now_ms: i64,
) -> Result<Amount, ProviderError> {
    feed.usd_price(currency.price_symbol, now_ms)
        .ok_or_else(|| ProviderError::PairUnsupported(format!("no price for {}", currency.code)))
}

/// Input limits in `currency` from USD limits.
/// The input and output of a quote and the parties' fees, the sandbox's way of carrying swapd's
/// fees (docs/fees.md), as FixedFloat's `afftax` does: the output quoted is what is left after
/// them. `None`: out of range, or nothing left.
fn with_fees(
    conversion: &pricing::Conversion,
    request: &swapd_core::provider::QuoteRequest,
    fees: swapd_core::fees::FeeSchedule,
) -> Option<(Amount, Amount, Vec<swapd_core::provider::Fee>)> {
    use swapd_core::market::Direction;
    use swapd_core::provider::Fee;
    let parties = |fees: &[swapd_core::fees::PartyFee]| Fee::of_parties(fees, request.to.code);
    match request.direction {
        Direction::From => {
            let gross = conversion.output_for(request.amount)?;
            let (net, fees) = fees.net_of(gross).ok()?;
            Some((request.amount, net, parties(&fees)))
        }
        Direction::To => {
            let (gross, net, fees) = fees.gross_for(request.amount).ok()?;
            Some((conversion.input_for(gross), net, parties(&fees)))
        }
    }
}

fn limits(min_usd: &str, max_usd: &str, price: Amount, currency: &CurrencyDef) -> (Amount, Amount) {
    let usd = |text: &str| Amount::parse(text, 0).expect("shipped limits are whole dollars");
    (
        pricing::from_usd(usd(min_usd), price, currency.precision, Rounding::Up),
        pricing::from_usd(usd(max_usd), price, currency.precision, Rounding::Down),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use swapd_core::market::currencies::CURRENCIES;

    #[test]
    fn every_currency_has_a_price_and_fees_fit() {
        let feed = PriceFeed::new(1);
        for currency in CURRENCIES {
            assert!(usd_price(&feed, currency, 0).is_ok(), "{}", currency.code);
            network_fee(currency);
        }
    }
}
