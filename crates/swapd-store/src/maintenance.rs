//! The schema and the database itself.

use swapd_core::StoreError;

use crate::sql::{SqlStore, built};
use crate::{Backend, map_sqlx_error};
use swapd_core::store::Maintenance;

#[async_trait::async_trait]
impl Maintenance for SqlStore {
    fn backend(&self) -> &'static str {
        self.backend.name()
    }

    async fn migrate(&self) -> Result<(), StoreError> {
        let failed =
            |e: sqlx::migrate::MigrateError| StoreError::Database(format!("migration failed: {e}"));
        match (self.backend, &self.listen_url) {
            // Migrations may take as long as they need: on PostgreSQL through a connection of
            // their own, without the pool's statement timeouts.
            (Backend::Postgres, Some(url)) => {
                let own = sqlx::any::AnyPoolOptions::new()
                    .max_connections(1)
                    .connect(url)
                    .await
                    .map_err(map_sqlx_error)?;
                let migrated = self.backend.migrator().run(&own).await.map_err(failed);
                own.close().await;
                migrated
            }
            _ => self
                .backend
                .migrator()
                .run(&self.writer)
                .await
                .map_err(failed),
        }
    }

    async fn applied_migrations(&self) -> Result<Vec<i64>, StoreError> {
        sqlx::query_scalar("SELECT version FROM _sqlx_migrations ORDER BY version")
            .fetch_all(&self.pool)
            .await
            .map_err(map_sqlx_error)
    }

    async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query_scalar::<_, i32>("SELECT 1")
            .fetch_one(&self.pool)
            .await
            .map(drop)
            .map_err(map_sqlx_error)
    }

    async fn close(&self) {
        self.pool.close().await;
        self.writer.close().await;
    }

    fn bells(&self) -> std::sync::Arc<swapd_core::wakeup::Bells> {
        self.bells.clone()
    }

    fn listen_for_work(&self) -> Option<swapd_core::store::WorkListener> {
        self.work_listener()
    }

    async fn purge_expired(&self, now_ms: i64, limit: u32) -> Result<u64, StoreError> {
        let retained = now_ms - swapd_core::store::EXPIRED_RETENTION_MS;
        let mut purged = 0;
        for (table, key, expires_at, cutoff) in [
            ("nonces", "key_id, nonce", "expires_at", now_ms),
            (
                "nonce_log",
                "expires_at, key_id, nonce",
                "expires_at",
                now_ms,
            ),
            (
                "idempotency_keys",
                "principal, idem_key",
                "expires_at",
                now_ms,
            ),
            ("route_quotes", "id", "expires_at", retained),
            ("create_tokens", "token_hash", "expires_at", retained),
            ("siwx_nonces", "nonce", "expires_at", retained),
            ("console_logouts", "session", "expires_at_ms", now_ms),
        ] {
            let left = u64::from(limit) - purged;
            if left == 0 {
                break;
            }
            // The oldest first, by the table's expiry index, and no more than what is left of
            // `limit`.
            purged += self
                .write_one(
                    sqlx::query(built(format!(
                        "DELETE FROM {table} WHERE ({key}) IN (SELECT {key} FROM {table} \
                         WHERE {expires_at} <= $1 ORDER BY {expires_at} LIMIT $2)"
                    )))
                    .bind(cutoff)
                    .bind(i64::try_from(left).unwrap_or(i64::MAX)),
                )
                .await?
                .rows_affected();
        }
        Ok(purged)
    }
}
