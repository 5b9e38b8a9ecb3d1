//! What providers delivered (docs/market.md, "Observed figures"). An outcome is written by the
//! write that ends its order or plan ([`crate::store::OrderStore::update_order`],
//! [`crate::store::PlanStore::update_execution_plan`]), never by a second path; this trait reads
//! and purges them.

use async_trait::async_trait;

use super::StoreError;
use crate::market::observed::{Sample, SwapOutcome};

#[async_trait]
pub trait OutcomeStore: Send + Sync + 'static {
    /// The outcomes counted against their providers that ended at or after `since_ms`, as
    /// the figures read them.
    async fn outcome_samples(&self, since_ms: i64) -> Result<Vec<Sample>, StoreError>;

    /// `provider`'s latest `limit` outcomes, counted or not, newest first.
    async fn recent_outcomes(
        &self,
        provider: &str,
        limit: u32,
    ) -> Result<Vec<SwapOutcome>, StoreError>;

    /// Forgets up to `limit` outcomes that ended before `before_ms`; how many went.
    async fn purge_outcomes(&self, before_ms: i64, limit: u32) -> Result<u64, StoreError>;
}
