//! Jupiter behind the provider port: cards from `/quote`, plans from `/quote` then `/swap` for
//! the wallet, swaps followed on Solana.

use std::time::Duration;

use async_trait::async_trait;
use swapd_core::market::ExecutionType;
use swapd_core::market::provider::{
    CurrencyOffer, Provider, ProviderError, ProviderInfo, ProviderQuote, QuoteRequest,
};
use swapd_core::onchain::chain;
use swapd_core::onchain::plan::{
    ExecutionPlan, ExecutionReport, ExecutionStatus, SignedStep, Tracked,
};
use swapd_core::onchain::router::{BuiltPlan, OnchainRouter, PlanRequest, TrackRequest};
use swapd_http::{Answer, Call, Transport};

use crate::Chains;
use crate::tracking::{self, OnChain};

pub const ID: &str = "jupiter";
/// The keyed Metis swap API (the keyless `lite-api` host is being retired).
pub const BASE_URL: &str = "https://api.jup.ag/swap/v1/";

pub struct Jupiter {
    transport: Transport,
    chains: Chains,
}

impl Jupiter {
    /// Jupiter at `base_url` with `api_key` (`x-api-key`; empty for a keyless host).
    pub fn new(
        base_url: &str,
        api_key: Option<&str>,
        timeout: Duration,
        chains: Chains,
    ) -> Result<Self, String> {
        let headers = swapd_http::api_key_headers("x-api-key", api_key)?;
        Ok(Self {
            transport: Transport::new("Jupiter", base_url, timeout, headers)?,
            chains,
        })
    }

    async fn quote_body(&self, query: &[(&str, String)]) -> Result<Vec<u8>, ProviderError> {
        let answer = self.transport.get("quote", query).await?;
        read(answer, |body| Ok(body.to_vec()))
    }
}

fn read<T>(
    answer: Answer,
    map: impl FnOnce(&[u8]) -> Result<T, ProviderError>,
) -> Result<T, ProviderError> {
    answer.read(map, |refused| super::error(refused.status, &refused.body))
}

#[async_trait]
impl Provider for Jupiter {
    fn info(&self) -> ProviderInfo {
        ProviderInfo {
            id: ID,
            execution_type: ExecutionType::Onchain,
        }
    }

    async fn catalog(&self, _now_ms: i64) -> Result<Vec<CurrencyOffer>, ProviderError> {
        Ok(super::catalog(self.chains.solana().is_some()))
    }

    async fn quote(&self, request: &QuoteRequest) -> Result<ProviderQuote, ProviderError> {
        let query = super::card_query(request, self.chains.solana().is_some())?;
        let body = self.quote_body(&query).await?;
        super::card(&body, request)
    }
}

#[async_trait]
impl OnchainRouter for Jupiter {
    fn unconfigured(&self) -> Option<String> {
        self.chains
            .solana()
            .is_none()
            .then(|| super::NO_SOLANA_NODE.to_owned())
    }

    async fn build_plan(&self, request: &PlanRequest) -> Result<BuiltPlan, ProviderError> {
        let body = self.quote_body(&super::plan_query(request)).await?;
        let (quote, request) = super::checked_quote(&body, request)?;
        let request = &request;
        // `/swap` builds a transaction and changes nothing at Jupiter: retried like a read.
        let answer = self
            .transport
            .post(
                Call::Read,
                "swap",
                &super::swap_body(quote, &request.wallet_address, request.onchain_fees.first()),
                &[],
            )
            .await?;
        let steps = read(answer, |body| super::plan_step(body, request))?;
        Ok(BuiltPlan::of(steps, request))
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
        let plan = request.plan;
        let ExecutionReport::TxHash { tx_hash } = request.report else {
            return Err(ProviderError::Unavailable(
                "Jupiter plans are reported with the transaction's signature".into(),
            ));
        };
        let (from, to) = (plan.from, plan.to);
        let source = tracking::source_tx(from, tx_hash);
        let lost_after_ms = chain::lost_after_ms(plan.expires_at_ms, request.reported_at_ms);
        match tracking::on_solana(&self.chains, &source, lost_after_ms, request.now_ms).await? {
            OnChain::Decided(tracked) => Ok(tracked),
            OnChain::Final(tx) => Ok(match tracking::solana_received(&tx, plan, to) {
                Some(units) => tracking::completed(to, units, vec![source]),
                None => Tracked::state(ExecutionStatus::Failed, "nothing_received", vec![source]),
            }),
            OnChain::Unread => Err(ProviderError::Unavailable(
                "swapd reads no Solana node to follow this Jupiter swap".into(),
            )),
        }
    }
}
