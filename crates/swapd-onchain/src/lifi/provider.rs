//! LI.FI behind the provider port: cards from `GET /v1/quote`, plans from the same quote asked
//! for the plan's wallet, executions followed on the source chain (when swapd reads it) and
//! through `GET /v1/status`.

use std::time::Duration;

use async_trait::async_trait;
use swapd_core::address::Network;
use swapd_core::market::ExecutionType;
use swapd_core::market::currencies::CurrencyDef;
use swapd_core::market::provider::{
    CurrencyOffer, Provider, ProviderError, ProviderInfo, ProviderQuote, QuoteRequest,
};
use swapd_core::onchain::chain;
use swapd_core::onchain::plan::{
    ExecutionPlan, ExecutionReport, ExecutionStatus, Outcome, SignedStep, Tracked,
};
use swapd_core::onchain::router::{BuiltPlan, OnchainRouter, PlanRequest, TrackRequest};
use swapd_http::Transport;
use swapd_types::onchain::ExecutionTx;

use super::QuoteQuery;
use crate::Chains;
use crate::tracking::{self, AtDestination, OnChain};

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
        api_key: Option<&str>,
        integrator: &str,
        timeout: Duration,
        chains: Chains,
    ) -> Result<Self, String> {
        let headers = swapd_http::api_key_headers("x-lifi-api-key", api_key)?;
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
        crate::read(answer, from, super::error, |body| Ok(body.to_vec()))
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
        crate::read(answer, from, super::error, |body| {
            super::tracked(body, from, to, source)
        })
    }

    async fn track(&self, request: TrackRequest<'_>) -> Result<Tracked, ProviderError> {
        let plan = request.plan;
        let ExecutionReport::TxHash { tx_hash } = request.report else {
            return Err(ProviderError::Unavailable(
                "LI.FI plans are reported with a txHash".into(),
            ));
        };
        let (from, to) = (plan.from, plan.to);
        let source = tracking::source_tx(from, tx_hash);
        let lost_after_ms = chain::lost_after_ms(plan.expires_at_ms, request.reported_at_ms);
        let source_final =
            match tracking::on_chain(&self.chains, from, &source, lost_after_ms, request.now_ms)
                .await?
            {
                OnChain::Decided(tracked) => return Ok(tracked),
                OnChain::Final(receipt) => {
                    // A swap on one chain is atomic: what its logs paid the recipient arrived.
                    if from.network == to.network
                        && let Some(units) =
                            tracking::received(&self.chains, &receipt, plan, from, to).await?
                    {
                        return Ok(tracking::completed(to, units, vec![source]));
                    }
                    true
                }
                // A Solana source: judged on Solana when swapd reads it.
                OnChain::Unread if from.network == Network::Solana => {
                    match tracking::on_solana(&self.chains, &source, lost_after_ms, request.now_ms)
                        .await?
                    {
                        OnChain::Decided(tracked) => return Ok(tracked),
                        OnChain::Final(_) => true,
                        OnChain::Unread => false,
                    }
                }
                OnChain::Unread => false,
            };
        match self.status(from, to, &source).await? {
            Some(tracked) => self.checked_at_destination(tracked, plan, to).await,
            None if source_final => Ok(Tracked::state(
                ExecutionStatus::Pending,
                "awaiting_destination",
                vec![source],
            )),
            None if request.now_ms >= lost_after_ms => Ok(Tracked::state(
                ExecutionStatus::Failed,
                "tx_not_found",
                Vec::new(),
            )),
            None => Ok(Tracked::state(
                ExecutionStatus::Submitted,
                "not_indexed",
                Vec::new(),
            )),
        }
    }

    /// A completed bridge's amount read from its destination transaction, when swapd reads that
    /// chain and the token is one it lists: what arrived, not what LI.FI reports.
    async fn checked_at_destination(
        &self,
        tracked: Tracked,
        plan: &ExecutionPlan,
        to: &'static CurrencyDef,
    ) -> Result<Tracked, ProviderError> {
        let destination = tracked.tx_hashes.iter().find(|tx| tx.role == "destination");
        let (Some(Outcome::Completed), Some(destination)) = (tracked.outcome, destination) else {
            return Ok(tracked);
        };
        Ok(
            match tracking::at_destination(&self.chains, plan, to, &destination.tx_hash).await? {
                AtDestination::Unread | AtDestination::Paid(None) => tracked,
                // LI.FI saw it first; the node will too.
                AtDestination::NotYet => Tracked::state(
                    ExecutionStatus::Pending,
                    "awaiting_destination",
                    tracked.tx_hashes,
                ),
                AtDestination::Paid(Some(units)) => {
                    tracking::completed(to, units, tracked.tx_hashes)
                }
            },
        )
    }
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
        super::card(&body, request, &self.integrator)
    }
}

#[async_trait]
impl OnchainRouter for LiFi {
    fn unconfigured(&self) -> Option<String> {
        None
    }

    async fn build_plan(&self, request: &PlanRequest) -> Result<BuiltPlan, ProviderError> {
        let query = super::plan_query(request, &self.integrator)?;
        let body = self.quote_body(query, request.from).await?;
        super::plan_steps(&body, request)
    }

    /// Its gasless plans need no relayer: nothing to pass on.
    async fn relay_signatures(
        &self,
        _plan: &ExecutionPlan,
        _signatures: &[SignedStep],
    ) -> Result<Option<serde_json::Value>, ProviderError> {
        Ok(None)
    }

    async fn track_execution(&self, request: TrackRequest<'_>) -> Result<Tracked, ProviderError> {
        self.track(request).await
    }
}
