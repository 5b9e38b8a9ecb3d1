//! Offchain orders (docs/orders.md): opening one at a desk on a resolved route's terms or on the
//! best offer, and the changes its owner asks for (an emergency answer, a refund, an e-mail
//! address). The lifecycle after creation belongs to the worker.

use swapd_core::address::Address;
use swapd_core::amount::Amount;
use swapd_core::ids::{self, OrderId};
use swapd_core::market::currencies::CurrencyDef;
use swapd_core::market::provider::QuoteRequest;
use swapd_core::market::routes::{self, RedeemError};
use swapd_core::market::{Direction, ExecutionType, RateType};
use swapd_core::notify::Email;
use swapd_core::offchain::actions::OpenOrder;
use swapd_core::offchain::desk::{DeskError, Destination, ExchangeRequest, token_context};
use swapd_core::offchain::order::{Choice, EventType, Order, OrderStatus};
use swapd_core::owner::Owner;
use swapd_types::orders::OrderInput;
use tracing::Instrument;

use crate::input::{check_tag, pair_currency, parse_address, parse_amount, parse_email};
use crate::{Answer, Context, Error, IdempotencyKey};
use swapd_core::offchain::actions;

/// What a hosted page shows: its links are `{public_url}/o/{id}/{token}` or `/x/…`.
#[derive(Debug, Clone, Copy)]
pub enum Page {
    /// An offchain order.
    Order,
    /// An onchain execution plan.
    Execution,
}

/// A new page link for `id`, its token 128 random bits.
pub fn new_link(public_url: &str, page: Page, id: &str) -> String {
    let prefix = match page {
        Page::Order => "o",
        Page::Execution => "x",
    };
    format!(
        "{}/{prefix}/{id}/{}",
        public_url.trim_end_matches('/'),
        ids::new_id("")
    )
}

/// The terms an order is made on.
struct Terms {
    from: &'static CurrencyDef,
    to: &'static CurrencyDef,
    provider: String,
    rate_type: RateType,
    direction: Direction,
    from_amount: Amount,
    to_amount: Amount,
    min: Amount,
    max: Option<Amount>,
    /// The desk's handle on the fixed rate quoted.
    rate_lock: Option<String>,
    create_token_hash: Option<String>,
    /// The quote's fees (docs/fees.md).
    fees: Vec<swapd_core::fees::entry::Fee>,
    /// The affiliate the quote was made for.
    affiliate_code: Option<String>,
}

/// Opens `owner`'s order: on the terms of the route its `createToken` resolved (a fixed rate
/// stays locked), or on the best offchain offer. The order, its events, the token's redemption
/// and the answer (201) under the caller's Idempotency-Key are written in one transaction.
pub async fn create(
    app: Context<'_>,
    owner: &Owner,
    input: OrderInput,
    key: &dyn IdempotencyKey,
) -> Result<(Order, Answer), Error> {
    let now_ms = app.clock.now_ms();
    let terms = match &input.create_token {
        Some(token) => token_terms(app, owner, &input, token, now_ms).await?,
        None => quoted_terms(app, &input, now_ms).await?,
    };
    let destinations = destinations(&terms, input)?;
    let order_id = OrderId::generate();
    let mut exchange = open_exchange(app, &terms, &destinations, order_id.as_str(), now_ms).await?;
    exchange.access_token = exchange.access_token.map(|token| {
        app.master_key
            .seal(token.as_bytes(), &token_context(order_id.as_str()))
    });
    let page_url = new_link(app.public_url, Page::Order, order_id.as_str());
    let (order, events) = actions::open(OpenOrder {
        id: order_id,
        owner: owner.clone(),
        from: terms.from,
        to: terms.to,
        rate_type: terms.rate_type,
        direction: terms.direction,
        from_amount: terms.from_amount,
        to_amount: terms.to_amount,
        min: terms.min,
        max: terms.max,
        provider: terms.provider,
        exchange,
        to_address: destinations.to,
        to_tag: destinations.to_tag,
        refund_address: destinations.refund,
        refund_tag: destinations.refund_tag,
        email: destinations.email,
        affiliate_code: terms.affiliate_code,
        fees: terms.fees,
        create_token_hash: terms.create_token_hash.clone(),
        page_url: Some(page_url),
        rules: app.order_rules,
        now_ms,
    });
    let answer = Answer::json(201, &order.view())?;
    app.store
        .create_order(
            &order,
            &events,
            terms.create_token_hash.as_deref(),
            key.finish(&answer.stored),
        )
        .await??;
    Ok((order, answer.written(Some(key))))
}

