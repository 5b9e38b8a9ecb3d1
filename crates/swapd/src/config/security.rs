//! `[security]`: who the client is behind proxies, and the limits every request meets.

use ipnet::IpNet;
use serde::{Deserialize, Serialize};

use super::{ConfigError, within};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecurityConfig {
    /// Peers whose `X-Forwarded-For` is believed. Empty: the TCP peer is the client.
    pub trusted_proxies: Vec<IpNet>,
    /// API requests per second per client address, before authentication (bursts of twice
    /// that); 0 turns the limit off.
    pub ip_requests_per_second: u32,
    /// Failed authentications (401s) per minute per client address; past it the address is
    /// refused (429 `ip_rate_limited`) until it has one to spare. 0 turns the limit off.
    pub ip_auth_failures_per_minute: u32,
    /// How long a request may run before it is answered 503 `service_unavailable`, in
    /// milliseconds.
    pub request_timeout_ms: u64,
}

impl Default for SecurityConfig {
    fn default() -> Self {
        Self {
            trusted_proxies: Vec::new(),
            ip_requests_per_second: swapd_api::ip_limits::DEFAULT_REQUESTS_PER_SECOND,
            ip_auth_failures_per_minute: swapd_api::ip_limits::DEFAULT_AUTH_FAILURES_PER_MINUTE,
            request_timeout_ms: 60_000,
        }
    }
}

impl SecurityConfig {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        within(
            "security.request_timeout_ms",
            self.request_timeout_ms,
            1_000..=600_000,
            "must be from 1000 to 600000 milliseconds",
        )
    }
}
