//! Idempotency keys: a request's claim, and the response its retries get.

use async_trait::async_trait;

use super::StoreError;
use crate::idempotency::{Begin, StoredResponse};

/// The idempotency record a domain write completes in its own transaction: the claim taken by
/// the request and the response to replay to its retries.
#[derive(Debug, Clone, Copy)]
pub struct IdempotentFinish<'a> {
    pub principal: &'a str,
    pub key: &'a str,
    pub lease_token: &'a str,
    pub response: &'a StoredResponse,
}

#[async_trait]
pub trait IdempotencyStore: Send + Sync + 'static {
    /// Starts an idempotent execution or says how to answer instead, applying
    /// [`crate::idempotency::plan`] atomically. `holder` names the node taking the claim.
    async fn begin_idempotent(
        &self,
        principal: &str,
        key: &str,
        fingerprint: &str,
        lease_token: &str,
        holder: &str,
        now_ms: i64,
    ) -> Result<Begin, StoreError>;

    /// Stores the outcome of the execution holding `lease_token`. `false` when the lease was
    /// lost (another attempt took over after it expired).
    async fn finish_idempotent(
        &self,
        principal: &str,
        key: &str,
        lease_token: &str,
        response: &StoredResponse,
    ) -> Result<bool, StoreError>;

    /// Forgets an in-flight execution that stored nothing, so a retry executes afresh.
    async fn release_idempotent(
        &self,
        principal: &str,
        key: &str,
        lease_token: &str,
    ) -> Result<(), StoreError>;

    /// Forgets every in-flight claim `holder` took (Idempotency-Keys, and the hold on x402
    /// purchases): called when that node starts, its claims are those of a process that died,
    /// whose executions never finished. Returns how many.
    async fn release_claims_of(&self, holder: &str) -> Result<u64, StoreError>;
}
