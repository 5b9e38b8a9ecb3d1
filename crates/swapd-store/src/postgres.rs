use std::str::FromStr;

use sqlx::PgPool;
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use swapd_core::StoreError;
use swapd_core::api_keys::ApiKey;

use crate::rows::{ApiKeyRow, api_key_columns};
use crate::shared::store_impl;
use crate::{OpenError, StoreOptions, map_sqlx_error};

pub(crate) static MIGRATOR: Migrator = sqlx::migrate!("./migrations/postgres");

/// The store for several nodes sharing one PostgreSQL database.
#[derive(Debug, Clone)]
pub struct PgStore {
    pool: PgPool,
}

impl PgStore {
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

store_impl!(PgStore, "postgres", {});
