//! API keys, nonces and rate-limit state.

use swapd_core::StoreError;
use swapd_core::api_keys::{ApiKey, RateLimits};
use swapd_core::rate_limit::{self, RateDecision, RateState};
use swapd_core::store::{KeyStore, NonceRecord};

use crate::map_sqlx_error;
use crate::rows::{API_KEY_COLUMNS, ApiKeyRow, RateRow};
use crate::sql::{SqlStore, built};

const RATE_STATE: &str =
    "SELECT tat_us, window_start_ms, hour_count, hour_weight FROM rate_limits WHERE key_id = $1";

#[async_trait::async_trait]
impl KeyStore for SqlStore {
    async fn insert_api_key(&self, key: &ApiKey) -> Result<(), StoreError> {
        let row = ApiKeyRow::from_domain(key);
        self.write_one(
            sqlx::query(built(format!(
                "INSERT INTO api_keys ({API_KEY_COLUMNS}) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)"
            )))
            .bind(row.id)
            .bind(row.name)
            .bind(row.permissions)
            .bind(row.ip_allow)
            .bind(row.origins)
            .bind(row.per_minute)
            .bind(row.per_hour)
            .bind(row.weight_per_hour)
            .bind(row.status)
            .bind(row.sealed_secret)
            .bind(row.created_at)
            .bind(row.revoked_at)
            .bind(row.markup_bps)
            .bind(row.markup_recipient),
        )
        .await
        .map(drop)
    }

    async fn api_key(&self, id: &str) -> Result<Option<ApiKey>, StoreError> {
        sqlx::query_as::<_, ApiKeyRow>(built(format!(
            "SELECT {API_KEY_COLUMNS} FROM api_keys WHERE id = $1"
        )))
        .bind(id)
        .fetch_optional(&self.pool)
        .await
        .map_err(map_sqlx_error)?
        .map(ApiKeyRow::into_domain)
        .transpose()
    }

    async fn list_api_keys(&self) -> Result<Vec<ApiKey>, StoreError> {
        sqlx::query_as::<_, ApiKeyRow>(built(format!(
            "SELECT {API_KEY_COLUMNS} FROM api_keys ORDER BY created_at, id"
        )))
        .fetch_all(&self.pool)
        .await
        .map_err(map_sqlx_error)?
        .into_iter()
        .map(ApiKeyRow::into_domain)
        .collect()
    }

    async fn revoke_api_key(&self, id: &str, now_ms: i64) -> Result<Option<ApiKey>, StoreError> {
        sqlx::query_as::<_, ApiKeyRow>(built(format!(
            "UPDATE api_keys SET status = 'revoked', revoked_at = COALESCE(revoked_at, $2) \
             WHERE id = $1 RETURNING {API_KEY_COLUMNS}"
        )))
        .bind(id)
        .bind(now_ms)
        .fetch_optional(&self.writer)
        .await
        .map_err(map_sqlx_error)?
        .map(ApiKeyRow::into_domain)
        .transpose()
    }

    async fn remember_nonce(
        &self,
        key_id: &str,
        nonce: &str,
        expires_at_ms: i64,
    ) -> Result<bool, StoreError> {
        let inserted = self
            .write_one(
                sqlx::query(
                    "INSERT INTO nonces (key_id, nonce, expires_at) VALUES ($1, $2, $3) \
                     ON CONFLICT (key_id, nonce) DO NOTHING",
                )
                .bind(key_id)
                .bind(nonce)
                .bind(expires_at_ms),
            )
            .await?;
        Ok(inserted.rows_affected() == 1)
    }