/// Where an order's output (and a refund) goes and whom it tells, read from its input.
struct Destinations {
    to: Address,
    to_tag: Option<String>,
    refund: Option<Address>,
    refund_tag: Option<String>,
    email: Option<Email>,
}

/// The payout and refund destinations and the e-mail address of an order on `terms`.
fn destinations(terms: &Terms, input: OrderInput) -> Result<Destinations, Error> {
    let (from, to) = (terms.from, terms.to);
    let to_address = parse_address(to, &input.to_address, "toAddress")?;
    check_tag(to, input.tag.as_deref(), "tag")?;
    if to.tag_required() && input.tag.is_none() {
        return Err(Error::TagRequired(format!(
            "{} payouts need a {} in `tag`; without it the funds cannot be credited",
            to.code,
            to.network.tag_name().unwrap_or("tag")
        )));
    }
    let refund = input
        .refund_address
        .as_deref()
        .map(|refund| parse_address(from, refund, "refundAddress"))
        .transpose()?;
    check_tag(from, input.refund_tag.as_deref(), "refundTag")?;
    if input.refund_tag.is_some() && refund.is_none() {
        return Err(Error::invalid("refundTag", "needs refundAddress"));
    }
    let email = input.email.as_deref().map(parse_email).transpose()?;
    Ok(Destinations {
        to: to_address,
        to_tag: input.tag,
        refund,
        refund_tag: input.refund_tag,
        email,
    })
}

/// Opens the exchange at the terms' desk, under the desk call deadline.
async fn open_exchange(
    app: Context<'_>,
    terms: &Terms,
    destinations: &Destinations,
    order_id: &str,
    now_ms: i64,
) -> Result<swapd_core::offchain::desk::OpenedExchange, Error> {
    let desk = app
        .market
        .desk(&terms.provider)
        .ok_or_else(|| Error::Provider("the route's provider is gone".into()))?;
    let request = ExchangeRequest {
        reference: order_id.to_owned(),
        from: terms.from,
        to: terms.to,
        rate_type: terms.rate_type,
        from_amount: terms.from_amount,
        to_amount: terms.to_amount,
        rate_lock: terms.rate_lock.clone(),
        payout: Destination {
            address: destinations.to.as_str().to_owned(),
            tag: destinations.to_tag.clone(),
        },
        refund: destinations.refund.as_ref().map(|address| Destination {
            address: address.as_str().to_owned(),
            tag: destinations.refund_tag.clone(),
        }),
        deposit_deadline_ms: now_ms + app.order_rules.lifetimes.for_rate(terms.rate_type),
        now_ms,
    };
    let span = tracing::info_span!("desk.open", provider = %terms.provider);
    tokio::time::timeout(
        swapd_core::offchain::desk::CALL_DEADLINE,
        desk.open(&request),
    )
    .instrument(span)
    .await
    .map_err(|_| DeskError::Unavailable {
        detail: "no answer in time".into(),
    })
    .and_then(|opened| opened)
    .map_err(|error| open_error(&terms.provider, &error))
}

