//! Market-intel jobs.

use swapd_core::StoreError;
use swapd_core::ids::JobId;
use swapd_core::market_intel::{Job, JobOutcome, JobPayment};
use swapd_core::owner::Owner;
use swapd_core::store::{IdempotentFinish, JobStore};

use crate::codec::encode_json;
use crate::map_sqlx_error;
use crate::rows::{JOB_COLUMNS, JobRow};
use crate::sql::{Claim, SqlStore, built};

/// Jobs to run: queued ones, and running ones whose lease ended, oldest first.
const DUE_JOBS: Claim = Claim {
    table: "market_jobs",
    set: "status = 'running', lease_token = $1, lease_until = $2, attempts = attempts + 1, \
          started_at = COALESCE(started_at, $3)",
    pick: "status = 'queued' OR (status = 'running' AND lease_until <= $3) \
           ORDER BY created_at LIMIT $4",
    returning: JOB_COLUMNS,
};

#[async_trait::async_trait]
impl JobStore for SqlStore {
    async fn insert_job(&self, job: &Job, finish: IdempotentFinish<'_>) -> Result<(), StoreError> {
        let row = JobRow::from_domain(job)?;
        let mut tx = self.write_tx().await?;
        sqlx::query(built(format!(
            "INSERT INTO market_jobs ({JOB_COLUMNS}) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)"
        )))
        .bind(row.id)
        .bind(row.owner)
        .bind(row.kind)
        .bind(row.request)
        .bind(row.status)
        .bind(row.result)
        .bind(row.error)
        .bind(row.attempts)
        .bind(row.created_at)
        .bind(row.started_at)
        .bind(row.finished_at)
        .bind(row.payment)
        .execute(&mut *tx)
        .await
        .map_err(map_sqlx_error)?;
        self.commit(tx, Some(finish), &[swapd_core::wakeup::Work::Jobs])
            .await
    }

    async fn job(&self, id: &JobId, owner: &Owner) -> Result<Option<Job>, StoreError> {
        sqlx::query_as::<_, JobRow>(built(format!(
            "SELECT {JOB_COLUMNS} FROM market_jobs WHERE id = $1 AND owner = $2"
        )))
        .bind(id.as_str())
        .bind(owner.scope())
        .fetch_optional(&self.pool)
        .await
        .map_err(map_sqlx_error)?
        .map(JobRow::into_domain)
        .transpose()
    }

    async fn claim_jobs(
        &self,
        now_ms: i64,
        lease_token: &str,
        lease_until_ms: i64,
        limit: u32,
    ) -> Result<Vec<Job>, StoreError> {
        let mut tx = self.write_tx().await?;
        let rows = sqlx::query_as::<_, JobRow>(self.claiming(&DUE_JOBS))
            .bind(lease_token)
            .bind(lease_until_ms)
            .bind(now_ms)
            .bind(i64::from(limit))
            .fetch_all(&mut *tx)
            .await
            .map_err(map_sqlx_error)?;
        tx.commit().await.map_err(map_sqlx_error)?;
        rows.into_iter().map(JobRow::into_domain).collect()
    }

    async fn finish_job(
        &self,
        id: &JobId,
        lease_token: &str,
        outcome: &JobOutcome,
        payment: Option<&JobPayment>,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let payment = payment.map(encode_json).transpose()?;
        let (status, result, error) = match outcome {
            JobOutcome::Succeeded(result) => ("succeeded", Some(encode_json(result)?), None),
            JobOutcome::Failed(error) => ("failed", None, Some(encode_json(error)?)),
        };
        let done = self.write_one(sqlx::query(
            "UPDATE market_jobs SET status = $3, result = $4, error = $5, finished_at = $6, \
             payment = COALESCE($7, payment), lease_token = NULL, lease_until = NULL \
             WHERE id = $1 AND lease_token = $2 AND status = 'running'",
        )
        .bind(id.as_str())
        .bind(lease_token)
        .bind(status)
        .bind(result)
        .bind(error)
        .bind(now_ms)
        .bind(payment))
        .await?;
        Ok(done.rows_affected() == 1)
    }
}
