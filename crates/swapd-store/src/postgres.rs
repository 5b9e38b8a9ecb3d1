use std::str::FromStr;

use sqlx::PgPool;
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgListener, PgPoolOptions};
use swapd_core::StoreError;
use swapd_core::store::WorkListener;
use swapd_core::wakeup::{CHANNEL, Work};

use crate::{OpenError, StoreOptions, map_sqlx_error};

pub(crate) static MIGRATOR: Migrator = sqlx::migrate!("./migrations/postgres");

/// The store for several nodes sharing one PostgreSQL database.
#[derive(Debug, Clone)]
pub struct PgStore {
    pub(crate) pool: PgPool,
    pub(crate) bells: std::sync::Arc<swapd_core::wakeup::Bells>,
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
        Ok(Self {
            pool,
            bells: Default::default(),
        })
    }
}

impl PgStore {
    /// A write transaction; rows it must update are locked with `SELECT ... FOR UPDATE`.
    pub(crate) async fn write_tx(
        &self,
    ) -> Result<sqlx::Transaction<'static, sqlx::Postgres>, StoreError> {
        self.pool.begin().await.map_err(map_sqlx_error)
    }

    /// Announces `works` to every node when `tx` commits (`NOTIFY` is transactional), in one
    /// notification: their names, comma-separated.
    pub(crate) async fn announce_in(
        tx: &mut sqlx::Transaction<'static, sqlx::Postgres>,
        works: &[Work],
    ) -> Result<(), StoreError> {
        if works.is_empty() {
            return Ok(());
        }
        let payload: Vec<&str> = works.iter().map(|work| work.as_str()).collect();
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(CHANNEL)
            .bind(payload.join(","))
            .execute(&mut **tx)
            .await
            .map(drop)
            .map_err(map_sqlx_error)
    }

    /// Hears every node's announcements and rings this process's bells; after a lost
    /// connection it listens again a second later (polling covers the gap).
    pub(crate) fn work_listener(&self) -> Option<WorkListener> {
        let (pool, bells) = (self.pool.clone(), self.bells.clone());
        Some(Box::pin(async move {
            loop {
                match PgListener::connect_with(&pool).await {
                    Ok(mut listener) => match listener.listen(CHANNEL).await {
                        Ok(()) => loop {
                            match listener.recv().await {
                                Ok(notification) => {
                                    for work in notification.payload().split(',') {
                                        if let Ok(work) = work.parse::<Work>() {
                                            bells.ring(work);
                                        }
                                    }
                                }
                                Err(error) => {
                                    tracing::warn!(%error, "lost the work announcements; listening again");
                                    break;
                                }
                            }
                        },
                        Err(error) => {
                            tracing::warn!(%error, "cannot listen for work announcements")
                        }
                    },
                    Err(error) => tracing::warn!(%error, "cannot listen for work announcements"),
                }
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            }
        }))
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