async fn token_terms(
    app: Context<'_>,
    owner: &Owner,
    input: &OrderInput,
    token: &str,
    now_ms: i64,
) -> Result<Terms, Error> {
    let fixed_by_token = [
        ("fromCcy", input.from_ccy.is_some()),
        ("toCcy", input.to_ccy.is_some()),
        ("amount", input.amount.is_some()),
        ("direction", input.direction.is_some()),
        ("type", input.rate_type.is_some()),
    ];
    if let Some((field, _)) = fixed_by_token.iter().find(|(_, given)| *given) {
        return Err(Error::invalid(
            field,
            "leave it out: the createToken fixes it",
        ));
    }
    if !routes::is_create_token(token) {
        return Err(RedeemError::NotFound.into());
    }
    let hash = routes::hash_create_token(token);
    let record = app
        .store
        .create_token(&hash, owner)
        .await?
        .ok_or(RedeemError::NotFound)?;
    if record.used_at_ms.is_some() {
        return Err(RedeemError::Used.into());
    }
    if now_ms >= record.expires_at_ms {
        return Err(RedeemError::Expired.into());
    }
    let route = record.route;
    // The fees were quoted with the route's code (or none): an order cannot change them.
    if input.affiliate_code.is_some() && input.affiliate_code != route.affiliate_code {
        return Err(Error::invalid(
            "affiliateCode",
            "give it when discovering routes (GET /routes?affiliateCode=…): the createToken \
             fixes the fees",
        ));
    }
    if route.execution_type != ExecutionType::Offchain {
        return Err(Error::RouteUnavailable(
            "onchain routes are executed with POST /onchain/routes/resolve".into(),
        ));
    }
    Ok(Terms {
        from: route.from,
        to: route.to,
        provider: route.provider,
        rate_type: route.rate_type,
        direction: route.direction,
        from_amount: route.from_amount,
        to_amount: route.to_amount,
        min: route.min,
        max: route.max,
        rate_lock: route.rate_lock,
        create_token_hash: Some(hash),
        fees: route.fees,
        affiliate_code: route.affiliate_code,
    })
}

async fn quoted_terms(app: Context<'_>, input: &OrderInput, now_ms: i64) -> Result<Terms, Error> {
    let missing = |field: &str| Error::invalid(field, "is required without a createToken");
    let from = pair_currency(
        input
            .from_ccy
            .as_deref()
            .ok_or_else(|| missing("fromCcy"))?,
    )?;
    let to = pair_currency(input.to_ccy.as_deref().ok_or_else(|| missing("toCcy"))?)?;
    let direction = input.direction.unwrap_or_default();
    let rate_type = input.rate_type.unwrap_or_default();
    let amount = parse_amount(
        input.amount.as_deref().ok_or_else(|| missing("amount"))?,
        from,
        to,
        direction,
    )?;
    let request = QuoteRequest {
        fees: app.quote_fees(input.affiliate_code.as_deref()).await?,
        ..QuoteRequest::without_wallet(from, to, amount, direction, rate_type, now_ms)
    };
    let (provider, quote) = crate::quotes::best_offchain_quote(app, &request, |_| true).await?;
    Ok(Terms {
        from,
        to,
        provider: provider.into(),
        rate_type,
        direction,
        from_amount: quote.from_amount,
        to_amount: quote.to_amount,
        min: quote.min,
        max: quote.max,
        rate_lock: quote.rate_lock,
        create_token_hash: None,
        fees: quote.fees.clone(),
        affiliate_code: input.affiliate_code.clone(),
    })
}

/// Why a desk did not open an exchange, in swapd's words: never the desk's own.
fn open_error(provider: &str, error: &DeskError) -> Error {
    tracing::warn!(provider, %error, "the desk did not open an exchange");
    match error {
        DeskError::PairUnsupported => {
            Error::PairUnsupported(format!("{provider} does not trade this pair now"))
        }
        DeskError::OutOfRange { min, max } => {
            let bound = |b: &Option<Amount>| b.map_or_else(|| "-".to_owned(), |a| a.to_string());
            Error::AmountOutOfRange(format!(
                "{provider} takes between {} and {} of the input now",
                bound(min),
                bound(max)
            ))
        }
        DeskError::AddressRefused => {
            Error::AddressInvalid(format!("{provider} refused the payout or refund address"))
        }
        // Briefly out of reach: no order was created, and the same request may work soon.
        DeskError::Unavailable { .. } => unavailable(provider, None),
        DeskError::RateLimited { retry_after } => unavailable(provider, *retry_after),
        _ => Error::Provider(format!("{provider} refused to open the exchange")),
    }
}

fn unavailable(provider: &str, retry_after: Option<std::time::Duration>) -> Error {
    Error::ProviderUnavailable {
        message: format!(
            "{provider} is not answering now; no order was created; retry with the same Idempotency-Key"
        ),
        retry_after,
    }
}

/// `owner`'s order `id`: unknown ids and other principals' orders are the same "not found".
pub async fn owned(app: Context<'_>, owner: &Owner, id: &str) -> Result<Order, Error> {
    crate::find_owned(
        id,
        OrderId::parse,
        || Error::OrderNotFound,
        |id| async move { app.store.order(&id, owner).await },
    )
    .await
}

/// A refund destination given with a decision, checked against the order's input network.
pub struct RefundTo {
    pub address: Option<String>,
    pub tag: Option<String>,
}

