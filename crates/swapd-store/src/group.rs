//! SQLite's group commit. Every write of this process queues for the one writer connection;
//! instead of a transaction each, the writes that queue while a transaction is open join it,
//! each in a savepoint of its own, and one `COMMIT` makes them durable together: the pages they
//! share (the right edges of the tables and indexes they append to) reach the WAL once per
//! group instead of once per write. A write is acknowledged only after the commit that holds
//! it; a write that fails or is abandoned rolls back to its savepoint alone
//! (docs/benchmarks.md, "Group commit").
//!
//! The commit is the [`committer`]'s: asked by each write that ends, it queues for the open
//! transaction like the writes do (a fair lock), behind those already waiting, so a group
//! holds every write that arrived while the one before it was running.
//!
//! A write sees the uncommitted writes of its group (one connection, one transaction), and one
//! that gives up because of them (an Idempotency-Key taken, a version moved on) must not answer
//! before they are committed and seen by the reading connections: every store call runs
//! [`settled`], which waits for the group of a write it gave up, as a transaction of its own
//! would have waited for the one it lost to.

use std::cell::RefCell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use sqlx::{Any, AnyConnection, AnyPool, Transaction};
use tokio::sync::{Mutex, Notify, OwnedMutexGuard, watch};

/// How a group's commit ended, as each of its writes learns it.
type Outcome = Option<Result<(), Arc<str>>>;

/// The writer connection's open transaction, which the writes of one group share.
pub(crate) struct Group {
    writer: AnyPool,
    open: Arc<Mutex<Open>>,
    commit_asked: Arc<Notify>,
}

#[derive(Default)]
struct Open {
    tx: Option<Transaction<'static, Any>>,
    outcome: Option<watch::Sender<Outcome>>,
    /// Groups committed so far.
    commits: AtomicU64,
}

impl Open {
    fn connection(&mut self) -> &mut AnyConnection {
        self.tx
            .as_mut()
            .expect("a member holds an open transaction")
    }

    /// Ends the open transaction, if any: commits it, or rolls it back when `failed`, and
    /// tells every write of the group how it ended.
    async fn end(&mut self, failed: Option<Arc<str>>) {
        let Some(tx) = self.tx.take() else { return };
        let result = match failed {
            None => {
                self.commits.fetch_add(1, Ordering::Relaxed);
                tx.commit().await.map_err(|e| Arc::from(e.to_string()))
            }
            Some(error) => Err(error),
        };
        if let Some(outcome) = self.outcome.take() {
            outcome.send_replace(Some(result));
        }
    }

    /// A statement that frames a member failed: the transaction may be gone with it (SQLite
    /// rolls a whole transaction back on some errors), so the group ends, rolled back.
    async fn fail(&mut self, error: &sqlx::Error) {
        self.end(Some(Arc::from(format!("group commit: {error}"))))
            .await;
    }
}

impl Group {
    /// The group of `writer`, a pool of one connection, with its committer running.
    pub(crate) fn new(writer: AnyPool) -> Self {
        let group = Self {
            writer,
            open: Arc::default(),
            commit_asked: Arc::default(),
        };
        tokio::spawn(committer(
            Arc::downgrade(&group.open),
            group.commit_asked.clone(),
        ));
        group
    }

    /// Joins the open transaction (beginning one when none is open) in a savepoint of this
    /// write's own.
    pub(crate) async fn join(&self) -> Result<Member, sqlx::Error> {
        let mut open = self.open.clone().lock_owned().await;
        if open.tx.is_none() {
            open.tx = Some(self.writer.begin_with("BEGIN IMMEDIATE").await?);
            open.outcome = Some(watch::channel(None).0);
        }
        let outcome = open
            .outcome
            .as_ref()
            .expect("an open transaction has its outcome")
            .subscribe();
        let mut member = Member {
            open: Some(open),
            outcome,
            commit_asked: self.commit_asked.clone(),
        };
        if let Err(error) = sqlx::query("SAVEPOINT member").execute(&mut *member).await {
            if let Some(mut open) = member.open.take() {
                open.fail(&error).await;
            }
            return Err(error);
        }
        Ok(member)
    }
}

tokio::task_local! {
    /// The group of a write the current store call gave up ([`settled`]).
    static GAVE_UP: RefCell<Option<watch::Receiver<Outcome>>>;
}

