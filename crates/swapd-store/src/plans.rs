//! Onchain execution plans.

use swapd_core::StoreError;
use swapd_core::onchain::ExecutionPlan;
use swapd_core::store::{IdempotentFinish, PlanStore};
use swapd_core::wakeup::Work;

use crate::codec::{decode_json, encode_json};
use crate::map_sqlx_error;
use crate::sql::{Claim, SqlStore, compare_and_set};

/// Plans the tracker looks at next: due first, each leased until the claim's end.
const DUE_PLANS: Claim = Claim {
    table: "execution_plans",
    set: "next_check_at = $2",
    pick: "next_check_at <= $1 ORDER BY next_check_at LIMIT $3",
    returning: "body",
};

#[async_trait::async_trait]
impl PlanStore for SqlStore {
    async fn insert_execution_plan(
        &self,
        plan: &ExecutionPlan,
        finish: IdempotentFinish<'_>,
    ) -> Result<(), StoreError> {
        let body = encode_json(plan)?;
        let mut tx = self.write_tx().await?;
        sqlx::query(
                    "INSERT INTO execution_plans (id, owner, resolve_key, status, version, body, \
                     created_at, updated_at, next_check_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                )
                .bind(&plan.id)
                .bind(&plan.owner)
                .bind(&plan.resolve_key)
                .bind(plan.status.as_str())
                .bind(plan.version)
                .bind(body)
                .bind(plan.created_at_ms)
                .bind(plan.updated_at_ms)
                .bind(plan.next_check_at_ms)
                .execute(&mut *tx)
                .await
                .map_err(map_sqlx_error)?;
        self.commit(tx, Some(finish), &[]).await
    }

    async fn execution_plan_for(
        &self,
        owner: &str,
        resolve_key: &str,
    ) -> Result<Option<ExecutionPlan>, StoreError> {
        let body: Option<String> = sqlx::query_scalar(
            "SELECT body FROM execution_plans WHERE owner = $1 AND resolve_key = $2",
        )
        .bind(owner)
        .bind(resolve_key)
        .fetch_optional(&self.pool)
        .await
        .map_err(map_sqlx_error)?;
        body.map(|body| decode_json(&body)).transpose()
    }

    async fn execution_plan(
        &self,
        id: &str,
        owner: &str,
    ) -> Result<Option<ExecutionPlan>, StoreError> {
        let body: Option<String> =
            sqlx::query_scalar("SELECT body FROM execution_plans WHERE id = $1 AND owner = $2")
                .bind(id)
                .bind(owner)
                .fetch_optional(&self.pool)
                .await
                .map_err(map_sqlx_error)?;
        body.map(|body| decode_json(&body)).transpose()
    }

    async fn execution_plan_for_page(&self, id: &str) -> Result<Option<ExecutionPlan>, StoreError> {
        let body: Option<String> =
            sqlx::query_scalar("SELECT body FROM execution_plans WHERE id = $1")
                .bind(id)
                .fetch_optional(&self.pool)
                .await
                .map_err(map_sqlx_error)?;
        body.map(|body| decode_json(&body)).transpose()
    }

    async fn update_execution_plan(
        &self,
        plan: &ExecutionPlan,
        finish: Option<IdempotentFinish<'_>>,
    ) -> Result<bool, StoreError> {
        let body = encode_json(plan)?;
        let mut tx = self.write_tx().await?;
        let update = sqlx::query(
            "UPDATE execution_plans SET status = $2, version = $3, body = $4, updated_at = $5, \
             next_check_at = $7 WHERE id = $1 AND version = $6",
        )
        .bind(&plan.id)
        .bind(plan.status.as_str())
        .bind(plan.version)
        .bind(body)
        .bind(plan.updated_at_ms)
        .bind(plan.version - 1)
        .bind(plan.next_check_at_ms);
        // A write with an idempotency record is a client's report: the tracker's turn.
        let works: &[Work] = if finish.is_some() {
            &[Work::Executions]
        } else {
            &[]
        };
        if !compare_and_set(&mut tx, update).await? {
            return Ok(false);
        }
        self.commit(tx, finish, works).await?;
        Ok(true)
    }

    async fn claim_due_execution_plans(
        &self,
        now_ms: i64,
        lease_until_ms: i64,
        limit: u32,
    ) -> Result<Vec<ExecutionPlan>, StoreError> {
        self.claim_due_bodies(
            &DUE_PLANS,
            now_ms,
            lease_until_ms,
            limit,
            |plan: &ExecutionPlan| plan.next_check_at_ms,
        )
        .await
    }
}
