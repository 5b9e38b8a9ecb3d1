//! x402 settlements, payment claims, SIWX nonces and per-client windows.

use swapd_core::StoreError;
use swapd_core::store::{WindowDecision, X402Settlement};

use crate::map_sqlx_error;

macro_rules! impl_x402 {
    ($store:ty, lock = $lock:literal, skip_locked = $skip_locked:literal) => {
        #[async_trait::async_trait]
        impl swapd_core::store::X402Store for $store {
            async fn record_x402_settlement(
                &self,
                settlement: &X402Settlement,
            ) -> Result<bool, StoreError> {
                let inserted = sqlx::query(
                    "INSERT INTO x402_settlements (payer, nonce, amount, pay_to, asset, network, \
                     tx_hash, settled_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
                     ON CONFLICT (payer, nonce) DO NOTHING",
                )
                .bind(&settlement.payer)
                .bind(&settlement.nonce)
                .bind(&settlement.amount)
                .bind(&settlement.pay_to)
                .bind(&settlement.asset)
                .bind(&settlement.network)
                .bind(&settlement.transaction)
                .bind(settlement.settled_at_ms)
                .execute(&self.pool)
                .await
                .map_err(map_sqlx_error)?;
                Ok(inserted.rows_affected() == 1)
            }

            async fn x402_settlement(
                &self,
                payer: &str,
                nonce: &str,
            ) -> Result<Option<X402Settlement>, StoreError> {
                let row: Option<(String, String, String, String, String, String, String, i64)> =
                    sqlx::query_as(
                        "SELECT payer, nonce, amount, pay_to, asset, network, tx_hash, settled_at \
                         FROM x402_settlements WHERE payer = $1 AND nonce = $2",
                    )
                    .bind(payer)
                    .bind(nonce)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(map_sqlx_error)?;
                Ok(row.map(
                    |(payer, nonce, amount, pay_to, asset, network, transaction, settled_at_ms)| {
                        X402Settlement {
                            payer,
                            nonce,
                            amount,
                            pay_to,
                            asset,
                            network,
                            transaction,
                            settled_at_ms,
                        }
                    },
                ))
            }

            async fn claim_x402_payment(
                &self,
                payer: &str,
                nonce: &str,
                resource: &str,
                now_ms: i64,
            ) -> Result<bool, StoreError> {
                let inserted = sqlx::query(
                    "INSERT INTO x402_payment_claims (payer, nonce, resource, claimed_at) \
                     VALUES ($1, $2, $3, $4) ON CONFLICT (payer, nonce) DO NOTHING",
                )
                .bind(payer)
                .bind(nonce)
                .bind(resource)
                .bind(now_ms)
                .execute(&self.pool)
                .await
                .map_err(map_sqlx_error)?;
                Ok(inserted.rows_affected() == 1)
            }

            async fn release_x402_payment(&self, payer: &str, nonce: &str) -> Result<(), StoreError> {
                sqlx::query("DELETE FROM x402_payment_claims WHERE payer = $1 AND nonce = $2")
                    .bind(payer)
                    .bind(nonce)
                    .execute(&self.pool)
                    .await
                    .map(drop)
                    .map_err(map_sqlx_error)
            }

            async fn issue_siwx_nonce(&self, nonce: &str, expires_at_ms: i64) -> Result<(), StoreError> {
                sqlx::query("INSERT INTO siwx_nonces (nonce, expires_at) VALUES ($1, $2)")
                    .bind(nonce)
                    .bind(expires_at_ms)
                    .execute(&self.pool)
                    .await
                    .map(drop)
                    .map_err(map_sqlx_error)
            }

            async fn check_siwx_nonce(
                &self,
                nonce: &str,
                now_ms: i64,
                consume: bool,
            ) -> Result<bool, StoreError> {
                if consume {
                    let used = sqlx::query(
                        "UPDATE siwx_nonces SET used_at = $2 \
                         WHERE nonce = $1 AND used_at IS NULL AND expires_at > $2",
                    )
                    .bind(nonce)
                    .bind(now_ms)
                    .execute(&self.pool)
                    .await
                    .map_err(map_sqlx_error)?;
                    return Ok(used.rows_affected() == 1);
                }
                let live: Option<i64> = sqlx::query_scalar(
                    "SELECT expires_at FROM siwx_nonces \
                     WHERE nonce = $1 AND used_at IS NULL AND expires_at > $2",
                )
                .bind(nonce)
                .bind(now_ms)
                .fetch_optional(&self.pool)
                .await
                .map_err(map_sqlx_error)?;
                Ok(live.is_some())
            }

            async fn consume_window(
                &self,
                key: &str,
                window_ms: i64,
                limit: u32,
                now_ms: i64,
            ) -> Result<WindowDecision, StoreError> {
                let start = now_ms - now_ms.rem_euclid(window_ms.max(1));
                let mut tx = self.write_tx().await?;
                sqlx::query(
                    "INSERT INTO x402_windows (window_key, window_start, used) VALUES ($1, $2, 0) \
                     ON CONFLICT (window_key) DO NOTHING",
                )
                .bind(key)
                .bind(start)
                .execute(&mut *tx)
                .await
                .map_err(map_sqlx_error)?;
                let (stored_start, used): (i64, i64) = sqlx::query_as(concat!(
                    "SELECT window_start, used FROM x402_windows WHERE window_key = $1",
                    $lock
                ))
                .bind(key)
                .fetch_one(&mut *tx)
                .await
                .map_err(map_sqlx_error)?;
                let used = if stored_start == start { used } else { 0 };
                let used = u32::try_from(used).unwrap_or(u32::MAX);
                let allowed = used < limit;
                if allowed {
                    sqlx::query(
                        "UPDATE x402_windows SET window_start = $2, used = $3 WHERE window_key = $1",
                    )
                    .bind(key)
                    .bind(start)
                    .bind(i64::from(used + 1))
                    .execute(&mut *tx)
                    .await
                    .map_err(map_sqlx_error)?;
                }
                tx.commit().await.map_err(map_sqlx_error)?;
                Ok(WindowDecision {
                    allowed,
                    limit,
                    used: if allowed { used + 1 } else { used },
                    resets_at_ms: start + window_ms,
                })
            }
        }
    };
}

for_each_backend!(impl_x402);
