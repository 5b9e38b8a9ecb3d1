//! Exact amounts. On the wire an amount is a decimal string in display units
//! (`^[0-9]{1,30}(\.[0-9]+)?$`, at most the currency's precision in fraction digits, no
//! exponent, never a JSON number); inside it is an integer count of base units, so arithmetic
//! never rounds unless asked to.

use std::cmp::Ordering;
use std::fmt;

use alloy_primitives::U256;

/// The most fraction digits any asset uses (ETH and most ERC-20 tokens: 18).
pub use swapd_types::schema::MAX_DECIMALS;
use swapd_types::schema::MAX_WHOLE_DIGITS;

/// `units / 10^decimals`, exactly. Equal values are equal at any scale (`1.5` is `1.50`).
#[derive(Debug, Clone, Copy)]
pub struct Amount {
    units: U256,
    decimals: u8,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AmountError {
    #[error(
        "`{0}` is not a decimal amount: digits with an optional `.` and fraction, as a string (e.g. \"0.25\")"
    )]
    Format(String),
    #[error("`{text}` has more than {precision} fraction digits")]
    Precision { text: String, precision: u8 },
}

/// How to round when a result has more digits than its scale holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rounding {
    Down,
    Up,
}

impl Amount {
    pub fn zero(decimals: u8) -> Self {
        Self {
            units: U256::ZERO,
            decimals,
        }
    }

    pub fn from_units(units: U256, decimals: u8) -> Self {
        assert!(decimals <= MAX_DECIMALS, "at most {MAX_DECIMALS} decimals");
        Self { units, decimals }
    }

    /// `units` base units of a token with `decimals` of them per whole, also a token with more
    /// decimals than an amount keeps (some have 24): then cut to [`MAX_DECIMALS`], rounded as
    /// asked.
    pub fn from_base_units(units: U256, decimals: u8, rounding: Rounding) -> Self {
        if decimals <= MAX_DECIMALS {
            return Self::from_units(units, decimals);
        }
        let units = match U256::from(10u8).checked_pow(U256::from(decimals - MAX_DECIMALS)) {
            Some(divisor) => div_round(units, divisor, rounding),
            // A divisor beyond 256 bits: any amount is less than one unit kept.
            None => U256::from(u8::from(rounding == Rounding::Up && !units.is_zero())),
        };
        Self {
            units,
            decimals: MAX_DECIMALS,
        }
    }

    /// Parses a display-unit decimal string with at most `precision` fraction digits, scaled to
    /// `precision` decimals.
    pub fn parse(text: &str, precision: u8) -> Result<Self, AmountError> {
        assert!(precision <= MAX_DECIMALS, "at most {MAX_DECIMALS} decimals");
        let format = || AmountError::Format(text.chars().take(64).collect());
        let (whole, fraction) = match text.split_once('.') {
            Some((whole, fraction)) if !fraction.is_empty() => (whole, fraction),
            Some(_) => return Err(format()),
            None => (text, ""),
        };
        let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if whole.is_empty() || whole.len() > MAX_WHOLE_DIGITS || !digits(whole) || !digits(fraction)
        {
            return Err(format());
        }
        if fraction.len() > usize::from(precision) {
            return Err(AmountError::Precision {
                text: text.to_owned(),
                precision,
            });
        }
        let padded = format!("{whole}{fraction:0<width$}", width = usize::from(precision));
        let units = U256::from_str_radix(&padded, 10).map_err(|_| format())?;
        Ok(Self {
            units,
            decimals: precision,
        })
    }

    pub fn units(self) -> U256 {
        self.units
    }

    pub fn decimals(self) -> u8 {
        self.decimals
    }

    pub fn is_zero(self) -> bool {
        self.units.is_zero()
    }

    /// The same value with `decimals` fraction digits, rounding when digits are dropped.
    pub fn rescale(self, decimals: u8, rounding: Rounding) -> Self {
        assert!(decimals <= MAX_DECIMALS, "at most {MAX_DECIMALS} decimals");
        let units = match decimals.cmp(&self.decimals) {
            Ordering::Equal => self.units,
            Ordering::Greater => self.units * pow10(decimals - self.decimals),
            Ordering::Less => div_round(self.units, pow10(self.decimals - decimals), rounding),
        };
        Self { units, decimals }
    }