/// Runs one store call, and when a write of it gave up its part of a group (rolled back to its
/// savepoint), returns only once that group has ended.
pub(crate) async fn settled<T>(call: impl Future<Output = T>) -> T {
    let (answer, gave_up) = GAVE_UP
        .scope(RefCell::new(None), async {
            let answer = call.await;
            (answer, GAVE_UP.with(|gave_up| gave_up.borrow_mut().take()))
        })
        .await;
    if let Some(mut outcome) = gave_up {
        // Committed or rolled back, the call answers after; a store closed meanwhile ends it too.
        let _ = outcome.wait_for(Option::is_some).await;
    }
    answer
}

/// Commits the open transaction each time a write that ended asks, after the writes queued
/// before it; stops with the store.
async fn committer(open: Weak<Mutex<Open>>, asked: Arc<Notify>) {
    loop {
        asked.notified().await;
        let Some(open) = open.upgrade() else { return };
        open.lock().await.end(None).await;
    }
}

/// One write's part of the open transaction: the writer connection, inside the write's
/// savepoint, until it commits (then waits for its group's commit) or is dropped (rolled back
/// to its savepoint).
pub(crate) struct Member {
    open: Option<OwnedMutexGuard<Open>>,
    outcome: watch::Receiver<Outcome>,
    commit_asked: Arc<Notify>,
}

impl Member {
    /// Keeps this write's statements and returns once the group holding them has committed.
    pub(crate) async fn commit(mut self) -> Result<(), sqlx::Error> {
        let released = sqlx::query("RELEASE member").execute(&mut *self).await;
        let mut open = self
            .open
            .take()
            .expect("a member holds the transaction until it ends");
        if let Err(error) = released {
            open.fail(&error).await;
            return Err(error);
        }
        drop(open);
        self.commit_asked.notify_one();
        let ended = self
            .outcome
            .wait_for(Option::is_some)
            .await
            .map(|outcome| outcome.clone())
            .unwrap_or_else(|_| Some(Err(Arc::from("group commit: the store closed"))));
        match ended {
            Some(Ok(())) => Ok(()),
            Some(Err(error)) => Err(sqlx::Error::Io(std::io::Error::other(error.to_string()))),
            None => unreachable!("waited for an outcome"),
        }
    }
}

impl Deref for Member {
    type Target = AnyConnection;

    fn deref(&self) -> &AnyConnection {
        let open = self
            .open
            .as_ref()
            .expect("a member holds the transaction until it ends");
        open.tx
            .as_ref()
            .expect("a member holds an open transaction")
    }
}

impl DerefMut for Member {
    fn deref_mut(&mut self) -> &mut AnyConnection {
        self.open
            .as_mut()
            .expect("a member holds the transaction until it ends")
            .connection()
    }
}

/// A write dropped before it committed (it failed, found nothing to do, or its caller gave up)
/// rolls back to its savepoint; the group goes on without it.
impl Drop for Member {
    fn drop(&mut self) {
        let Some(mut open) = self.open.take() else {
            return;
        };
        let _outside_a_store_call = GAVE_UP.try_with(|gave_up| {
            gave_up.borrow_mut().replace(self.outcome.clone());
        });
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let asked = self.commit_asked.clone();
        runtime.spawn(async move {
            for undo in ["ROLLBACK TO member", "RELEASE member"] {
                if let Err(error) = sqlx::query(undo).execute(open.connection()).await {
                    open.fail(&error).await;
                    return;
                }
            }
            drop(open);
            asked.notify_one();
        });
    }
}

#[cfg(test)]
mod tests {
    use std::future::pending;

    use tokio::task::yield_now;

    use crate::sql::Tx;
    use crate::{SqlStore, StoreOptions};

    use super::*;

