//! Relay behind the provider port: cards and plans from `POST /quote/v2`, signatures posted
//! where Relay's signature items say, and intents followed through `/intents/status/v3`, on
//! the source chain and at the destination when swapd reads them.

use std::time::Duration;

use async_trait::async_trait;
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
use swapd_http::{Call, Transport};
use swapd_types::onchain::ExecutionTx;

use super::{Intent, RelayState};
use crate::Chains;
use crate::tracking::{self, AtDestination, OnChain};

pub const ID: &str = "relay";
pub const BASE_URL: &str = "https://api.relay.link/";

pub struct Relay {
    transport: Transport,
    referrer: String,
    chains: Chains,
}

impl Relay {
    /// Relay at `base_url`; `api_key` (optional) raises its limits, `referrer` names swapd.
    pub fn new(
        base_url: &str,
        api_key: Option<&str>,
        referrer: &str,
        timeout: Duration,
        chains: Chains,
    ) -> Result<Self, String> {
        let headers = swapd_http::api_key_headers("x-api-key", api_key)?;
        Ok(Self {
            transport: Transport::new("Relay", base_url, timeout, headers)?,
            referrer: referrer.to_owned(),
            chains,
        })
    }

    /// `POST quote/v2`: it changes nothing at Relay, so it is retried like a read.
    async fn quote_body(&self, body: &str, from: &CurrencyDef) -> Result<Vec<u8>, ProviderError> {
        let answer = self
            .transport
            .post(Call::Read, "quote/v2", body, &[])
            .await?;
        crate::read(answer, from, super::error, |body| Ok(body.to_vec()))
    }

    async fn intent(&self, request_id: &str, from: &CurrencyDef) -> Result<Intent, ProviderError> {
        let answer = self
            .transport
            .get("intents/status/v3", &[("requestId", request_id.to_owned())])
            .await?;
        crate::read(answer, from, super::error, super::intent)
    }

    async fn track(&self, request: TrackRequest<'_>) -> Result<Tracked, ProviderError> {
        let plan = request.plan;
        let state = state(plan)?;
        let (from, to) = (plan.from, plan.to);
        let mut tx_hashes = Vec::new();
        let mut source_final = false;
        let lost_after_ms = chain::lost_after_ms(plan.expires_at_ms, request.reported_at_ms);
        if let ExecutionReport::TxHash { tx_hash } = request.report {
            let source = tracking::source_tx(from, tx_hash);
            match tracking::on_chain(&self.chains, from, &source, lost_after_ms, request.now_ms)
                .await?
            {
                OnChain::Decided(tracked) => return Ok(tracked),
                OnChain::Final(_) => source_final = true,
                OnChain::Unread => {}
            }
            tx_hashes.push(source);
        }
        let destination = |hash: &String| ExecutionTx {
            role: "destination".into(),
            chain: to.network.caip2().unwrap_or_default(),
            tx_hash: hash.clone(),
        };
        match self.intent(&state.request_id, from).await? {
            Intent::Waiting => Ok(match request.report {
                ExecutionReport::Signatures { .. } => {
                    Tracked::state(ExecutionStatus::Submitted, "relayed", tx_hashes)
                }
                _ if source_final => {
                    Tracked::state(ExecutionStatus::Pending, "source_confirming", tx_hashes)
                }
                _ if request.now_ms >= lost_after_ms => {
                    Tracked::state(ExecutionStatus::Failed, "tx_not_found", Vec::new())
                }
                _ => Tracked::state(ExecutionStatus::Submitted, "not_indexed", Vec::new()),
            }),
            Intent::Pending(substatus) => Ok(Tracked::state(
                ExecutionStatus::Pending,
                substatus,
                tx_hashes,
            )),
            Intent::Failed => Ok(Tracked::state(ExecutionStatus::Failed, "failed", tx_hashes)),
            Intent::Refunded(hashes) => {
                tx_hashes.extend(hashes.iter().map(|hash| tracking::source_tx(from, hash)));
                Ok(Tracked {
                    status: ExecutionStatus::Done,
                    substatus: Some("refunded".into()),
                    outcome: Some(Outcome::Refunded),
                    tx_hashes,
                    // Relay's status says no amount, and the refund is on the origin chain.
                    received_amount: None,
                    received_token: Some(from.code.into()),
                    fees_paid: Vec::new(),
                })
            }
            Intent::Filled(hashes) => {
                tx_hashes.extend(hashes.iter().map(destination));
                self.filled(plan, to, hashes.first(), tx_hashes).await
            }
        }
    }

