//! The aggregator: asks every provider at once, each under its own deadline, so a slow or
//! failing provider costs at most its deadline and shows up as an unusable route instead of a
//! failed request; skips a provider that keeps failing for a while (its circuit breaker,
//! `swapd_core::market::breaker`); and keeps the currency catalog, refreshed from the
//! providers, falling back to their last good answers and finally to the shipped snapshot.

use std::collections::HashMap;

use std::time::Duration;
use tracing::Instrument;

use async_trait::async_trait;
use futures_util::future::join_all;
use swapd_core::market::breaker::Breaker;
use swapd_core::market::catalog::{self, CatalogSource, CatalogView};
use swapd_core::market::provider::{
    CurrencyOffer, Provider, ProviderError, ProviderInfo, QuoteRequest,
};
use swapd_core::market::routes::Candidate;
use swapd_core::market::venue::Venue;
use swapd_core::market::{Market, ProviderHealth};
use tokio::sync::Mutex;

use crate::snapshot;

#[derive(Debug, Clone, Copy)]
pub struct MarketOptions {
    /// How long one provider may take to answer.
    pub deadline: Duration,
    /// How long a catalog assembled from every provider is served before refreshing.
    pub catalog_ttl_ms: i64,
    /// How soon a refresh is retried after a provider failed.
    pub catalog_retry_ms: i64,
}

impl Default for MarketOptions {
    fn default() -> Self {
        Self {
            deadline: Duration::from_millis(1_500),
            catalog_ttl_ms: 60_000,
            catalog_retry_ms: 10_000,
        }
    }
}

pub struct Aggregator {
    venues: Vec<Venue>,
    options: MarketOptions,
    catalog: Mutex<CatalogState>,
    breakers: std::sync::Mutex<HashMap<&'static str, Breaker>>,
}

#[derive(Default)]
struct CatalogState {
    /// Each provider's last good catalog.
    last_good: HashMap<&'static str, Vec<CurrencyOffer>>,
    /// The view assembled at the last refresh.
    view: Option<CatalogView>,
    next_refresh_ms: i64,
}

impl Aggregator {
    pub fn new(venues: Vec<Venue>, options: MarketOptions) -> Self {
        Self {
            venues,
            options,
            catalog: Mutex::new(CatalogState::default()),
            breakers: std::sync::Mutex::new(HashMap::new()),
        }
    }

    /// Asks `provider` through its breaker: not at all while it is skipped, and the outcome
    /// recorded. Refusals (pair unsupported, out of range) are answers of a working provider.
    async fn ask<T>(
        &self,
        provider: &dyn Provider,
        now_ms: i64,
        call: impl Future<Output = Result<T, ProviderError>>,
    ) -> Result<T, ProviderError> {
        let id = provider.info().id;
        if !self.allows(id, now_ms) {
            return Err(ProviderError::Unavailable(format!(
                "{id} keeps failing and is skipped for a while"
            )));
        }
        let deadline = self.options.deadline;
        let outcome = match tokio::time::timeout(deadline, call).await {
            Ok(outcome) => outcome,
            Err(_) => Err(timed_out(deadline)),
        };
        let failure = match &outcome {
            Err(ProviderError::Unavailable(reason)) => Some(reason.clone()),
            _ => None,
        };
        self.count(id, failure, now_ms);
        outcome
    }

    /// Counts a call's outcome on `id`'s breaker.
    fn count(&self, id: &'static str, failure: Option<String>, now_ms: i64) {
        let mut breakers = self.breakers();
        let breaker = breakers.entry(id).or_default();
        match failure {
            Some(reason) => breaker.failed(reason, now_ms),
            None => breaker.succeeded(),
        }
    }

    fn breakers(&self) -> std::sync::MutexGuard<'_, HashMap<&'static str, Breaker>> {
        self.breakers.lock().expect("breakers lock")
    }
}

#[async_trait]
impl Market for Aggregator {
    fn providers(&self) -> Vec<ProviderInfo> {
        self.venues.iter().map(Venue::info).collect()
    }

    fn venue(&self, id: &str) -> Option<Venue> {
        self.venues.iter().find(|v| v.info().id == id).cloned()
    }

    fn deadline(&self) -> Duration {
        self.options.deadline
    }

