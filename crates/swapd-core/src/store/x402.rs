//! The pay-per-call surface's state: settlements of the ledger facilitator, what each payment
//! bought, Sign-In-With-X nonces, and the per-client windows.

use async_trait::async_trait;

use super::StoreError;
use crate::purchases::{Presented, PurchaseStep};

/// One payment settled by the ledger facilitator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct X402Settlement {
    pub payer: String,
    pub nonce: String,
    pub amount: String,
    pub pay_to: String,
    pub asset: String,
    pub network: String,
    pub transaction: String,
    pub settled_at_ms: i64,
}

/// A payment as the operator console lists it: what it bought and where it stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PurchaseRecord {
    pub payer: String,
    pub nonce: String,
    /// The request it paid for (URL).
    pub resource: String,
    /// `settling`, `settled` (the call is owed) or `served`.
    pub state: String,
    pub transaction: Option<String>,
    pub created_at_ms: i64,
}

/// What [`X402Store::consume_window`] decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowDecision {
    pub allowed: bool,
    pub limit: u32,
    /// Requests counted in the window, this one included when allowed.
    pub used: u32,
    /// When the window ends (Unix milliseconds).
    pub resets_at_ms: i64,
}

impl WindowDecision {
    pub fn remaining(&self) -> u32 {
        self.limit.saturating_sub(self.used)
    }
}

#[async_trait]
pub trait X402Store: Send + Sync + 'static {
    /// Ledger facilitator: records a settlement unless `(payer, nonce)` was settled before.
    /// `false`: it was (nothing written).
    async fn record_x402_settlement(&self, settlement: &X402Settlement)
    -> Result<bool, StoreError>;

    /// Ledger facilitator: the settlement of `(payer, nonce)`, if any.
    async fn x402_settlement(
        &self,
        payer: &str,
        nonce: &str,
    ) -> Result<Option<X402Settlement>, StoreError>;

    /// Starts an attempt at the purchase of payment `(payer, nonce)`, applying
    /// [`crate::purchases::plan`] atomically; `holder` names the node taking it.
    async fn begin_purchase(
        &self,
        payer: &str,
        nonce: &str,
        presented: Presented<'_>,
        holder: &str,
        now_ms: i64,
    ) -> Result<PurchaseStep, StoreError>;

    /// The facilitator settled the payment: the call is owed.
    async fn purchase_settled(
        &self,
        payer: &str,
        nonce: &str,
        transaction: &str,
    ) -> Result<(), StoreError>;

    /// The call was answered: the payment is spent.
    async fn purchase_served(&self, payer: &str, nonce: &str) -> Result<(), StoreError>;

    /// The newest `limit` payments received, whatever they bought: for the operator console.
    async fn recent_purchases(&self, limit: u32) -> Result<Vec<PurchaseRecord>, StoreError>;

    /// Ends the attempt without finishing the purchase (its outcome unknown, or its call
    /// failed), so that the same payment presented again carries on at once.
    async fn release_purchase(&self, payer: &str, nonce: &str) -> Result<(), StoreError>;

    /// Forgets a purchase that moved no money (the facilitator refused the payment, or could
    /// not be asked before settling), so the same payment may be presented again.
    async fn forget_purchase(&self, payer: &str, nonce: &str) -> Result<(), StoreError>;

    /// Whether a proof has used the Sign-In-With-X challenge nonce `nonce`.
    async fn siwx_nonce_used(&self, nonce: &str) -> Result<bool, StoreError>;

    /// Records `nonce` as used by a proof at `now_ms`, kept until `expires_at_ms` (after which
    /// the nonce is refused anyway): `true` for the one caller that recorded it.
    async fn use_siwx_nonce(
        &self,
        nonce: &str,
        expires_at_ms: i64,
        now_ms: i64,
    ) -> Result<bool, StoreError>;

    /// Counts one request against the fixed window of `window_ms` that holds `now_ms` for
    /// `key`, admitting it while fewer than `limit` were counted. Refused requests count nothing.
    async fn consume_window(
        &self,
        key: &str,
        window_ms: i64,
        limit: u32,
        now_ms: i64,
    ) -> Result<WindowDecision, StoreError>;
}
