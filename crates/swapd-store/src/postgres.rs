use std::str::FromStr;

use sqlx::PgPool;
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use swapd_core::StoreError;

use crate::{OpenError, StoreOptions, map_sqlx_error};

pub(crate) static MIGRATOR: Migrator = sqlx::migrate!("./migrations/postgres");

/// The store for several nodes sharing one PostgreSQL database.
#[derive(Debug, Clone)]
pub struct PgStore {
    pub(crate) pool: PgPool,
}

impl PgStore {
    pub(crate) const BACKEND: &'static str = "postgres";
    pub(crate) const MIGRATOR: &'static Migrator = &MIGRATOR;

    pub async fn open(url: &str, options: &StoreOptions) -> Result<Self, OpenError> {
        let connect =
            PgConnectOptions::from_str(url).map_err(|e| OpenError::InvalidUrl(e.to_string()))?;
        Self::open_with(connect, options).await
    }

    pub async fn open_with(
        connect: PgConnectOptions,
        options: &StoreOptions,
    ) -> Result<Self, OpenError> {
        let pool = PgPoolOptions::new()
            .max_connections(options.max_connections)
            .acquire_timeout(options.acquire_timeout)
            .connect_with(connect)
            .await
            .map_err(|e| OpenError::Connect(e.to_string()))?;
        Ok(Self { pool })
    }
}

impl PgStore {
    /// A write transaction; rows it must update are locked with `SELECT ... FOR UPDATE`.
    pub(crate) async fn write_tx(
        &self,
    ) -> Result<sqlx::Transaction<'static, sqlx::Postgres>, StoreError> {
        self.pool.begin().await.map_err(map_sqlx_error)
    }

    /// Serializes the write transactions of one owner that must see each other's rows (a cap
    /// on how many they may have), until `tx` ends.
    pub(crate) async fn serialize_owner(
        tx: &mut sqlx::Transaction<'static, sqlx::Postgres>,
        owner: &str,
    ) -> Result<(), StoreError> {
        sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
            .bind(owner)
            .execute(&mut **tx)
            .await
            .map(drop)
            .map_err(map_sqlx_error)
    }
}
