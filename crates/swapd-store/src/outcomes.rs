//! Swap outcomes (docs/market.md, "Observed figures"): written in the transaction of the change
//! that ends an order or a plan, read as the figures' samples and the console's list.

use swapd_core::StoreError;
use swapd_core::amount::{Amount, MAX_DECIMALS};
use swapd_core::market::observed::{Ending, Sample, SwapOutcome};
use swapd_core::market::{ExecutionType, RateType};
use swapd_core::store::OutcomeStore;

use crate::map_sqlx_error;
use crate::rows::stored::{amount_of, currency_of, optional};
use crate::sql::{SqlStore, Tx};

const COLUMNS: &str = "source_id, provider, execution_type, from_code, to_code, rate_type, \
                       size_usd, quoted, quoted_min, delivered, ending, emergency, counted, \
                       duration_secs, delivered_vs_quoted_bps, ended_at";

/// Records `outcome` in `tx`. An order's outcome is replaced only when it ended differently
/// (an expired order a late deposit reopened), so a later write of the same ending (an e-mail
/// attached to a completed order) keeps when it ended.
pub(crate) async fn record_outcome_in(
    tx: &mut Tx,
    outcome: &SwapOutcome,
) -> Result<(), StoreError> {
    sqlx::query(crate::sql::built(format!(
        "INSERT INTO swap_outcomes ({COLUMNS}) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) \
         ON CONFLICT (source_id) DO UPDATE SET delivered = excluded.delivered, \
         ending = excluded.ending, emergency = excluded.emergency, counted = excluded.counted, \
         duration_secs = excluded.duration_secs, \
         delivered_vs_quoted_bps = excluded.delivered_vs_quoted_bps, ended_at = excluded.ended_at \
         WHERE swap_outcomes.ending <> excluded.ending"
    )))
    .bind(&outcome.source_id)
    .bind(&outcome.provider)
    .bind(match outcome.execution_type {
        ExecutionType::Offchain => "offchain",
        ExecutionType::Onchain => "onchain",
    })
    .bind(outcome.from.code)
    .bind(outcome.to.code)
    .bind(match outcome.rate_type {
        RateType::Fixed => "fixed",
        RateType::Float => "float",
    })
    .bind(outcome.size_usd.map(|a| a.to_string()))
    .bind(outcome.quoted.to_string())
    .bind(outcome.quoted_min.map(|a| a.to_string()))
    .bind(outcome.delivered.map(|a| a.to_string()))
    .bind(outcome.ending.as_str())
    .bind(&outcome.emergency)
    .bind(i64::from(outcome.counted))
    .bind(outcome.duration_secs.map(i64::from))
    .bind(outcome.delivered_vs_quoted_bps().map(i64::from))
    .bind(outcome.ended_at_ms)
    .execute(&mut **tx)
    .await
    .map(drop)
    .map_err(map_sqlx_error)
}

#[derive(sqlx::FromRow)]
struct SampleRow {
    provider: String,
    from_code: String,
    to_code: String,
    ending: String,
    duration_secs: Option<i64>,
    delivered_vs_quoted_bps: Option<i64>,
    ended_at: i64,
}

impl SampleRow {
    fn into_domain(self) -> Result<Sample, StoreError> {
        Ok(Sample {
            from: currency_of(&self.from_code)?.code,
            to: currency_of(&self.to_code)?.code,
            completed: self.ending == Ending::Completed.as_str(),
            duration_secs: self.duration_secs.and_then(|s| u32::try_from(s).ok()),
            delivered_vs_quoted_bps: self
                .delivered_vs_quoted_bps
                .and_then(|b| i32::try_from(b).ok()),
            ended_at_ms: self.ended_at,
            provider: self.provider,
        })
    }
}

#[derive(sqlx::FromRow)]
struct OutcomeRow {
    source_id: String,
    provider: String,
    execution_type: String,
    from_code: String,
    to_code: String,
    rate_type: String,
    size_usd: Option<String>,
    quoted: String,
    quoted_min: Option<String>,
    delivered: Option<String>,
    ending: String,
    emergency: Option<String>,
    counted: i64,
    duration_secs: Option<i64>,
    ended_at: i64,
}

impl OutcomeRow {
    fn into_domain(self) -> Result<SwapOutcome, StoreError> {
        let corrupt =
            |what: &str| StoreError::Corrupt(format!("outcome {}: {what}", self.source_id));
        let (from, to) = (currency_of(&self.from_code)?, currency_of(&self.to_code)?);
        Ok(SwapOutcome {
            execution_type: match self.execution_type.as_str() {
                "offchain" => ExecutionType::Offchain,
                "onchain" => ExecutionType::Onchain,
                _ => return Err(corrupt("execution type")),
            },
            rate_type: match self.rate_type.as_str() {
                "fixed" => RateType::Fixed,
                "float" => RateType::Float,
                _ => return Err(corrupt("rate type")),
            },
            size_usd: optional(self.size_usd.as_deref(), |text| {
                Amount::parse(text, MAX_DECIMALS).map_err(|_| corrupt("size"))
            })?,
            quoted: amount_of(&self.quoted, to)?,
            quoted_min: optional(self.quoted_min.as_deref(), |t| amount_of(t, to))?,
            delivered: optional(self.delivered.as_deref(), |t| amount_of(t, to))?,
            ending: self.ending.parse().map_err(|_| corrupt("ending"))?,
            emergency: self.emergency,
            counted: self.counted != 0,
            duration_secs: self.duration_secs.and_then(|s| u32::try_from(s).ok()),
            ended_at_ms: self.ended_at,
            from,
            to,
            provider: self.provider,
            source_id: self.source_id,
        })
    }
}

#[async_trait::async_trait]
impl OutcomeStore for SqlStore {
    async fn outcome_samples(&self, since_ms: i64) -> Result<Vec<Sample>, StoreError> {
        sqlx::query_as::<_, SampleRow>(
            "SELECT provider, from_code, to_code, ending, duration_secs, \
             delivered_vs_quoted_bps, ended_at FROM swap_outcomes \
             WHERE counted = 1 AND ended_at >= $1",
        )
        .bind(since_ms)
        .fetch_all(&self.pool)
        .await
        .map_err(map_sqlx_error)?
        .into_iter()
        .map(SampleRow::into_domain)
        .collect()
    }

    async fn recent_outcomes(
        &self,
        provider: &str,
        limit: u32,
    ) -> Result<Vec<SwapOutcome>, StoreError> {
        sqlx::query_as::<_, OutcomeRow>(crate::sql::built(format!(
            "SELECT {COLUMNS} FROM swap_outcomes WHERE provider = $1 \
             ORDER BY ended_at DESC, source_id LIMIT $2"
        )))
        .bind(provider)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(map_sqlx_error)?
        .into_iter()
        .map(OutcomeRow::into_domain)
        .collect()
    }

    async fn purge_outcomes(&self, before_ms: i64, limit: u32) -> Result<u64, StoreError> {
        self.write_one(
            sqlx::query(
                "DELETE FROM swap_outcomes WHERE source_id IN \
                 (SELECT source_id FROM swap_outcomes WHERE ended_at < $1 \
                  ORDER BY ended_at LIMIT $2)",
            )
            .bind(before_ms)
            .bind(i64::from(limit)),
        )
        .await
        .map(|done| done.rows_affected())
    }
}
