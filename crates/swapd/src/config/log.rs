//! `[log]`: how the node logs.

use serde::{Deserialize, Serialize};

use super::{ConfigError, setting};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogConfig {
    pub format: LogFormat,
    /// A tracing filter, e.g. `info` or `swapd=debug,tower_http=info`.
    pub level: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
}

impl Default for LogConfig {
    fn default() -> Self {
        Self {
            format: LogFormat::Text,
            level: "info".into(),
        }
    }
}

impl LogConfig {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if self.level.trim().is_empty() {
            return Err(setting("log.level", "must not be empty (e.g. `info`)"));
        }
        Ok(())
    }
}
