//! Onchain execution plans and what was reported and tracked of them.

use crate::ids::PlanId;
use crate::owner::Owner;
use async_trait::async_trait;

use super::{IdempotentFinish, StoreError};
use crate::onchain::plan::ExecutionPlan;

#[async_trait]
pub trait PlanStore: Send + Sync + 'static {
    /// Stores a new execution plan and completes the request's idempotency record, in one
    /// transaction. [`StoreError::Conflict`] when the owner already has a plan for the plan's
    /// `resolve_key` (nothing is written), or when the idempotency lease was lost.
    async fn insert_execution_plan(
        &self,
        plan: &ExecutionPlan,
        finish: IdempotentFinish<'_>,
    ) -> Result<(), StoreError>;

    /// The plan `owner` resolved with `resolve_key`, if any.
    async fn execution_plan_for(
        &self,
        owner: &Owner,
        resolve_key: &str,
    ) -> Result<Option<ExecutionPlan>, StoreError>;

    /// The plan `id` if `owner` resolved it; `None` otherwise (missing and foreign look the
    /// same).
    async fn execution_plan(
        &self,
        id: &PlanId,
        owner: &Owner,
    ) -> Result<Option<ExecutionPlan>, StoreError>;

    /// The plan `id` whoever resolved it: only for the hosted execution page, which checks the
    /// plan's page token before showing anything.
    async fn execution_plan_for_page(
        &self,
        id: &PlanId,
    ) -> Result<Option<ExecutionPlan>, StoreError>;

    /// Stores `plan` (whose `version` was increased by one) only if the stored version is still
    /// the one it was read at, completing `finish` in the same transaction when given. `false`:
    /// another writer changed the plan first; nothing was written.
    async fn update_execution_plan(
        &self,
        plan: &ExecutionPlan,
        finish: Option<IdempotentFinish<'_>>,
    ) -> Result<bool, StoreError>;

    /// Leases up to `limit` plans whose next check is due at `now_ms`, earliest first, until
    /// `lease_until_ms`, as [`OrderStore::claim_due_orders`](super::OrderStore::claim_due_orders)
    /// leases orders.
    async fn claim_due_execution_plans(
        &self,
        now_ms: i64,
        lease_until_ms: i64,
        limit: u32,
    ) -> Result<Vec<ExecutionPlan>, StoreError>;
}
