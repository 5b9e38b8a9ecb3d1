//! An onchain execution plan as its `body` keeps it.

use serde::{Deserialize, Serialize};
use swapd_core::StoreError;
use swapd_core::fees::OnchainFee;
use swapd_core::onchain::plan::{ExecutionPlan, ExecutionReport, ExecutionStatus, Outcome};
use swapd_types::onchain::{ExecutionTx, PlanStep};

use super::fee::{self, FeeRecord};
use super::stored::{amount_of, currency_of, id_of, owner_of};
use crate::codec::Body;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct PlanRecord {
    id: String,
    owner: String,
    route_quote_id: String,
    resolve_key: String,
    provider: String,
    /// Written for readers of the database; a plan's namespace is its source chain's.
    chain_namespace: String,
    wallet_address: String,
    recipient: Option<String>,
    from_code: String,
    to_code: String,
    from_amount: String,
    expected_output: String,
    min_output: String,
    slippage_bps: u32,
    gasless: bool,
    steps: Vec<PlanStep>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    provider_state: Option<serde_json::Value>,
    created_at_ms: i64,
    expires_at_ms: i64,
    version: i64,
    status: ExecutionStatus,
    substatus: Option<String>,
    outcome: Option<Outcome>,
    report: Option<ExecutionReport>,
    reported_at_ms: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    relayed_at_ms: Option<i64>,
    tx_hashes: Vec<ExecutionTx>,
    received_amount: Option<String>,
    received_token: Option<String>,
    updated_at_ms: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    page_url: Option<String>,
    next_check_at_ms: Option<i64>,
    #[serde(default)]
    fees: Vec<FeeRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    affiliate_code: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    onchain_fees: Vec<OnchainFee>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    fees_realized: Option<Vec<FeeRecord>>,
}

impl Body for ExecutionPlan {
    type Record = PlanRecord;

    fn to_record(&self) -> PlanRecord {
        PlanRecord {
            id: self.id.to_string(),
            owner: self.owner.scope(),
            route_quote_id: self.route_quote_id.to_string(),
            resolve_key: self.resolve_key.clone(),
            provider: self.provider.clone(),
            chain_namespace: self.chain_namespace().into(),
            wallet_address: self.wallet_address.clone(),
            recipient: self.recipient.clone(),
            from_code: self.from.code.into(),
            to_code: self.to.code.into(),
            from_amount: self.from_amount.to_string(),
            expected_output: self.expected_output.to_string(),
            min_output: self.min_output.to_string(),
            slippage_bps: self.slippage_bps,
            gasless: self.gasless,
            steps: self.steps.clone(),
            provider_state: self.provider_state.clone(),
            created_at_ms: self.created_at_ms,
            expires_at_ms: self.expires_at_ms,
            version: self.version,
            status: self.status,
            substatus: self.substatus.clone(),
            outcome: self.outcome,
            report: self.report.clone(),
            reported_at_ms: self.reported_at_ms,
            relayed_at_ms: self.relayed_at_ms,
            tx_hashes: self.tx_hashes.clone(),
            received_amount: self.received_amount.clone(),
            received_token: self.received_token.clone(),
            updated_at_ms: self.updated_at_ms,
            page_url: self.page_url.clone(),
            next_check_at_ms: self.next_check_at_ms,
            fees: fee::records(&self.fees),
            affiliate_code: self.affiliate_code.clone(),
            onchain_fees: self.onchain_fees.clone(),
            fees_realized: self.fees_realized.as_deref().map(fee::records),
        }
    }

    fn from_record(r: PlanRecord) -> Result<ExecutionPlan, StoreError> {
        let (from, to) = (currency_of(&r.from_code)?, currency_of(&r.to_code)?);
        Ok(ExecutionPlan {
            id: id_of(&r.id)?,
            owner: owner_of(&r.owner)?,
            route_quote_id: id_of(&r.route_quote_id)?,
            resolve_key: r.resolve_key,
            provider: r.provider,
            wallet_address: r.wallet_address,
            recipient: r.recipient,
            from,
            to,
            from_amount: amount_of(&r.from_amount, from)?,
            expected_output: amount_of(&r.expected_output, to)?,
            min_output: amount_of(&r.min_output, to)?,
            slippage_bps: r.slippage_bps,
            gasless: r.gasless,
            steps: r.steps,
            provider_state: r.provider_state,
            created_at_ms: r.created_at_ms,
            expires_at_ms: r.expires_at_ms,
            version: r.version,
            status: r.status,
            substatus: r.substatus,
            outcome: r.outcome,
            report: r.report,
            reported_at_ms: r.reported_at_ms,
            relayed_at_ms: r.relayed_at_ms,
            tx_hashes: r.tx_hashes,
            received_amount: r.received_amount,
            received_token: r.received_token,
            updated_at_ms: r.updated_at_ms,
            page_url: r.page_url,
            next_check_at_ms: r.next_check_at_ms,
            fees: fee::fees(r.fees)?,
            affiliate_code: r.affiliate_code,
            onchain_fees: r.onchain_fees,
            fees_realized: r.fees_realized.map(fee::fees).transpose()?,
        })
    }
}
