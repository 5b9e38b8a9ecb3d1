//! Sandbox offchain exchange desks (FixedFloat/ChangeNOW-like): the user deposits, the desk
//! exchanges and pays out. Fixed rates cost more than float ones; each desk has its own
//! spreads, USD limits, payout-fee markup and currency coverage.

use async_trait::async_trait;
use swapd_core::amount::Amount;
use swapd_core::fees::entry::{Fee, FeeKind};
use swapd_core::market::currencies::CurrencyDef;
use swapd_core::market::pricing::Conversion;
use swapd_core::market::provider::{
    CurrencyOffer, Provider, ProviderError, ProviderInfo, ProviderQuote, QuoteRequest,
};
use swapd_core::market::routes::less_bps;
use swapd_core::market::{ExecutionType, RateType};

use crate::price_feed::PriceFeed;
use crate::quoting::{limits, network_fee, priced_catalog, usd_price, with_fees};

#[derive(Debug, Clone)]
pub struct OffchainDesk {
    id: &'static str,
    feed: PriceFeed,
    fixed_spread_bps: u32,
    float_spread_bps: u32,
    /// Float orders are exchanged at the rate of the moment; the desk promises no less than the
    /// quote minus this.
    float_tolerance_bps: u32,
    min_usd: &'static str,
    max_usd: &'static str,
    /// Payout fee as a percentage of the base network fee.
    fee_markup_percent: u32,
    /// `None`: every registry currency that is not onchain-only.
    coverage: Option<&'static [&'static str]>,
    duration_secs: u32,
}

/// Currencies no offchain desk lists: DEX and bridge routes only.
const ONCHAIN_ONLY: [&str; 2] = ["JUPSOL", "ARBARB"];

impl OffchainDesk {
    /// Broad coverage, the classic 1 % fixed / 0.5 % float spreads, small minimums.
    pub fn atlas(feed: PriceFeed) -> Self {
        Self {
            id: "atlas",
            feed,
            fixed_spread_bps: 100,
            float_spread_bps: 50,
            float_tolerance_bps: 100,
            min_usd: "10",
            max_usd: "100000",
            fee_markup_percent: 100,
            coverage: None,
            duration_secs: 900,
        }
    }

    /// Fewer currencies (no TRON, XRP or Polygon), a slightly cheaper fixed rate and a dearer
    /// float one, higher limits, a payout-fee markup, slower.
    pub fn borealis(feed: PriceFeed) -> Self {
        Self {
            id: "borealis",
            feed,
            fixed_spread_bps: 90,
            float_spread_bps: 60,
            float_tolerance_bps: 150,
            min_usd: "50",
            max_usd: "250000",
            fee_markup_percent: 150,
            coverage: Some(&[
                "BTC", "LTC", "ETH", "ETHBASE", "ETHARB", "BNB", "SOL", "USDTETH", "USDTBSC",
                "USDTSOL", "USDTARB", "USDCETH", "USDCSOL", "USDCBASE", "USDCARB", "USDCBSC",
                "DAIETH",
            ]),
            duration_secs: 1_200,
        }
    }

    pub(crate) fn id(&self) -> &'static str {
        self.id
    }

    /// The desk's input limits for `from` at `now_ms`, with the pair checked first.
    pub(crate) fn limits_for(
        &self,
        from: &CurrencyDef,
        to: &CurrencyDef,
        now_ms: i64,
    ) -> Result<(Amount, Amount), ProviderError> {
        self.check_pair(from, to)?;
        let price = usd_price(&self.feed, from, now_ms)?;
        Ok(limits(self.min_usd, self.max_usd, price, from))
    }

    fn check_pair(&self, from: &CurrencyDef, to: &CurrencyDef) -> Result<(), ProviderError> {
        if from.code == to.code {
            return Err(ProviderError::PairUnsupported(
                "fromCcy and toCcy are the same currency".into(),
            ));
        }
        match [from, to].into_iter().find(|c| !self.covers(c)) {
            Some(currency) => Err(ProviderError::PairUnsupported(format!(
                "{} does not trade {}",
                self.id, currency.code
            ))),
            None => Ok(()),
        }
    }

    fn covers(&self, currency: &CurrencyDef) -> bool {
        match self.coverage {
            Some(list) => list.contains(&currency.code),
            None => !ONCHAIN_ONLY.contains(&currency.code),
        }
    }

    fn payout_fee(&self, currency: &CurrencyDef) -> Amount {
        let base = network_fee(currency);
        base.mul_div(
            alloy_primitives::U256::from(self.fee_markup_percent),
            alloy_primitives::U256::from(100),
            swapd_core::amount::Rounding::Up,
        )
    }
}

#[async_trait]
impl Provider for OffchainDesk {
    fn info(&self) -> ProviderInfo {
        ProviderInfo {
            id: self.id,
            execution_type: ExecutionType::Offchain,
        }
    }

