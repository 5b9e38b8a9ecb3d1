//! What every aggregate's SQL shares: the store itself, the few words the two dialects spell
//! differently, and the steps many writes take — completing an idempotency record, announcing
//! work, a versioned update, a lease claim, a read-plan-write retried after a lost insert race.
//!
//! One SQL text serves both backends: statements run through sqlx's `Any` driver, which passes
//! them to the SQLite or PostgreSQL driver chosen by the URL, and both take `$N` placeholders.

use std::sync::Arc;

use sqlx::{AnyPool, AssertSqlSafe};
use swapd_core::StoreError;
use swapd_core::store::{IdempotentFinish, KeyHold};
use swapd_core::wakeup::{Bells, CHANNEL, Work};

use crate::bounded::Wariness;
use crate::codec::{Body, decode_body};
use crate::group::{Group, Member};
use crate::packed::{Stored, pack};
use crate::{Backend, map_sqlx_error};

/// A write transaction: on SQLite a member of the writer's group commit, on PostgreSQL a
/// transaction of its own. Statements run on it as on a connection (`&mut *tx`); dropped
/// before [`Tx::commit`], it rolls back.
pub(crate) enum Tx {
    Alone(sqlx::Transaction<'static, sqlx::Any>),
    Grouped(Member),
}

impl Tx {
    /// Makes the write durable: returns once it has committed.
    pub(crate) async fn commit(self) -> Result<(), sqlx::Error> {
        match self {
            Tx::Alone(tx) => tx.commit().await,
            Tx::Grouped(member) => member.commit().await,
        }
    }
}

impl std::ops::Deref for Tx {
    type Target = sqlx::AnyConnection;

    fn deref(&self) -> &sqlx::AnyConnection {
        match self {
            Tx::Alone(tx) => tx,
            Tx::Grouped(member) => member,
        }
    }
}

impl std::ops::DerefMut for Tx {
    fn deref_mut(&mut self) -> &mut sqlx::AnyConnection {
        match self {
            Tx::Alone(tx) => tx,
            Tx::Grouped(member) => member,
        }
    }
}

/// The store: SQLite (the embedded default) or PostgreSQL (for several nodes), one
/// implementation of every port for both.
#[derive(Clone)]
pub struct SqlStore {
    /// Reads (and, on PostgreSQL, writes).
    pub(crate) pool: AnyPool,
    /// Writes: on SQLite one connection, so this process's writers queue for it in turn rather
    /// than in SQLite's busy handler; on PostgreSQL the same pool as reads.
    pub(crate) writer: AnyPool,
    /// SQLite: the writer's group commit, which every write transaction joins.
    pub(crate) group: Option<Arc<Group>>,
    pub(crate) backend: Backend,
    pub(crate) bells: Arc<Bells>,
    /// PostgreSQL: the URL other nodes' announcements are heard on (it may hold a password, so
    /// the store's `Debug` leaves it out).
    pub(crate) listen_url: Option<String>,
    /// Whether calls were abandoned lately ([`crate::BoundedStore`]).
    pub(crate) wariness: Arc<Wariness>,
}

impl std::fmt::Debug for SqlStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlStore")
            .field("backend", &self.backend)
            .finish_non_exhaustive()
    }
}

impl Backend {
    /// Appended to a `SELECT` whose rows the transaction will update: PostgreSQL locks them until
    /// it ends; SQLite has one writer at a time (`BEGIN IMMEDIATE`), so nothing to lock.
    fn lock(self) -> &'static str {
        match self {
            Backend::Sqlite => "",
            Backend::Postgres => " FOR UPDATE",
        }
    }

    /// Appended to a claim's selection: PostgreSQL claimers skip the rows another claimer holds.
    fn skip_locked(self) -> &'static str {
        match self {
            Backend::Sqlite => "",
            Backend::Postgres => " FOR UPDATE SKIP LOCKED",
        }
    }
}

fn numbered(first: usize, count: usize, sigil: char) -> String {
    let numbers: Vec<String> = (first..first + count)
        .map(|n| format!("{sigil}{n}"))
        .collect();
    format!("({})", numbers.join(", "))
}

/// A statement built at run time from parts that are all the store's own text.
pub(crate) fn built(sql: String) -> AssertSqlSafe<String> {
    AssertSqlSafe(sql)
}

impl SqlStore {
    /// A write transaction. SQLite takes its write lock at BEGIN, so a read-then-write
    /// transaction cannot fail halfway with SQLITE_BUSY; PostgreSQL locks the rows it reads to
    /// update ([`SqlStore::locking`]).
    #[tracing::instrument(name = "store.begin", skip_all)]
    pub(crate) async fn write_tx(&self) -> Result<Tx, StoreError> {
        match &self.group {
            Some(group) => group.join().await.map(Tx::Grouped),
            None => self.writer.begin().await.map(Tx::Alone),
        }
        .map_err(map_sqlx_error)
    }

