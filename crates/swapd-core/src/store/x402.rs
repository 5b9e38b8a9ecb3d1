//! The pay-per-call surface's state: settlements of the ledger facilitator, the one execution
//! each payment buys, Sign-In-With-X nonces, and the per-client windows.

use async_trait::async_trait;

use super::StoreError;

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

    /// Claims the one execution a payment `(payer, nonce)` buys, for `resource`. `false`: the
    /// payment was claimed before (by this or a concurrent request).
    async fn claim_x402_payment(
        &self,
        payer: &str,
        nonce: &str,
        resource: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError>;

    /// Forgets a claim whose payment was never settled (the facilitator could not be asked),
    /// so the same payment can be presented again.
    async fn release_x402_payment(&self, payer: &str, nonce: &str) -> Result<(), StoreError>;

    /// Records a Sign-In-With-X nonce swapd issued, valid until `expires_at_ms`.
    async fn issue_siwx_nonce(&self, nonce: &str, expires_at_ms: i64) -> Result<(), StoreError>;

    /// Whether `nonce` was issued by swapd, is unexpired at `now_ms` and unused; with
    /// `consume`, marks it used in the same step (only one caller ever gets `true`).
    async fn check_siwx_nonce(
        &self,
        nonce: &str,
        now_ms: i64,
        consume: bool,
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