    async fn remember_nonces(&self, batch: &[NonceRecord]) -> Result<(), StoreError> {
        let mut tx = self.write_tx().await?;
        // Multi-row inserts: one statement per 1 000 nonces (3 parameters each, well within
        // both databases' parameter limits).
        for chunk in batch.chunks(1_000) {
            let mut insert = sqlx::query(built(format!(
                "INSERT INTO nonce_log (key_id, nonce, expires_at) VALUES {} \
                 ON CONFLICT DO NOTHING",
                self.values(chunk.len(), 3)
            )));
            for record in chunk {
                insert = insert
                    .bind(&record.key_id)
                    .bind(&record.nonce)
                    .bind(record.expires_at_ms);
            }
            insert.execute(&mut *tx).await.map_err(map_sqlx_error)?;
        }
        tx.commit().await.map_err(map_sqlx_error)
    }

    async fn live_nonces(&self, now_ms: i64) -> Result<Vec<NonceRecord>, StoreError> {
        let rows: Vec<(String, String, i64)> =
            sqlx::query_as("SELECT key_id, nonce, expires_at FROM nonce_log WHERE expires_at > $1")
                .bind(now_ms)
                .fetch_all(&self.pool)
                .await
                .map_err(map_sqlx_error)?;
        Ok(rows
            .into_iter()
            .map(|(key_id, nonce, expires_at_ms)| NonceRecord {
                key_id,
                nonce,
                expires_at_ms,
            })
            .collect())
    }

    async fn consume_rate(
        &self,
        key_id: &str,
        limits: RateLimits,
        cost: u32,
        now_ms: i64,
    ) -> Result<RateDecision, StoreError> {
        let mut tx = self.write_tx().await?;
        sqlx::query(
            "INSERT INTO rate_limits (key_id, tat_us, window_start_ms, hour_count, hour_weight) \
             VALUES ($1, 0, 0, 0, 0) ON CONFLICT (key_id) DO NOTHING",
        )
        .bind(key_id)
        .execute(&mut *tx)
        .await
        .map_err(map_sqlx_error)?;
        let row: RateRow = sqlx::query_as(self.locking(RATE_STATE))
            .bind(key_id)
            .fetch_one(&mut *tx)
            .await
            .map_err(map_sqlx_error)?;
        let decision = rate_limit::decide(row.into_state()?, limits, cost, now_ms);
        if decision.refused_by.is_none() {
            let state = decision.state;
            sqlx::query(
                "UPDATE rate_limits SET tat_us = $2, window_start_ms = $3, hour_count = $4, \
                 hour_weight = $5 WHERE key_id = $1",
            )
            .bind(key_id)
            .bind(state.tat_us)
            .bind(state.window_start_ms)
            .bind(i64::from(state.hour_count))
            .bind(i64::from(state.hour_weight))
            .execute(&mut *tx)
            .await
            .map_err(map_sqlx_error)?;
        }
        tx.commit().await.map_err(map_sqlx_error)?;
        Ok(decision)
    }

    async fn rate_state(&self, key_id: &str) -> Result<RateState, StoreError> {
        let row: Option<RateRow> = sqlx::query_as(RATE_STATE)
            .bind(key_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(map_sqlx_error)?;
        row.map_or(Ok(RateState::default()), RateRow::into_state)
    }

    async fn end_console_session(
        &self,
        session: &str,
        now_ms: i64,
        expires_at_ms: i64,
    ) -> Result<(), StoreError> {
        self.write_one(
            sqlx::query(
                "INSERT INTO console_logouts (session, at_ms, expires_at_ms) VALUES ($1, $2, $3) \
                 ON CONFLICT (session) DO UPDATE SET at_ms = excluded.at_ms, \
                 expires_at_ms = excluded.expires_at_ms",
            )
            .bind(session)
            .bind(now_ms)
            .bind(expires_at_ms),
        )
        .await
        .map(drop)
    }

    async fn console_session_ended(
        &self,
        session: &str,
        issued_at_ms: i64,
    ) -> Result<bool, StoreError> {
        let ended: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM console_logouts WHERE session = $1 \
             OR (session = $2 AND at_ms >= $3)",
        )
        .bind(session)
        .bind(swapd_core::store::EVERY_CONSOLE_SESSION)
        .bind(issued_at_ms)
        .fetch_one(&self.pool)
        .await
        .map_err(map_sqlx_error)?;
        Ok(ended > 0)
    }
}
