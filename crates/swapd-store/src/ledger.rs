//! The fee ledger's rows (docs/fees.md, "The ledger").

use swapd_core::StoreError;
use swapd_core::fees::LedgerRow;

use crate::map_sqlx_error;
use crate::sql::{SqlStore, Tx};

/// Inside a write transaction: records fee ledger rows (a row already there stays).
pub(crate) async fn insert_ledger_in(tx: &mut Tx, rows: &[LedgerRow]) -> Result<(), StoreError> {
    for row in rows {
        sqlx::query(
            "INSERT INTO fee_ledger (order_id, owner, party, affiliate_code, stage, bps, amount, \
             currency, at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING",
        )
        .bind(&row.order_id)
        .bind(&row.owner)
        .bind(row.party.as_str())
        .bind(&row.affiliate_code)
        .bind(row.stage.as_str())
        .bind(&row.bps)
        .bind(&row.amount)
        .bind(&row.currency)
        .bind(row.at_ms)
        .execute(&mut **tx)
        .await
        .map_err(map_sqlx_error)?;
    }
    Ok(())
}

#[derive(sqlx::FromRow)]
struct LedgerDbRow {
    order_id: String,
    owner: String,
    party: String,
    affiliate_code: Option<String>,
    stage: String,
    bps: Option<String>,
    amount: String,
    currency: String,
    at: i64,
}

impl LedgerDbRow {
    fn into_domain(self) -> Result<LedgerRow, StoreError> {
        let corrupt =
            |what: &str| StoreError::Corrupt(format!("fee ledger {}: {what}", self.order_id));
        let party = self.party.parse().map_err(|_| corrupt("party"))?;
        let stage = self.stage.parse().map_err(|_| corrupt("stage"))?;
        Ok(LedgerRow {
            order_id: self.order_id,
            owner: self.owner,
            party,
            affiliate_code: self.affiliate_code,
            stage,
            bps: self.bps,
            amount: self.amount,
            currency: self.currency,
            at_ms: self.at,
        })
    }
}

/// The rows whose `column` (`owner` or `affiliate_code`) is `value`, learnt in
/// `[since_ms, until_ms)`, oldest first, at most `limit`.
pub(crate) async fn select(
    store: &SqlStore,
    column: &'static str,
    value: &str,
    since_ms: i64,
    until_ms: i64,
    limit: u32,
) -> Result<Vec<LedgerRow>, StoreError> {
    let rows: Vec<LedgerDbRow> = sqlx::query_as(crate::sql::built(format!(
        "SELECT order_id, owner, party, affiliate_code, stage, bps, amount, currency, at \
         FROM fee_ledger WHERE {column} = $1 AND at >= $2 AND at < $3 \
         ORDER BY at, order_id, party, stage LIMIT $4"
    )))
    .bind(value)
    .bind(since_ms)
    .bind(until_ms)
    .bind(i64::from(limit))
    .fetch_all(&store.pool)
    .await
    .map_err(map_sqlx_error)?;
    rows.into_iter().map(LedgerDbRow::into_domain).collect()
}
