//! Exact conversion between two currencies at a price ratio, less a spread in basis points and
//! a network fee. Forward quotes round the output down; reverse quotes return the smallest input
//! whose forward quote reaches the wanted output, so a reverse quote never promises more than
//! the forward direction pays.
//!
//! With prices `p_from`, `p_to` (same scale), spread `s` (of 10 000) and input `a` in base units
//! of the input's precision, the gross output in units of the output's precision is
//! `floor(a · N / D)` with `N = p_from · (10 000 − s) · 10^prec_to` and
//! `D = p_to · 10 000 · 10^prec_from`; the network fee (already in output units) is subtracted
//! from that.

use alloy_primitives::{U256, U512};

use crate::amount::{Amount, Rounding};

pub const BPS: u32 = 10_000;

/// Fraction digits of quoted rates.
pub const RATE_DECIMALS: u8 = 12;

/// One provider's terms for one pair at one moment.
#[derive(Debug, Clone, Copy)]
pub struct Conversion {
    /// Price of the input asset (any scale shared with `to_price`).
    pub from_price: Amount,
    pub to_price: Amount,
    /// Fraction digits of input amounts.
    pub from_precision: u8,
    /// Fraction digits of output amounts.
    pub to_precision: u8,
    /// The provider's margin, in basis points of the output.
    pub spread_bps: u32,
    /// Deducted from the output, in output units.
    pub network_fee: Amount,
}

impl Conversion {
    fn ratio(&self) -> (U512, U512) {
        assert!(self.spread_bps < BPS, "spread below 100%");
        let (from_price, to_price) = same_scale(self.from_price, self.to_price);
        let numerator = from_price
            * U512::from(BPS - self.spread_bps)
            * U512::from(10u8).pow(U512::from(self.to_precision));
        let denominator =
            to_price * U512::from(BPS) * U512::from(10u8).pow(U512::from(self.from_precision));
        (numerator, denominator)
    }

    fn fee_units(&self) -> U512 {
        U512::from(
            self.network_fee
                .rescale(self.to_precision, Rounding::Up)
                .units(),
        )
    }

    /// The output `from` buys: `None` when the network fee takes all of it.
    pub fn output_for(&self, from: Amount) -> Option<Amount> {
        let (numerator, denominator) = self.ratio();
        let input = U512::from(from.rescale(self.from_precision, Rounding::Down).units());
        let gross = input * numerator / denominator;
        let net = gross
            .checked_sub(self.fee_units())
            .filter(|n| !n.is_zero())?;
        Some(Amount::from_units(narrow(net), self.to_precision))
    }

    /// The smallest input whose output is at least `to`.
    pub fn input_for(&self, to: Amount) -> Amount {
        let (numerator, denominator) = self.ratio();
        let wanted =
            U512::from(to.rescale(self.to_precision, Rounding::Up).units()) + self.fee_units();
        let input = (wanted * denominator).div_ceil(numerator);
        Amount::from_units(narrow(input), self.from_precision)
    }
}

/// `to / from`, rounded down to [`RATE_DECIMALS`] fraction digits.
pub fn rate(from: Amount, to: Amount) -> Amount {
    if from.is_zero() {
        return Amount::zero(RATE_DECIMALS);
    }
    let scale = |a: Amount| {
        (
            U512::from(a.units()),
            U512::from(10u8).pow(U512::from(a.decimals())),
        )
    };
    let (to_units, to_scale) = scale(to);
    let (from_units, from_scale) = scale(from);
    let rate_scale = U512::from(10u8).pow(U512::from(RATE_DECIMALS));
    let units = to_units * from_scale * rate_scale / (from_units * to_scale);
    Amount::from_units(narrow(units), RATE_DECIMALS)
}

/// `usd / price` in units of `precision`, rounded as asked: converts a USD limit into an amount
/// of the asset priced at `price` (USD, any scale).
pub fn from_usd(usd: Amount, price: Amount, precision: u8, rounding: Rounding) -> Amount {
    let (usd, price) = same_scale(usd, price);
    let numerator = usd * U512::from(10u8).pow(U512::from(precision));
    let units = match rounding {
        Rounding::Down => numerator / price,
        Rounding::Up => numerator.div_ceil(price),
    };
    Amount::from_units(narrow(units), precision)
}