    async fn quote_all(
        &self,
        request: &QuoteRequest,
        selected: &(dyn for<'p> Fn(&'p ProviderInfo) -> bool + Sync),
    ) -> Vec<Candidate> {
        let calls = self
            .venues
            .iter()
            .filter(|v| selected(&v.info()))
            .map(|venue| async move {
                let provider = venue.provider();
                let info = provider.info();
                let span = tracing::info_span!("provider.quote", provider = info.id);
                let outcome = self
                    .ask(provider.as_ref(), request.now_ms, provider.quote(request))
                    .instrument(span)
                    .await;
                if let Err(ProviderError::Unavailable(reason)) = &outcome {
                    tracing::warn!(provider = info.id, %reason, "provider unavailable for a quote");
                }
                Candidate {
                    provider: info,
                    outcome,
                }
            });
        join_all(calls).await
    }

    /// Concurrent callers share one refresh.
    async fn catalog(&self, now_ms: i64) -> CatalogView {
        let mut state = self.catalog.lock().await;
        if let Some(view) = &state.view
            && now_ms < state.next_refresh_ms
        {
            return view.clone();
        }
        self.refresh(&mut state, now_ms).await;
        state.view.clone().expect("refresh always sets a view")
    }

    fn skipped_until(&self, id: &str, now_ms: i64) -> Option<i64> {
        self.breakers().get(id)?.skipped_until(now_ms)
    }

    fn record(&self, id: &str, failure: Option<String>, now_ms: i64) {
        if let Some(info) = self.venues.iter().map(Venue::info).find(|i| i.id == id) {
            self.count(info.id, failure, now_ms);
        }
    }

    fn health(&self, now_ms: i64) -> Vec<ProviderHealth> {
        let breakers = self.breakers();
        self.venues
            .iter()
            .map(|venue| {
                let id = venue.info().id;
                let breaker = breakers.get(id).cloned().unwrap_or_default();
                ProviderHealth {
                    id,
                    state: breaker.state(now_ms),
                    last_failure: breaker.last_failure().map(str::to_owned),
                    not_configured: venue.unconfigured(),
                }
            })
            .collect()
    }
}

impl Aggregator {
    async fn refresh(&self, state: &mut CatalogState, now_ms: i64) {
        let answers = join_all(self.venues.iter().map(|venue| async move {
            let provider = venue.provider();
            let answer = self
                .ask(provider.as_ref(), now_ms, provider.catalog(now_ms))
                .await;
            (provider.info().id, answer)
        }))
        .await;

        let mut failures = Vec::new();
        let mut from_cache = false;
        for (id, answer) in answers {
            match answer {
                Ok(offers) => {
                    state.last_good.insert(id, offers);
                }
                Err(error) => {
                    tracing::warn!(provider = id, %error, "catalog refresh failed");
                    from_cache |= state.last_good.contains_key(id);
                    failures.push(format!("{id}: {error}"));
                }
            }
        }
        let reason = (!failures.is_empty())
            .then(|| format!("catalog refresh incomplete ({})", failures.join("; ")));
        state.view = Some(if state.last_good.is_empty() {
            CatalogView {
                currencies: snapshot::catalog(),
                degraded: true,
                reason: Some(reason.unwrap_or_else(|| "no provider has answered yet".into())),
                source: CatalogSource::Snapshot,
            }
        } else {
            CatalogView {
                currencies: catalog::assemble(state.last_good.values().flatten()),
                degraded: reason.is_some(),
                reason,
                source: if from_cache {
                    CatalogSource::Cache
                } else {
                    CatalogSource::Live
                },
            }
        });
        state.next_refresh_ms = now_ms
            + if failures.is_empty() {
                self.options.catalog_ttl_ms
            } else {
                self.options.catalog_retry_ms
            };
    }
}

fn timed_out(deadline: Duration) -> ProviderError {
    ProviderError::Unavailable(format!(
        "no answer within the {} ms deadline",
        deadline.as_millis()
    ))
}

#[cfg(test)]
mod tests {
    use swapd_core::amount::Amount;
    use swapd_core::market::{Direction, RateType};

    use swapd_core::market::currencies::currency;
    use swapd_sandbox::{Fault, Faults, PROVIDER_IDS};

    use super::*;
    use crate::test_venues::{SandboxVenues, sandbox_venues};

    const T: i64 = 1_800_000_000_000;

    /// The sandbox market behind `faults`; the venues' database lives as long as the guard.
    fn market(faults: &Faults) -> (Aggregator, SandboxVenues) {
        let mut sandbox = sandbox_venues(faults, 1);
        let options = MarketOptions {
            deadline: Duration::from_millis(200),
            ..MarketOptions::default()
        };
        let market = Aggregator::new(std::mem::take(&mut sandbox.venues), options);
        (market, sandbox)
    }

