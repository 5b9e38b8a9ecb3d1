//! LI.FI behind the provider port: cards from `GET /v1/quote`, plans from the same quote asked
//! for the plan's wallet, executions followed on the source chain (when swapd reads it) and
//! through `GET /v1/status`.

use std::time::Duration;

use alloy_primitives::Address;
use async_trait::async_trait;
use swapd_core::chain::{self, ChainError, SourceTx};
use swapd_core::market::ExecutionType;
use swapd_core::market::currencies::{CurrencyDef, currency};
use swapd_core::onchain::{ExecutionReport, ExecutionStatus, Outcome, Tracked};
use swapd_core::provider::{
    CurrencyOffer, PlanRequest, Provider, ProviderError, ProviderInfo, ProviderQuote, QuoteRequest,
    TrackRequest,
};
use swapd_http::Transport;
use swapd_http::reqwest::header::{HeaderMap, HeaderValue};
use swapd_types::onchain::{ExecutionTx, PlanStep};

use super::QuoteQuery;
use crate::Chains;

pub const ID: &str = "lifi";
pub const BASE_URL: &str = "https://li.quest/v1/";

pub struct LiFi {
    transport: Transport,
    integrator: String,
    chains: Chains,
}

impl LiFi {
    /// LI.FI at `base_url`; `api_key` (optional) raises its rate limits, `integrator` tags
    /// swapd's requests; `chains` are the chains swapd reads to follow executions.
    pub fn new(
        base_url: &str,
        api_key: &str,
        integrator: &str,
        timeout: Duration,
        chains: Chains,
    ) -> Result<Self, String> {
        let mut headers = HeaderMap::new();
        if !api_key.is_empty() {
            let mut key = HeaderValue::from_str(api_key)
                .map_err(|_| "the API key holds characters a header cannot carry".to_owned())?;
            key.set_sensitive(true);
            headers.insert("x-lifi-api-key", key);
        }
        Ok(Self {
            transport: Transport::new("LI.FI", base_url, timeout, headers)?,
            integrator: integrator.to_owned(),
            chains,
        })
    }

    async fn quote_body(
        &self,
        query: QuoteQuery,
        from: &CurrencyDef,
    ) -> Result<Vec<u8>, ProviderError> {
        let answer = self.transport.get(query.path, &query.query).await?;
        answer.read(
            |body| Ok(body.to_vec()),
            |refused| super::error(refused.status, &refused.body, from),
        )
    }

    /// What LI.FI says about `source`.
    async fn status(
        &self,
        from: &'static CurrencyDef,
        to: &'static CurrencyDef,
        source: &ExecutionTx,
    ) -> Result<Option<Tracked>, ProviderError> {
        let chain = |def: &CurrencyDef| super::chain_id(def.network).unwrap_or_default();
        let query = [
            ("txHash", source.tx_hash.clone()),
            ("fromChain", chain(from).to_string()),
            ("toChain", chain(to).to_string()),
        ];
        let answer = self.transport.get("status", &query).await?;
        answer.read(
            |body| super::tracked(body, from, to, source),
            |refused| super::error(refused.status, &refused.body, from),
        )
    }

    async fn track(&self, request: TrackRequest<'_>) -> Result<Tracked, ProviderError> {
        let plan = request.plan;
        let ExecutionReport::TxHash { tx_hash } = request.report else {
            return Err(ProviderError::Unavailable(
                "LI.FI plans are reported with a txHash".into(),
            ));
        };
        let stored = |code: &str| {
            currency(code).ok_or_else(|| {
                ProviderError::Unavailable("the plan names an unknown currency".into())
            })
        };
        let (from, to) = (stored(&plan.from_code)?, stored(&plan.to_code)?);
        let source = ExecutionTx {
            role: "source".into(),
            chain: from.network.caip2().unwrap_or_default(),
            tx_hash: tx_hash.clone(),
        };
        let lost_after_ms = chain::lost_after_ms(plan.expires_at_ms, request.reported_at_ms);
        let recipient = plan.recipient.as_deref().unwrap_or(&plan.wallet_address);
        let mut source_final = false;
        if let Some(reader) = self.chains.evm(from.network) {
            let receipt = reader.receipt(tx_hash).await.map_err(unavailable)?;
            let head = match receipt {
                Some(_) => reader.head().await.map_err(unavailable)?,
                None => 0,
            };
            match chain::source_tx(
                receipt,
                head,
                reader.confirmations(),
                lost_after_ms,
                request.now_ms,
            ) {
                SourceTx::NotIndexed => {
                    return Ok(state(ExecutionStatus::Submitted, "not_indexed", Vec::new()));
                }
                SourceTx::Lost => {
                    return Ok(state(ExecutionStatus::Failed, "tx_not_found", Vec::new()));
                }
                SourceTx::Confirming { .. } => {
                    return Ok(state(
                        ExecutionStatus::Pending,
                        "source_confirming",
                        vec![source],
                    ));
                }
                SourceTx::Reverted => {
                    return Ok(state(ExecutionStatus::Failed, "reverted", vec![source]));
                }
                SourceTx::Confirmed(receipt) => {
                    // A swap on one chain is atomic: what its logs paid the recipient arrived.
                    if from.network == to.network
                        && let Some(units) = paid(&receipt.logs, to, recipient)
                    {
                        return Ok(completed(to, units, vec![source]));
                    }
                    source_final = true;
                }
            }
        }
        match self.status(from, to, &source).await? {
            Some(tracked) => self.checked_at_destination(tracked, to, recipient).await,
            None if source_final => Ok(state(
                ExecutionStatus::Pending,
                "awaiting_destination",
                vec![source],
            )),
            None if request.now_ms >= lost_after_ms => {
                Ok(state(ExecutionStatus::Failed, "tx_not_found", Vec::new()))
            }
            None => Ok(state(ExecutionStatus::Submitted, "not_indexed", Vec::new())),
        }
    }

