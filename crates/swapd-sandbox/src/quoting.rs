//! What the sandbox providers' quotes share: prices from the feed, limits from USD bounds,
//! payout fees per currency, and swapd's fees carried the way FixedFloat's `afftax` carries
//! them (docs/sandbox.md).

use swapd_core::amount::{Amount, Rounding};
use swapd_core::market::currencies::{CURRENCIES, CurrencyDef};
use swapd_core::market::pricing;
use swapd_core::market::provider::{CurrencyOffer, ProviderError};

use crate::price_feed::PriceFeed;

/// The payout fee a desk charges per currency, in that currency (what sending it costs).
pub(crate) fn network_fee(currency: &CurrencyDef) -> Amount {
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
pub(crate) fn usd_price(
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
pub(crate) fn with_fees(
    conversion: &pricing::Conversion,
    request: &swapd_core::market::provider::QuoteRequest,
    fees: swapd_core::fees::FeeSchedule,
) -> Option<(Amount, Amount, Vec<swapd_core::fees::entry::Fee>)> {
    use swapd_core::fees::entry::Fee;
    use swapd_core::market::Direction;
    let parties = |fees: &[swapd_core::fees::PartyFee]| Fee::of_parties(fees, request.to);
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

/// What a sandbox provider trades: every catalog currency `covers` accepts, both ways, between
/// `min_usd` and `max_usd` at the feed's price at `now_ms`.
pub(crate) fn priced_catalog(
    feed: &PriceFeed,
    now_ms: i64,
    covers: impl Fn(&CurrencyDef) -> bool,
    (min_usd, max_usd): (&str, &str),
) -> Result<Vec<CurrencyOffer>, ProviderError> {
    CURRENCIES
        .iter()
        .filter(|c| covers(c))
        .map(|currency| {
            let price = usd_price(feed, currency, now_ms)?;
            let (min, max) = limits(min_usd, max_usd, price, currency);
            Ok(CurrencyOffer {
                currency,
                send: true,
                receive: true,
                min: Some(min),
                max: Some(max),
            })
        })
        .collect()
}

pub(crate) fn limits(
    min_usd: &str,
    max_usd: &str,
    price: Amount,
    currency: &CurrencyDef,
) -> (Amount, Amount) {
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
