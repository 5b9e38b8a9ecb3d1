//! How each sandbox provider behaves (docs/sandbox.md, "Behaviour"), so that a sandbox shows
//! providers that differ as real ones do: some refund or fail a share of their swaps, some
//! deliver under their float estimates, some are slow. Every draw is deterministic in the
//! swap's id, so a step repeated after a crash decides the same.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

/// One provider's behaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Behaviour {
    /// Of the deposits it would exchange, the share it sends back instead, in basis points.
    pub refund_bps: u32,
    /// Of the swaps it starts, the share that fail, in basis points.
    pub fail_bps: u32,
    /// Where float deliveries land against their estimate, on median, in basis points
    /// (negative: under); each swap varies by up to `drift_spread_bps` around it.
    pub float_drift_bps: i32,
    pub drift_spread_bps: u32,
    /// How long a swap takes once started (deposit confirmed, or transaction reported):
    /// median and 90th percentile, in seconds.
    pub median_secs: u32,
    pub p90_secs: u32,
}

impl Behaviour {
    /// Always delivers what it estimates, at once: what tests of other things want.
    pub const PUNCTUAL: Behaviour = Behaviour {
        refund_bps: 0,
        fail_bps: 0,
        float_drift_bps: 0,
        drift_spread_bps: 0,
        median_secs: 0,
        p90_secs: 0,
    };

    /// Whether the swap `id` is sent back instead of exchanged.
    pub fn refunds(&self, id: &str) -> bool {
        draw(id, "refund") < self.refund_bps
    }

    /// Whether the swap `id` fails once started.
    pub fn fails(&self, id: &str) -> bool {
        draw(id, "fail") < self.fail_bps
    }

    /// Where the swap `id`'s float delivery lands against its estimate, in basis points.
    pub fn drift_bps(&self, id: &str) -> i32 {
        let spread = i64::from(self.drift_spread_bps);
        let offset = i64::from(draw(id, "drift")) * (2 * spread + 1) / 10_000 - spread;
        self.float_drift_bps + i32::try_from(offset).unwrap_or(0)
    }

    /// How long the swap `id` takes once started, in milliseconds: drawn from a distribution
    /// with this behaviour's median and 90th percentile (linear between half the median, the
    /// median, the 90th percentile and twice it less the median).
    pub fn duration_ms(&self, id: &str) -> i64 {
        let (median, p90) = (
            i64::from(self.median_secs),
            i64::from(self.p90_secs.max(self.median_secs)),
        );
        let u = i64::from(draw(id, "duration"));
        let secs_x10k = if u < 5_000 {
            median * 5_000 + (median * 10_000 - median * 5_000) * u / 5_000
        } else if u < 9_000 {
            median * 10_000 + (p90 - median) * 10_000 * (u - 5_000) / 4_000
        } else {
            p90 * 10_000 + (p90 - median) * 10_000 * (u - 9_000) / 1_000
        };
        secs_x10k / 10
    }
}

/// A number from 0 to 9 999 fixed by `id` and `purpose`.
fn draw(id: &str, purpose: &str) -> u32 {
    let digest = Sha256::digest(format!("{purpose}|{id}").as_bytes());
    u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]]) % 10_000
}

/// The behaviour of every sandbox provider, by id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Behaviours(BTreeMap<String, Behaviour>);

impl Behaviours {
    /// Every provider punctual.
    pub fn punctual() -> Self {
        Self(BTreeMap::new())
    }

    /// `id`'s behaviour (punctual when none is set).
    pub fn of(&self, id: &str) -> Behaviour {
        self.0.get(id).copied().unwrap_or(Behaviour::PUNCTUAL)
    }

    /// These behaviours, with `id`'s set to `behaviour`.
    pub fn with(mut self, id: &str, behaviour: Behaviour) -> Self {
        self.0.insert(id.to_owned(), behaviour);
        self
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &Behaviour)> {
        self.0.iter().map(|(id, b)| (id.as_str(), b))
    }
}

impl Default for Behaviours {
    /// Providers that differ visibly, on the sandbox's quick clock (seconds where real ones
    /// take minutes): `atlas` quotes keenly but refunds one swap in eight, fails one in a
    /// hundred and delivers its float estimates 1.5 % short; `borealis` is steady and slower;
    /// the DEXes are quick and nearly exact, but `sunfish` fails one swap in twenty;
    /// `arcbridge` takes its time.
    fn default() -> Self {
        let behaviour = |refund_bps, fail_bps, float_drift_bps, median_secs, p90_secs| Behaviour {
            refund_bps,
            fail_bps,
            float_drift_bps,
            drift_spread_bps: 40,
            median_secs,
            p90_secs,
        };
        Self::punctual()
            .with("atlas", behaviour(1_250, 100, -150, 8, 30))
            .with("borealis", behaviour(100, 50, -20, 15, 22))
            .with("meridian", behaviour(0, 100, -10, 2, 5))
            .with("sunfish", behaviour(0, 500, -30, 1, 3))
            .with("arcbridge", behaviour(0, 200, -60, 10, 40))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_are_fixed_by_the_swap_and_spread_as_configured() {
        let atlas = Behaviours::default().of("atlas");
        let ids: Vec<String> = (0..2_000).map(|i| format!("ord_{i:032}")).collect();
        let refunded = ids.iter().filter(|id| atlas.refunds(id)).count();
        assert!(
            (180..320).contains(&refunded),
            "{refunded} of 2000 at 12.5 %"
        );
        assert_eq!(atlas.refunds(&ids[7]), atlas.refunds(&ids[7]));
        let mut durations: Vec<i64> = ids.iter().map(|id| atlas.duration_ms(id)).collect();
        durations.sort_unstable();
        let median = durations[1_000];
        let p90 = durations[1_800];
        assert!((7_000..9_000).contains(&median), "median {median} ms");
        assert!((27_000..33_000).contains(&p90), "p90 {p90} ms");
        for id in &ids {
            let drift = atlas.drift_bps(id);
            assert!((-190..=-110).contains(&drift), "{drift}");
        }
        assert!(!Behaviour::PUNCTUAL.refunds(&ids[0]));
        assert_eq!(Behaviour::PUNCTUAL.duration_ms(&ids[0]), 0);
        assert_eq!(Behaviours::punctual().of("atlas"), Behaviour::PUNCTUAL);
    }
}
