//! The market port: every liquidity provider as one, for the API and the worker. The
//! aggregator behind it (fan-out under deadlines, the catalog with its fallbacks) lives in
//! `swapd-market`; the providers themselves in `swapd-sandbox`, `swapd-desks` and
//! `swapd-onchain`.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use crate::market::breaker::ProviderState;
use crate::market::catalog::CatalogView;
use crate::market::provider::{ProviderInfo, QuoteRequest};
use crate::market::routes::Candidate;
use crate::market::venue::Venue;
use crate::offchain::desk::Desk;
use crate::onchain::router::OnchainRouter;

#[async_trait]
pub trait Market: Send + Sync + 'static {
    /// Every provider, in ranking order.
    fn providers(&self) -> Vec<ProviderInfo>;

    /// The provider with this id, as its venue.
    fn venue(&self, id: &str) -> Option<Venue>;

    /// The offchain desk with this id.
    fn desk(&self, id: &str) -> Option<Arc<dyn Desk>> {
        self.venue(id)?.desk().cloned()
    }

    /// The onchain router with this id.
    fn router(&self, id: &str) -> Option<Arc<dyn OnchainRouter>> {
        self.venue(id)?.router().cloned()
    }

    /// Whether any desk opens its exchanges at an upstream service ([`Desk::opens_upstream`]).
    fn desks_open_upstream(&self) -> bool {
        self.providers()
            .iter()
            .filter_map(|info| self.desk(info.id))
            .any(|desk| desk.opens_upstream())
    }

    /// How long one provider may take to answer.
    fn deadline(&self) -> Duration;

    /// Quotes `request` with every provider `selected` keeps, concurrently, each bounded by the
    /// deadline: one candidate per selected provider, in provider order.
    async fn quote_all(
        &self,
        request: &QuoteRequest,
        selected: &(dyn for<'p> Fn(&'p ProviderInfo) -> bool + Sync),
    ) -> Vec<Candidate>;

    /// The catalog at `now_ms`, refreshed from the providers when due.
    async fn catalog(&self, now_ms: i64) -> CatalogView;

    /// How each provider is doing at `now_ms`, in provider order.
    fn health(&self, now_ms: i64) -> Vec<ProviderHealth>;

    /// Whether provider `id` may be called at `now_ms` (it is not skipped for failing).
    fn allows(&self, id: &str, now_ms: i64) -> bool {
        self.skipped_until(id, now_ms).is_none()
    }

    /// Until when provider `id` is skipped for failing, when it is at `now_ms`.
    fn skipped_until(&self, id: &str, now_ms: i64) -> Option<i64>;

    /// Counts a call made to provider `id` outside the market (the order engine's desk calls):
    /// `failure` when it could not be reached or answered unusably.
    fn record(&self, id: &str, failure: Option<String>, now_ms: i64);
}

/// A provider's state for readiness, with its last failure in swapd's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderHealth {
    pub id: &'static str,
    pub state: ProviderState,
    pub last_failure: Option<String>,
    /// What swapd lacks for it to serve every pair it trades ([`Venue::unconfigured`]).
    pub not_configured: Option<String>,
}
