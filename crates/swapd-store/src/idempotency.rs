//! Idempotency records, and completing one inside another write's transaction.

use swapd_core::StoreError;
use swapd_core::idempotency::{self, Begin};

use crate::map_sqlx_error;
use crate::rows::IdempotencyRow;

/// Inside a write transaction `$tx`: completes the idempotency record of `$finish` (taking the
/// key when it was not claimed before), or fails the transaction with
/// [`StoreError::LeaseLost`] when the key is not this request's to complete.
macro_rules! finish_idempotent_in {
    ($tx:ident, $finish:expr) => {{
        let finish: swapd_core::store::IdempotentFinish<'_> = $finish;
        let status = i64::from(finish.response.status);
        let done = match finish.hold {
            swapd_core::store::KeyHold::Lease(lease_token) => sqlx::query(
                "UPDATE idempotency_keys SET status = $4, body = $5, lease_token = NULL, \
                 lease_until = NULL WHERE principal = $1 AND idem_key = $2 AND lease_token = $3",
            )
            .bind(finish.principal)
            .bind(finish.key)
            .bind(lease_token)
            .bind(status)
            .bind(&finish.response.body),
            // Taken unless a live record holds the key: one finished and not expired, or one in
            // flight under a lease that has not ended (swapd_core::idempotency::plan).
            swapd_core::store::KeyHold::AtCommit { fingerprint, now_ms } => sqlx::query(
                "INSERT INTO idempotency_keys (principal, idem_key, fingerprint, status, body, \
                 created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7) \
                 ON CONFLICT (principal, idem_key) DO UPDATE SET fingerprint = excluded.fingerprint, \
                 status = excluded.status, body = excluded.body, lease_token = NULL, \
                 lease_until = NULL, lease_holder = NULL, created_at = excluded.created_at, \
                 expires_at = excluded.expires_at \
                 WHERE idempotency_keys.expires_at <= $6 \
                 OR (idempotency_keys.status IS NULL AND idempotency_keys.lease_until <= $6)",
            )
            .bind(finish.principal)
            .bind(finish.key)
            .bind(fingerprint)
            .bind(status)
            .bind(&finish.response.body)
            .bind(now_ms)
            .bind(now_ms + swapd_core::idempotency::IDEMPOTENCY_TTL_MS),
        }
        .execute(&mut *$tx)
        .await
        .map_err(map_sqlx_error)?;
        if done.rows_affected() != 1 {
            return Err(StoreError::LeaseLost);
        }
    }};
}
pub(crate) use finish_idempotent_in;

macro_rules! impl_idempotency {
    ($store:ty, lock = $lock:literal, skip_locked = $skip_locked:literal) => {
        #[async_trait::async_trait]
        impl swapd_core::store::IdempotencyStore for $store {
            async fn begin_idempotent(
                &self,
                principal: &str,
                key: &str,
                fingerprint: &str,
                lease_token: &str,
                holder: &str,
                now_ms: i64,
            ) -> Result<Begin, StoreError> {
                // Two first attempts may both find no row; the loser of the insert race retries
                // and then sees the winner's record.
                for _ in 0..3 {
                    let mut tx = self.write_tx().await?;
                    let existing: Option<IdempotencyRow> = sqlx::query_as(concat!(
                        "SELECT fingerprint, lease_token, lease_until, status, body, expires_at ",
                        "FROM idempotency_keys WHERE principal = $1 AND idem_key = $2",
                        $lock
                    ))
                    .bind(principal)
                    .bind(key)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(map_sqlx_error)?;
                    let existing = existing.map(IdempotencyRow::into_record).transpose()?;
                    let record = match idempotency::plan(existing.as_ref(), fingerprint, lease_token, now_ms) {
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
                    let written = sqlx::query(statement)
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
                        .map_err(map_sqlx_error);
                    match written {
                        Ok(_) => {}
                        Err(StoreError::Conflict(_)) => continue,
                        Err(other) => return Err(other),
                    }
                    match tx.commit().await.map_err(map_sqlx_error) {
                        Ok(()) => {
                            return Ok(Begin::Execute {
                                lease_token: lease_token.to_owned(),
                            })
                        }
                        Err(StoreError::Conflict(_)) => continue,
                        Err(other) => return Err(other),
                    }
                }
                Err(StoreError::Unavailable(
                    "idempotency record is contended; retry".into(),
                ))
            }

            async fn idempotent_answer(
                &self,
                principal: &str,
                key: &str,
                fingerprint: &str,
                now_ms: i64,
            ) -> Result<Option<Begin>, StoreError> {
                let existing: Option<IdempotencyRow> = sqlx::query_as(
                    "SELECT fingerprint, lease_token, lease_until, status, body, expires_at \
                     FROM idempotency_keys WHERE principal = $1 AND idem_key = $2",
                )
                .bind(principal)
                .bind(key)
                .fetch_optional(&self.pool)
                .await
                .map_err(map_sqlx_error)?;
                let existing = existing.map(IdempotencyRow::into_record).transpose()?;
                Ok(idempotency::answer(existing.as_ref(), fingerprint, now_ms))
            }

            async fn finish_idempotent(
                &self,
                finish: swapd_core::store::IdempotentFinish<'_>,
            ) -> Result<bool, StoreError> {
                let mut tx = self.write_tx().await?;
                let finished: Result<(), StoreError> = async {
                    finish_idempotent_in!(tx, finish);
                    Ok(())
                }
                .await;
                match finished {
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
                sqlx::query(
                    "DELETE FROM idempotency_keys WHERE principal = $1 AND idem_key = $2 \
                     AND lease_token = $3",
                )
                .bind(principal)
                .bind(key)
                .bind(lease_token)
                .execute(&self.pool)
                .await
                .map(drop)
                .map_err(map_sqlx_error)
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
    };
}

for_each_backend!(impl_idempotency);
