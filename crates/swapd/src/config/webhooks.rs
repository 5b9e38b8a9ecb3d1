//! `[webhooks]`: how deliveries go out and how long their history is kept.

use std::net::SocketAddr;

use serde::{Deserialize, Serialize};

use super::{ConfigError, within};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhooksConfig {
    /// How often the dispatcher looks for due deliveries, in milliseconds.
    pub poll_interval_ms: u64,
    /// How long a receiver may take to answer, in milliseconds (success is a 2xx within it).
    pub timeout_ms: u64,
    /// Deliveries claimed per pass, and sent at once.
    pub batch: u32,
    pub concurrency: usize,
    /// How long events (and their deliveries) are kept for replay and the delivery log, in days.
    pub retention_days: u32,
    /// Replays one subscription may ask for per minute.
    pub replays_per_minute: u32,
    /// A DNS server (`IP:PORT`) that resolves webhook hosts instead of the system's resolver.
    #[serde(default)]
    pub dns_server: Option<SocketAddr>,
}

impl Default for WebhooksConfig {
    fn default() -> Self {
        Self {
            poll_interval_ms: 100,
            timeout_ms: swapd_core::webhooks::delivery::DELIVERY_TIMEOUT_MS,
            batch: 64,
            concurrency: 16,
            retention_days: 30,
            replays_per_minute: 10,
            dns_server: None,
        }
    }
}

impl WebhooksConfig {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        within(
            "webhooks.retention_days",
            self.retention_days,
            1..=3650,
            "must be from 1 to 3650 days",
        )?;
        within(
            "webhooks.replays_per_minute",
            self.replays_per_minute,
            1..=10_000,
            "must be from 1 to 10000",
        )?;
        within(
            "webhooks.poll_interval_ms",
            self.poll_interval_ms,
            10..=60_000,
            "must be from 10 to 60000 milliseconds",
        )?;
        within(
            "webhooks.timeout_ms",
            self.timeout_ms,
            100..=30_000,
            "must be from 100 to 30000 milliseconds",
        )?;
        within(
            "webhooks.batch",
            self.batch,
            1..=1_000,
            "must be from 1 to 1000",
        )?;
        within(
            "webhooks.concurrency",
            self.concurrency,
            1..=256,
            "must be from 1 to 256",
        )
    }
}
