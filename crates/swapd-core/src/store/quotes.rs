//! Market data swapd served: route quotes, the createTokens that lock them, and the rates
//! observed on the way.

use crate::ids::RouteQuoteId;
use crate::owner::Owner;
use async_trait::async_trait;

use super::{IdempotentFinish, StoreError};
use crate::market::routes::{CreateTokenRecord, RedeemError, RouteQuote};

/// How long expired route quotes and createTokens are kept, so late callers learn "expired"
/// (410) rather than "not found" (404).
pub const EXPIRED_RETENTION_MS: i64 = 24 * 60 * 60 * 1000;

/// A rate swapd served: `pair` is `FROM/TO`, `rate` output per unit of input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateObservation {
    pub pair: String,
    pub observed_at_ms: i64,
    pub rate: String,
    pub provider: String,
}

#[async_trait]
pub trait QuoteStore: Send + Sync + 'static {
    /// Stores the usable route cards of one `GET /routes` answer.
    async fn save_route_quotes(&self, quotes: &[RouteQuote]) -> Result<(), StoreError>;

    /// The route quote `id` if `owner` received it; `None` otherwise (missing and foreign look
    /// the same).
    async fn route_quote(
        &self,
        id: &RouteQuoteId,
        owner: &Owner,
    ) -> Result<Option<RouteQuote>, StoreError>;

    /// Stores a new createToken and completes the request's idempotency record in the same
    /// transaction. [`StoreError::Conflict`] when the idempotency lease was lost.
    async fn issue_create_token(
        &self,
        token: &CreateTokenRecord,
        finish: IdempotentFinish<'_>,
    ) -> Result<(), StoreError>;

    /// The createToken with hash `token_hash` if it was issued to `owner`, used or not.
    async fn create_token(
        &self,
        token_hash: &str,
        owner: &Owner,
    ) -> Result<Option<CreateTokenRecord>, StoreError>;

    /// Marks the createToken with hash `token_hash` used by `owner` at `now_ms` and returns it,
    /// or says why it cannot be used. A token issued to another owner is `NotFound`.
    async fn redeem_create_token(
        &self,
        token_hash: &str,
        owner: &Owner,
        now_ms: i64,
    ) -> Result<Result<CreateTokenRecord, RedeemError>, StoreError>;

    /// Records rates as they were served.
    async fn record_rates(&self, observations: &[RateObservation]) -> Result<(), StoreError>;

    /// The rates of `pair` observed in `[since_ms, until_ms)`, oldest first, at most `limit`.
    async fn rates(
        &self,
        pair: &str,
        since_ms: i64,
        until_ms: i64,
        limit: u32,
    ) -> Result<Vec<RateObservation>, StoreError>;
}
