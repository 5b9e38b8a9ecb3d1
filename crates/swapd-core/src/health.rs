//! How the background loops are doing, for readiness: each loop reports every pass; one whose
//! passes keep failing is named by `/readyz` (docs/operations.md).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Consecutive failed passes after which a loop counts as failing.
pub const FAILING_AFTER: u32 = 3;

/// Consecutive failures by loop name, shared by the worker (which records) and the API (which
/// reports). Cloning shares it.
#[derive(Debug, Clone, Default)]
pub struct WorkerHealth(Arc<Mutex<BTreeMap<&'static str, u32>>>);

impl WorkerHealth {
    pub fn passed(&self, name: &'static str) {
        self.0.lock().expect("health lock").insert(name, 0);
    }

    /// Records a failed pass; returns how many in a row.
    pub fn failed(&self, name: &'static str) -> u32 {
        let mut loops = self.0.lock().expect("health lock");
        let failures = loops.entry(name).or_default();
        *failures = failures.saturating_add(1);
        *failures
    }

    /// The loops failing now, with their consecutive failures.
    pub fn failing(&self) -> Vec<(&'static str, u32)> {
        self.0
            .lock()
            .expect("health lock")
            .iter()
            .filter(|(_, failures)| **failures >= FAILING_AFTER)
            .map(|(name, failures)| (*name, *failures))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loop_fails_after_three_passes_in_a_row_and_recovers_with_one() {
        let health = WorkerHealth::default();
        health.failed("orders");
        health.failed("orders");
        health.passed("webhooks");
        assert!(health.failing().is_empty());
        assert_eq!(health.failed("orders"), 3);
        assert_eq!(health.failing(), vec![("orders", 3)]);
        health.passed("orders");
        assert!(health.failing().is_empty());
    }
}
