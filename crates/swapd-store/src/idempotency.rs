//! Idempotency records. Completing one inside another write's transaction is
//! [`crate::sql::finish_idempotent_in`].

use swapd_core::StoreError;
use swapd_core::idempotency::{self, Begin};
use swapd_core::store::{IdempotencyStore, IdempotentFinish};

use crate::map_sqlx_error;
use crate::rows::IdempotencyRow;
use crate::sql::{SqlStore, finish_idempotent_in, retry_lost_races};

const RECORD: &str = "SELECT fingerprint, lease_token, lease_until, status, body, expires_at \
                      FROM idempotency_keys WHERE principal = $1 AND idem_key = $2";

#[async_trait::async_trait]
impl IdempotencyStore for SqlStore {
    async fn begin_idempotent(
        &self,
        principal: &str,
        key: &str,
        fingerprint: &str,
        lease_token: &str,
        holder: &str,
        now_ms: i64,
    ) -> Result<Begin, StoreError> {
        retry_lost_races("idempotency record", || async move {
            let mut tx = self.write_tx().await?;
            let existing: Option<IdempotencyRow> = sqlx::query_as(self.locking(RECORD))
                .bind(principal)
                .bind(key)
                .fetch_optional(&mut *tx)
                .await
                .map_err(map_sqlx_error)?;
            let existing = existing.map(IdempotencyRow::into_record).transpose()?;
            let record =
                match idempotency::plan(existing.as_ref(), fingerprint, lease_token, now_ms) {
                    idempotency::Plan::Answer(answer) => return Ok(answer),
                    idempotency::Plan::Claim(record) => record,
                };
            let idempotency::RecordState::InFlight { lease_until_ms, .. } = record.state else {
                unreachable!("a claim is always in flight");
            };
            let statement = if existing.is_some() {
                "UPDATE idempotency_keys SET fingerprint = $3, lease_token = $4, \
                 lease_until = $5, status = NULL, body = NULL, created_at = $6, expires_at = $7, \
                 lease_holder = $8 WHERE principal = $1 AND idem_key = $2"
            } else {
                "INSERT INTO idempotency_keys (principal, idem_key, fingerprint, lease_token, \
                 lease_until, created_at, expires_at, lease_holder) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
            };
            sqlx::query(statement)
                .bind(principal)
                .bind(key)
                .bind(&record.fingerprint)
                .bind(lease_token)
                .bind(lease_until_ms)
                .bind(now_ms)
                .bind(record.expires_at_ms)
                .bind(holder)
                .execute(&mut *tx)
                .await
                .map_err(map_sqlx_error)?;
            tx.commit().await.map_err(map_sqlx_error)?;
            Ok(Begin::Execute {
                lease_token: lease_token.to_owned(),
            })
        })
        .await
    }

    async fn idempotent_answer(
        &self,
        principal: &str,
        key: &str,
        fingerprint: &str,
        now_ms: i64,
    ) -> Result<Option<Begin>, StoreError> {
        let existing: Option<IdempotencyRow> = sqlx::query_as(RECORD)
            .bind(principal)
            .bind(key)
            .fetch_optional(&self.pool)
            .await
            .map_err(map_sqlx_error)?;
        let existing = existing.map(IdempotencyRow::into_record).transpose()?;
        Ok(idempotency::answer(existing.as_ref(), fingerprint, now_ms))
    }

    async fn finish_idempotent(&self, finish: IdempotentFinish<'_>) -> Result<bool, StoreError> {
        let mut tx = self.write_tx().await?;
        match finish_idempotent_in(&mut tx, finish).await {
            Ok(()) => {
                tx.commit().await.map_err(map_sqlx_error)?;
                Ok(true)
            }
            Err(StoreError::LeaseLost) => Ok(false),
            Err(other) => Err(other),
        }
    }

    async fn release_idempotent(
        &self,
        principal: &str,
        key: &str,
        lease_token: &str,
    ) -> Result<(), StoreError> {
        self.write_one(
            sqlx::query(
                "DELETE FROM idempotency_keys WHERE principal = $1 AND idem_key = $2 \
                 AND lease_token = $3",
            )
            .bind(principal)
            .bind(key)
            .bind(lease_token),
        )
        .await
        .map(drop)
    }

    async fn release_claims_of(&self, holder: &str) -> Result<u64, StoreError> {
        let mut tx = self.write_tx().await?;
        let keys = sqlx::query(
            "DELETE FROM idempotency_keys WHERE lease_holder = $1 AND lease_token IS NOT NULL",
        )
        .bind(holder)
        .execute(&mut *tx)
        .await
        .map_err(map_sqlx_error)?;
        let purchases = sqlx::query(
            "UPDATE x402_purchases SET lease_until = 0, lease_holder = NULL \
             WHERE lease_holder = $1",
        )
        .bind(holder)
        .execute(&mut *tx)
        .await
        .map_err(map_sqlx_error)?;
        tx.commit().await.map_err(map_sqlx_error)?;
        Ok(keys.rows_affected() + purchases.rows_affected())
    }
}
