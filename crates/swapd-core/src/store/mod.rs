//! The storage port, one trait per aggregate. [`Store`] is their sum: what a whole node needs.
//! A component that needs one aggregate takes that trait alone. Methods are shaped by use
//! cases and each one is atomic inside its implementation, so no transaction type ever crosses
//! this boundary. Writes that complete a request's idempotency record take an
//! [`IdempotentFinish`] and commit it in the same transaction as their effect.

mod affiliates;
mod idempotency;
mod jobs;
mod keys;
mod orders;
mod outcomes;
mod plans;
mod quotes;
mod sandbox;
mod webhooks;
mod x402;

use async_trait::async_trait;

pub use affiliates::AffiliateStore;
pub use idempotency::{IdempotencyStore, IdempotentFinish, KeyHold};
pub use jobs::JobStore;
pub use keys::{EVERY_CONSOLE_SESSION, KeyStore, NonceOutcome, NonceRecord};
pub use orders::{EventMail, OrderSearch, OrderStore};
pub use outcomes::OutcomeStore;
pub use plans::PlanStore;
pub use quotes::{EXPIRED_RETENTION_MS, QuoteStore, RateObservation};
pub use sandbox::{SandboxChainStore, SandboxDeposit, SandboxTransfer};
pub use webhooks::WebhookStore;
pub use x402::{PurchaseRecord, WindowDecision, X402Settlement, X402Store};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A uniqueness rule refused the write (duplicate id, replayed nonce, ...).
    #[error("conflict: {0}")]
    Conflict(String),
    /// The write's idempotency lease was gone when it committed (it ran past the lease, and
    /// another attempt may have taken the key over): nothing was written.
    #[error("the idempotency lease was lost before the write committed")]
    LeaseLost,
    /// The database could not be reached or timed out; retrying later may succeed.
    #[error("database unavailable: {0}")]
    Unavailable(String),
    /// A stored row could not be turned back into a domain value.
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    /// Anything else the database reported.
    #[error("database error: {0}")]
    Database(String),
}

/// The schema and the database itself.
#[async_trait]
pub trait Maintenance: Send + Sync + 'static {
    /// `"sqlite"` or `"postgres"`.
    fn backend(&self) -> &'static str;

    /// Applies pending migrations; a no-op when the schema is current.
    async fn migrate(&self) -> Result<(), StoreError>;

    /// The applied migration versions, oldest first.
    async fn applied_migrations(&self) -> Result<Vec<i64>, StoreError>;

    /// Cheap round trip used by readiness checks.
    async fn ping(&self) -> Result<(), StoreError>;

    /// Deletes records whose lifetime ended at or before `now_ms` (shared and logged nonces,
    /// idempotency keys, expired quotes and createTokens past their retention, SIWX nonces,
    /// console logouts), at most `limit` rows in all, each table's in a short transaction of its
    /// own, so that a backlog never holds the writer long. Returns how many rows went: fewer
    /// than `limit` when none is left.
    async fn purge_expired(&self, now_ms: i64, limit: u32) -> Result<u64, StoreError>;

    /// Closes every connection, rolling back what is still open; the store answers nothing
    /// afterwards. For shutdown, and for tests that drop their database next.
    async fn close(&self);

    /// The bells this store's commits ring (`crate::wakeup`): in this process always; from
    /// other nodes' commits too while [`Maintenance::listen_for_work`] runs.
    fn bells(&self) -> std::sync::Arc<crate::wakeup::Bells>;

    /// Rings this process's bells for the work other nodes announce, until dropped
    /// (PostgreSQL's `LISTEN`, reconnecting after a failure). `None` when the store has no
    /// other nodes to hear (SQLite: one process).
    fn listen_for_work(&self) -> Option<WorkListener>;
}

/// A task that hears other nodes' work announcements ([`Maintenance::listen_for_work`]).
pub type WorkListener = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'static>>;

/// Every aggregate: what one swapd node stores.
pub trait Store:
    Maintenance
    + AffiliateStore
    + KeyStore
    + IdempotencyStore
    + QuoteStore
    + OrderStore
    + OutcomeStore
    + PlanStore
    + WebhookStore
    + X402Store
    + JobStore
    + SandboxChainStore
{
}

impl<T> Store for T where
    T: Maintenance
        + AffiliateStore
        + KeyStore
        + IdempotencyStore
        + QuoteStore
        + OrderStore
        + OutcomeStore
        + PlanStore
        + WebhookStore
        + X402Store
        + JobStore
        + SandboxChainStore
{
}