    /// One statement that writes, on its own: on SQLite in the group commit like every other
    /// write (a commit of its own would hold the writer connection between two groups), on
    /// PostgreSQL as it is.
    pub(crate) async fn write_one(
        &self,
        statement: sqlx::query::Query<'_, sqlx::Any, sqlx::any::AnyArguments>,
    ) -> Result<sqlx::any::AnyQueryResult, StoreError> {
        if self.group.is_none() {
            return statement
                .execute(&self.writer)
                .await
                .map_err(map_sqlx_error);
        }
        let mut tx = self.write_tx().await?;
        let done = statement.execute(&mut *tx).await.map_err(map_sqlx_error)?;
        tx.commit().await.map_err(map_sqlx_error)?;
        Ok(done)
    }

    /// `select` with the rows it reads locked until the transaction ends.
    pub(crate) fn locking(&self, select: &str) -> AssertSqlSafe<String> {
        built(format!("{select}{}", self.backend.lock()))
    }

    /// Ends a write: completes the request's idempotency record when there is one, announces
    /// `works` to every node, commits, then rings this process's bells.
    #[tracing::instrument(name = "store.commit", skip_all)]
    pub(crate) async fn commit(
        &self,
        mut tx: Tx,
        finish: Option<IdempotentFinish<'_>>,
        works: &[Work],
    ) -> Result<(), StoreError> {
        if let Some(finish) = finish {
            finish_idempotent_in(&mut tx, finish).await?;
        }
        self.announce_in(&mut tx, works).await?;
        tx.commit().await.map_err(map_sqlx_error)?;
        for work in works {
            self.bells.ring(*work);
        }
        Ok(())
    }