    /// `self × numerator / denominator` at `self`'s scale, rounded as asked: the exact core of
    /// rate and fee arithmetic (a rate is a ratio of integers, never a float). Wire amounts are
    /// below 10^48 base units (30 whole digits, 18 decimals, about 2^160), so numerators below
    /// 2^96 cannot overflow the 256-bit product.
    pub fn mul_div(self, numerator: U256, denominator: U256, rounding: Rounding) -> Self {
        assert!(!denominator.is_zero(), "division by zero");
        Self {
            units: div_round(self.units * numerator, denominator, rounding),
            decimals: self.decimals,
        }
    }

    pub fn checked_sub(self, other: Amount) -> Option<Amount> {
        let other = other.rescale(self.decimals.max(other.decimals), Rounding::Down);
        let this = self.rescale(other.decimals, Rounding::Down);
        this.units.checked_sub(other.units).map(|units| Self {
            units,
            decimals: this.decimals,
        })
    }
}

/// Exact sum at the larger of the two scales.
impl std::ops::Add for Amount {
    type Output = Amount;

    fn add(self, other: Amount) -> Amount {
        let decimals = self.decimals.max(other.decimals);
        let (a, b) = (
            self.rescale(decimals, Rounding::Down),
            other.rescale(decimals, Rounding::Down),
        );
        Self {
            units: a.units + b.units,
            decimals,
        }
    }
}

impl PartialEq for Amount {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Amount {}

impl std::hash::Hash for Amount {
    /// Hashes the value at its smallest scale, so equal amounts hash alike.
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let ten = U256::from(10u8);
        let (mut units, mut decimals) = (self.units, self.decimals);
        while decimals > 0 && (units % ten).is_zero() {
            units /= ten;
            decimals -= 1;
        }
        (units, decimals).hash(state);
    }
}

impl PartialOrd for Amount {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Amount {
    fn cmp(&self, other: &Self) -> Ordering {
        let decimals = self.decimals.max(other.decimals);
        self.rescale(decimals, Rounding::Down)
            .units
            .cmp(&other.rescale(decimals, Rounding::Down).units)
    }
}

/// The shortest exact decimal form: no trailing fraction zeros, no exponent (`"1.5"`, `"0"`).
impl fmt::Display for Amount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let digits = self.units.to_string();
        let scale = usize::from(self.decimals);
        let padded = format!("{digits:0>width$}", width = scale + 1);
        let (whole, fraction) = padded.split_at(padded.len() - scale);
        let fraction = fraction.trim_end_matches('0');
        if fraction.is_empty() {
            f.write_str(whole)
        } else {
            write!(f, "{whole}.{fraction}")
        }
    }
}

fn pow10(exponent: u8) -> U256 {
    U256::from(10u8).pow(U256::from(exponent))
}

fn div_round(value: U256, divisor: U256, rounding: Rounding) -> U256 {
    let (quotient, remainder) = value.div_rem(divisor);
    if rounding == Rounding::Up && !remainder.is_zero() {
        quotient + U256::from(1u8)
    } else {
        quotient
    }
}

