use std::str::FromStr;

use sqlx::PgPool;
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use swapd_core::StoreError;
use swapd_core::api_keys::{ApiKey, RateLimits};
use swapd_core::idempotency::{self, Begin, StoredResponse};
use swapd_core::market::routes::{CreateTokenRecord, RedeemError, RouteQuote};
use swapd_core::market_intel::{Job, JobOutcome};
use swapd_core::onchain::ExecutionPlan;
use swapd_core::orders::EventType;
use swapd_core::orders::{Order, OrderEvent};
use swapd_core::rate_limit::{self, RateDecision, RateState};
use swapd_core::store::{
    IdempotentFinish, NonceRecord, RateObservation, SandboxDeposit, SandboxTransfer,
    WindowDecision, X402Settlement,
};
use swapd_core::webhooks::{
    Attempt, AttemptRecord, ClaimedDelivery, Delivery, DeliveryStatus, QueuedDelivery,
    ReplaySelection, Subscription,
};

use crate::rows::{
    ApiKeyRow, IdempotencyRow, JobRow, RateRow, SubscriptionRow, api_key_columns, job_columns,
    subscription_columns,
};
use crate::shared::{
    DeliveryRow, EventRow, PayloadRow, decode_json, encode_json, event_columns, event_from_row,
    finish_idempotent_in, insert_events_in, redeem_in, store_impl, transfer_from_row,
};
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

impl PgStore {
    /// A write transaction; rows it must update are locked with `SELECT ... FOR UPDATE`.
    async fn write_tx(&self) -> Result<sqlx::Transaction<'static, sqlx::Postgres>, StoreError> {
        self.pool.begin().await.map_err(map_sqlx_error)
    }
}

store_impl!(
    PgStore,
    "postgres",
    lock = " FOR UPDATE",
    skip_locked = " FOR UPDATE SKIP LOCKED",
    {}
);
