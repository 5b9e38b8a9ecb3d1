//! Switchable provider faults: a provider can be made to fail or to stall (never answer), to
//! show that one bad provider never fails a request. Set from configuration
//! (`[sandbox] failing_providers / stalled_providers`) or by tests at run time.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use swapd_core::onchain::Tracked;
use swapd_core::provider::{
    CurrencyOffer, Exchange, ExchangeRequest, PlanRequest, Provider, ProviderError, ProviderInfo,
    ProviderQuote, QuoteRequest, TrackRequest,
};
use swapd_types::onchain::PlanStep;

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

    /// `provider`, answering according to the fault set for it.
    pub fn wrap(&self, provider: Arc<dyn Provider>) -> Arc<dyn Provider> {
        Arc::new(Faulty {
            inner: provider,
            faults: self.clone(),
        })
    }
}

struct Faulty {
    inner: Arc<dyn Provider>,
    faults: Faults,
}

impl Faulty {
    async fn check(&self) -> Result<(), ProviderError> {
        match self.faults.get(self.inner.info().id) {
            None => Ok(()),
            Some(Fault::Fail(message)) => Err(ProviderError::Unavailable(message)),
            Some(Fault::Stall) => std::future::pending().await,
        }
    }
}

#[async_trait]
impl Provider for Faulty {
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

    async fn create_exchange(&self, request: &ExchangeRequest) -> Result<Exchange, ProviderError> {
        self.check().await?;
        self.inner.create_exchange(request).await
    }

    async fn build_plan(&self, request: &PlanRequest) -> Result<Vec<PlanStep>, ProviderError> {
        self.check().await?;
        self.inner.build_plan(request).await
    }

    async fn track_execution(&self, request: TrackRequest<'_>) -> Result<Tracked, ProviderError> {
        self.check().await?;
        self.inner.track_execution(request).await
    }
}