    /// Announces `works` to every node when `tx` commits: on PostgreSQL one `NOTIFY` (it is
    /// transactional) with their names, comma-separated; SQLite has one process, whose bells
    /// [`SqlStore::commit`] rings.
    async fn announce_in(&self, tx: &mut Tx, works: &[Work]) -> Result<(), StoreError> {
        if works.is_empty() || self.backend == Backend::Sqlite {
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

    /// Serializes the write transactions of one owner that must see each other's rows (a cap
    /// on how many they may have), until `tx` ends. SQLite's writers are serialized already.
    pub(crate) async fn serialize_owner(&self, tx: &mut Tx, owner: &str) -> Result<(), StoreError> {
        if self.backend == Backend::Sqlite {
            return Ok(());
        }
        sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
            .bind(owner)
            .execute(&mut **tx)
            .await
            .map(drop)
            .map_err(map_sqlx_error)
    }

    /// The aggregate that `query` (of one JSON `body` column) finds, if any.
    pub(crate) async fn body<T: Body>(
        &self,
        query: sqlx::query::QueryScalar<'_, sqlx::Any, Stored, sqlx::any::AnyArguments>,
    ) -> Result<Option<T>, StoreError> {
        let body = query
            .fetch_optional(&self.pool)
            .await
            .map_err(map_sqlx_error)?;
        body.map(|body| decode_body(&body)).transpose()
    }

    /// Claims the due rows of a table that keeps a leased aggregate ([`Leased`]; `claim`
    /// returns `body, version`, taking `$1` now, `$2` the lease's end, `$3` the limit): each
    /// leased until `lease_until_ms`, earliest due first (RETURNING keeps no order).
    pub(crate) async fn claim_due<T: Leased>(
        &self,
        claim: &Claim,
        now_ms: i64,
        lease_until_ms: i64,
        limit: u32,
    ) -> Result<Vec<T>, StoreError> {
        let mut tx = self.write_tx().await?;
        let rows: Vec<(Stored, i64)> = self
            .claim_in(&mut tx, claim, now_ms, lease_until_ms, limit)
            .await?;
        tx.commit().await.map_err(map_sqlx_error)?;
        let mut claimed = rows
            .iter()
            .map(|(body, version)| Ok(decode_body::<T>(body)?.at_version(*version)))
            .collect::<Result<Vec<T>, StoreError>>()?;
        claimed.sort_by_key(T::due_at);
        Ok(claimed)
    }

    /// The placeholders of a statement that has no others: `rows` tuples of `width`, such as
    /// `($1, $2), ($3, $4)` on PostgreSQL and `(?, ?), (?, ?)` on SQLite. SQLite binds bare `?`
    /// in order, where each numbered one costs a scan of those before it (a bulk insert of
    /// thousands of values would bind in quadratic time). sqlx's `QueryBuilder` cannot be used:
    /// for the `Any` driver it writes bare `?`, which PostgreSQL does not take.
    pub(crate) fn values(&self, rows: usize, width: usize) -> String {
        let tuples = (0..rows).map(|row| match self.backend {
            Backend::Sqlite => format!("({})", vec!["?"; width].join(", ")),
            Backend::Postgres => numbered(1 + row * width, width, '$'),
        });
        tuples.collect::<Vec<_>>().join(", ")
    }

    /// A parenthesized list of `count` placeholders numbered from `first`, among numbered
    /// others: `($4, $5)`, or `(?4, ?5)` on SQLite.
    pub(crate) fn list(&self, first: usize, count: usize) -> String {
        match self.backend {
            Backend::Sqlite => numbered(first, count, '?'),
            Backend::Postgres => numbered(first, count, '$'),
        }
    }

    /// Inside `tx`: the rows `claim` takes, with `$1` now, `$2` the lease's end, `$3` the limit.
    pub(crate) async fn claim_in<R>(
        &self,
        tx: &mut Tx,
        claim: &Claim,
        now_ms: i64,
        lease_until_ms: i64,
        limit: u32,
    ) -> Result<Vec<R>, StoreError>
    where
        R: for<'r> sqlx::FromRow<'r, sqlx::any::AnyRow> + Send + Unpin,
    {
        sqlx::query_as(self.claiming(claim))
            .bind(now_ms)
            .bind(lease_until_ms)
            .bind(i64::from(limit))
            .fetch_all(&mut **tx)
            .await
            .map_err(map_sqlx_error)
    }

    /// The statement of `claim` in this store's dialect.
    pub(crate) fn claiming(&self, claim: &Claim) -> AssertSqlSafe<String> {
        let Claim {
            table,
            set,
            pick,
            returning,
        } = claim;
        built(format!(
            "UPDATE {table} SET {set} WHERE id IN (SELECT id FROM {table} WHERE {pick}{}) \
             RETURNING {returning}",
            self.backend.skip_locked()
        ))
    }
}

/// An aggregate the worker leases (orders, execution plans). A claim is a write: it moves the
/// row's `version` ([`LEASE_CLAIM`]), so a save made under an earlier claim, by a node whose
/// lease ended and was given to another, fails its compare-and-set and writes nothing (fencing,
/// whatever the nodes' clocks say). The `version` column is the truth, read with the body,
/// whose own copy lags by the claims since its last save.
pub(crate) trait Leased: Body {
    fn due_at(&self) -> Option<i64>;

    fn at_version(self, version: i64) -> Self;
}

/// [`Leased`] for an aggregate with `next_check_at_ms` and `version` fields.
macro_rules! leased {
    ($aggregate:ty) => {
        impl $crate::sql::Leased for $aggregate {
            fn due_at(&self) -> Option<i64> {
                self.next_check_at_ms
            }

            fn at_version(mut self, version: i64) -> Self {
                self.version = version;
                self
            }
        }
    };
}
pub(crate) use leased;

/// What a claim of a [`Leased`] aggregate sets, besides what its table needs.
pub(crate) const LEASE_CLAIM: &str = "next_check_at = $2, version = version + 1";

/// A lease claim: in one statement, marks the rows `pick` selects (a condition, an order and a
/// limit) as taken with `set`, and returns their `returning` columns. On PostgreSQL several
/// claimers skip each other's rows, so no two nodes take the same row.
pub(crate) struct Claim {
    pub table: &'static str,
    pub set: &'static str,
    pub pick: &'static str,
    pub returning: &'static str,
}

/// Inside a write transaction: completes the idempotency record of `finish` (taking the key
/// when it was not claimed before), or fails with [`StoreError::LeaseLost`] when the key is not
/// this request's to complete.
pub(crate) async fn finish_idempotent_in(
    tx: &mut Tx,
    finish: IdempotentFinish<'_>,
) -> Result<(), StoreError> {
    let status = i64::from(finish.response.status);
    let answer = pack(&finish.response.body);
    let statement = match finish.hold {
        KeyHold::Lease(lease_token) => sqlx::query(
            "UPDATE idempotency_keys SET status = $4, body = $5, lease_token = NULL, \
             lease_until = NULL WHERE principal = $1 AND idem_key = $2 AND lease_token = $3",
        )
        .bind(finish.principal)
        .bind(finish.key)
        .bind(lease_token)
        .bind(status)
        .bind(answer),
        // Taken unless a live record holds the key: one finished and not expired, or one in
        // flight under a lease that has not ended (swapd_core::idempotency::plan).
        KeyHold::AtCommit {
            fingerprint,
            now_ms,
        } => sqlx::query(
            "INSERT INTO idempotency_keys (principal, idem_key, fingerprint, status, body, \
             created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7) \
             ON CONFLICT (principal, idem_key) DO UPDATE SET fingerprint = excluded.fingerprint, \
             status = excluded.status, body = excluded.body, lease_token = NULL, \
             lease_until = NULL, lease_holder = NULL, created_at = excluded.created_at, \
             expires_at = excluded.expires_at \
             WHERE idempotency_keys.expires_at <= $6 \
             OR (idempotency_keys.status IS NULL AND idempotency_keys.lease_until <= $6)",
        )
        .bind(finish.principal)
        .bind(finish.key)
        .bind(fingerprint)
        .bind(status)
        .bind(answer)
        .bind(now_ms)
        .bind(now_ms + swapd_core::idempotency::IDEMPOTENCY_TTL_MS),
    };
    let done = statement.execute(&mut **tx).await.map_err(map_sqlx_error)?;
    if done.rows_affected() != 1 {
        return Err(StoreError::LeaseLost);
    }
    Ok(())
}

/// Versioned compare-and-set, the one way an order, an execution plan or a webhook
/// subscription changes: the caller read a row at version `v` and `update` writes it back at
/// `v + 1` (`UPDATE … WHERE … AND version = v`). Whether it did; when it did not, somebody wrote
/// in between, and the caller drops the transaction (rolled back) instead of going on.
pub(crate) async fn compare_and_set(
    tx: &mut Tx,
    update: sqlx::query::Query<'_, sqlx::Any, sqlx::any::AnyArguments>,
) -> Result<bool, StoreError> {
    let updated = update.execute(&mut **tx).await.map_err(map_sqlx_error)?;
    Ok(updated.rows_affected() == 1)
}

/// An aggregate kept as a JSON body with its status, version and next check (orders, execution
/// plans), as [`compare_and_set`] writes it back at its next version.
pub(crate) struct VersionedBody<'a> {
    pub table: &'static str,
    pub id: &'a str,
    pub status: &'static str,
    pub version: i64,
    pub body: Vec<u8>,
    pub updated_at_ms: i64,
    pub next_check_at_ms: Option<i64>,
}

impl VersionedBody<'_> {
    /// Inside `tx`: the row written at `version` when it is still at `version - 1`.
    pub(crate) async fn compare_and_set(self, tx: &mut Tx) -> Result<bool, StoreError> {
        let update = sqlx::query(built(format!(
            "UPDATE {} SET status = $2, version = $3, body = $4, updated_at = $5, \
             next_check_at = $7 WHERE id = $1 AND version = $6",
            self.table
        )))
        .bind(self.id)
        .bind(self.status)
        .bind(self.version)
        .bind(self.body)
        .bind(self.updated_at_ms)
        .bind(self.version - 1)
        .bind(self.next_check_at_ms);
        compare_and_set(tx, update).await
    }
}

