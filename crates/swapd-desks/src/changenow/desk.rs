//! ChangeNOW behind swapd's ports: a [`Provider`] (its currencies, limits and estimates) and a
//! [`Desk`] (exchanges opened and followed). ChangeNOW takes no emergency answers or refunds
//! through its API (its support handles them), so those actions are refused before anything
//! changes.

use std::sync::Arc;

use async_trait::async_trait;
use swapd_core::desk::{
    Desk, DeskActions, DeskError, DeskExchange, ExchangeRef, ExchangeRequest, OpenedExchange,
};
use swapd_core::market::currencies::CurrencyDef;
use swapd_core::market::{Direction, ExecutionType, RateType};
use swapd_core::provider::{
    CurrencyOffer, Provider, ProviderError, ProviderInfo, ProviderQuote, QuoteRequest,
};

use super::{ChangeNow, CreateRequest, Side};
use crate::Listed;
use crate::quoting::{self, Listings};

pub const ID: &str = "changenow";

/// How long ChangeNOW takes from a confirmed deposit to the payout, as swapd estimates it.
const DURATION_SECS: u32 = 1_200;

pub struct ChangeNowDesk {
    client: ChangeNow,
    listings: Listings,
}

impl ChangeNowDesk {
    pub fn new(client: ChangeNow) -> Self {
        Self {
            client,
            listings: Listings::default(),
        }
    }

    /// The pair as the desk lists it.
    async fn sides(
        &self,
        from: &'static CurrencyDef,
        to: &'static CurrencyDef,
        rate: RateType,
    ) -> Result<(Listed, Listed), DeskError> {
        self.listings
            .sides(ID, (from, to), rate, self.client.currencies())
            .await
    }
}

fn side(listed: &Listed) -> Side<'_> {
    Side {
        ticker: &listed.desk_code,
        currency: listed.currency,
    }
}

#[async_trait]
impl Provider for ChangeNowDesk {
    fn info(&self) -> ProviderInfo {
        ProviderInfo {
            id: ID,
            execution_type: ExecutionType::Offchain,
        }
    }

    /// ChangeNOW states limits per pair, not per currency: the offers carry none.
    async fn catalog(&self, _now_ms: i64) -> Result<Vec<CurrencyOffer>, ProviderError> {
        self.listings.offers(ID, self.client.currencies()).await
    }

    async fn quote(&self, request: &QuoteRequest) -> Result<ProviderQuote, ProviderError> {
        let answer = async {
            let (from, to) = self
                .sides(request.from, request.to, request.rate_type)
                .await?;
            tokio::try_join!(
                self.client
                    .limits(side(&from), side(&to), request.rate_type),
                self.client.quote(
                    side(&from),
                    side(&to),
                    request.rate_type,
                    request.direction,
                    request.amount,
                ),
            )
        };
        let (limits, quote) = answer
            .await
            .map_err(|e| quoting::provider_error(ID, e, Some(request.from)))?;
        quoting::provider_quote(request, &limits, quote, DURATION_SECS)
    }

    fn as_desk(self: Arc<Self>) -> Option<Arc<dyn Desk>> {
        Some(self)
    }
}

#[async_trait]
impl Desk for ChangeNowDesk {
    fn actions(&self) -> DeskActions {
        DeskActions::default()
    }

    async fn open(&self, request: &ExchangeRequest) -> Result<OpenedExchange, DeskError> {
        let (from, to) = self
            .sides(request.from, request.to, request.rate_type)
            .await?;
        self.client
            .open(&CreateRequest {
                from: side(&from),
                to: side(&to),
                rate: request.rate_type,
                direction: Direction::From,
                amount: request.from_amount,
                payout_address: &request.payout.address,
                payout_tag: request.payout.tag.as_deref(),
                refund_address: request.refund.as_ref().map(|r| r.address.as_str()),
                refund_tag: request.refund.as_ref().and_then(|r| r.tag.as_deref()),
                rate_id: request.rate_lock.as_deref(),
            })
            .await
    }

    async fn exchange(&self, exchange: &ExchangeRef<'_>) -> Result<DeskExchange, DeskError> {
        self.client
            .exchange(exchange.id, exchange.from, exchange.to)
            .await
    }
}
