//! The `impl Store` of both backends. The SQL is the same on SQLite and PostgreSQL wherever the
//! dialects agree, so there is one text of each query (sqlx binds `$N` placeholders on both
//! drivers); the methods that differ are passed in by the backend module.

macro_rules! store_impl {
    ($store:ty, $backend:literal, { $($backend_methods:tt)* }) => {
        #[async_trait::async_trait]
        impl swapd_core::Store for $store {
        fn backend(&self) -> &'static str {
            $backend
        }

        async fn migrate(&self) -> Result<(), StoreError> {
            MIGRATOR
                .run(&self.pool)
                .await
                .map_err(|e| StoreError::Database(format!("migration failed: {e}")))
        }

        $($backend_methods)*

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

        async fn insert_api_key(&self, key: &ApiKey) -> Result<(), StoreError> {
            let row = ApiKeyRow::from_domain(key);
            sqlx::query(concat!(
                "INSERT INTO api_keys (",
                api_key_columns!(),
                ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)"
            ))
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
            .execute(&self.pool)
            .await
            .map(drop)
            .map_err(map_sqlx_error)
        }

        async fn api_key(&self, id: &str) -> Result<Option<ApiKey>, StoreError> {
            sqlx::query_as::<_, ApiKeyRow>(concat!(
                "SELECT ",
                api_key_columns!(),
                " FROM api_keys WHERE id = $1"
            ))
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(map_sqlx_error)?
            .map(ApiKeyRow::into_domain)
            .transpose()
        }

        async fn list_api_keys(&self) -> Result<Vec<ApiKey>, StoreError> {
            sqlx::query_as::<_, ApiKeyRow>(concat!(
                "SELECT ",
                api_key_columns!(),
                " FROM api_keys ORDER BY created_at, id"
            ))
            .fetch_all(&self.pool)
            .await
            .map_err(map_sqlx_error)?
            .into_iter()
            .map(ApiKeyRow::into_domain)
            .collect()
        }

        async fn remember_nonce(
            &self,
            key_id: &str,
            nonce: &str,
            expires_at_ms: i64,
        ) -> Result<bool, StoreError> {
            let inserted = sqlx::query(
                "INSERT INTO nonces (key_id, nonce, expires_at) VALUES ($1, $2, $3) \
                 ON CONFLICT (key_id, nonce) DO NOTHING",
            )
            .bind(key_id)
            .bind(nonce)
            .bind(expires_at_ms)
            .execute(&self.pool)
            .await
            .map_err(map_sqlx_error)?;
            Ok(inserted.rows_affected() == 1)
        }

        async fn purge_expired(&self, now_ms: i64) -> Result<u64, StoreError> {
            sqlx::query("DELETE FROM nonces WHERE expires_at <= $1")
                .bind(now_ms)
                .execute(&self.pool)
                .await
                .map(|done| done.rows_affected())
                .map_err(map_sqlx_error)
        }

        async fn revoke_api_key(
            &self,
            id: &str,
            now_ms: i64,
        ) -> Result<Option<ApiKey>, StoreError> {
            sqlx::query_as::<_, ApiKeyRow>(concat!(
                "UPDATE api_keys SET status = 'revoked', revoked_at = COALESCE(revoked_at, $2) ",
                "WHERE id = $1 RETURNING ",
                api_key_columns!()
            ))
            .bind(id)
            .bind(now_ms)
            .fetch_optional(&self.pool)
            .await
            .map_err(map_sqlx_error)?
            .map(ApiKeyRow::into_domain)
            .transpose()
        }
        }
    };
}

pub(crate) use store_impl;