/// Runs `attempt` (a read-plan-write transaction) again when it lost an insert race
/// ([`StoreError::Conflict`]): two first attempts may both find no row, and the loser's retry
/// sees the winner's. Three tries, then `what` is reported contended.
pub(crate) async fn retry_lost_races<T, F>(
    what: &str,
    mut attempt: impl FnMut() -> F,
) -> Result<T, StoreError>
where
    F: Future<Output = Result<T, StoreError>>,
{
    for _ in 0..3 {
        match attempt().await {
            Err(StoreError::Conflict(_)) => continue,
            outcome => return outcome,
        }
    }
    Err(StoreError::Unavailable(format!(
        "{what} is contended; retry"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn store(backend: Backend) -> SqlStore {
        sqlx::any::install_default_drivers();
        let pool = sqlx::any::AnyPoolOptions::new()
            .connect_lazy("sqlite::memory:")
            .unwrap();
        SqlStore {
            writer: pool.clone(),
            group: None,
            pool,
            backend,
            bells: Default::default(),
            listen_url: None,
            wariness: Default::default(),
        }
    }

    #[tokio::test]
    async fn placeholders_in_each_dialect() {
        let postgres = store(Backend::Postgres).await;
        assert_eq!(postgres.values(2, 3), "($1, $2, $3), ($4, $5, $6)");
        assert_eq!(postgres.list(4, 2), "($4, $5)");
        let sqlite = store(Backend::Sqlite).await;
        assert_eq!(sqlite.values(2, 2), "(?, ?), (?, ?)");
        assert_eq!(sqlite.list(4, 2), "(?4, ?5)");
    }
}