/// A decimal as written in a JSON number or string (`0.1`, `4312.55`, `1e-7`, `2.5E+3`,
/// `7.46249999999999999999`), as an [`Amount`] of `precision` fraction digits: every digit is
/// read exactly (never through a float), then the value is cut to `precision` rounded as asked,
/// so a figure swapd promises is never more than the desk's (an estimate rounds down, a
/// required deposit up). `None` for anything that is not a non-negative decimal, or whose
/// exponent or whole part is out of any amount's range.
pub fn decimal(text: &str, precision: u8, rounding: Rounding) -> Option<Amount> {
    /// Far beyond any amount's digits, small enough that the digit string stays short.
    const MAX_EXPONENT: i32 = 64;
    let text = text.trim();
    let (mantissa, exponent) = match text.split_once(['e', 'E']) {
        Some((mantissa, exponent)) => (mantissa, exponent.parse::<i32>().ok()?),
        None => (text, 0),
    };
    if exponent.abs() > MAX_EXPONENT {
        return None;
    }
    let (whole, fraction) = match mantissa.split_once('.') {
        Some((_, "")) => return None,
        Some(parts) => parts,
        None => (mantissa, ""),
    };
    let digits_only = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits_only(whole) || !digits_only(fraction) {
        return None;
    }
    // Move the point `exponent` places: all digits, and where the point goes among them.
    let digits = format!("{whole}{fraction}");
    let point = i64::try_from(whole.len()).ok()? + i64::from(exponent);
    let plain = if point <= 0 {
        format!("0.{}{digits}", "0".repeat(usize::try_from(-point).ok()?))
    } else {
        let point = usize::try_from(point).ok()?;
        if point >= digits.len() {
            format!("{digits}{}", "0".repeat(point - digits.len()))
        } else {
            format!("{}.{}", &digits[..point], &digits[point..])
        }
    };
    let plain = trim_zeros(&plain);
    let (whole, fraction) = plain.split_once('.').unwrap_or((&plain, ""));
    let kept = fraction.len().min(usize::from(precision));
    let (kept_fraction, dropped) = fraction.split_at(kept);
    let cut = if kept_fraction.is_empty() {
        whole.to_owned()
    } else {
        format!("{whole}.{kept_fraction}")
    };
    let amount = Amount::parse(&cut, precision).ok()?;
    let more = dropped.bytes().any(|b| b != b'0');
    Some(match rounding {
        Rounding::Up if more => {
            amount + Amount::from_units(alloy_primitives::U256::from(1u8), precision)
        }
        _ => amount,
    })
}

