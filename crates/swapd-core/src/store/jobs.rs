//! Market-intel jobs: a durable queue claimed with leases.

use crate::ids::JobId;
use crate::owner::Owner;
use async_trait::async_trait;

use super::{IdempotentFinish, StoreError};
use crate::market_intel::{Job, JobOutcome, JobPayment};

#[async_trait]
pub trait JobStore: Send + Sync + 'static {
    /// Stores a new market-intel job and completes the request's idempotency record, in one
    /// transaction.
    async fn insert_job(&self, job: &Job, finish: IdempotentFinish<'_>) -> Result<(), StoreError>;

    /// The job `id` if `owner` created it.
    async fn job(&self, id: &JobId, owner: &Owner) -> Result<Option<Job>, StoreError>;

    /// Leases up to `limit` jobs to `lease_token` until `lease_until_ms`: queued ones, and
    /// running ones whose lease ended (their worker died). Each claim counts an attempt.
    /// Concurrent claimers never get the same job.
    async fn claim_jobs(
        &self,
        now_ms: i64,
        lease_token: &str,
        lease_until_ms: i64,
        limit: u32,
    ) -> Result<Vec<Job>, StoreError>;

    /// Finishes a running job with `outcome` (and what became of its `upto` payment), only
    /// while `lease_token` holds it. `false`: the lease was lost (another worker took the job
    /// over); nothing was written.
    async fn finish_job(
        &self,
        id: &JobId,
        lease_token: &str,
        outcome: &JobOutcome,
        payment: Option<&JobPayment>,
        now_ms: i64,
    ) -> Result<bool, StoreError>;
}
