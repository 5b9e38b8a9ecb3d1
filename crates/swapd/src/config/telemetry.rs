//! `[telemetry]`: OpenTelemetry traces (docs/deploy.md, "Traces"), off unless an endpoint is
//! set.

use serde::{Deserialize, Serialize};

use super::value::{self, HttpUrl};
use super::{ConfigError, setting};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetryConfig {
    /// The OTLP/HTTP collector's base URL (`http://127.0.0.1:4318`); spans go to its
    /// `/v1/traces`. Unset: no traces.
    #[serde(default, with = "value::optional")]
    pub otlp_endpoint: Option<HttpUrl>,
    /// `service.name` on every span.
    pub service_name: String,
    /// The share of new traces recorded, 0 to 1 (a trace a caller started keeps its caller's
    /// decision).
    pub sample_ratio: f64,
    /// Spans waiting for export at most; past it new ones are dropped.
    pub queue_size: usize,
    /// How long one export may take, in milliseconds.
    pub export_timeout_ms: u64,
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        Self {
            otlp_endpoint: None,
            service_name: "swapd".into(),
            sample_ratio: 1.0,
            queue_size: 2048,
            export_timeout_ms: 3_000,
        }
    }
}

impl TelemetryConfig {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if self
            .otlp_endpoint
            .as_ref()
            .is_some_and(|endpoint| endpoint.url().scheme() != "http")
        {
            return Err(setting(
                "telemetry.otlp_endpoint",
                "must be an http:// URL of an OTLP/HTTP collector (an agent next to the node); https is not supported",
            ));
        }
        if !(0.0..=1.0).contains(&self.sample_ratio) {
            return Err(setting("telemetry.sample_ratio", "must be from 0 to 1"));
        }
        if self.queue_size == 0 || self.export_timeout_ms == 0 {
            return Err(setting(
                "telemetry.queue_size",
                "queue_size and export_timeout_ms must be at least 1",
            ));
        }
        Ok(())
    }
}
