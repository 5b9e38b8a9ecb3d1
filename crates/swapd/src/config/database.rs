//! `database_url` and `[database]`: where the store is and how it is reached.

use std::fmt;
use std::str::FromStr;

use swapd_store::Backend;

use super::value::{CredentialUrl, through_text};
use super::{ConfigError, within};
use serde::{Deserialize, Serialize};

/// `sqlite://PATH` or `postgres://…`; shown with its password starred.
#[derive(Debug, Clone)]
pub struct DatabaseUrl {
    url: CredentialUrl,
    backend: Backend,
}

impl DatabaseUrl {
    pub fn expose(&self) -> &str {
        self.url.expose()
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The embedded database file in `data_dir`: the default.
    pub fn embedded(data_dir: &std::path::Path) -> Self {
        format!("sqlite://{}", data_dir.join("swapd.db").display())
            .parse()
            .expect("a sqlite:// URL")
    }
}

impl FromStr for DatabaseUrl {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let backend = Backend::from_url(text).map_err(|e| e.to_string())?;
        Ok(Self {
            url: CredentialUrl::new(text),
            backend,
        })
    }
}

impl fmt::Display for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.url.fmt(f)
    }
}

through_text!(DatabaseUrl);

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatabaseConfig {
    pub max_connections: u32,
    pub acquire_timeout_ms: u64,
    pub statement_timeout_ms: u64,
}

impl Default for DatabaseConfig {
    fn default() -> Self {
        Self {
            max_connections: 10,
            acquire_timeout_ms: 5_000,
            statement_timeout_ms: 5_000,
        }
    }
}

impl DatabaseConfig {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        within(
            "database.max_connections",
            self.max_connections,
            1..=1000,
            "must be 1 to 1000",
        )?;
        within(
            "database.acquire_timeout_ms",
            self.acquire_timeout_ms,
            100..=600_000,
            "must be 100 to 600000",
        )?;
        within(
            "database.statement_timeout_ms",
            self.statement_timeout_ms,
            100..=600_000,
            "must be 100 to 600000",
        )
    }
}
