//! The [`Store`] port implemented once for SQLite (the embedded default) and PostgreSQL (for
//! several nodes): [`SqlStore`]. Each aggregate of the port has a module here with one text of
//! its SQL for both backends, run through sqlx's `Any` driver; [`sql`] holds what they share
//! and the few words the dialects spell differently. [`conformance`] is the one suite both
//! backends must pass.

use std::sync::Arc;
use std::time::Duration;

use swapd_core::Store;

mod affiliates;
mod bounded;
mod codec;
#[cfg(feature = "conformance")]
pub mod conformance;
mod group;
mod idempotency;
mod jobs;
mod keys;
mod ledger;
mod maintenance;
mod orders;
mod outcomes;
pub mod packed;
mod plans;
mod postgres;
mod quotes;
mod rows;
mod sandbox;
mod sql;
mod sqlite;
#[cfg(feature = "conformance")]
pub mod test_support;
mod webhooks;
mod x402;

pub use bounded::BoundedStore;
pub use sql::SqlStore;

/// How to reach the database.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    pub max_connections: u32,
    /// How long a request waits for a pooled connection before the store reports itself
    /// unavailable.
    pub acquire_timeout: Duration,
    /// How long one statement may run: PostgreSQL cancels it after this, and the store gives up
    /// on a whole call a second later ([`BoundedStore`]), answering unavailable, when the
    /// database does not answer at all (docs/reliability.md, "Bounded calls").
    pub statement_timeout: Duration,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            max_connections: 10,
            acquire_timeout: Duration::from_secs(5),
            statement_timeout: Duration::from_secs(5),
        }
    }
}

impl StoreOptions {
    /// The client's deadline for one store call: the statement timeout and a second for the
    /// server's refusal to arrive.
    pub fn call_deadline(&self) -> Duration {
        self.statement_timeout + Duration::from_secs(1)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error(
        "unsupported database URL `{0}`: use sqlite://PATH (embedded) or postgres://USER@HOST/DB"
    )]
    UnsupportedScheme(String),
    #[error("invalid database URL: {0}")]
    InvalidUrl(String),
    #[error("cannot open the database: {0}")]
    Connect(String),
}

/// Which backend a database URL selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    /// The name `Maintenance::backend` gives (shown by readiness, the console and `swapd`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }

    pub(crate) fn migrator(self) -> &'static sqlx::migrate::Migrator {
        match self {
            Backend::Sqlite => &sqlite::MIGRATOR,
            Backend::Postgres => &postgres::MIGRATOR,
        }
    }

    pub fn from_url(url: &str) -> Result<Self, OpenError> {
        if url.starts_with("sqlite:") {
            Ok(Backend::Sqlite)
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Ok(Backend::Postgres)
        } else {
            Err(OpenError::UnsupportedScheme(redact_url(url)))
        }
    }
}

impl SqlStore {
    /// Opens the store a URL names: `sqlite://...` or `postgres://...`. Does not migrate.
    pub async fn open(url: &str, options: &StoreOptions) -> Result<Self, OpenError> {
        sqlx::any::install_default_drivers();
        match Backend::from_url(url)? {
            Backend::Sqlite => Self::open_sqlite(url, options).await,
            Backend::Postgres => Self::open_postgres(url, options).await,
        }
    }
}

/// Opens the store a URL names, as the port, every call bounded by the options' deadline. Does
/// not migrate.
pub async fn open(url: &str, options: &StoreOptions) -> Result<Arc<dyn Store>, OpenError> {
    let store = SqlStore::open(url, options).await?;
    Ok(Arc::new(BoundedStore::new(store, options.call_deadline())))
}

/// The URL with any password replaced by `***`, for logs and error messages.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let Some((userinfo, host)) = rest.split_once('@') else {
        return url.to_owned();
    };
    match userinfo.split_once(':') {
        Some((user, _password)) => format!("{scheme}://{user}:***@{host}"),
        None => url.to_owned(),
    }
}

/// The embedded migrations of a backend as `(version, description)`, oldest first.
pub fn migrations(backend: Backend) -> Vec<(i64, String)> {
    backend
        .migrator()
        .iter()
        .map(|m| (m.version, m.description.to_string()))
        .collect()
}

