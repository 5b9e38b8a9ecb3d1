//! A route quote as its `body` keeps it (and as a createToken copies it).

use serde::{Deserialize, Serialize};
use swapd_core::StoreError;
use swapd_core::fees::OnchainFee;
use swapd_core::market::routes::RouteQuote;
use swapd_core::market::{Direction, ExecutionType, RateType};

use super::fee::{self, FeeRecord};
use super::stored::{amount_of, currency_of, id_of, optional, owner_of};
use crate::codec::Body;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RouteQuoteRecord {
    #[serde(default)]
    affiliate_code: Option<String>,
    id: String,
    owner: String,
    provider: String,
    execution_type: ExecutionType,
    rate_type: RateType,
    direction: Direction,
    from_code: String,
    to_code: String,
    from_amount: String,
    to_amount: String,
    min_output: String,
    rate: String,
    min: String,
    max: Option<String>,
    fees: Vec<FeeRecord>,
    estimated_duration_secs: u32,
    wallet_address: Option<String>,
    wallet_namespace: Option<String>,
    recipient: Option<String>,
    gasless: bool,
    #[serde(default)]
    rate_lock: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    onchain_fees: Vec<OnchainFee>,
    created_at_ms: i64,
    expires_at_ms: i64,
}

impl Body for RouteQuote {
    type Record = RouteQuoteRecord;

    fn to_record(&self) -> RouteQuoteRecord {
        RouteQuoteRecord {
            affiliate_code: self.affiliate_code.clone(),
            id: self.id.to_string(),
            owner: self.owner.scope(),
            provider: self.provider.clone(),
            execution_type: self.execution_type,
            rate_type: self.rate_type,
            direction: self.direction,
            from_code: self.from.code.into(),
            to_code: self.to.code.into(),
            from_amount: self.from_amount.to_string(),
            to_amount: self.to_amount.to_string(),
            min_output: self.min_output.to_string(),
            rate: self.rate.to_string(),
            min: self.min.to_string(),
            max: self.max.map(|max| max.to_string()),
            fees: fee::records(&self.fees),
            estimated_duration_secs: self.estimated_duration_secs,
            wallet_address: self.wallet_address.clone(),
            wallet_namespace: self.wallet_namespace.clone(),
            recipient: self.recipient.clone(),
            gasless: self.gasless,
            rate_lock: self.rate_lock.clone(),
            onchain_fees: self.onchain_fees.clone(),
            created_at_ms: self.created_at_ms,
            expires_at_ms: self.expires_at_ms,
        }
    }

    fn from_record(r: RouteQuoteRecord) -> Result<RouteQuote, StoreError> {
        let (from, to) = (currency_of(&r.from_code)?, currency_of(&r.to_code)?);
        Ok(RouteQuote {
            id: id_of(&r.id)?,
            owner: owner_of(&r.owner)?,
            provider: r.provider,
            execution_type: r.execution_type,
            rate_type: r.rate_type,
            direction: r.direction,
            from,
            to,
            from_amount: amount_of(&r.from_amount, from)?,
            to_amount: amount_of(&r.to_amount, to)?,
            min_output: amount_of(&r.min_output, to)?,
            rate: amount_of(&r.rate, to)?,
            min: amount_of(&r.min, from)?,
            max: optional(r.max.as_deref(), |max| amount_of(max, from))?,
            fees: fee::fees(r.fees)?,
            estimated_duration_secs: r.estimated_duration_secs,
            wallet_address: r.wallet_address,
            wallet_namespace: r.wallet_namespace,
            recipient: r.recipient,
            gasless: r.gasless,
            rate_lock: r.rate_lock,
            onchain_fees: r.onchain_fees,
            affiliate_code: r.affiliate_code,
            created_at_ms: r.created_at_ms,
            expires_at_ms: r.expires_at_ms,
        })
    }
}