/// `007.500` → `7.5`, `0.000` → `0`: the digits [`Amount::parse`] reads.
fn trim_zeros(plain: &str) -> String {
    let (whole, fraction) = plain.split_once('.').unwrap_or((plain, ""));
    let whole = whole.trim_start_matches('0');
    let fraction = fraction.trim_end_matches('0');
    let whole = if whole.is_empty() { "0" } else { whole };
    if fraction.is_empty() {
        whole.to_owned()
    } else {
        format!("{whole}.{fraction}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn amount(text: &str, precision: u8) -> Amount {
        Amount::parse(text, precision).unwrap()
    }

    #[test]
    fn equal_values_are_equal_and_hash_alike_at_any_scale() {
        use std::hash::BuildHasher;
        let state = std::collections::hash_map::RandomState::new();
        let (short, long) = (amount("1.5", 8), amount("1.50", 18));
        assert_eq!(short, long);
        assert_eq!(state.hash_one(short), state.hash_one(long));
        assert_ne!(amount("1.5", 8), amount("1.500001", 18));
        assert_eq!(amount("0", 0), Amount::zero(18));
    }

    #[test]
    fn parsing_is_strict() {
        assert_eq!(amount("1.5", 8).units(), U256::from(150_000_000u64));
        assert_eq!(amount("0", 2).units(), U256::ZERO);
        assert_eq!(amount("000.10", 2).to_string(), "0.1");
        assert_eq!(
            amount("123456789012345678901234567890.123456789012345678", 18).to_string(),
            "123456789012345678901234567890.123456789012345678"
        );
        for bad in [
            "",
            ".5",
            "1.",
            "-1",
            "+1",
            "1e3",
            "1,5",
            " 1",
            "1 ",
            "0x10",
            "１",
            &"9".repeat(31),
            "1.2.3",
            "NaN",
        ] {
            assert!(
                matches!(Amount::parse(bad, 8), Err(AmountError::Format(_))),
                "{bad:?}"
            );
        }
        assert_eq!(
            Amount::parse("0.123", 2),
            Err(AmountError::Precision {
                text: "0.123".into(),
                precision: 2
            })
        );
    }

    #[test]
    fn display_is_the_shortest_exact_form() {
        assert_eq!(
            Amount::from_units(U256::from(5u8), 18).to_string(),
            "0.000000000000000005"
        );
        assert_eq!(
            Amount::from_units(U256::from(1_000_000u64), 6).to_string(),
            "1"
        );
        assert_eq!(Amount::zero(8).to_string(), "0");
    }

    #[test]
    fn rescaling_and_rates_round_only_when_asked() {
        let x = amount("1.23456789", 8);
        assert_eq!(x.rescale(6, Rounding::Down).to_string(), "1.234567");
        assert_eq!(x.rescale(6, Rounding::Up).to_string(), "1.234568");
        assert_eq!(x.rescale(18, Rounding::Down).to_string(), "1.23456789");
        // 0.1 BTC at 30 000.5 USDT/BTC, at 6 decimals.
        let usdt =
            amount("0.1", 6).mul_div(U256::from(300_005u64), U256::from(10u8), Rounding::Down);
        assert_eq!(usdt.to_string(), "3000.05");
        let third = amount("1", 6).mul_div(U256::from(1u8), U256::from(3u8), Rounding::Down);
        assert_eq!(
            (third.to_string(), (third + third + third).to_string()),
            ("0.333333".into(), "0.999999".into())
        );
    }

    #[test]
    fn comparison_and_subtraction_across_scales() {
        assert!(amount("1.5", 2) > amount("1.49999999", 8));
        assert_eq!(
            amount("1.5", 2).cmp(&amount("1.50000000", 8)),
            Ordering::Equal
        );
        assert_eq!(
            amount("2", 2)
                .checked_sub(amount("0.25", 8))
                .unwrap()
                .to_string(),
            "1.75"
        );
        assert_eq!(amount("1", 2).checked_sub(amount("2", 2)), None);
    }

    proptest! {
        #[test]
        fn amounts_and_addresses_take_any_input_without_panicking(
            raw in any::<String>(),
            near in "[-+]?[0-9]{0,40}([.,][0-9]{0,40})?([eE][-+]?[0-9]{1,3})?",
            precision in 0u8..=18,
        ) {
            for text in [raw.as_str(), near.as_str()] {
                if let Ok(amount) = Amount::parse(text, precision) {
                    prop_assert_eq!(Amount::parse(&amount.to_string(), precision), Ok(amount));
                }
                for network in crate::address::Network::ALL {
                    let _ = network.validate_address(text);
                    let _ = network.validate_tag(Some(text));
                }
            }
        }
    }

    proptest! {
        #[test]
        /// Every amount the wire format can carry (at most 30 whole digits) survives display and
        /// parsing unchanged.
        fn display_and_parse_round_trip(units in 0u128..10u128.pow(30), decimals in 0u8..=18) {
            let a = Amount::from_units(U256::from(units), decimals);
            prop_assert_eq!(Amount::parse(&a.to_string(), decimals).unwrap(), a);
        }

        #[test]
        fn rounding_brackets_the_exact_value(units in any::<u64>(), num in 1u64..u64::MAX, den in 1u64..u64::MAX) {
            let a = Amount::from_units(U256::from(units), 8);
            let down = a.mul_div(U256::from(num), U256::from(den), Rounding::Down);
            let up = a.mul_div(U256::from(num), U256::from(den), Rounding::Up);
            let exact = U256::from(units) * U256::from(num);
            prop_assert!(down.units() * U256::from(den) <= exact);
            prop_assert!(up.units() * U256::from(den) >= exact);
            prop_assert!(up.units() - down.units() <= U256::from(1u8));
        }
    }

    #[test]
    fn base_units_of_tokens_with_more_decimals_than_kept_are_cut_as_asked() {
        let units = U256::from(1_234_567u64) * pow10(18);
        let down = Amount::from_base_units(units + U256::from(1u8), 24, Rounding::Down);
        assert_eq!(down.to_string(), "1.234567");
        let up = Amount::from_base_units(units + U256::from(1u8), 24, Rounding::Up);
        assert_eq!(up.to_string(), "1.234567000000000001");
        assert_eq!(
            Amount::from_base_units(U256::from(5u8), 6, Rounding::Down).to_string(),
            "0.000005"
        );
        assert!(Amount::from_base_units(U256::from(5u8), 255, Rounding::Down).is_zero());
        assert!(!Amount::from_base_units(U256::from(5u8), 255, Rounding::Up).is_zero());
    }
}

#[cfg(test)]
mod decimal_tests {
    use super::*;

    fn shown(text: &str, precision: u8) -> Option<String> {
        decimal(text, precision, Rounding::Down).map(|amount| amount.to_string())
    }

    fn up(text: &str, precision: u8) -> Option<String> {
        decimal(text, precision, Rounding::Up).map(|amount| amount.to_string())
    }

    #[test]
    fn decimals_are_read_exactly_from_their_text() {
        assert_eq!(shown("0.1", 8).as_deref(), Some("0.1"));
        assert_eq!(shown("4312.55", 6).as_deref(), Some("4312.55"));
        assert_eq!(shown("0.50000000", 8).as_deref(), Some("0.5"));
        assert_eq!(shown("1e-7", 8).as_deref(), Some("0.0000001"));
        assert_eq!(shown("2.5E+3", 2).as_deref(), Some("2500"));
        assert_eq!(shown("12", 0).as_deref(), Some("12"));
        // 0.1 + 0.2 as a float is 0.30000000000000004; the text is what counts.
        assert_eq!(shown("0.30000000000000004", 8).as_deref(), Some("0.3"));
        // More digits than the currency has: an estimate rounds down, a requirement up.
        assert_eq!(shown("1.999999999", 8).as_deref(), Some("1.99999999"));
        assert_eq!(up("1.999999999", 8).as_deref(), Some("2"));
        assert_eq!(up("1.99999999", 8).as_deref(), Some("1.99999999"), "exact");
        assert_eq!(shown("0", 8).as_deref(), Some("0"));
    }

    #[test]
    fn float_noise_and_tiny_exponents_beyond_eighteen_digits_are_cut_not_refused() {
        // ChangeNOW's JSON numbers as its serializer writes them.
        assert_eq!(
            shown("7.46249999999999999999", 8).as_deref(),
            Some("7.46249999")
        );
        assert_eq!(up("7.46249999999999999999", 8).as_deref(), Some("7.4625"));
        assert_eq!(
            shown("5.123456789012345e-05", 8).as_deref(),
            Some("0.00005123")
        );
        assert_eq!(
            up("5.123456789012345e-05", 8).as_deref(),
            Some("0.00005124")
        );
        assert_eq!(
            shown("5.123456789012345e-05", 18).as_deref(),
            Some("0.000051234567890123")
        );
        assert_eq!(shown("1e-19", 18).as_deref(), Some("0"));
        assert_eq!(up("1e-19", 18).as_deref(), Some("0.000000000000000001"));
        assert_eq!(
            shown("4312.549871000000000000001", 6).as_deref(),
            Some("4312.549871")
        );
    }

    #[test]
    fn anything_else_is_not_a_decimal() {
        for text in [
            "",
            "-1",
            "1.",
            ".5",
            "abc",
            "1e",
            "1e9999999999",
            "1e65",
            "0x10",
            "1,5",
            "NaN",
        ] {
            assert_eq!(shown(text, 8), None, "{text}");
        }
    }

    #[test]
    fn rounding_down_never_exceeds_and_up_never_falls_short_of_the_text() {
        use proptest::prelude::*;
        proptest!(|(whole in 0u64..1_000_000, fraction in "[0-9]{0,30}", precision in 0u8..=18)| {
            let text = if fraction.is_empty() { whole.to_string() } else { format!("{whole}.{fraction}") };
            let down = decimal(&text, precision, Rounding::Down).unwrap();
            let up = decimal(&text, precision, Rounding::Up).unwrap();
            // Compare at 18 + 30 digits of scale as strings of the exact value.
            let exact = exact_units(&text, 48);
            prop_assert!(exact_units(&down.to_string(), 48) <= exact);
            prop_assert!(exact_units(&up.to_string(), 48) >= exact);
            let step = up.checked_sub(down).unwrap();
            prop_assert!(step.is_zero() || step == Amount::from_units(alloy_primitives::U256::from(1u8), precision));
        });
    }

    /// `text` scaled by 10^scale, as an integer (for comparisons beyond 18 decimals).
    fn exact_units(text: &str, scale: usize) -> alloy_primitives::U256 {
        let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
        let digits = format!("{whole}{fraction:0<scale$}");
        alloy_primitives::U256::from_str_radix(&digits, 10).unwrap()
    }
}
