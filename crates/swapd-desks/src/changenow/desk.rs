//! ChangeNOW behind swapd's ports: a [`Provider`] (its currencies, limits and estimates) and a
//! [`Desk`] (exchanges opened and followed). ChangeNOW takes no emergency answers or refunds
//! through its API (its support handles them), so those actions are refused before anything
//! changes.

use std::time::Duration;

use async_trait::async_trait;
use swapd_core::market::currencies::CurrencyDef;
use swapd_core::market::provider::{
    CurrencyOffer, Provider, ProviderError, ProviderInfo, ProviderQuote, QuoteRequest,
};
use swapd_core::market::{Direction, ExecutionType, RateType};
use swapd_core::offchain::desk::{
    Desk, DeskActions, DeskError, DeskExchange, DeskStatus, Destination, ExchangeRef,
    ExchangeRequest, OpenedExchange,
};
use swapd_core::offchain::order::Choice;

use super::{ChangeNow, CreateRequest, Found, Side};
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

/// How long after a lost create each lookup is made: the desk may still be writing it.
const LOOKUPS_AFTER: [Duration; 3] = [
    Duration::ZERO,
    Duration::from_secs(1),
    Duration::from_secs(3),
];
/// How far before the create a lookup reaches (clocks differ).
const LOOKUP_MARGIN_MS: i64 = 5 * 60 * 1000;

impl ChangeNowDesk {
    /// The exchange a create whose answer was `lost` opened, looked up in the partner's list:
    /// adopted when exactly one is the create's; when several could be, none is (an operator
    /// is alerted); when none is found, the create's own failure stands.
    async fn adopt(
        &self,
        create: &CreateRequest<'_>,
        sent_at_ms: i64,
        lost: DeskError,
    ) -> Result<OpenedExchange, DeskError> {
        let since_ms = sent_at_ms - LOOKUP_MARGIN_MS;
        for wait in LOOKUPS_AFTER {
            tokio::time::sleep(wait).await;
            match self.client.find_opened(create, since_ms).await {
                Ok(Found::One(opened)) => {
                    tracing::info!(exchange = %opened.id, "adopted the exchange a lost create opened at ChangeNOW");
                    counted("adopted");
                    return Ok(opened);
                }
                Ok(Found::Several(count)) => {
                    tracing::error!(
                        count,
                        payout_address = create.payout_address,
                        "ALERT: several ChangeNOW exchanges match a lost create; none adopted, check them by hand"
                    );
                    counted("ambiguous");
                    return Err(DeskError::Unavailable {
                        detail: "the exchange's answer was lost and several exchanges match it"
                            .into(),
                    });
                }
                Ok(Found::Nothing) => {}
                Err(error) => tracing::warn!(%error, "cannot look a lost create up at ChangeNOW"),
            }
        }
        counted("not_found");
        Err(lost)
    }
}

/// A lookup after a lost create, by outcome, in `/metrics`.
fn counted(outcome: &'static str) {
    metrics::counter!("desk_lost_creates_total", "desk" => ID, "outcome" => outcome).increment(1);
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
        let mut quote = quoting::provider_quote(request, &limits, quote, DURATION_SECS)?;
        // ChangeNOW's commission is set on the operator's account and already inside every
        // amount it quotes for the key (docs/fees.md): it is shown as the service fee, at the
        // percent `fees` names for ChangeNOW, never taken a second time. It pays one account:
        // a partner's markup is left out.
        let carried = request.fees.schedule_for(ID).operator_only();
        if carried.service_bps > 0 {
            quote = quote.with_output_fees(request.to, carried)?;
        }
        Ok(quote)
    }
}

#[async_trait]
impl Desk for ChangeNowDesk {
    fn actions(&self) -> DeskActions {
        DeskActions::default()
    }

    /// Sent once. When its answer is lost (a timeout, a broken connection, a 5xx or an
    /// unreadable answer) and the private key is configured, the exchange it may have opened is
    /// looked up and adopted, so a retry never opens a second one (docs/providers.md, "A
    /// create whose answer is lost").
    async fn open(&self, request: &ExchangeRequest) -> Result<OpenedExchange, DeskError> {
        let (from, to) = self
            .sides(request.from, request.to, request.rate_type)
            .await?;
        let create = CreateRequest {
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
            reference: self
                .client
                .sends_reference()
                .then_some(request.reference.as_str()),
        };
        match self.client.open(&create).await {
            Err(lost @ DeskError::Unavailable { .. }) if self.client.can_look_up() => {
                self.adopt(&create, request.now_ms, lost).await
            }
            answer => answer,
        }
    }

    async fn exchange(&self, exchange: &ExchangeRef<'_>) -> Result<DeskExchange, DeskError> {
        let mut seen = self
            .client
            .exchange(exchange.id, exchange.from, exchange.to)
            .await?;
        // A finished exchange's commission is the order's realized service fee
        // (docs/fees.md). Not reported (or not readable now): the order completes all the same,
        // its expected fee taken as realized.
        if seen.status == DeskStatus::Finished {
            match self
                .client
                .commission(exchange.id, (exchange.from, exchange.to))
                .await
            {
                Ok(commission) => seen.commission = commission,
                Err(error) => tracing::warn!(
                    exchange = exchange.id,
                    %error,
                    "ChangeNOW's commission report could not be read"
                ),
            }
        }
        Ok(seen)
    }

    /// ChangeNOW takes a customer's emergency answer through its support only.
    async fn choose(
        &self,
        _exchange: &ExchangeRef<'_>,
        _choice: Choice,
        _refund_to: Option<&Destination>,
    ) -> Result<(), DeskError> {
        Err(DeskError::ActionUnsupported)
    }

    /// ChangeNOW refunds through its support only.
    async fn refund(
        &self,
        _exchange: &ExchangeRef<'_>,
        _refund_to: &Destination,
    ) -> Result<(), DeskError> {
        Err(DeskError::ActionUnsupported)
    }
}
