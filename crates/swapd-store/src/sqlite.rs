use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;

use sqlx::any::AnyPoolOptions;
use sqlx::migrate::Migrator;
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{ConnectOptions, Executor};
use swapd_core::StoreError;

use crate::group::Group;
use crate::{Backend, OpenError, SqlStore, StoreOptions, map_sqlx_error};

pub(crate) static MIGRATOR: Migrator = sqlx::migrate!("./migrations/sqlite");

impl SqlStore {
    /// The embedded store: one SQLite file in WAL mode, named by a `sqlite://PATH` URL, created
    /// with its parent directory when missing. Readers run concurrently; SQLite serializes
    /// writers, and every write is a single statement or an immediate transaction.
    pub(crate) async fn open_sqlite(url: &str, options: &StoreOptions) -> Result<Self, OpenError> {
        let connect = SqliteConnectOptions::from_str(url)
            .map_err(|e| OpenError::InvalidUrl(e.to_string()))?
            .create_if_missing(true);
        if let Some(parent) = Path::new(connect.get_filename()).parent()
            && !parent.as_os_str().is_empty()
        {
            std::fs::create_dir_all(parent).map_err(|e| {
                OpenError::Connect(format!("cannot create {}: {e}", parent.display()))
            })?;
        }
        // The driver's defaults (foreign keys on, a 5 s busy timeout) come with the URL; the
        // journal and sync modes are set on every new connection.
        let url = connect.to_url_lossy();
        let pool = |connections: u32| {
            AnyPoolOptions::new()
                .max_connections(connections)
                .acquire_timeout(options.acquire_timeout)
                // A connection to a local file does not go stale: no ping (a round trip to the
                // connection's thread) before each use.
                .test_before_acquire(false)
                .after_connect(|conn, _| {
                    Box::pin(async move {
                        conn.execute("PRAGMA journal_mode = WAL").await?;
                        conn.execute("PRAGMA synchronous = NORMAL").await?;
                        Ok(())
                    })
                })
                .connect(url.as_str())
        };
        let opened = |e: sqlx::Error| OpenError::Connect(e.to_string());
        let readers = pool(options.max_connections).await.map_err(opened)?;
        // SQLite lets one connection write at a time, and a writer that finds the lock taken
        // sleeps in SQLite's busy handler (1 to 100 ms a try) even when the lock is free again
        // a moment later: under load that was most of the slowest requests' time. Every write
        // of this process goes through one connection instead, whose waiters the pool serves
        // in turn (docs/benchmarks.md, issue 46).
        let writer = pool(1).await.map_err(opened)?;
        Ok(Self {
            pool: readers,
            group: Some(Arc::new(Group::new(writer.clone()))),
            writer,
            backend: Backend::Sqlite,
            bells: Default::default(),
            listen_url: None,
            wariness: Default::default(),
        })
    }

    /// The journal mode the open SQLite database reports (`wal` for stores opened here).
    pub async fn journal_mode(&self) -> Result<String, StoreError> {
        sqlx::query_scalar("PRAGMA journal_mode")
            .fetch_one(&self.pool)
            .await
            .map_err(map_sqlx_error)
    }
}
