//! The sandbox price feed: a shipped table of USD prices that move over time by a seeded random
//! walk, deterministically, so tests are reproducible and prices still change.
//!
//! The price of an asset at minute `m` is its base price scaled by the sum of the last
//! [`WINDOW_MINUTES`] per-minute steps, each drawn from SHA-256(seed, asset, minute) in
//! [-[`MAX_STEP_BPS`], +[`MAX_STEP_BPS`]] basis points. Each minute moves like a random walk,
//! the deviation stays bounded, and any moment is computed in O(window) without replaying
//! history. Stablecoins stay pegged. All arithmetic is on integers.
//!
//! Each feed remembers every asset's deviation at the last minute it was asked for, and slides
//! it by one step at each end when asked for the next minute: a window of SHA-256 draws per
//! asset per request made the feed most of a sandbox order's cost (docs/benchmarks.md).

use std::collections::HashMap;
use std::sync::Mutex;

use alloy_primitives::U256;
use sha2::{Digest, Sha256};
use swapd_core::amount::{Amount, Rounding};

/// Fraction digits of every feed price.
pub const PRICE_DECIMALS: u8 = 8;
/// Minutes of steps that make up the current deviation from the base price.
pub const WINDOW_MINUTES: i64 = 240;
/// Largest move in one minute, in basis points.
pub const MAX_STEP_BPS: i64 = 10;
const BPS: i64 = 10_000;

/// Shipped base prices in USD (rounded market levels; the sandbox needs plausible ratios, not
/// today's quotes). Pegged assets do not move.
const BASE_PRICES: &[(&str, &str, bool)] = &[
    ("BTC", "97000", false),
    ("ETH", "3400", false),
    ("SOL", "180", false),
    ("BNB", "650", false),
    ("POL", "0.45", false),
    ("TRX", "0.25", false),
    ("XRP", "2.2", false),
    ("LTC", "95", false),
    ("JUP", "0.9", false),
    ("ARB", "0.6", false),
    ("USDT", "1", true),
    ("USDC", "1", true),
    ("DAI", "1", true),
];

#[derive(Debug)]
pub struct PriceFeed {
    seed: u64,
    /// Per asset: the last minute asked for and the deviation then, in basis points.
    recent: Mutex<HashMap<&'static str, (i64, i64)>>,
}

impl Clone for PriceFeed {
    fn clone(&self) -> Self {
        Self::new(self.seed)
    }
}

impl PriceFeed {
    pub fn new(seed: u64) -> Self {
        Self {
            seed,
            recent: Mutex::default(),
        }
    }