impl RefundTo {
    fn checked(&self, order: &Order) -> Result<Option<(Address, Option<String>)>, Error> {
        let from = order.from;
        match &self.address {
            Some(address) => {
                let address = parse_address(from, address, "refundAddress")?;
                check_tag(from, self.tag.as_deref(), "refundTag")?;
                Ok(Some((address, self.tag.clone())))
            }
            None if self.tag.is_some() => Err(Error::invalid("refundTag", "needs refundAddress")),
            None => Ok(None),
        }
    }
}

/// Answers the emergency of `owner`'s order `id`. Repeating the choice already made answers the
/// order unchanged.
pub async fn answer_emergency(
    app: Context<'_>,
    owner: &Owner,
    id: &str,
    choice: Choice,
    refund_to: RefundTo,
    key: Option<&dyn IdempotencyKey>,
) -> Result<Answer, Error> {
    let now_ms = app.clock.now_ms();
    apply_change(app, owner, id, key, |order| {
        let refund = refund_to.checked(order)?;
        let changed = actions::choose(order, choice, refund, now_ms)?;
        if changed.is_some() {
            check_desk_action(app, order, true)?;
        }
        Ok(changed)
    })
    .await
}

/// Asks for a refund of the deposit of `owner`'s order `id`, which was not exchanged.
pub async fn refund(
    app: Context<'_>,
    owner: &Owner,
    id: &str,
    refund_to: RefundTo,
    key: Option<&dyn IdempotencyKey>,
) -> Result<Answer, Error> {
    let now_ms = app.clock.now_ms();
    apply_change(app, owner, id, key, |order| {
        let refund = refund_to.checked(order)?;
        let changed = actions::request_refund(order, refund, now_ms)?;
        check_desk_action(app, order, order.status == OrderStatus::Emergency)?;
        Ok(Some(changed))
    })
    .await
}

/// Attaches `email` to `owner`'s order `id` for status e-mails.
pub async fn attach_email(
    app: Context<'_>,
    owner: &Owner,
    id: &str,
    email: &str,
    key: Option<&dyn IdempotencyKey>,
) -> Result<Answer, Error> {
    let email = parse_email(email)?;
    let now_ms = app.clock.now_ms();
    apply_change(app, owner, id, key, |order| {
        Ok(actions::attach_email(order, &email, now_ms))
    })
    .await
}

/// Refuses a decision the order's desk cannot carry out through its API, before anything
/// changes.
fn check_desk_action(app: Context<'_>, order: &Order, choose: bool) -> Result<(), Error> {
    let actions = app
        .market
        .desk(&order.provider)
        .map(|desk| desk.actions())
        .unwrap_or_default();
    let (can, what) = if choose {
        (actions.choose, "answers to an emergency")
    } else {
        (actions.refund, "refunds outside an emergency")
    };
    if can {
        Ok(())
    } else {
        Err(Error::DeskActionUnsupported(format!(
            "{} takes no {what} through its API; contact its support with the order's deposit transaction",
            order.provider
        )))
    }
}

/// How often a user-driven change is re-read and re-applied when the engine wrote the order
/// between our read and our write.
const CHANGE_ATTEMPTS: usize = 3;

/// Applies a user-driven change (`decide` turns the current order into the changed one and its
/// event, or `None` for no change) with a compare-and-set, its outbox event and the request's
/// idempotency record in one transaction, re-reading the order when the engine moved it
/// meanwhile.
async fn apply_change(
    app: Context<'_>,
    owner: &Owner,
    id: &str,
    key: Option<&dyn IdempotencyKey>,
    decide: impl Fn(&Order) -> Result<Option<(Order, EventType)>, Error>,
) -> Result<Answer, Error> {
    for _ in 0..CHANGE_ATTEMPTS {
        let current = owned(app, owner, id).await?;
        let Some((mut updated, event)) = decide(&current)? else {
            // Nothing changes: the answer is recorded as any other.
            return Answer::json(200, &current.view());
        };
        let recorded = updated.record_event(event, Some(current.status));
        let answer = Answer::json(200, &updated.view())?;
        if app
            .store
            .update_order(&updated, &[recorded], answer.finish(key))
            .await?
        {
            return Ok(answer.written(key));
        }
    }
    Err(Error::OrderKeepsChanging)
}
