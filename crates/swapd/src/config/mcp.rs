//! `[mcp]`: the MCP server at `/mcp` (docs/mcp.md, "Limits").

use serde::{Deserialize, Serialize};

use super::{ConfigError, setting};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpConfig {
    /// MCP sessions this node holds at once; a new one past it is refused (503) until one ends.
    pub max_sessions: usize,
    /// How long a session may stay idle before it is closed, in seconds.
    pub session_idle_secs: u64,
    /// Host names (`host` or `host:port`) `/mcp` answers besides `public_url`'s and loopback
    /// (any other `Host` is refused: DNS rebinding).
    pub allowed_hosts: Vec<String>,
}

impl Default for McpConfig {
    fn default() -> Self {
        Self {
            max_sessions: 1_000,
            session_idle_secs: 600,
            allowed_hosts: Vec::new(),
        }
    }
}

impl McpConfig {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if self.max_sessions == 0 {
            return Err(setting("mcp.max_sessions", "must be at least 1"));
        }
        if self.session_idle_secs == 0 {
            return Err(setting("mcp.session_idle_secs", "must be at least 1"));
        }
        Ok(())
    }
}
