//! A provider with what it does beyond quoting: an offchain desk opens exchanges, an onchain
//! router builds plans a wallet executes. The market keeps each provider as its venue, so the
//! order engine finds a desk and the execution tracker a router without down-casting.

use std::sync::Arc;

use crate::market::provider::{Provider, ProviderInfo};
use crate::offchain::desk::Desk;
use crate::onchain::router::OnchainRouter;

#[derive(Clone)]
pub enum Venue {
    Desk(Arc<dyn Desk>),
    Router(Arc<dyn OnchainRouter>),
}

impl Venue {
    /// The provider port of either kind.
    pub fn provider(&self) -> Arc<dyn Provider> {
        match self {
            Venue::Desk(desk) => desk.clone(),
            Venue::Router(router) => router.clone(),
        }
    }

    pub fn info(&self) -> ProviderInfo {
        match self {
            Venue::Desk(desk) => desk.info(),
            Venue::Router(router) => router.info(),
        }
    }

    pub fn desk(&self) -> Option<&Arc<dyn Desk>> {
        match self {
            Venue::Desk(desk) => Some(desk),
            Venue::Router(_) => None,
        }
    }

    pub fn router(&self) -> Option<&Arc<dyn OnchainRouter>> {
        match self {
            Venue::Router(router) => Some(router),
            Venue::Desk(_) => None,
        }
    }

    /// What swapd lacks for this provider to serve every pair it trades, for readiness (a
    /// router's chain node); `None` when nothing.
    pub fn unconfigured(&self) -> Option<String> {
        self.router().and_then(|router| router.unconfigured())
    }
}

impl std::fmt::Debug for Venue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self {
            Venue::Desk(_) => "Desk",
            Venue::Router(_) => "Router",
        };
        f.debug_tuple(kind).field(&self.info().id).finish()
    }
}