    /// A filled intent: what its destination transaction paid the recipient, when swapd reads
    /// that chain; until that node has it, still awaiting the destination.
    async fn filled(
        &self,
        plan: &ExecutionPlan,
        to: &'static CurrencyDef,
        hash: Option<&String>,
        tx_hashes: Vec<ExecutionTx>,
    ) -> Result<Tracked, ProviderError> {
        let at_destination = match hash {
            Some(hash) => tracking::at_destination(&self.chains, plan, to, hash).await?,
            None => AtDestination::Unread,
        };
        Ok(match at_destination {
            // No reader of the destination (or no transaction named): done, amount unknown.
            AtDestination::Unread => Tracked {
                status: ExecutionStatus::Done,
                substatus: Some("completed".into()),
                outcome: Some(Outcome::Completed),
                tx_hashes,
                received_amount: None,
                received_token: Some(to.code.into()),
                fees_paid: Vec::new(),
            },
            AtDestination::NotYet => {
                Tracked::state(ExecutionStatus::Pending, "awaiting_destination", tx_hashes)
            }
            AtDestination::Paid(Some(units)) => tracking::completed(to, units, tx_hashes),
            AtDestination::Paid(None) => {
                Tracked::state(ExecutionStatus::Failed, "nothing_received", tx_hashes)
            }
        })
    }
}

fn state(plan: &ExecutionPlan) -> Result<RelayState, ProviderError> {
    crate::provider_state(plan, "Relay")
}

#[async_trait]
impl Provider for Relay {
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
        let body = super::card_body(request, &self.referrer)?;
        let answer = self.quote_body(&body, request.from).await?;
        super::card(&answer, request)
    }
}

#[async_trait]
impl OnchainRouter for Relay {
    fn unconfigured(&self) -> Option<String> {
        None
    }

    async fn build_plan(&self, request: &PlanRequest) -> Result<BuiltPlan, ProviderError> {
        let body = super::plan_body(request, &self.referrer)?;
        let answer = self.quote_body(&body, request.from).await?;
        super::plan(&answer, request)
    }

    /// Each signature goes to its item's `post.endpoint` with its body, the signature as the
    /// `signature` query parameter (as Relay's SDK sends it); sent once.
    async fn relay_signatures(
        &self,
        plan: &ExecutionPlan,
        signatures: &[SignedStep],
    ) -> Result<Option<serde_json::Value>, ProviderError> {
        let state = state(plan)?;
        let from = plan.from;
        for pending in &state.posts {
            let signed = signatures
                .iter()
                .find(|s| s.signature_id == pending.signature_id)
                .ok_or_else(|| {
                    ProviderError::Unavailable("a signature of the plan is missing".into())
                })?;
            if !pending.post.method.eq_ignore_ascii_case("POST") {
                return Err(ProviderError::PairUnsupported(
                    "Relay asked for a signature to be sent other than by POST".into(),
                ));
            }
            let endpoint = pending.post.endpoint.trim_start_matches('/');
            let separator = if endpoint.contains('?') { '&' } else { '?' };
            let path = format!("{endpoint}{separator}signature={}", signed.signature);
            let answer = self
                .transport
                .post(Call::Write, &path, &pending.post.body.to_string(), &[])
                .await?;
            crate::read(answer, from, super::error, |_| Ok(()))?;
        }
        Ok(None)
    }

    async fn track_execution(&self, request: TrackRequest<'_>) -> Result<Tracked, ProviderError> {
        self.track(request).await
    }
}
