//! The fee ledger's reconciliation (docs/fees.md, "Reconciliation"): now and then, the rows of
//! the last days are compared, expected against realized, and the swaps whose realized fee is
//! off beyond the tolerance are counted in a metric and logged; the console lists them. It
//! only reads, so every worker node may run it.

use std::sync::Arc;

use swapd_core::fees::FeeRules;
use swapd_core::fees::ledger::reconcile;
use swapd_core::{Clock, Store};

/// The metric: swaps of the window whose realized fee is off the expected one.
pub const MISMATCHES: &str = "fee_reconciliation_mismatches";
/// How far back a pass looks.
pub const WINDOW_MS: i64 = 30 * 86_400_000;
/// The most rows a pass reads.
const MAX_ROWS: u32 = 200_000;

pub struct Reconciler {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    tolerance_bps: u32,
}

impl Reconciler {
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>, rules: FeeRules) -> Self {
        Self {
            store,
            clock,
            tolerance_bps: rules.reconcile_tolerance_bps,
        }
    }

    /// One pass: how many mismatches the window holds (`None`: the ledger could not be read).
    pub async fn run(&self) -> Option<usize> {
        let now_ms = self.clock.now_ms();
        let rows = match self
            .store
            .fee_ledger(None, now_ms - WINDOW_MS, now_ms + 1, MAX_ROWS)
            .await
        {
            Ok(rows) => rows,
            Err(error) => {
                tracing::warn!(%error, "the fee ledger cannot be read for reconciliation");
                return None;
            }
        };
        let mismatches = reconcile(&rows, self.tolerance_bps);
        metrics::gauge!(MISMATCHES).set(mismatches.len() as f64);
        if let Some(first) = mismatches.first() {
            tracing::warn!(
                count = mismatches.len(),
                order = %first.order_id,
                party = first.party.as_str(),
                expected = %first.expected,
                realized = %first.realized,
                "realized fees differ from the expected ones beyond the tolerance (console: Revenue)"
            );
        }
        Some(mismatches.len())
    }
}