    /// The symbols the feed prices.
    pub fn symbols() -> impl Iterator<Item = &'static str> {
        BASE_PRICES.iter().map(|(symbol, _, _)| *symbol)
    }

    /// The USD price of `symbol` at `now_ms`, with [`PRICE_DECIMALS`] fraction digits; `None`
    /// for symbols the feed does not know.
    pub fn usd_price(&self, symbol: &str, now_ms: i64) -> Option<Amount> {
        let &(symbol, base, pegged) = BASE_PRICES.iter().find(|(s, _, _)| *s == symbol)?;
        let base = Amount::parse(base, PRICE_DECIMALS).expect("shipped prices are valid");
        if pegged {
            return Some(base);
        }
        let deviation = self.deviation_bps(symbol, now_ms.div_euclid(60_000));
        let factor = U256::from((BPS + deviation) as u64);
        Some(base.mul_div(factor, U256::from(BPS as u64), Rounding::Down))
    }

    /// Sum of the last [`WINDOW_MINUTES`] steps ending at `minute`, in basis points.
    fn deviation_bps(&self, symbol: &'static str, minute: i64) -> i64 {
        let mut recent = self
            .recent
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let deviation = match recent.get(symbol) {
            Some(&(at, deviation)) if at == minute => return deviation,
            Some(&(at, deviation)) if at == minute - 1 => {
                deviation + self.step_bps(symbol, minute)
                    - self.step_bps(symbol, minute - WINDOW_MINUTES)
            }
            _ => self.window_bps(symbol, minute),
        };
        recent.insert(symbol, (minute, deviation));
        deviation
    }

    /// [`PriceFeed::deviation_bps`] from every step of the window.
    fn window_bps(&self, symbol: &str, minute: i64) -> i64 {
        (minute - WINDOW_MINUTES + 1..=minute)
            .map(|m| self.step_bps(symbol, m))
            .sum()
    }

    fn step_bps(&self, symbol: &str, minute: i64) -> i64 {
        let mut hasher = Sha256::new();
        hasher.update(self.seed.to_be_bytes());
        hasher.update(symbol.as_bytes());
        hasher.update(minute.to_be_bytes());
        let digest = hasher.finalize();
        let draw = u64::from_be_bytes(digest[..8].try_into().expect("8 bytes"));
        (draw % (2 * MAX_STEP_BPS as u64 + 1)) as i64 - MAX_STEP_BPS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: i64 = 1_800_000_000_000;

    #[test]
    fn prices_are_deterministic_for_a_seed_and_time() {
        let feed = PriceFeed::new(7);
        assert_eq!(
            feed.usd_price("BTC", T),
            PriceFeed::new(7).usd_price("BTC", T)
        );
        assert_eq!(
            feed.usd_price("BTC", T),
            feed.usd_price("BTC", T + 59_999 - T.rem_euclid(60_000))
        );
        assert_ne!(
            feed.usd_price("BTC", T),
            PriceFeed::new(8).usd_price("BTC", T)
        );
        assert_eq!(feed.usd_price("DOGE", T), None);
    }

    #[test]
    fn prices_move_within_the_bound_and_pegs_hold() {
        let feed = PriceFeed::new(1);
        let bound = WINDOW_MINUTES * MAX_STEP_BPS;
        for symbol in PriceFeed::symbols() {
            let base = Amount::parse(
                BASE_PRICES.iter().find(|(s, _, _)| *s == symbol).unwrap().1,
                PRICE_DECIMALS,
            )
            .unwrap();
            let prices: Vec<Amount> = (0..60)
                .map(|i| feed.usd_price(symbol, T + i * 3_600_000).unwrap())
                .collect();
            let pegged = BASE_PRICES.iter().any(|(s, _, p)| *s == symbol && *p);
            if pegged {
                assert!(prices.iter().all(|p| *p == base), "{symbol} stays pegged");
                continue;
            }
            assert!(prices.windows(2).any(|w| w[0] != w[1]), "{symbol} moves");
            let low = base.mul_div(
                U256::from((BPS - bound) as u64),
                U256::from(BPS as u64),
                Rounding::Down,
            );
            let high = base.mul_div(
                U256::from((BPS + bound) as u64),
                U256::from(BPS as u64),
                Rounding::Up,
            );
            assert!(
                prices.iter().all(|p| *p >= low && *p <= high),
                "{symbol} stays within ±{bound} bps"
            );
        }
    }

    #[test]
    fn one_minute_moves_by_at_most_two_steps_of_the_window() {
        // Consecutive minutes share all but one step at each end of the window.
        let feed = PriceFeed::new(3);
        for i in 0..100 {
            let minute = T / 60_000 + i;
            let change = feed.deviation_bps("ETH", minute + 1) - feed.deviation_bps("ETH", minute);
            assert!(change.abs() <= 2 * MAX_STEP_BPS, "{change}");
        }
    }

    #[test]
    fn remembered_and_slid_deviations_equal_the_whole_window() {
        let feed = PriceFeed::new(5);
        let start = T / 60_000;
        // Minute by minute (slid), again (remembered), backwards and by jumps (recomputed).
        let minutes = (0..300)
            .chain(0..3)
            .chain((0..50).rev())
            .chain([1_000, 1_001, 7, 100_000]);
        for offset in minutes {
            let minute = start + offset;
            assert_eq!(
                feed.deviation_bps("BTC", minute),
                feed.window_bps("BTC", minute),
                "minute {offset}"
            );
        }
    }
}
