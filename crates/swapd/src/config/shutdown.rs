//! `[shutdown]`: how a node stops on SIGTERM (docs/deploy.md, "Stopping").

use serde::{Deserialize, Serialize};

/// `/readyz` answers not ready at once, the listener keeps serving for `drain_secs` (so load
/// balancers stop sending first), then in-flight requests and worker passes get `grace_secs`
/// more before the process exits regardless (leases left behind end on their own and another
/// node takes the work).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShutdownConfig {
    pub drain_secs: u64,
    pub grace_secs: u64,
}

impl Default for ShutdownConfig {
    fn default() -> Self {
        Self {
            drain_secs: 5,
            grace_secs: 25,
        }
    }
}
