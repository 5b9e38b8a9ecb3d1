//! `[shared]`: where several nodes keep the state every request touches (docs/operations.md,
//! "Several nodes").

use serde::{Deserialize, Serialize};

use super::value;
use super::{ConfigError, setting};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SharedConfig {
    /// `redis://[user:password@]host[:port][/db]` (or `rediss://`): nonces, rate limits, the
    /// per-address limits, the x402 windows and key revocations live there. Unset: one SQLite
    /// node keeps them in memory, PostgreSQL nodes in the database.
    #[serde(default, with = "value::optional")]
    pub redis_url: Option<RedisUrl>,
    /// Names every key and channel swapd uses in Redis, so deployments may share one.
    pub redis_prefix: String,
}

value::credential_url!(
    /// A `redis://` or `rediss://` URL, shown with its password starred.
    RedisUrl,
    ["redis://", "rediss://"],
    "must start with redis:// or rediss://"
);

impl Default for SharedConfig {
    fn default() -> Self {
        Self {
            redis_url: None,
            redis_prefix: "swapd".into(),
        }
    }
}

impl SharedConfig {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if self.redis_prefix.is_empty()
            || !self
                .redis_prefix
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            return Err(setting(
                "shared.redis_prefix",
                "must be 1 or more letters, digits, `-`, `_` or `.`",
            ));
        }
        Ok(())
    }
}
