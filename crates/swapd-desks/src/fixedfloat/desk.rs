//! FixedFloat behind swapd's ports: a [`Provider`] (its currencies and prices, each price with
//! its limits) and a [`Desk`] (orders opened, followed with their token, and emergencies
//! answered). FixedFloat refunds only as an emergency answer: a refund asked for outside an
//! emergency is refused before anything changes.

use async_trait::async_trait;
use swapd_core::market::currencies::CurrencyDef;
use swapd_core::market::provider::{
    CurrencyOffer, Provider, ProviderError, ProviderInfo, ProviderQuote, QuoteRequest,
};
use swapd_core::market::{Direction, ExecutionType, RateType};
use swapd_core::offchain::desk::{
    Desk, DeskActions, DeskError, DeskExchange, Destination, ExchangeRef, ExchangeRequest,
    OpenedExchange,
};
use swapd_core::offchain::order::Choice as CustomerChoice;

use super::{Choice, CreateOrder, FixedFloat, OrderRef, Referral};
use crate::Listed;
use crate::quoting::{self, Listings};
use swapd_core::fees::FeeSchedule;

pub const ID: &str = "fixedfloat";

/// How long FixedFloat takes from a confirmed deposit to the payout, as swapd estimates it.
const DURATION_SECS: u32 = 900;

pub struct FixedFloatDesk {
    client: FixedFloat,
    listings: Listings,
    /// The operator's referral code, under which FixedFloat takes the service fee
    /// (`providers.fixedfloat.refcode`); without one, FixedFloat carries no fee.
    refcode: Option<String>,
}

/// The prefix of the handle a fee-carrying quote leaves for the order (`rate_lock`): the order
/// is opened with the same commission, so it gets the quoted price.
const AFFTAX_HANDLE: &str = "afftax-bps:";

impl FixedFloatDesk {
    pub fn new(client: FixedFloat) -> Self {
        Self {
            client,
            listings: Listings::default(),
            refcode: None,
        }
    }

    /// Carries the service fee under `refcode` (docs/fees.md): FixedFloat takes it out of the
    /// output as the referral's commission (`afftax`) and pays it to the code's account. Only
    /// the operator's fee (with the affiliate's share in it) can be carried so: a partner's
    /// markup is left out of FixedFloat's quotes.
    pub fn with_refcode(mut self, refcode: &str) -> Self {
        self.refcode = Some(refcode.to_owned());
        self
    }

    /// The referral a quote of `request` carries, and the fees it stands for.
    fn referral(&self, request: &QuoteRequest) -> Option<(Referral<'_>, FeeSchedule)> {
        let refcode = self.refcode.as_deref()?;
        let carried = request.fees.schedule_for(ID).operator_only();
        (carried.service_bps > 0).then_some((
            Referral {
                refcode,
                afftax_bps: carried.service_bps,
            },
            carried,
        ))
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

/// The order and its token: every call about an order carries both.
fn order<'a>(exchange: &'a ExchangeRef<'_>) -> Result<OrderRef<'a>, DeskError> {
    let token = exchange
        .access_token
        .ok_or_else(|| DeskError::Unavailable {
            detail: "the order's FixedFloat token is missing".into(),
        })?;
    Ok(OrderRef {
        id: exchange.id,
        token,
    })
}

/// FixedFloat answers whether it took an action; one it did not take is refused.
fn taken(accepted: bool) -> Result<(), DeskError> {
    if accepted {
        Ok(())
    } else {
        Err(DeskError::Refused {
            detail: "FixedFloat did not take the action".into(),
        })
    }
}

#[async_trait]
impl Provider for FixedFloatDesk {
    fn info(&self) -> ProviderInfo {
        ProviderInfo {
            id: ID,
            execution_type: ExecutionType::Offchain,
        }
    }

    /// FixedFloat states limits with each price, not per currency: the offers carry none.
    async fn catalog(&self, _now_ms: i64) -> Result<Vec<CurrencyOffer>, ProviderError> {
        self.listings.offers(ID, self.client.currencies()).await
    }

    async fn quote(&self, request: &QuoteRequest) -> Result<ProviderQuote, ProviderError> {
        let referral = self.referral(request);
        let answer = async {
            let (from, to) = self
                .sides(request.from, request.to, request.rate_type)
                .await?;
            self.client
                .quote(
                    (&from.desk_code, from.currency),
                    (&to.desk_code, to.currency),
                    request.rate_type,
                    request.direction,
                    request.amount,
                    referral.map(|(referral, _)| referral),
                )
                .await
        };
        let (quote, limits) = answer
            .await
            .map_err(|e| quoting::provider_error(ID, e, Some(request.from)))?;
        let mut quote = quoting::provider_quote(request, &limits, quote, DURATION_SECS)?;
        if let Some((referral, carried)) = referral {
            quote = quote.with_output_fees(request.to, carried)?;
            quote.rate_lock = Some(format!("{AFFTAX_HANDLE}{}", referral.afftax_bps));
        }
        Ok(quote)
    }
}

#[async_trait]
impl Desk for FixedFloatDesk {
    fn actions(&self) -> DeskActions {
        DeskActions {
            choose: true,
            refund: false,
        }
    }

    async fn open(&self, request: &ExchangeRequest) -> Result<OpenedExchange, DeskError> {
        let (from, to) = self
            .sides(request.from, request.to, request.rate_type)
            .await?;
        self.client
            .open(&CreateOrder {
                rate: request.rate_type,
                from_code: &from.desk_code,
                to_code: &to.desk_code,
                direction: Direction::From,
                amount: request.from_amount,
                to_address: &request.payout.address,
                tag: request.payout.tag.as_deref(),
                referral: self.refcode.as_deref().and_then(|refcode| {
                    let bps = request.rate_lock.as_deref()?.strip_prefix(AFFTAX_HANDLE)?;
                    Some(Referral {
                        refcode,
                        afftax_bps: bps.parse().ok()?,
                    })
                }),
            })
            .await
    }

    async fn exchange(&self, exchange: &ExchangeRef<'_>) -> Result<DeskExchange, DeskError> {
        self.client
            .exchange(order(exchange)?, exchange.from, exchange.to)
            .await
    }

    async fn choose(
        &self,
        exchange: &ExchangeRef<'_>,
        choice: CustomerChoice,
        refund_to: Option<&Destination>,
    ) -> Result<(), DeskError> {
        let choice = match (choice, refund_to) {
            (CustomerChoice::Exchange, _) => Choice::Exchange,
            (CustomerChoice::Refund, Some(to)) => Choice::Refund {
                address: &to.address,
                tag: to.tag.as_deref(),
            },
            (CustomerChoice::Refund, None) => {
                return Err(DeskError::Refused {
                    detail: "a refund needs a refund address".into(),
                });
            }
        };
        taken(self.client.choose(order(exchange)?, choice).await?)
    }

    /// FixedFloat refunds a deposit only as the answer to its emergency.
    async fn refund(
        &self,
        _exchange: &ExchangeRef<'_>,
        _refund_to: &Destination,
    ) -> Result<(), DeskError> {
        Err(DeskError::ActionUnsupported)
    }
}
