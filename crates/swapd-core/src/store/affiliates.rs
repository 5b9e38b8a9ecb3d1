//! Affiliates and what their codes earned.

use async_trait::async_trait;

use super::StoreError;
use crate::affiliates::Affiliate;
use crate::fees::ledger::LedgerRow;

#[async_trait]
pub trait AffiliateStore: Send + Sync + 'static {
    /// Registers `affiliate`; `Conflict` when its code is taken.
    async fn insert_affiliate(&self, affiliate: &Affiliate) -> Result<(), StoreError>;

    async fn affiliate(&self, code: &str) -> Result<Option<Affiliate>, StoreError>;

    /// Every affiliate, oldest first.
    async fn list_affiliates(&self) -> Result<Vec<Affiliate>, StoreError>;

    /// Sets whether its code is accepted on new quotes and orders; `None` for an unknown code.
    async fn set_affiliate_active(
        &self,
        code: &str,
        active: bool,
    ) -> Result<Option<Affiliate>, StoreError>;

    /// The ledger rows of the affiliate `code` learnt in `[since_ms, until_ms)`, oldest first,
    /// at most `limit`.
    async fn affiliate_ledger(
        &self,
        code: &str,
        since_ms: i64,
        until_ms: i64,
        limit: u32,
    ) -> Result<Vec<LedgerRow>, StoreError>;
}