    async fn catalog(&self, now_ms: i64) -> Result<Vec<CurrencyOffer>, ProviderError> {
        priced_catalog(
            &self.feed,
            now_ms,
            |c| self.covers(c),
            (self.min_usd, self.max_usd),
        )
    }

    async fn quote(&self, request: &QuoteRequest) -> Result<ProviderQuote, ProviderError> {
        let (from, to) = (request.from, request.to);
        self.check_pair(from, to)?;
        let from_price = usd_price(&self.feed, from, request.now_ms)?;
        let spread_bps = match request.rate_type {
            RateType::Fixed => self.fixed_spread_bps,
            RateType::Float => self.float_spread_bps,
        };
        let network_fee = self.payout_fee(to);
        let conversion = Conversion {
            from_price,
            to_price: usd_price(&self.feed, to, request.now_ms)?,
            from_precision: from.precision,
            to_precision: to.precision,
            spread_bps,
            network_fee,
        };
        let (min, max) = limits(self.min_usd, self.max_usd, from_price, from);
        let out_of_range = || ProviderError::OutOfRange {
            min,
            max: Some(max),
            code: from.code,
        };
        let (from_amount, to_amount, parties) =
            with_fees(&conversion, request, request.fees.schedule_for(self.id))
                .ok_or_else(out_of_range)?;
        if from_amount < min || from_amount > max {
            return Err(out_of_range());
        }
        let min_output = match request.rate_type {
            RateType::Fixed => to_amount,
            RateType::Float => less_bps(to_amount, self.float_tolerance_bps),
        };
        Ok(ProviderQuote {
            from_amount,
            to_amount,
            min_output,
            rate_type: request.rate_type,
            network_fee,
            fees: std::iter::once(Fee::cost(FeeKind::Network, network_fee, to))
                .chain(parties)
                .collect(),
            min,
            max: Some(max),
            estimated_duration_secs: self.duration_secs,
            valid_for_secs: 120,
            gasless: false,
            rate_lock: None,
            onchain_fees: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use swapd_core::market::currencies::currency;

    use super::*;
    use swapd_core::market::Direction;

    const T: i64 = 1_800_000_000_000;

    fn request(
        from: &str,
        to: &str,
        amount: &str,
        direction: Direction,
        rate: RateType,
    ) -> QuoteRequest {
        let (from, to) = (currency(from).unwrap(), currency(to).unwrap());
        let precision = match direction {
            Direction::From => from.precision,
            Direction::To => to.precision,
        };
        QuoteRequest {
            from,
            to,
            amount: Amount::parse(amount, precision).unwrap(),
            direction,
            rate_type: rate,
            wallet: None,
            recipient: None,
            fees: Default::default(),
            now_ms: T,
        }
    }

    #[tokio::test]
    async fn float_pays_more_than_fixed_and_reverse_matches_forward() {
        let desk = OffchainDesk::atlas(PriceFeed::new(1));
        let fixed = desk
            .quote(&request(
                "BTC",
                "USDTTRC",
                "0.1",
                Direction::From,
                RateType::Fixed,
            ))
            .await
            .unwrap();
        let float = desk
            .quote(&request(
                "BTC",
                "USDTTRC",
                "0.1",
                Direction::From,
                RateType::Float,
            ))
            .await
            .unwrap();
        assert!(float.to_amount > fixed.to_amount);
        assert_eq!(fixed.min_output, fixed.to_amount);
        assert!(float.min_output < float.to_amount);

        let reverse = desk
            .quote(&request(
                "BTC",
                "USDTTRC",
                &fixed.to_amount.to_string(),
                Direction::To,
                RateType::Fixed,
            ))
            .await
            .unwrap();
        assert_eq!(reverse.to_amount, fixed.to_amount);
        assert_eq!(reverse.from_amount.to_string(), "0.1");
    }

    #[tokio::test]
    async fn limits_coverage_and_onchain_only_assets() {
        let atlas = OffchainDesk::atlas(PriceFeed::new(1));
        let borealis = OffchainDesk::borealis(PriceFeed::new(1));
        match atlas
            .quote(&request(
                "BTC",
                "ETH",
                "100",
                Direction::From,
                RateType::Fixed,
            ))
            .await
        {
            Err(ProviderError::OutOfRange {
                min,
                max,
                code: "BTC",
            }) => assert!(max.is_some_and(|max| min < max)),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            borealis
                .quote(&request(
                    "BTC",
                    "XRP",
                    "0.1",
                    Direction::From,
                    RateType::Fixed
                ))
                .await,
            Err(ProviderError::PairUnsupported(_))
        ));
        assert!(matches!(
            atlas
                .quote(&request(
                    "JUPSOL",
                    "BTC",
                    "100",
                    Direction::From,
                    RateType::Fixed
                ))
                .await,
            Err(ProviderError::PairUnsupported(_))
        ));
        let offers = borealis.catalog(T).await.unwrap();
        assert!(offers.iter().all(|o| o.currency.code != "XRP"));
        assert!(atlas.catalog(T).await.unwrap().len() > offers.len());
    }
}
