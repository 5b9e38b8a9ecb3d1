use std::str::FromStr;

use sqlx::any::AnyPoolOptions;
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgListener};
use swapd_core::store::WorkListener;
use swapd_core::wakeup::{CHANNEL, Work};

use crate::{Backend, OpenError, SqlStore, StoreOptions};

pub(crate) static MIGRATOR: Migrator = sqlx::migrate!("./migrations/postgres");

impl SqlStore {
    /// The store for several nodes sharing one PostgreSQL database, named by a
    /// `postgres://USER@HOST/DB` URL (its parameters, such as `options=-c search_path=…`, apply).
    pub(crate) async fn open_postgres(
        url: &str,
        options: &StoreOptions,
    ) -> Result<Self, OpenError> {
        PgConnectOptions::from_str(url).map_err(|e| OpenError::InvalidUrl(e.to_string()))?;
        let pool = AnyPoolOptions::new()
            .max_connections(options.max_connections)
            .acquire_timeout(options.acquire_timeout)
            .connect(url)
            .await
            .map_err(|e| OpenError::Connect(e.to_string()))?;
        Ok(Self {
            writer: pool.clone(),
            pool,
            backend: Backend::Postgres,
            bells: Default::default(),
            listen_url: Some(url.to_owned()),
        })
    }

    /// PostgreSQL: hears every node's announcements and rings this process's bells; after a
    /// lost connection it listens again a second later (polling covers the gap). SQLite has one
    /// process: nothing to hear.
    pub(crate) fn work_listener(&self) -> Option<WorkListener> {
        let (url, bells) = (self.listen_url.clone()?, self.bells.clone());
        Some(Box::pin(async move {
            loop {
                match PgListener::connect(&url).await {
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
}
