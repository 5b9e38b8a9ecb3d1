//! `[sandbox]`: how the sandbox's providers behave (docs/sandbox.md, "Behaviour").

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use swapd_sandbox::{Behaviour, Behaviours, PROVIDER_IDS};

use super::{ConfigError, setting};

/// `realistic` (providers that differ: some refund or fail a share of their swaps, some
/// deliver under their float estimates, some are slow) or `punctual` (every provider delivers
/// what it estimates, at once); `[sandbox.behaviour.<provider>]` overrides one provider.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxConfig {
    pub profile: SandboxProfile,
    #[serde(default)]
    pub behaviour: BTreeMap<String, Behaviour>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxProfile {
    #[default]
    Realistic,
    Punctual,
}

impl SandboxConfig {
    /// Every provider punctual: what tests of other things run with.
    pub fn punctual() -> Self {
        Self {
            profile: SandboxProfile::Punctual,
            behaviour: BTreeMap::new(),
        }
    }

    /// Each sandbox provider's behaviour: the profile's, with the overrides.
    pub fn behaviours(&self) -> Behaviours {
        let base = match self.profile {
            SandboxProfile::Realistic => Behaviours::default(),
            SandboxProfile::Punctual => Behaviours::punctual(),
        };
        self.behaviour
            .iter()
            .fold(base, |all, (id, behaviour)| all.with(id, *behaviour))
    }

    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        for (id, behaviour) in &self.behaviour {
            let key = format!("sandbox.behaviour.{id}");
            if !PROVIDER_IDS.contains(&id.as_str()) {
                return Err(setting(
                    &key,
                    format!(
                        "no sandbox provider `{id}` (known: {})",
                        PROVIDER_IDS.join(", ")
                    ),
                ));
            }
            if behaviour.refund_bps > 10_000 || behaviour.fail_bps > 10_000 {
                return Err(setting(&key, "refund_bps and fail_bps are 0 to 10000"));
            }
            if behaviour.float_drift_bps.unsigned_abs() > 5_000
                || behaviour.drift_spread_bps > 5_000
            {
                return Err(setting(
                    &key,
                    "float_drift_bps and drift_spread_bps are within ±5000",
                ));
            }
            if behaviour.p90_secs < behaviour.median_secs || behaviour.p90_secs > 86_400 {
                return Err(setting(
                    &key,
                    "p90_secs is at least median_secs and at most 86400",
                ));
            }
        }
        Ok(())
    }
}
