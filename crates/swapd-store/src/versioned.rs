//! Versioned compare-and-set: the one way an order, an execution plan or a webhook subscription
//! changes. The caller read a row at version `v` and writes it back at `v + 1`; the write wins
//! only if nobody wrote in between, and it completes the request's idempotency record (when
//! there is one) in the same transaction, so a retry finds the outcome with the effect.

/// Inside the write transaction `$tx`: runs `$update`, an `UPDATE … WHERE … AND version = $v`
/// that changes one row when the stored version is still the one read. When it did, runs
/// `$then` (more writes of the same change, such as outbox events), completes `$finish` (an
/// `Option<IdempotentFinish>`) and commits. Evaluates to whether the change was written; when
/// it was not, nothing was (the transaction is dropped, so rolled back).
macro_rules! compare_and_set {
    ($tx:ident, $update:expr, finish = $finish:expr, then = $then:block) => {{
        let updated = $update
            .execute(&mut *$tx)
            .await
            .map_err(map_sqlx_error)?;
        if updated.rows_affected() == 1 {
            $then
            if let Some(finish) = $finish {
                finish_idempotent_in!($tx, finish);
            }
            $tx.commit().await.map_err(map_sqlx_error)?;
            true
        } else {
            false
        }
    }};
    ($tx:ident, $update:expr, finish = $finish:expr) => {
        compare_and_set!($tx, $update, finish = $finish, then = {})
    };
}
pub(crate) use compare_and_set;
