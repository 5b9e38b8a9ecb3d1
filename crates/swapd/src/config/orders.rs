//! `[orders]`: how long orders wait and how often the order engine looks at them.

use serde::{Deserialize, Serialize};

use super::{ConfigError, within};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OrdersConfig {
    /// How often the order engine looks for orders due for a step, in milliseconds.
    pub poll_interval_ms: i64,
    /// How long a user has to choose in an emergency before a refund, in seconds.
    pub emergency_window_secs: i64,
    /// How long a new fixed-rate order waits for its deposit (and keeps its rate), in seconds.
    pub fixed_lifetime_secs: i64,
    /// How long a new float-rate order waits for its deposit, in seconds.
    pub float_lifetime_secs: i64,
    /// Sandbox fault: a sandbox desk stops dead right after its next payout, before recording
    /// it, so a crash at the worst moment can be staged (kill it, restart it, see one payout).
    pub sandbox_pause_after_payout: bool,
}

impl Default for OrdersConfig {
    fn default() -> Self {
        Self {
            poll_interval_ms: 1_000,
            emergency_window_secs: 24 * 60 * 60,
            fixed_lifetime_secs: 30 * 60,
            float_lifetime_secs: 60 * 60,
            sandbox_pause_after_payout: false,
        }
    }
}

impl OrdersConfig {
    /// The orders' timing these settings give, for the API (an order's lifetime, its first
    /// look) and the order engine alike.
    pub fn rules(&self) -> swapd_core::offchain::follow::LifecycleRules {
        use swapd_core::offchain::order::OrderLifetimes;
        swapd_core::offchain::follow::LifecycleRules {
            lifetimes: OrderLifetimes {
                fixed_ms: self.fixed_lifetime_secs * 1000,
                float_ms: self.float_lifetime_secs * 1000,
            },
            poll_interval_ms: self.poll_interval_ms,
            emergency_window_ms: self.emergency_window_secs * 1000,
            ..Default::default()
        }
    }

    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        within(
            "orders.poll_interval_ms",
            self.poll_interval_ms,
            10..=600_000,
            "must be from 10 to 600000 milliseconds",
        )?;
        within(
            "orders.emergency_window_secs",
            self.emergency_window_secs,
            1..=30 * 24 * 3600,
            "must be from 1 second to 30 days",
        )?;
        for (name, secs) in [
            ("orders.fixed_lifetime_secs", self.fixed_lifetime_secs),
            ("orders.float_lifetime_secs", self.float_lifetime_secs),
        ] {
            within(
                name,
                secs,
                1..=7 * 24 * 3600,
                "must be from 1 second to 7 days",
            )?;
        }
        Ok(())
    }
}
