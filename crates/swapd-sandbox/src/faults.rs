//! Switchable provider faults: a provider can be made to fail or to stall (never answer), to
//! show that one bad provider never fails a request. Set from configuration
//! (`[sandbox] failing_providers / stalled_providers`) or by tests at run time.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use swapd_core::market::provider::{
    CurrencyOffer, Provider, ProviderError, ProviderInfo, ProviderQuote, QuoteRequest,
};
use swapd_core::market::venue::Venue;
use swapd_core::offchain::desk::{
    Desk, DeskActions, DeskError, DeskExchange, Destination, ExchangeRef, ExchangeRequest,
    OpenedExchange,
};
use swapd_core::offchain::order::Choice;
use swapd_core::onchain::plan::{ExecutionPlan, SignedStep, Tracked};
use swapd_core::onchain::router::{BuiltPlan, OnchainRouter, PlanRequest, TrackRequest};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Every call fails at once with this message.
    Fail(String),
    /// Every call waits forever (the caller's deadline ends it).
    Stall,
}

/// The faults currently set, by provider id. Cloning shares the set.
#[derive(Debug, Clone, Default)]
pub struct Faults(Arc<RwLock<HashMap<String, Fault>>>);

impl Faults {
    pub fn set(&self, provider: &str, fault: Fault) {
        self.0
            .write()
            .expect("fault set lock")
            .insert(provider.to_owned(), fault);
    }

    pub fn clear(&self, provider: &str) {
        self.0.write().expect("fault set lock").remove(provider);
    }

    fn get(&self, provider: &str) -> Option<Fault> {
        self.0
            .read()
            .expect("fault set lock")
            .get(provider)
            .cloned()
    }

    /// `venue`, answering according to the fault set for its provider.
    pub fn wrap(&self, venue: Venue) -> Venue {
        let faults = self.clone();
        match venue {
            Venue::Desk(inner) => Venue::Desk(Arc::new(Faulty { inner, faults })),
            Venue::Router(inner) => Venue::Router(Arc::new(Faulty { inner, faults })),
        }
    }
}

/// A provider (or a desk) behind the fault set.
struct Faulty<P: ?Sized> {
    inner: Arc<P>,
    faults: Faults,
}

impl<P: Provider + ?Sized> Faulty<P> {
    async fn check(&self) -> Result<(), ProviderError> {
        match self.faults.get(self.inner.info().id) {
            None => Ok(()),
            Some(Fault::Fail(message)) => Err(ProviderError::Unavailable(message)),
            Some(Fault::Stall) => std::future::pending().await,
        }
    }

    async fn check_desk(&self) -> Result<(), DeskError> {
        self.check().await.map_err(|e| DeskError::Unavailable {
            detail: e.to_string(),
        })
    }
}

#[async_trait]
impl<P: Provider + ?Sized> Provider for Faulty<P> {
    fn info(&self) -> ProviderInfo {
        self.inner.info()
    }

    async fn catalog(&self, now_ms: i64) -> Result<Vec<CurrencyOffer>, ProviderError> {
        self.check().await?;
        self.inner.catalog(now_ms).await
    }

    async fn quote(&self, request: &QuoteRequest) -> Result<ProviderQuote, ProviderError> {
        self.check().await?;
        self.inner.quote(request).await
    }
}

#[async_trait]
impl OnchainRouter for Faulty<dyn OnchainRouter> {
    fn unconfigured(&self) -> Option<String> {
        self.inner.unconfigured()
    }

    async fn build_plan(&self, request: &PlanRequest) -> Result<BuiltPlan, ProviderError> {
        self.check().await?;
        self.inner.build_plan(request).await
    }

    async fn relay_signatures(
        &self,
        plan: &ExecutionPlan,
        signatures: &[SignedStep],
    ) -> Result<Option<serde_json::Value>, ProviderError> {
        self.check().await?;
        self.inner.relay_signatures(plan, signatures).await
    }

    async fn track_execution(&self, request: TrackRequest<'_>) -> Result<Tracked, ProviderError> {
        self.check().await?;
        self.inner.track_execution(request).await
    }
}

#[async_trait]
impl Desk for Faulty<dyn Desk> {
    fn actions(&self) -> DeskActions {
        self.inner.actions()
    }

    fn opens_upstream(&self) -> bool {
        self.inner.opens_upstream()
    }

    async fn open(&self, request: &ExchangeRequest) -> Result<OpenedExchange, DeskError> {
        self.check_desk().await?;
        self.inner.open(request).await
    }

    async fn exchange(&self, exchange: &ExchangeRef<'_>) -> Result<DeskExchange, DeskError> {
        self.check_desk().await?;
        self.inner.exchange(exchange).await
    }

    async fn choose(
        &self,
        exchange: &ExchangeRef<'_>,
        choice: Choice,
        refund_to: Option<&Destination>,
    ) -> Result<(), DeskError> {
        self.check_desk().await?;
        self.inner.choose(exchange, choice, refund_to).await
    }

    async fn refund(
        &self,
        exchange: &ExchangeRef<'_>,
        refund_to: &Destination,
    ) -> Result<(), DeskError> {
        self.check_desk().await?;
        self.inner.refund(exchange, refund_to).await
    }
}