    fn request() -> QuoteRequest {
        QuoteRequest {
            from: currency("USDCBASE").unwrap(),
            to: currency("ETHBASE").unwrap(),
            amount: Amount::parse("1000", 6).unwrap(),
            direction: Direction::From,
            rate_type: RateType::Fixed,
            wallet: None,
            recipient: None,
            fees: Default::default(),
            now_ms: T,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_stalled_provider_costs_its_deadline_and_nothing_else() {
        let faults = Faults::default();
        faults.set("meridian", Fault::Stall);
        let (market, _sandbox) = market(&faults);
        let started = tokio::time::Instant::now();
        let candidates = market.quote_all(&request(), &|_| true).await;
        assert_eq!(started.elapsed(), Duration::from_millis(200));
        let by_id = |id: &str| candidates.iter().find(|c| c.provider.id == id).unwrap();
        assert!(
            matches!(&by_id("meridian").outcome, Err(ProviderError::Unavailable(m)) if m.contains("200 ms"))
        );
        assert!(by_id("atlas").outcome.is_ok());
        assert!(by_id("borealis").outcome.is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn catalog_falls_back_to_last_good_then_snapshot() {
        let faults = Faults::default();
        for id in PROVIDER_IDS {
            faults.set(id, Fault::Fail("maintenance".into()));
        }
        let (market, _sandbox) = market(&faults);
        let first = market.catalog(T).await;
        assert_eq!(first.source, CatalogSource::Snapshot);
        assert!(first.degraded);
        assert!(first.currencies.len() >= 20);

        for id in PROVIDER_IDS {
            faults.clear(id);
        }
        // Failures are retried sooner than the normal refresh interval.
        let live = market.catalog(T + 10_000).await;
        assert_eq!(live.source, CatalogSource::Live);
        assert!(!live.degraded && live.reason.is_none());
        assert_eq!(market.catalog(T + 20_000).await.source, CatalogSource::Live);

        faults.set("atlas", Fault::Stall);
        let degraded = market.catalog(T + 80_000).await;
        assert_eq!(degraded.source, CatalogSource::Cache);
        assert!(degraded.degraded);
        assert!(degraded.reason.unwrap().contains("atlas"));
        assert_eq!(degraded.currencies.len(), live.currencies.len());
    }

    #[tokio::test(start_paused = true)]
    async fn a_provider_that_keeps_failing_is_skipped_for_a_while_and_readiness_says_so() {
        use swapd_core::market::breaker::{FAILURES_TO_OPEN, OPEN_FOR_MS, ProviderState};
        let faults = Faults::default();
        faults.set("meridian", Fault::Stall);
        let (market, _sandbox) = market(&faults);
        let state = |now| {
            market
                .health(now)
                .into_iter()
                .find(|h| h.id == "meridian")
                .unwrap()
        };
        assert_eq!(state(T).state, ProviderState::Up);
        for _ in 0..FAILURES_TO_OPEN {
            market.quote_all(&request(), &|_| true).await;
        }
        let down = state(T);
        assert_eq!(down.state, ProviderState::Down);
        assert!(down.last_failure.unwrap().contains("200 ms"));
        assert_eq!(
            market
                .health(T)
                .iter()
                .find(|h| h.id == "atlas")
                .unwrap()
                .state,
            ProviderState::Up
        );
        // Skipped: the request no longer waits for it.
        let started = tokio::time::Instant::now();
        let candidates = market.quote_all(&request(), &|_| true).await;
        assert_eq!(started.elapsed(), Duration::ZERO);
        let skipped = candidates
            .iter()
            .find(|c| c.provider.id == "meridian")
            .unwrap();
        assert!(
            matches!(&skipped.outcome, Err(ProviderError::Unavailable(m)) if m.contains("skipped"))
        );
        // It recovered meanwhile: after the pause one request tries it, and it is back.
        faults.clear("meridian");
        let later = QuoteRequest {
            now_ms: T + OPEN_FOR_MS,
            ..request()
        };
        let candidates = market.quote_all(&later, &|_| true).await;
        let back = candidates
            .iter()
            .find(|c| c.provider.id == "meridian")
            .unwrap();
        assert!(back.outcome.is_ok(), "{:?}", back.outcome);
        assert_eq!(state(T + OPEN_FOR_MS).state, ProviderState::Up);
    }
}
