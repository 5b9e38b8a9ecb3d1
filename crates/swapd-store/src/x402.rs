//! x402 settlements, purchases, SIWX nonces and per-client windows.

use swapd_core::StoreError;
use swapd_core::purchases::{self, Presented, Purchase, PurchasePlan, PurchaseState, PurchaseStep};
use swapd_core::rate_limit::{WindowCount, count_in_window};
use swapd_core::store::{WindowDecision, X402Settlement, X402Store};

use crate::map_sqlx_error;
use crate::sql::{SqlStore, retry_lost_races};

/// A stored purchase: resource, Idempotency-Key, state, transaction, lease end.
#[derive(sqlx::FromRow)]
struct PurchaseRow {
    resource: String,
    idempotency_key: Option<String>,
    state: String,
    tx_hash: Option<String>,
    lease_until: i64,
}

impl PurchaseRow {
    fn into_purchase(self) -> Result<Purchase, StoreError> {
        let state = match (self.state.as_str(), self.tx_hash) {
            ("settling", _) => PurchaseState::Settling,
            ("settled", transaction) => PurchaseState::Settled {
                transaction: transaction.unwrap_or_default(),
            },
            ("served", _) => PurchaseState::Served,
            (other, _) => {
                return Err(StoreError::Corrupt(format!(
                    "unknown purchase state {other}"
                )));
            }
        };
        Ok(Purchase {
            resource: self.resource,
            idempotency_key: self.idempotency_key,
            state,
            lease_until_ms: self.lease_until,
        })
    }

    fn state_columns(state: &PurchaseState) -> (&'static str, Option<&str>) {
        match state {
            PurchaseState::Settling => ("settling", None),
            PurchaseState::Settled { transaction } => ("settled", Some(transaction)),
            PurchaseState::Served => ("served", None),
        }
    }
}

