//! `[market]`: how routes are judged by what providers delivered (docs/market.md, "Observed
//! figures").

use serde::{Deserialize, Serialize};

use super::{ConfigError, within};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MarketConfig {
    /// How long outcomes count (and are kept), in days.
    pub observed_window_days: u32,
    /// Outcomes a provider needs (for a pair, or over every pair) before figures are shown.
    pub observed_min_samples: u32,
    /// How often each node makes the figures anew from the outcomes, in seconds.
    pub observed_refresh_secs: u64,
}

impl Default for MarketConfig {
    fn default() -> Self {
        Self {
            observed_window_days: 30,
            observed_min_samples: 20,
            observed_refresh_secs: 30,
        }
    }
}

impl MarketConfig {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        within(
            "market.observed_window_days",
            self.observed_window_days,
            1..=365,
            "must be 1 to 365",
        )?;
        within(
            "market.observed_min_samples",
            self.observed_min_samples,
            1..=100_000,
            "must be 1 to 100000",
        )?;
        within(
            "market.observed_refresh_secs",
            self.observed_refresh_secs,
            1..=3_600,
            "must be 1 to 3600",
        )
    }

    pub fn window_ms(&self) -> i64 {
        i64::from(self.observed_window_days) * 86_400_000
    }
}
