//! The observed figures every route is ranked and shown with (docs/market.md, "Observed
//! figures"): made from the window's outcomes in the background, every
//! `market.observed_refresh_secs`, never on a request. Nodes sharing a database read the same
//! outcomes, so they show the same figures within one refresh.

use std::sync::{Arc, RwLock};

use swapd_core::StoreError;
use swapd_core::market::observed::Observed;
use swapd_core::store::OutcomeStore;

/// The current figures, replaced whole by each refresh.
pub struct ObservedFigures {
    current: RwLock<Arc<Observed>>,
    /// How far back outcomes count.
    pub window_ms: i64,
    /// Outcomes a pair (or a provider) needs before its figures are shown.
    pub min_samples: u32,
}

impl ObservedFigures {
    pub fn new(window_ms: i64, min_samples: u32) -> Self {
        Self {
            current: RwLock::new(Arc::new(Observed::of(&[], min_samples))),
            window_ms,
            min_samples,
        }
    }

    /// The figures as of the last refresh.
    pub fn current(&self) -> Arc<Observed> {
        self.current
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Makes the figures anew from the outcomes that ended in the window before `now_ms`.
    pub async fn refresh(&self, store: &dyn OutcomeStore, now_ms: i64) -> Result<(), StoreError> {
        let samples = store.outcome_samples(now_ms - self.window_ms).await?;
        let observed = Arc::new(Observed::of(&samples, self.min_samples));
        *self
            .current
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = observed;
        Ok(())
    }
}
