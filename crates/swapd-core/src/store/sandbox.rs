//! The sandbox world's records: the simulated chain's transfers into deposit addresses and out
//! of the sandbox desks, and the desks' own books of the exchanges they run.

use async_trait::async_trait;

use super::{IdempotentFinish, StoreError};
use crate::offchain::order::Order;

/// A simulated transfer into a deposit address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxDeposit {
    pub tx_id: String,
    pub address: String,
    pub tag: Option<String>,
    pub amount: String,
    /// Confirmations it had when recorded; more accrue with time.
    pub confirmations: u32,
    pub seen_at_ms: i64,
}

/// A simulated transfer out (payout or refund), made once per idempotency key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxTransfer {
    pub key: String,
    pub tx_id: String,
    pub currency: String,
    pub address: String,
    pub tag: Option<String>,
    pub amount: String,
    pub created_at_ms: i64,
}

#[async_trait]
pub trait SandboxChainStore: Send + Sync + 'static {
    /// Records a deposit (a transfer to a deposit address), with the idempotency record of the
    /// request that made it in the same transaction. `Conflict` for a repeated transaction id.
    async fn sandbox_record_deposit(
        &self,
        deposit: &SandboxDeposit,
        finish: Option<IdempotentFinish<'_>>,
    ) -> Result<(), StoreError>;

    /// The deposits to `address`/`tag`, oldest first.
    async fn sandbox_deposits(
        &self,
        address: &str,
        tag: Option<&str>,
    ) -> Result<Vec<SandboxDeposit>, StoreError>;

    /// Records the transfer `key` unless it exists, and returns the stored one.
    async fn sandbox_transfer(
        &self,
        transfer: &SandboxTransfer,
    ) -> Result<SandboxTransfer, StoreError>;

    /// Every transfer out, oldest first (tests count payouts with it).
    async fn sandbox_transfers(&self) -> Result<Vec<SandboxTransfer>, StoreError>;

    /// Records a sandbox desk's exchange `id` unless it exists, and returns the stored one: a
    /// repeated open answers the first.
    async fn sandbox_open_exchange(&self, id: &str, book: &Order) -> Result<Order, StoreError>;

    /// A sandbox desk's exchange.
    async fn sandbox_exchange(&self, id: &str) -> Result<Option<Order>, StoreError>;

    /// Stores `book` as exchange `id` when the stored one is still at `book.version - 1`.
    /// `false`: it moved meanwhile, nothing was written.
    async fn sandbox_update_exchange(&self, id: &str, book: &Order) -> Result<bool, StoreError>;
}
