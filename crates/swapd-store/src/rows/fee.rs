//! A fee entry as orders, plans and route quotes keep it: `{kind, bps?, amount, currency}`.

use serde::{Deserialize, Serialize};
use swapd_core::StoreError;
use swapd_core::fees::Rate;
use swapd_core::fees::entry::Fee;

use super::stored::{amount_of, currency_of};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct FeeRecord {
    kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    bps: Option<String>,
    amount: String,
    currency: String,
}

impl FeeRecord {
    pub(crate) fn of(fee: &Fee) -> Self {
        Self {
            kind: fee.kind.as_str().into(),
            bps: fee.rate.map(|rate| rate.to_string()),
            amount: fee.amount.to_string(),
            currency: fee.currency.code.into(),
        }
    }

    pub(crate) fn into_fee(self) -> Result<Fee, StoreError> {
        let corrupt = |what: String| StoreError::Corrupt(format!("fee: {what}"));
        let currency = currency_of(&self.currency)?;
        Ok(Fee {
            kind: self
                .kind
                .parse()
                .map_err(|_| corrupt(format!("kind `{}`", self.kind)))?,
            rate: self
                .bps
                .as_deref()
                .map(|bps| Rate::parse(bps).ok_or_else(|| corrupt(format!("bps `{bps}`"))))
                .transpose()?,
            amount: amount_of(&self.amount, currency)?,
            currency,
        })
    }
}

pub(crate) fn records(fees: &[Fee]) -> Vec<FeeRecord> {
    fees.iter().map(FeeRecord::of).collect()
}

pub(crate) fn fees(records: Vec<FeeRecord>) -> Result<Vec<Fee>, StoreError> {
    records.into_iter().map(FeeRecord::into_fee).collect()
}