/// `amount · price` in USD at `price`'s scale, rounded down.
pub fn to_usd(amount: Amount, price: Amount) -> Amount {
    let scale = U256::from(10u8).pow(U256::from(amount.decimals()));
    price.mul_div(amount.units(), scale, Rounding::Down)
}

fn same_scale(a: Amount, b: Amount) -> (U512, U512) {
    let decimals = a.decimals().max(b.decimals());
    (
        U512::from(a.rescale(decimals, Rounding::Down).units()),
        U512::from(b.rescale(decimals, Rounding::Down).units()),
    )
}

/// Back to 256 bits; amounts are bounded far below (30 whole digits, ≤ 18 decimals).
fn narrow(value: U512) -> U256 {
    U256::saturating_from(value)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn amount(text: &str, precision: u8) -> Amount {
        Amount::parse(text, precision).unwrap()
    }

    fn btc_to_usdt() -> Conversion {
        Conversion {
            from_price: amount("97000", 8),
            to_price: amount("1", 8),
            from_precision: 8,
            to_precision: 6,
            spread_bps: 100,
            network_fee: amount("1", 6),
        }
    }

    #[test]
    fn forward_applies_spread_then_fee() {
        // 0.5 BTC · 97 000 = 48 500; less 1 % = 48 015; less the 1 USDT fee.
        let out = btc_to_usdt().output_for(amount("0.5", 8)).unwrap();
        assert_eq!(out.to_string(), "48014");
    }

    #[test]
    fn reverse_is_the_smallest_input_reaching_the_output() {
        let conversion = btc_to_usdt();
        let input = conversion.input_for(amount("48014", 6));
        assert_eq!(input.to_string(), "0.5");
        let less = input
            .checked_sub(Amount::from_units(U256::from(1), 8))
            .unwrap();
        assert!(conversion.output_for(less).unwrap() < amount("48014", 6));
    }

    #[test]
    fn fee_larger_than_output_yields_nothing() {
        assert!(btc_to_usdt().output_for(amount("0.00000001", 8)).is_none());
    }

    #[test]
    fn rates_and_usd_limits() {
        assert_eq!(rate(amount("2", 8), amount("5", 6)).to_string(), "2.5");
        assert_eq!(
            rate(amount("3", 6), amount("1", 6)).to_string(),
            "0.333333333333"
        );
        assert_eq!(
            from_usd(amount("20", 0), amount("97000", 8), 8, Rounding::Up).to_string(),
            "0.00020619"
        );
        assert_eq!(
            from_usd(amount("20", 0), amount("97000", 8), 8, Rounding::Down).to_string(),
            "0.00020618"
        );
        assert_eq!(
            to_usd(amount("0.5", 8), amount("97000", 8)).to_string(),
            "48500"
        );
    }

    proptest! {
        /// Quoting `to` the output of a `from` quote gives back an input that buys exactly that
        /// output and is never more than the original; it is less only by inputs too small to
        /// buy one more unit of output.
        #[test]
        fn reverse_of_forward_round_trips(
            units in 1u64..10_000_000_000_000,
            from_price in 1u64..10_000_000_000_000,
            to_price in 1u64..10_000_000_000_000,
            from_precision in 0u8..=9,
            to_precision in 0u8..=9,
            spread_bps in 0u32..500,
            fee_units in 0u64..1_000,
        ) {
            let conversion = Conversion {
                from_price: Amount::from_units(U256::from(from_price), 8),
                to_price: Amount::from_units(U256::from(to_price), 8),
                from_precision,
                to_precision,
                spread_bps,
                network_fee: Amount::from_units(U256::from(fee_units), to_precision),
            };
            let from = Amount::from_units(U256::from(units), from_precision);
            if let Some(out) = conversion.output_for(from) {
                let back = conversion.input_for(out);
                prop_assert!(back <= from);
                prop_assert_eq!(conversion.output_for(back), Some(out));
                let one = Amount::from_units(U256::from(1), from_precision);
                if let Some(smaller) = back.checked_sub(one) {
                    prop_assert!(conversion.output_for(smaller).is_none_or(|o| o < out));
                }
                // When one output unit is worth no more than one input unit, the round trip is
                // exact.
                let (n, d) = conversion.ratio();
                if n >= d {
                    prop_assert_eq!(back, from);
                }
            }
        }
    }
}