#[async_trait::async_trait]
impl X402Store for SqlStore {
    async fn record_x402_settlement(
        &self,
        settlement: &X402Settlement,
    ) -> Result<bool, StoreError> {
        let inserted = self
            .write_one(
                sqlx::query(
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
                .bind(settlement.settled_at_ms),
            )
            .await?;
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

    async fn begin_purchase(
        &self,
        payer: &str,
        nonce: &str,
        presented: Presented<'_>,
        holder: &str,
        now_ms: i64,
    ) -> Result<PurchaseStep, StoreError> {
        retry_lost_races("purchase record", || async move {
            let mut tx = self.write_tx().await?;
            let row: Option<PurchaseRow> = sqlx::query_as(self.locking(
                "SELECT resource, idempotency_key, state, tx_hash, lease_until \
                 FROM x402_purchases WHERE payer = $1 AND nonce = $2",
            ))
            .bind(payer)
            .bind(nonce)
            .fetch_optional(&mut *tx)
            .await
            .map_err(map_sqlx_error)?;
            let existing = row.map(PurchaseRow::into_purchase).transpose()?;
            let (purchase, step) = match purchases::plan(existing.as_ref(), presented, now_ms) {
                PurchasePlan::Answer(step) => return Ok(step),
                PurchasePlan::Take(purchase, step) => (purchase, step),
            };
            let (state, transaction) = PurchaseRow::state_columns(&purchase.state);
            let statement = if existing.is_some() {
                "UPDATE x402_purchases SET lease_until = $7, lease_holder = $8 \
                 WHERE payer = $1 AND nonce = $2"
            } else {
                "INSERT INTO x402_purchases (payer, nonce, resource, idempotency_key, state, \
                 tx_hash, lease_until, lease_holder, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
            };
            sqlx::query(statement)
                .bind(payer)
                .bind(nonce)
                .bind(&purchase.resource)
                .bind(&purchase.idempotency_key)
                .bind(state)
                .bind(transaction)
                .bind(purchase.lease_until_ms)
                .bind(holder)
                .bind(now_ms)
                .execute(&mut *tx)
                .await
                .map_err(map_sqlx_error)?;
            tx.commit().await.map_err(map_sqlx_error)?;
            Ok(step)
        })
        .await
    }

    async fn purchase_settled(
        &self,
        payer: &str,
        nonce: &str,
        transaction: &str,
    ) -> Result<(), StoreError> {
        self.write_one(
            sqlx::query(
                "UPDATE x402_purchases SET state = 'settled', tx_hash = $3 \
                 WHERE payer = $1 AND nonce = $2 AND state = 'settling'",
            )
            .bind(payer)
            .bind(nonce)
            .bind(transaction),
        )
        .await
        .map(drop)
    }

    async fn purchase_served(&self, payer: &str, nonce: &str) -> Result<(), StoreError> {
        self.write_one(
            sqlx::query(
                "UPDATE x402_purchases SET state = 'served', lease_until = 0, lease_holder = NULL \
                 WHERE payer = $1 AND nonce = $2",
            )
            .bind(payer)
            .bind(nonce),
        )
        .await
        .map(drop)
    }

    async fn recent_purchases(
        &self,
        limit: u32,
    ) -> Result<Vec<swapd_core::store::PurchaseRecord>, StoreError> {
        let rows: Vec<(String, String, String, String, Option<String>, i64)> = sqlx::query_as(
            "SELECT payer, nonce, resource, state, tx_hash, created_at FROM x402_purchases \
             ORDER BY created_at DESC, payer, nonce LIMIT $1",
        )
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(map_sqlx_error)?;
        Ok(rows
            .into_iter()
            .map(
                |(payer, nonce, resource, state, transaction, created_at_ms)| {
                    swapd_core::store::PurchaseRecord {
                        payer,
                        nonce,
                        resource,
                        state,
                        transaction,
                        created_at_ms,
                    }
                },
            )
            .collect())
    }

    async fn release_purchase(&self, payer: &str, nonce: &str) -> Result<(), StoreError> {
        self.write_one(
            sqlx::query(
                "UPDATE x402_purchases SET lease_until = 0, lease_holder = NULL \
                 WHERE payer = $1 AND nonce = $2",
            )
            .bind(payer)
            .bind(nonce),
        )
        .await
        .map(drop)
    }

    async fn forget_purchase(&self, payer: &str, nonce: &str) -> Result<(), StoreError> {
        self.write_one(
            sqlx::query(
                "DELETE FROM x402_purchases WHERE payer = $1 AND nonce = $2 AND state = 'settling'",
            )
            .bind(payer)
            .bind(nonce),
        )
        .await
        .map(drop)
    }

    async fn siwx_nonce_used(&self, nonce: &str) -> Result<bool, StoreError> {
        let used: Option<i64> = sqlx::query_scalar(
            "SELECT expires_at FROM siwx_nonces WHERE nonce = $1 AND used_at IS NOT NULL",
        )
        .bind(nonce)
        .fetch_optional(&self.pool)
        .await
        .map_err(map_sqlx_error)?;
        Ok(used.is_some())
    }

    async fn use_siwx_nonce(
        &self,
        nonce: &str,
        expires_at_ms: i64,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let recorded = self
            .write_one(
                sqlx::query(
                    "INSERT INTO siwx_nonces (nonce, expires_at, used_at) VALUES ($1, $2, $3) \
                     ON CONFLICT (nonce) DO NOTHING",
                )
                .bind(nonce)
                .bind(expires_at_ms)
                .bind(now_ms),
            )
            .await?;
        Ok(recorded.rows_affected() == 1)
    }

    async fn consume_window(
        &self,
        key: &str,
        window_ms: i64,
        limit: u32,
        now_ms: i64,
    ) -> Result<WindowDecision, StoreError> {
        let mut tx = self.write_tx().await?;
        sqlx::query(
            "INSERT INTO x402_windows (window_key, window_start, used) VALUES ($1, $2, 0) \
             ON CONFLICT (window_key) DO NOTHING",
        )
        .bind(key)
        .bind(now_ms)
        .execute(&mut *tx)
        .await
        .map_err(map_sqlx_error)?;
        let (stored_start, used): (i64, i64) = sqlx::query_as(
            self.locking("SELECT window_start, used FROM x402_windows WHERE window_key = $1"),
        )
        .bind(key)
        .fetch_one(&mut *tx)
        .await
        .map_err(map_sqlx_error)?;
        let stored = WindowCount {
            start_ms: stored_start,
            used: u32::try_from(used).unwrap_or(u32::MAX),
        };
        let (decision, counted) = count_in_window(Some(stored), window_ms, limit, now_ms);
        if decision.allowed {
            sqlx::query(
                "UPDATE x402_windows SET window_start = $2, used = $3 WHERE window_key = $1",
            )
            .bind(key)
            .bind(counted.start_ms)
            .bind(i64::from(counted.used))
            .execute(&mut *tx)
            .await
            .map_err(map_sqlx_error)?;
        }
        tx.commit().await.map_err(map_sqlx_error)?;
        Ok(decision)
    }
}
