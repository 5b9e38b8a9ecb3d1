use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::any::AnyPoolOptions;
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgListener};
use sqlx::{Connection, Executor};
use swapd_core::store::WorkListener;
use swapd_core::wakeup::{CHANNEL, Work};

use crate::bounded::{PING_BOUND, Wariness};
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
        let session = session_settings(options.statement_timeout);
        let wariness = Arc::new(Wariness::default());
        let wary = wariness.clone();
        let pool = AnyPoolOptions::new()
            .max_connections(options.max_connections)
            .acquire_timeout(options.acquire_timeout)
            // sqlx pings each connection as it returns to the pool, and by default again as it
            // is taken: a second round trip before each call, unbounded over a silent network.
            // Only one idle for a while is asked again, within a bound (docs/benchmarks.md,
            // "PostgreSQL: one ping per call").
            .test_before_acquire(false)
            .before_acquire(|conn, meta| {
                Box::pin(async move {
                    if meta.idle_for < IDLE_BEFORE_PING {
                        return Ok(true);
                    }
                    bounded_ping(conn).await
                })
            })
            .after_connect(move |conn, _| {
                let session = sqlx::raw_sql(sqlx::AssertSqlSafe(session.clone()));
                Box::pin(async move { conn.execute(session).await.map(drop) })
            })
            .after_release(move |conn, _| {
                let wary = wary.is_wary();
                Box::pin(async move {
                    if !wary {
                        return Ok(true);
                    }
                    // A connection a cancelled call left mid-statement, over a network that may
                    // be silent: closed unless it answers at once.
                    bounded_ping(conn).await
                })
            })
            .connect(url)
            .await
            .map_err(|e| OpenError::Connect(e.to_string()))?;
        Ok(Self {
            writer: pool.clone(),
            group: None,
            pool,
            backend: Backend::Postgres,
            bells: Default::default(),
            listen_url: Some(url.to_owned()),
            wariness,
        })
    }

    /// PostgreSQL: hears every node's announcements and rings this process's bells; after a
    /// lost connection it listens again a second later (polling covers the gap). A connection
    /// that has heard nothing for a while is asked to answer, within a bound: over a silent
    /// network it would otherwise wait for ever while the other nodes' announcements go
    /// unheard. SQLite has one process: nothing to hear.
    pub(crate) fn work_listener(&self) -> Option<WorkListener> {
        let (url, bells) = (self.listen_url.clone()?, self.bells.clone());
        Some(Box::pin(async move {
            loop {
                match listening(&url).await {
                    Ok(mut listener) => loop {
                        match tokio::time::timeout(LISTENER_QUIET, listener.recv()).await {
                            Ok(Ok(notification)) => {
                                for work in notification.payload().split(',') {
                                    if let Ok(work) = work.parse::<Work>() {
                                        bells.ring(work);
                                    }
                                }
                            }
                            Ok(Err(error)) => {
                                tracing::warn!(%error, "lost the work announcements; listening again");
                                break;
                            }
                            Err(_quiet) => {
                                let probe = listener.execute("SELECT 1");
                                if !matches!(
                                    tokio::time::timeout(LISTENER_PROBE, probe).await,
                                    Ok(Ok(_))
                                ) {
                                    tracing::warn!(
                                        "the work announcements' connection does not answer; listening again"
                                    );
                                    break;
                                }
                            }
                        }
                    },
                    Err(error) => tracing::warn!(%error, "cannot listen for work announcements"),
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }))
    }
}

/// A pooled connection idle this long is pinged before it is used again: one the server or the
/// network dropped meanwhile is replaced rather than failing a call. One returned more recently
/// (and pinged then) is taken as it is; if it broke since, its call fails like any in flight
/// would.
const IDLE_BEFORE_PING: Duration = Duration::from_secs(5);

/// Whether `conn` answers a ping within [`PING_BOUND`] (an error closes it).
async fn bounded_ping(conn: &mut sqlx::AnyConnection) -> Result<bool, sqlx::Error> {
    match tokio::time::timeout(PING_BOUND, conn.ping()).await {
        Ok(answer) => answer.map(|()| true),
        Err(_) => Err(sqlx::Error::Io(std::io::ErrorKind::TimedOut.into())),
    }
}

/// How long the work listener waits for an announcement before it checks its connection.
const LISTENER_QUIET: Duration = Duration::from_secs(5);
/// How long that check, or connecting the listener, may take.
const LISTENER_PROBE: Duration = Duration::from_secs(3);

/// A listener on the work channel, connected within [`LISTENER_PROBE`].
async fn listening(url: &str) -> Result<PgListener, String> {
    let connect = async {
        let mut listener = PgListener::connect(url).await?;
        listener.listen(CHANNEL).await?;
        Ok::<_, sqlx::Error>(listener)
    };
    match tokio::time::timeout(LISTENER_PROBE, connect).await {
        Ok(connected) => connected.map_err(|e| e.to_string()),
        Err(_) => Err(format!(
            "no answer within {} ms",
            LISTENER_PROBE.as_millis()
        )),
    }
}

/// What every pooled session sets, so that the server, too, gives up on a client it cannot
/// reach: a statement runs at most `statement_timeout`; a transaction left idle that long (its
/// client cut off mid-transaction, holding row locks) ends the session; and the server's side
/// of the connection is dropped when its data goes unacknowledged, or a silent peer fails its
/// keepalives, for about as long.
fn session_settings(statement_timeout: Duration) -> String {
    let ms = statement_timeout.as_millis();
    let secs = statement_timeout.as_secs().max(1);
    format!(
        "SET statement_timeout = {ms}; SET idle_in_transaction_session_timeout = {ms}; \
         SET tcp_user_timeout = {ms}; SET tcp_keepalives_idle = {secs}; \
         SET tcp_keepalives_interval = 1; SET tcp_keepalives_count = 3"
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use swapd_core::StoreError;

    use crate::test_support::{PgTestSchema, postgres_url};
    use crate::{SqlStore, StoreOptions, map_sqlx_error};

    /// The server bounds a statement too: one that runs past `statement_timeout` is cancelled
    /// (57014) and read as unavailable.
    #[tokio::test]
    async fn postgres_cancels_a_statement_past_its_timeout() {
        let Some(url) = postgres_url() else { return };
        let schema = PgTestSchema::create(&url).await;
        let options = StoreOptions {
            statement_timeout: Duration::from_millis(200),
            ..StoreOptions::default()
        };
        let store = SqlStore::open(&schema.database_url(), &options)
            .await
            .unwrap();
        let answer = sqlx::query("SELECT pg_sleep(5)")
            .execute(&store.pool)
            .await
            .map_err(map_sqlx_error);
        assert!(
            matches!(answer, Err(StoreError::Unavailable(_))),
            "{answer:?}"
        );
        let settings: (String, String) = sqlx::query_as(
            "SELECT current_setting('statement_timeout'), \
             current_setting('idle_in_transaction_session_timeout')",
        )
        .fetch_one(&store.pool)
        .await
        .unwrap();
        assert_eq!(settings, ("200ms".to_owned(), "200ms".to_owned()));
    }
}
