//! An order as its `body` keeps it (and a sandbox desk's book, which has the same shape): the
//! JSON written since the first release, read into a typed [`Order`].

use serde::{Deserialize, Serialize};
use swapd_core::StoreError;
use swapd_core::market::{Direction, RateType};
use swapd_core::notify::Email;
use swapd_core::offchain::order::{Deposit, Emergency, Order, OrderStatus};

use super::fee::{self, FeeRecord};
use super::stored::{amount_of, currency_of, id_of, optional, owner_of};
use crate::codec::Body;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct OrderRecord {
    id: String,
    owner: String,
    status: OrderStatus,
    version: i64,
    rate_type: RateType,
    direction: Direction,
    from_code: String,
    to_code: String,
    provider: String,
    provider_ref: String,
    #[serde(default)]
    desk_token: Option<String>,
    rate: String,
    from_amount: String,
    to_amount: String,
    min: String,
    max: Option<String>,
    deposit_address: String,
    deposit_tag: Option<String>,
    to_address: String,
    to_tag: Option<String>,
    refund_address: Option<String>,
    refund_tag: Option<String>,
    deposits: Vec<DepositRecord>,
    payout_tx: Option<String>,
    payout_amount: Option<String>,
    refund_tx: Option<String>,
    refund_amount: Option<String>,
    emergency: Option<Emergency>,
    affiliate_code: Option<String>,
    #[serde(default)]
    fees: Vec<FeeRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    fees_realized: Option<Vec<FeeRecord>>,
    email: Option<String>,
    create_token_hash: Option<String>,
    created_at_ms: i64,
    updated_at_ms: i64,
    expires_at_ms: i64,
    #[serde(default)]
    next_check_at_ms: Option<i64>,
    #[serde(default)]
    desk_failures: u32,
    #[serde(default)]
    event_sequence: i64,
    #[serde(default)]
    failure_reason: Option<String>,
    #[serde(default)]
    page_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    exchange_started_at_ms: Option<i64>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    refund_requested: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct DepositRecord {
    tx_id: String,
    amount: String,
    confirmations: u32,
    required_confirmations: u32,
    seen_at_ms: i64,
    #[serde(default)]
    refund_tx: Option<String>,
    #[serde(default)]
    refund_error: Option<String>,
}

impl Body for Order {
    type Record = OrderRecord;

    fn to_record(&self) -> OrderRecord {
        let text = |amount: Option<swapd_core::amount::Amount>| amount.map(|a| a.to_string());
        OrderRecord {
            id: self.id.to_string(),
            owner: self.owner.scope(),
            status: self.status,
            version: self.version,
            rate_type: self.rate_type,
            direction: self.direction,
            from_code: self.from.code.into(),
            to_code: self.to.code.into(),
            provider: self.provider.clone(),
            provider_ref: self.provider_ref.clone(),
            desk_token: self.desk_token.clone(),
            rate: self.rate.to_string(),
            from_amount: self.from_amount.to_string(),
            to_amount: self.to_amount.to_string(),
            min: self.min.to_string(),
            max: text(self.max),
            deposit_address: self.deposit_address.clone(),
            deposit_tag: self.deposit_tag.clone(),
            to_address: self.to_address.as_str().into(),
            to_tag: self.to_tag.clone(),
            refund_address: self.refund_address.as_ref().map(|a| a.as_str().into()),
            refund_tag: self.refund_tag.clone(),
            deposits: self
                .deposits
                .iter()
                .map(|d| DepositRecord {
                    tx_id: d.tx_id.clone(),
                    amount: d.amount.to_string(),
                    confirmations: d.confirmations,
                    required_confirmations: d.required_confirmations,
                    seen_at_ms: d.seen_at_ms,
                    refund_tx: d.refund_tx.clone(),
                    refund_error: d.refund_error.clone(),
                })
                .collect(),
            payout_tx: self.payout_tx.clone(),
            payout_amount: text(self.payout_amount),
            refund_tx: self.refund_tx.clone(),
            refund_amount: text(self.refund_amount),
            emergency: self.emergency.clone(),
            affiliate_code: self.affiliate_code.clone(),
            fees: fee::records(&self.fees),
            fees_realized: self.fees_realized.as_deref().map(fee::records),
            email: self.email.as_ref().map(|e| e.as_str().into()),
            create_token_hash: self.create_token_hash.clone(),
            created_at_ms: self.created_at_ms,
            updated_at_ms: self.updated_at_ms,
            expires_at_ms: self.expires_at_ms,
            next_check_at_ms: self.next_check_at_ms,
            desk_failures: self.desk_failures,
            event_sequence: self.event_sequence,
            failure_reason: self.failure_reason.clone(),
            page_url: self.page_url.clone(),
            exchange_started_at_ms: self.exchange_started_at_ms,
            refund_requested: self.refund_requested,
        }
    }

    fn from_record(r: OrderRecord) -> Result<Order, StoreError> {
        let corrupt = |what: String| StoreError::Corrupt(format!("order {}: {what}", r.id));
        let (from, to) = (currency_of(&r.from_code)?, currency_of(&r.to_code)?);
        let address = |network: swapd_core::address::Network, text: &str| {
            network
                .parse_address(text)
                .map_err(|e| corrupt(e.to_string()))
        };
        Ok(Order {
            owner: owner_of(&r.owner)?,
            status: r.status,
            version: r.version,
            rate_type: r.rate_type,
            direction: r.direction,
            from,
            to,
            provider_ref: r.provider_ref,
            desk_token: r.desk_token,
            rate: amount_of(&r.rate, to)?,
            from_amount: amount_of(&r.from_amount, from)?,
            to_amount: amount_of(&r.to_amount, to)?,
            min: amount_of(&r.min, from)?,
            max: optional(r.max.as_deref(), |max| amount_of(max, from))?,
            to_address: address(to.network, &r.to_address)?,
            to_tag: r.to_tag,
            refund_address: optional(r.refund_address.as_deref(), |a| address(from.network, a))?,
            refund_tag: r.refund_tag,
            deposits: r
                .deposits
                .into_iter()
                .map(|d| {
                    Ok(Deposit {
                        amount: amount_of(&d.amount, from)?,
                        tx_id: d.tx_id,
                        confirmations: d.confirmations,
                        required_confirmations: d.required_confirmations,
                        seen_at_ms: d.seen_at_ms,
                        refund_tx: d.refund_tx,
                        refund_error: d.refund_error,
                    })
                })
                .collect::<Result<_, StoreError>>()?,
            payout_tx: r.payout_tx,
            payout_amount: optional(r.payout_amount.as_deref(), |a| amount_of(a, to))?,
            refund_tx: r.refund_tx,
            refund_amount: optional(r.refund_amount.as_deref(), |a| amount_of(a, from))?,
            emergency: r.emergency,
            fees: fee::fees(r.fees)?,
            fees_realized: r.fees_realized.map(fee::fees).transpose()?,
            email: r.email.map(Email::stored),
            create_token_hash: r.create_token_hash,
            created_at_ms: r.created_at_ms,
            updated_at_ms: r.updated_at_ms,
            expires_at_ms: r.expires_at_ms,
            next_check_at_ms: r.next_check_at_ms,
            desk_failures: r.desk_failures,
            event_sequence: r.event_sequence,
            failure_reason: r.failure_reason,
            page_url: r.page_url,
            exchange_started_at_ms: r.exchange_started_at_ms,
            refund_requested: r.refund_requested,
            provider: r.provider,
            deposit_address: r.deposit_address,
            deposit_tag: r.deposit_tag,
            affiliate_code: r.affiliate_code,
            id: id_of(&r.id)?,
        })
    }
}
