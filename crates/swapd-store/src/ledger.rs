//! The fee ledger's rows (docs/fees.md, "The ledger").

use swapd_core::StoreError;
use swapd_core::fees::ledger::LedgerRow;

use swapd_core::fees::Rate;

use crate::map_sqlx_error;
use crate::rows::stored::{amount_of, currency_of, optional, owner_of};
use crate::sql::{SqlStore, Tx};

/// Inside a write transaction: records fee ledger rows (a row already there stays).
pub(crate) async fn insert_ledger_in(tx: &mut Tx, rows: &[LedgerRow]) -> Result<(), StoreError> {
    for row in rows {
        sqlx::query(
            "INSERT INTO fee_ledger (order_id, owner, party, affiliate_code, stage, bps, amount, \
             currency, at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING",
        )
        .bind(&row.order_id)
        .bind(row.owner.scope())
        .bind(row.party.as_str())
        .bind(&row.affiliate_code)
        .bind(row.stage.as_str())
        .bind(row.bps.map(|bps| bps.to_string()))
        .bind(row.amount.to_string())
        .bind(row.currency.code)
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
        let bps = optional(self.bps.as_deref(), |bps| {
            Rate::parse(bps).ok_or_else(|| corrupt("bps"))
        })?;
        let currency = currency_of(&self.currency)?;
        Ok(LedgerRow {
            owner: owner_of(&self.owner)?,
            party,
            affiliate_code: self.affiliate_code,
            stage,
            bps,
            amount: amount_of(&self.amount, currency)?,
            currency,
            at_ms: self.at,
            order_id: self.order_id,
        })
    }
}

/// The rows learnt in `[since_ms, until_ms)` whose `column` (`owner` or `affiliate_code`) is
/// the value `filter` names (every row without one), oldest first, at most `limit`.
pub(crate) async fn select(
    store: &SqlStore,
    filter: Option<(&'static str, &str)>,
    since_ms: i64,
    until_ms: i64,
    limit: u32,
) -> Result<Vec<LedgerRow>, StoreError> {
    let (condition, value) = match filter {
        Some((column, value)) => (format!("{column} = $4 AND "), Some(value)),
        None => (String::new(), None),
    };
    let mut query = sqlx::query_as(crate::sql::built(format!(
        "SELECT order_id, owner, party, affiliate_code, stage, bps, amount, currency, at \
         FROM fee_ledger WHERE {condition}at >= $1 AND at < $2 \
         ORDER BY at, order_id, party, stage LIMIT $3"
    )))
    .bind(since_ms)
    .bind(until_ms)
    .bind(i64::from(limit));
    if let Some(value) = value {
        query = query.bind(value);
    }
    let rows: Vec<LedgerDbRow> = query.fetch_all(&store.pool).await.map_err(map_sqlx_error)?;
    rows.into_iter().map(LedgerDbRow::into_domain).collect()
}
