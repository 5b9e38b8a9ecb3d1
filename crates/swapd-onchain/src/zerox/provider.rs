//! 0x behind the provider port: cards from its price endpoints, plans from its firm quotes for
//! the wallet, gasless signatures submitted to its relayer, and swaps followed on their chain.

use std::time::Duration;

use async_trait::async_trait;
use swapd_core::market::ExecutionType;
use swapd_core::market::currencies::CurrencyDef;
use swapd_core::market::provider::{
    CurrencyOffer, Provider, ProviderError, ProviderInfo, ProviderQuote, QuoteRequest,
};
use swapd_core::onchain::chain;
use swapd_core::onchain::plan::{
    ExecutionPlan, ExecutionReport, ExecutionStatus, SignedStep, Tracked,
};
use swapd_core::onchain::router::{BuiltPlan, OnchainRouter, PlanRequest, TrackRequest};
use swapd_http::reqwest::header::HeaderValue;
use swapd_http::{Call, Transport};

use super::{Gasless, GaslessState, Planned, Query};
use crate::tracking::{self, OnChain};
use crate::{Chains, parse_json};

pub const ID: &str = "zerox";
pub const BASE_URL: &str = "https://api.0x.org/";

pub struct ZeroX {
    transport: Transport,
    chains: Chains,
}

impl ZeroX {
    /// 0x at `base_url` with `api_key` (required); `chains` are the chains it swaps on.
    pub fn new(
        base_url: &str,
        api_key: Option<&str>,
        timeout: Duration,
        chains: Chains,
    ) -> Result<Self, String> {
        let mut headers = swapd_http::api_key_headers("0x-api-key", api_key)?;
        headers.insert("0x-version", HeaderValue::from_static("v2"));
        Ok(Self {
            transport: Transport::new("0x", base_url, timeout, headers)?,
            chains,
        })
    }

    async fn get(&self, query: Query, from: &CurrencyDef) -> Result<Vec<u8>, ProviderError> {
        let answer = self.transport.get(query.path, &query.query).await?;
        crate::read(answer, from, super::error, |body| Ok(body.to_vec()))
    }

    /// A trade reported with its signatures: 0x's status of it, then its transaction on chain.
    async fn track_gasless(
        &self,
        request: TrackRequest<'_>,
        from: &'static CurrencyDef,
        to: &'static CurrencyDef,
    ) -> Result<Tracked, ProviderError> {
        let plan = request.plan;
        let state = state(plan)?;
        let trade_hash = state
            .trade_hash
            .ok_or_else(|| ProviderError::Unavailable("the trade was not submitted yet".into()))?;
        let query = [("chainId", state.chain_id.to_string())];
        let answer = self
            .transport
            .get(&format!("gasless/status/{trade_hash}"), &query)
            .await?;
        let status = crate::read(answer, from, super::error, super::gasless_status)?;
        let hash = match status {
            Gasless::Waiting => {
                return Ok(Tracked::state(
                    ExecutionStatus::Submitted,
                    "relayed",
                    Vec::new(),
                ));
            }
            Gasless::Failed(substatus, hashes) => {
                let tx_hashes = hashes
                    .iter()
                    .map(|hash| tracking::source_tx(from, hash))
                    .collect();
                return Ok(Tracked::state(
                    ExecutionStatus::Failed,
                    &substatus,
                    tx_hashes,
                ));
            }
            Gasless::Mined(hash) => hash,
        };
        // The relayer's transaction cannot be lost once 0x says it was mined.
        self.on_chain(plan, from, to, &hash, i64::MAX, request.now_ms)
            .await
    }

