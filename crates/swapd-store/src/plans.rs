//! Onchain execution plans.

use swapd_core::StoreError;
use swapd_core::market::observed::SwapOutcome;
use swapd_core::onchain::plan::ExecutionPlan;
use swapd_core::store::{IdempotentFinish, PlanStore};
use swapd_core::wakeup::Work;

use swapd_core::fees::ledger::{Stage, ledger_rows};

use swapd_core::ids::PlanId;
use swapd_core::owner::Owner;

use crate::codec::{decode_body, encode_body};
use crate::ledger::insert_ledger_in;
use crate::map_sqlx_error;
use crate::outcomes::record_outcome_in;
use crate::packed::Stored;
use crate::sql::{Claim, LEASE_CLAIM, Leased, SqlStore, VersionedBody, leased};

/// Plans the tracker looks at next: due first, each leased until the claim's end.
const DUE_PLANS: Claim = Claim {
    table: "execution_plans",
    set: LEASE_CLAIM,
    pick: "next_check_at <= $1 ORDER BY next_check_at LIMIT $3",
    returning: "body, version",
};

leased!(ExecutionPlan);

impl SqlStore {
    /// The plan `query` (of `body, version`) finds, if any.
    async fn one_plan(
        &self,
        query: sqlx::query::QueryAs<'_, sqlx::Any, (Stored, i64), sqlx::any::AnyArguments>,
    ) -> Result<Option<ExecutionPlan>, StoreError> {
        query
            .fetch_optional(&self.pool)
            .await
            .map_err(map_sqlx_error)?
            .map(|(body, version)| Ok(decode_body::<ExecutionPlan>(&body)?.at_version(version)))
            .transpose()
    }
}

#[async_trait::async_trait]
impl PlanStore for SqlStore {
    async fn insert_execution_plan(
        &self,
        plan: &ExecutionPlan,
        finish: IdempotentFinish<'_>,
    ) -> Result<(), StoreError> {
        let body = encode_body(plan)?;
        let mut tx = self.write_tx().await?;
        sqlx::query(
                    "INSERT INTO execution_plans (id, owner, resolve_key, status, version, body, \
                     created_at, updated_at, next_check_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                )
                .bind(plan.id.as_str())
                .bind(plan.owner.scope())
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
        let expected = ledger_rows(
            plan.charged(Stage::Expected),
            Stage::Expected,
            plan.created_at_ms,
        );
        insert_ledger_in(&mut tx, &expected).await?;
        self.commit(tx, Some(finish), &[]).await
    }

    async fn execution_plan_for(
        &self,
        owner: &Owner,
        resolve_key: &str,
    ) -> Result<Option<ExecutionPlan>, StoreError> {
        self.one_plan(
            sqlx::query_as(
                "SELECT body, version FROM execution_plans WHERE owner = $1 AND resolve_key = $2",
            )
            .bind(owner.scope())
            .bind(resolve_key),
        )
        .await
    }

    async fn execution_plan(
        &self,
        id: &PlanId,
        owner: &Owner,
    ) -> Result<Option<ExecutionPlan>, StoreError> {
        self.one_plan(
            sqlx::query_as(
                "SELECT body, version FROM execution_plans WHERE id = $1 AND owner = $2",
            )
            .bind(id.as_str())
            .bind(owner.scope()),
        )
        .await
    }

    async fn execution_plan_for_page(
        &self,
        id: &PlanId,
    ) -> Result<Option<ExecutionPlan>, StoreError> {
        self.one_plan(
            sqlx::query_as("SELECT body, version FROM execution_plans WHERE id = $1")
                .bind(id.as_str()),
        )
        .await
    }

    async fn update_execution_plan(
        &self,
        plan: &ExecutionPlan,
        finish: Option<IdempotentFinish<'_>>,
    ) -> Result<bool, StoreError> {
        let written = VersionedBody {
            table: "execution_plans",
            id: plan.id.as_str(),
            status: plan.status.as_str(),
            version: plan.version,
            body: encode_body(plan)?,
            updated_at_ms: plan.updated_at_ms,
            next_check_at_ms: plan.next_check_at_ms,
        };
        let mut tx = self.write_tx().await?;
        // A write with an idempotency record is a client's report: the tracker's turn.
        let works: &[Work] = if finish.is_some() {
            &[Work::Executions]
        } else {
            &[]
        };
        if !written.compare_and_set(&mut tx).await? {
            return Ok(false);
        }
        if let Some(outcome) = SwapOutcome::of_plan(plan) {
            record_outcome_in(&mut tx, &outcome).await?;
        }
        // Written by the change that completes the execution (a row already there stays).
        if plan.fees_realized.is_some() {
            let realized = ledger_rows(
                plan.charged(Stage::Realized),
                Stage::Realized,
                plan.updated_at_ms,
            );
            insert_ledger_in(&mut tx, &realized).await?;
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
        self.claim_due(&DUE_PLANS, now_ms, lease_until_ms, limit)
            .await
    }
}