    async fn store() -> (SqlStore, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("group.db").display());
        let store = SqlStore::open(&url, &StoreOptions::default())
            .await
            .unwrap();
        sqlx::query("CREATE TABLE t (n INTEGER PRIMARY KEY)")
            .execute(&store.writer)
            .await
            .unwrap();
        (store, dir)
    }

    async fn insert(tx: &mut Tx, n: i64) {
        sqlx::query("INSERT INTO t (n) VALUES ($1)")
            .bind(n)
            .execute(&mut **tx)
            .await
            .unwrap();
    }

    /// What a reader sees: committed rows only.
    async fn committed(store: &SqlStore) -> Vec<i64> {
        sqlx::query_scalar("SELECT n FROM t ORDER BY n")
            .fetch_all(&store.pool)
            .await
            .unwrap()
    }

    fn commits(store: &SqlStore) -> u64 {
        let group = store.group.as_ref().unwrap();
        group
            .open
            .try_lock()
            .unwrap()
            .commits
            .load(Ordering::Relaxed)
    }

    /// Spawns a write of `n` that commits, or is dropped before its commit when `keep` is
    /// false.
    fn write(store: &SqlStore, n: i64, keep: bool) -> tokio::task::JoinHandle<()> {
        let store = store.clone();
        tokio::spawn(async move {
            let mut tx = store.write_tx().await.unwrap();
            insert(&mut tx, n).await;
            if keep {
                tx.commit().await.unwrap();
            }
        })
    }

    /// Runs the spawned writes until each waits for the open transaction (the test runtime has
    /// one thread: a spawned task runs only when this one yields).
    async fn let_them_queue() {
        for _ in 0..20 {
            yield_now().await;
        }
    }

    #[tokio::test]
    async fn writes_queued_behind_an_open_one_commit_with_it_and_answer_after_it() {
        let (store, _dir) = store().await;
        let before = commits(&store);
        let mut first = store.write_tx().await.unwrap();
        insert(&mut first, 1).await;
        let queued: Vec<_> = (2..=4).map(|n| write(&store, n, true)).collect();
        let_them_queue().await;
        assert!(
            committed(&store).await.is_empty(),
            "nothing is seen before its commit"
        );
        first.commit().await.unwrap();
        assert_eq!(
            committed(&store).await,
            [1, 2, 3, 4],
            "one commit held all four"
        );
        for write in queued {
            write.await.unwrap();
        }
        assert_eq!(commits(&store) - before, 1);
    }

    #[tokio::test]
    async fn a_write_of_one_statement_joins_the_group_and_answers_after_its_commit() {
        let (store, _dir) = store().await;
        let alone = commits(&store);
        store
            .write_one(sqlx::query("INSERT INTO t (n) VALUES ($1)").bind(0_i64))
            .await
            .unwrap();
        assert_eq!(
            commits(&store) - alone,
            1,
            "committed as a group of its own"
        );
        let before = commits(&store);
        let mut first = store.write_tx().await.unwrap();
        insert(&mut first, 1).await;
        let one = tokio::spawn({
            let store = store.clone();
            async move {
                store
                    .write_one(sqlx::query("INSERT INTO t (n) VALUES ($1)").bind(2_i64))
                    .await
                    .unwrap()
                    .rows_affected()
            }
        });
        let_them_queue().await;
        assert!(!one.is_finished(), "it waits for the group's commit");
        first.commit().await.unwrap();
        assert_eq!(committed(&store).await, [0, 1, 2], "one commit held both");
        assert_eq!(one.await.unwrap(), 1);
        assert_eq!(commits(&store) - before, 1);
    }

    #[tokio::test]
    async fn a_write_dropped_or_abandoned_before_its_commit_is_undone_alone() {
        let (store, _dir) = store().await;
        let mut first = store.write_tx().await.unwrap();
        insert(&mut first, 1).await;
        let dropped = write(&store, 2, false);
        let kept = write(&store, 3, true);
        let_them_queue().await;
        first.commit().await.unwrap();
        dropped.await.unwrap();
        kept.await.unwrap();
        assert_eq!(committed(&store).await, [1, 3]);

        // A caller that gives up mid-transaction (its task cancelled) holds nobody up.
        let abandoned = tokio::spawn({
            let store = store.clone();
            async move {
                let mut tx = store.write_tx().await.unwrap();
                insert(&mut tx, 4).await;
                pending::<()>().await;
            }
        });
        let after = write(&store, 5, true);
        let_them_queue().await;
        abandoned.abort();
        after.await.unwrap();
        assert_eq!(committed(&store).await, [1, 3, 5]);
    }

    /// A write that gives up because of an uncommitted write of its group answers only once
    /// that write is committed: what it gave up on is then seen by every connection.
    #[tokio::test]
    async fn a_write_that_gives_up_answers_after_its_group_commits() {
        let (store, _dir) = store().await;
        let mut first = store.write_tx().await.unwrap();
        insert(&mut first, 1).await;
        let loser = tokio::spawn({
            let store = store.clone();
            async move {
                settled(async {
                    let mut tx = store.write_tx().await.unwrap();
                    let taken: i64 = sqlx::query_scalar("SELECT count(*) FROM t WHERE n = 1")
                        .fetch_one(&mut *tx)
                        .await
                        .unwrap();
                    assert_eq!(taken, 1, "the group's uncommitted write is seen");
                    // Found taken: gives up, its transaction dropped.
                })
                .await;
                committed(&store).await
            }
        });
        let_them_queue().await;
        first.commit().await.unwrap();
        assert_eq!(
            loser.await.unwrap(),
            [1],
            "what it gave up on is committed when it answers"
        );
    }
}
