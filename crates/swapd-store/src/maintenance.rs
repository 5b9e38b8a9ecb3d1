//! The schema and the database itself.

use swapd_core::StoreError;

use crate::sql::SqlStore;
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

    async fn purge_expired(&self, now_ms: i64) -> Result<u64, StoreError> {
        let mut purged = 0;
        let retained = now_ms - swapd_core::store::EXPIRED_RETENTION_MS;
        for (statement, cutoff) in [
            ("DELETE FROM nonces WHERE expires_at <= $1", now_ms),
            ("DELETE FROM nonce_log WHERE expires_at <= $1", now_ms),
            (
                "DELETE FROM idempotency_keys WHERE expires_at <= $1",
                now_ms,
            ),
            ("DELETE FROM route_quotes WHERE expires_at <= $1", retained),
            ("DELETE FROM create_tokens WHERE expires_at <= $1", retained),
            ("DELETE FROM siwx_nonces WHERE expires_at <= $1", retained),
            (
                "DELETE FROM console_logouts WHERE expires_at_ms <= $1",
                now_ms,
            ),
        ] {
            purged += sqlx::query(statement)
                .bind(cutoff)
                .execute(&self.writer)
                .await
                .map_err(map_sqlx_error)?
                .rows_affected();
        }
        Ok(purged)
    }
}
