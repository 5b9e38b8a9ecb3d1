//! Idempotency keys: a request's claim, and the response its retries get.

use async_trait::async_trait;

use super::StoreError;
use crate::idempotency::{Begin, StoredResponse};

/// The idempotency record a domain write completes in its own transaction: how the request
/// holds its key and the response to replay to its retries.
#[derive(Debug, Clone, Copy)]
pub struct IdempotentFinish<'a> {
    pub principal: &'a str,
    pub key: &'a str,
    pub hold: KeyHold<'a>,
    pub response: &'a StoredResponse,
}

/// How a request holds its Idempotency-Key when its write commits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyHold<'a> {
    /// Claimed before execution ([`IdempotencyStore::begin_idempotent`]) under this lease
    /// token: the write fails with [`StoreError::LeaseLost`] when the lease is gone.
    Lease(&'a str),
    /// Not claimed: the write takes the key itself, for the request with `fingerprint`, unless
    /// a live record holds it (another attempt finished first or is executing under a lease);
    /// then it fails with [`StoreError::LeaseLost`]. An expired or abandoned record is taken
    /// over, as [`crate::idempotency::plan`] would.
    AtCommit { fingerprint: &'a str, now_ms: i64 },
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

    /// What [`crate::idempotency::plan`] answers for a request that did not claim its key
    /// ([`KeyHold::AtCommit`]): `None` when it may execute (no live record), otherwise the
    /// answer. Reads only.
    async fn idempotent_answer(
        &self,
        principal: &str,
        key: &str,
        fingerprint: &str,
        now_ms: i64,
    ) -> Result<Option<Begin>, StoreError>;

    /// Stores the outcome of an execution that had no write of its own to complete it with.
    /// `false` when the key was not held any more (the lease was lost, or another attempt
    /// stored its outcome first): nothing was written.
    async fn finish_idempotent(&self, finish: IdempotentFinish<'_>) -> Result<bool, StoreError>;

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