fn map_sqlx_error(error: sqlx::Error) -> swapd_core::StoreError {
    use swapd_core::StoreError;
    match error {
        sqlx::Error::Database(db) if db.is_unique_violation() => {
            StoreError::Conflict(db.message().to_owned())
        }
        sqlx::Error::Database(db) if db.code().as_deref().is_some_and(is_transient) => {
            StoreError::Unavailable(db.message().to_owned())
        }
        sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::WorkerCrashed => StoreError::Unavailable(error.to_string()),
        sqlx::Error::ColumnDecode { .. } | sqlx::Error::Decode(_) => {
            StoreError::Corrupt(error.to_string())
        }
        other => StoreError::Database(other.to_string()),
    }
}

/// Error codes that say the database is going away, restarting, overloaded or busy, or that the
/// transaction lost a race it may win when retried: PostgreSQL's classes 08 (connection), 53
/// (resources), 57 (operator intervention, such as 57P01 on a restart) and 40001/40P01
/// (serialization, deadlock); SQLite's BUSY (5) and LOCKED (6).
fn is_transient(code: &str) -> bool {
    code.starts_with("08")
        || code.starts_with("53")
        || code.starts_with("57")
        || matches!(code, "40001" | "40P01")
        // SQLite's (extended) result codes have at most 4 digits; SQLSTATEs always have 5.
        || (code.len() < 5 && matches!(code.parse::<i32>().map(|c| c & 0xff), Ok(5 | 6)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transient_database_errors_are_told_apart() {
        for code in [
            "57P01", "57P03", "08006", "53300", "40001", "40P01", "5", "517", "6",
        ] {
            assert!(is_transient(code), "{code}");
        }
        for code in ["23505", "42P01", "22P02", "22005", "1", "19", "2067"] {
            assert!(!is_transient(code), "{code}");
        }
    }

    /// A PostgreSQL restart ends every session (SQLSTATE 57P01 on a statement in flight, or a
    /// closed socket): the store says "unavailable", which the API answers with 503.
    #[tokio::test]
    async fn a_terminated_postgres_session_is_unavailable() {
        use sqlx::Connection;
        let Some(url) = test_support::postgres_url() else {
            return;
        };
        let mut doomed = sqlx::PgConnection::connect(&url).await.unwrap();
        let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
            .fetch_one(&mut doomed)
            .await
            .unwrap();
        let mut admin = sqlx::PgConnection::connect(&url).await.unwrap();
        let terminated: bool = sqlx::query_scalar("SELECT pg_terminate_backend($1)")
            .bind(pid)
            .fetch_one(&mut admin)
            .await
            .unwrap();
        assert!(terminated);
        let error = sqlx::query("SELECT 1")
            .execute(&mut doomed)
            .await
            .unwrap_err();
        assert!(
            matches!(
                map_sqlx_error(error),
                swapd_core::StoreError::Unavailable(_)
            ),
            "a terminated session must read as unavailable"
        );
    }

    #[test]
    fn urls_select_backends_and_passwords_are_redacted() {
        assert_eq!(
            Backend::from_url("sqlite://data/x.db").unwrap(),
            Backend::Sqlite
        );
        assert_eq!(
            Backend::from_url("postgres://u@h/db").unwrap(),
            Backend::Postgres
        );
        assert_eq!(
            Backend::from_url("postgresql://u@h/db").unwrap(),
            Backend::Postgres
        );
        let err = Backend::from_url("mysql://root:hunter2@h/db").unwrap_err();
        assert!(!err.to_string().contains("hunter2"), "{err}");
        assert_eq!(
            redact_url("postgres://app:s3cret@db:5432/swapd"),
            "postgres://app:***@db:5432/swapd"
        );
        assert_eq!(
            redact_url("postgres://app@db/swapd"),
            "postgres://app@db/swapd"
        );
    }

    #[test]
    fn both_backends_have_identical_migration_lists() {
        let sqlite = migrations(Backend::Sqlite);
        assert!(!sqlite.is_empty());
        assert_eq!(sqlite, migrations(Backend::Postgres));
    }
}
