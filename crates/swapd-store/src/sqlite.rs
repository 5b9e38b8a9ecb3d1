use std::path::Path;
use std::str::FromStr;

use sqlx::SqlitePool;
use sqlx::migrate::Migrator;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use swapd_core::StoreError;

use crate::{OpenError, StoreOptions, map_sqlx_error};

pub(crate) static MIGRATOR: Migrator = sqlx::migrate!("./migrations/sqlite");

/// The embedded store: one SQLite file in WAL mode. Readers run concurrently; SQLite serializes
/// writers, and every write is a single statement or an immediate transaction.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pub(crate) pool: SqlitePool,
    pub(crate) bells: std::sync::Arc<swapd_core::wakeup::Bells>,
}

impl SqliteStore {
    pub(crate) const BACKEND: &'static str = "sqlite";
    pub(crate) const MIGRATOR: &'static Migrator = &MIGRATOR;

    /// Opens (creating if missing) the database file named by a `sqlite://PATH` URL, creating its
    /// parent directory too.
    pub async fn open(url: &str, options: &StoreOptions) -> Result<Self, OpenError> {
        let connect = SqliteConnectOptions::from_str(url)
            .map_err(|e| OpenError::InvalidUrl(e.to_string()))?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(std::time::Duration::from_secs(5))
            .foreign_keys(true);
        if let Some(parent) = Path::new(connect.get_filename()).parent()
            && !parent.as_os_str().is_empty()
        {
            std::fs::create_dir_all(parent).map_err(|e| {
                OpenError::Connect(format!("cannot create {}: {e}", parent.display()))
            })?;
        }
        let pool = SqlitePoolOptions::new()
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

    /// The journal mode the open database reports (`wal` for stores opened here).
    pub async fn journal_mode(&self) -> Result<String, StoreError> {
        sqlx::query_scalar("PRAGMA journal_mode")
            .fetch_one(&self.pool)
            .await
            .map_err(map_sqlx_error)
    }
}

impl SqliteStore {
    /// A write transaction. SQLite takes the write lock at BEGIN, so a read-then-write
    /// transaction cannot fail halfway with SQLITE_BUSY.
    pub(crate) async fn write_tx(
        &self,
    ) -> Result<sqlx::Transaction<'static, sqlx::Sqlite>, StoreError> {
        self.pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(map_sqlx_error)
    }

    /// One process uses the file: the bells rung after the commit reach every loop.
    pub(crate) async fn announce_in(
        _tx: &mut sqlx::Transaction<'static, sqlx::Sqlite>,
        _works: &[swapd_core::wakeup::Work],
    ) -> Result<(), StoreError> {
        Ok(())
    }

    pub(crate) fn work_listener(&self) -> Option<swapd_core::store::WorkListener> {
        None
    }

    /// Write transactions are already serialized (`BEGIN IMMEDIATE`, one writer).
    pub(crate) async fn serialize_owner(
        _tx: &mut sqlx::Transaction<'static, sqlx::Sqlite>,
        _owner: &str,
    ) -> Result<(), StoreError> {
        Ok(())
    }
}