    /// A completed bridge's amount read from its destination transaction, when swapd reads that
    /// chain and the token is one it lists: what arrived, not what LI.FI reports.
    async fn checked_at_destination(
        &self,
        tracked: Tracked,
        to: &'static CurrencyDef,
        recipient: &str,
    ) -> Result<Tracked, ProviderError> {
        let destination = tracked.tx_hashes.iter().find(|tx| tx.role == "destination");
        let (Some(Outcome::Completed), Some(destination), Some(reader)) =
            (tracked.outcome, destination, self.chains.evm(to.network))
        else {
            return Ok(tracked);
        };
        let Some(receipt) = reader
            .receipt(&destination.tx_hash)
            .await
            .map_err(unavailable)?
        else {
            // LI.FI saw it first; the node will too.
            return Ok(state(
                ExecutionStatus::Pending,
                "awaiting_destination",
                tracked.tx_hashes,
            ));
        };
        Ok(match paid(&receipt.logs, to, recipient) {
            Some(units) => completed(to, units, tracked.tx_hashes),
            None => tracked,
        })
    }
}

/// What `to`'s transfers in `logs` paid `recipient`; `None` for a native currency (no logs) or
/// when nothing was paid.
fn paid(
    logs: &[swapd_core::chain::EvmLog],
    to: &CurrencyDef,
    recipient: &str,
) -> Option<alloy_primitives::U256> {
    let token: Address = to.contract?.parse().ok()?;
    let recipient: Address = recipient.parse().ok()?;
    let units = chain::transferred_to(logs, token, recipient);
    (!units.is_zero()).then_some(units)
}

fn completed(
    to: &CurrencyDef,
    units: alloy_primitives::U256,
    tx_hashes: Vec<ExecutionTx>,
) -> Tracked {
    Tracked {
        status: ExecutionStatus::Done,
        substatus: Some("completed".into()),
        outcome: Some(Outcome::Completed),
        tx_hashes,
        received_amount: Some(
            swapd_core::amount::Amount::from_units(units, to.decimals).to_string(),
        ),
        received_token: Some(to.code.into()),
    }
}

fn state(status: ExecutionStatus, substatus: &str, tx_hashes: Vec<ExecutionTx>) -> Tracked {
    Tracked {
        status,
        substatus: Some(substatus.into()),
        outcome: None,
        tx_hashes,
        received_amount: None,
        received_token: None,
    }
}

fn unavailable(error: ChainError) -> ProviderError {
    let ChainError::Unavailable(detail) = error;
    ProviderError::Unavailable(detail)
}

#[async_trait]
impl Provider for LiFi {
    fn info(&self) -> ProviderInfo {
        ProviderInfo {
            id: ID,
            execution_type: ExecutionType::Onchain,
        }
    }

    async fn catalog(&self, _now_ms: i64) -> Result<Vec<CurrencyOffer>, ProviderError> {
        Ok(super::catalog())
    }

    async fn quote(&self, request: &QuoteRequest) -> Result<ProviderQuote, ProviderError> {
        let query = super::card_query(request, &self.integrator)?;
        let body = self.quote_body(query, request.from).await?;
        super::card(&body, request)
    }

    async fn build_plan(&self, request: &PlanRequest) -> Result<Vec<PlanStep>, ProviderError> {
        let query = super::plan_query(request, &self.integrator)?;
        let body = self.quote_body(query, request.from).await?;
        super::plan_steps(&body, request)
    }

    async fn track_execution(&self, request: TrackRequest<'_>) -> Result<Tracked, ProviderError> {
        self.track(request).await
    }
}