    /// A mined or reported transaction judged on its chain; a final one by what it paid.
    async fn on_chain(
        &self,
        plan: &ExecutionPlan,
        from: &'static CurrencyDef,
        to: &'static CurrencyDef,
        tx_hash: &str,
        lost_after_ms: i64,
        now_ms: i64,
    ) -> Result<Tracked, ProviderError> {
        let source = tracking::source_tx(from, tx_hash);
        match tracking::on_chain(&self.chains, from, &source, lost_after_ms, now_ms).await? {
            OnChain::Decided(tracked) => Ok(tracked),
            OnChain::Final(receipt) => {
                match tracking::received(&self.chains, &receipt, plan, from, to).await? {
                    Some(units) => Ok(Tracked {
                        fees_paid: tracking::fees_paid(&receipt.logs, plan, to),
                        ..tracking::completed(to, units, vec![source])
                    }),
                    // Executed but nothing reached the wallet: not a swap swapd can vouch for.
                    None => Ok(Tracked::state(
                        ExecutionStatus::Failed,
                        "nothing_received",
                        vec![source],
                    )),
                }
            }
            OnChain::Unread => Err(ProviderError::Unavailable(format!(
                "swapd reads no {} node to follow this 0x swap",
                from.network
            ))),
        }
    }
}

fn state(plan: &ExecutionPlan) -> Result<GaslessState, ProviderError> {
    crate::provider_state(plan, "0x")
}

#[async_trait]
impl Provider for ZeroX {
    fn info(&self) -> ProviderInfo {
        ProviderInfo {
            id: ID,
            execution_type: ExecutionType::Onchain,
        }
    }

    async fn catalog(&self, _now_ms: i64) -> Result<Vec<CurrencyOffer>, ProviderError> {
        Ok(super::catalog(|network| self.chains.evm(network).is_some()))
    }

    async fn quote(&self, request: &QuoteRequest) -> Result<ProviderQuote, ProviderError> {
        let reads = self.chains.evm(request.from.network).is_some();
        let query = super::card_query(request, reads)?;
        let body = self.get(query, request.from).await?;
        super::card(&body, request)
    }
}

#[async_trait]
impl OnchainRouter for ZeroX {
    fn unconfigured(&self) -> Option<String> {
        self.chains.evm_networks().is_empty().then(|| {
            "swapd follows 0x swaps on their chain and reads no EVM node: set [chains.<network>]"
                .to_owned()
        })
    }

    async fn build_plan(&self, request: &PlanRequest) -> Result<BuiltPlan, ProviderError> {
        let query = super::plan_query(request);
        let path = query.path;
        let body = self.get(query, request.from).await?;
        match super::plan(&body, request, path)? {
            Planned::Built(plan) => Ok(plan),
            Planned::NeedsApprovalTransaction => {
                let query = super::allowance_holder_query(request);
                let path = query.path;
                let body = self.get(query, request.from).await?;
                match super::plan(&body, request, path)? {
                    Planned::Built(plan) => Ok(plan),
                    Planned::NeedsApprovalTransaction => unreachable!("only gasless quotes ask"),
                }
            }
        }
    }

    async fn relay_signatures(
        &self,
        plan: &ExecutionPlan,
        signatures: &[SignedStep],
    ) -> Result<Option<serde_json::Value>, ProviderError> {
        let mut state = state(plan)?;
        let from = plan.from;
        let body = super::submit_body(&state, signatures)?;
        // Sent once: 0x refuses a second submission of a pending trade.
        let answer = self
            .transport
            .post(Call::Write, "gasless/submit", &body, &[])
            .await?;
        let submitted: super::wire::Submitted =
            crate::read(answer, from, super::error, parse_json)?;
        state.trade_hash = Some(submitted.trade_hash);
        Ok(Some(serde_json::to_value(state).expect("state serializes")))
    }

    async fn track_execution(&self, request: TrackRequest<'_>) -> Result<Tracked, ProviderError> {
        let plan = request.plan;
        let (from, to) = (plan.from, plan.to);
        match request.report {
            ExecutionReport::Signatures { .. } => self.track_gasless(request, from, to).await,
            ExecutionReport::TxHash { tx_hash } => {
                let lost_after_ms =
                    chain::lost_after_ms(plan.expires_at_ms, request.reported_at_ms);
                self.on_chain(plan, from, to, tx_hash, lost_after_ms, request.now_ms)
                    .await
            }
        }
    }
}
