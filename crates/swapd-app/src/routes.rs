//! Route discovery and the resolution of an offchain route into a createToken
//! (docs/market.md): every provider asked at once, the answers ranked, each usable one kept as a
//! route quote of the caller's.

use swapd_core::amount::Amount;
use swapd_core::fees::entry;
use swapd_core::ids::RouteQuoteId;
use swapd_core::market::currencies::CurrencyDef;
use swapd_core::market::observed::{Figures, RouteSort};
use swapd_core::market::provider::{ProviderError, ProviderQuote, QuoteRequest, Wallet};
use swapd_core::market::routes::{self, Ranking, ResolveError, RouteQuote};
use swapd_core::market::{Direction, ExecutionType, RateType, pricing};
use swapd_core::owner::Owner;
use swapd_types::market::{Resolved, RouteCard};

use crate::quotes::record_rates;
use crate::{Answer, Context, Error, IdempotencyKey};

/// What a route discovery asks, read and checked by the surface.
pub struct RoutesAsk {
    pub from: &'static CurrencyDef,
    pub to: &'static CurrencyDef,
    pub amount: Amount,
    pub direction: Direction,
    pub rate_type: RateType,
    /// Only this provider.
    pub provider: Option<String>,
    /// The signer of onchain routes.
    pub wallet: Option<Wallet>,
    /// The destination of onchain routes, checked for `to`'s network.
    pub recipient: Option<String>,
    /// An affiliate's code (well formed): its share is in the quotes and their route quotes.
    pub affiliate_code: Option<String>,
    /// How usable cards are ordered.
    pub sort: RouteSort,
}

/// Asks every provider (or the one named) for `ask` and answers with route cards, best first;
/// each usable card is stored as a route quote of `owner`'s, which it names.
pub async fn discover(
    app: Context<'_>,
    owner: &Owner,
    ask: RoutesAsk,
) -> Result<Vec<RouteCard>, Error> {
    let now_ms = app.clock.now_ms();
    let request = QuoteRequest {
        from: ask.from,
        to: ask.to,
        amount: ask.amount,
        direction: ask.direction,
        rate_type: ask.rate_type,
        wallet: ask.wallet.clone(),
        recipient: ask.recipient.clone(),
        fees: app.quote_fees(ask.affiliate_code.as_deref()).await?,
        now_ms,
    };
    let provider = ask.provider.as_deref();
    let mut candidates = app
        .market
        .quote_all(&request, &|info| provider.is_none_or(|id| id == info.id))
        .await;
    if ask.wallet.is_some()
        && let Some(Err(error)) = candidates
            .iter()
            .map(|c| &c.outcome)
            .find(|o| matches!(o, Err(ProviderError::RecipientRequired(_))))
    {
        return Err(Error::RecipientRequired(error.to_string()));
    }
    if provider.is_none() {
        candidates.retain(|c| !matches!(c.outcome, Err(ProviderError::PairUnsupported(_))));
    }
    if candidates.is_empty() {
        return Err(Error::PairUnsupported(format!(
            "no provider routes {} → {}",
            ask.from.code, ask.to.code
        )));
    }
    let observed = app.observed.current();
    let ranking = Ranking {
        direction: ask.direction,
        sort: ask.sort,
        observed: &observed,
        from: ask.from.code,
        to: ask.to.code,
    };
    routes::rank(&mut candidates, &ranking);
    record_rates(
        app,
        &request,
        candidates
            .iter()
            .filter_map(|c| c.outcome.as_ref().ok().map(|q| (c.provider.id, q))),
    );
    let mut stored = Vec::new();
    let cards = candidates
        .into_iter()
        .map(|candidate| {
            let execution_type = candidate.provider.execution_type;
            let mut card = empty_card(&ask, candidate.provider.id, execution_type);
            match candidate.outcome {
                Ok(quote) => {
                    let mut record = route_quote(
                        owner,
                        candidate.provider.id,
                        execution_type,
                        &request,
                        &quote,
                    );
                    record.affiliate_code.clone_from(&ask.affiliate_code);
                    let figures = ranking.figures(candidate.provider.id);
                    fill_card(&mut card, &record, &quote, figures);
                    stored.push(record);
                }
                Err(error) => {
                    card.unavailable_reason = Some(error.reason_code().into());
                    card.unavailable_detail = Some(error.to_string());
                }
            }
            card
        })
        .collect();
    app.store.save_route_quotes(&stored).await?;
    Ok(cards)
}

/// The card of a provider that has not answered (yet): unavailable, no amounts.
fn empty_card(ask: &RoutesAsk, provider: &str, execution_type: ExecutionType) -> RouteCard {
    RouteCard {
        route_quote_id: None,
        execution_type,
        execution_provider: provider.into(),
        wallet_required: execution_type == ExecutionType::Onchain,
        is_available: false,
        unavailable_reason: None,
        unavailable_detail: None,
        from_ccy: ask.from.code.into(),
        to_ccy: ask.to.code.into(),
        from_amount: None,
        expected_output_amount: None,
        min_output_amount: None,
        rate: None,
        rate_type: match execution_type {
            ExecutionType::Offchain => ask.rate_type,
            ExecutionType::Onchain => RateType::Float,
        },
        fees: Vec::new(),
        gasless: false,
        estimated_duration_seconds: None,
        expires_at: None,
        observed: None,
    }
}

/// A usable card: the terms of its stored route quote, and what its provider delivered.
fn fill_card(
    card: &mut RouteCard,
    record: &RouteQuote,
    quote: &ProviderQuote,
    figures: Option<&Figures>,
) {
    card.route_quote_id = Some(record.id.to_string());
    card.is_available = true;
    card.from_amount = Some(record.from_amount.to_string());
    card.expected_output_amount = Some(record.to_amount.to_string());
    card.min_output_amount = Some(record.min_output.to_string());
    card.rate = Some(record.rate.to_string());
    card.rate_type = quote.rate_type;
    card.fees = entry::views(&record.fees);
    card.gasless = quote.gasless;
    card.estimated_duration_seconds = Some(routes::expected_duration_secs(quote, figures));
    card.expires_at = Some(record.expires_at_ms / 1000);
    card.observed = figures.map(Figures::view);
}

fn route_quote(
    owner: &Owner,
    provider: &str,
    execution_type: ExecutionType,
    request: &QuoteRequest,
    quote: &ProviderQuote,
) -> RouteQuote {
    RouteQuote {
        id: RouteQuoteId::generate(),
        owner: owner.clone(),
        provider: provider.into(),
        execution_type,
        rate_type: quote.rate_type,
        direction: request.direction,
        from: request.from,
        to: request.to,
        from_amount: quote.from_amount,
        to_amount: quote.to_amount,
        min_output: quote.min_output,
        rate: pricing::rate(quote.from_amount, quote.to_amount),
        min: quote.min,
        max: quote.max,
        fees: quote.fees.clone(),
        estimated_duration_secs: quote.estimated_duration_secs,
        wallet_address: request.wallet.as_ref().and_then(|w| w.address.clone()),
        wallet_namespace: request.wallet.as_ref().map(|w| w.namespace.to_owned()),
        recipient: request.recipient.clone(),
        gasless: quote.gasless,
        rate_lock: quote.rate_lock.clone(),
        onchain_fees: quote.onchain_fees.clone(),
        affiliate_code: None,
        created_at_ms: request.now_ms,
        expires_at_ms: request.now_ms + i64::from(quote.valid_for_secs) * 1000,
    }
}

/// The route quote `id` if `owner` received it: a malformed, unknown or foreign id is the same
/// "not found".
pub async fn owned(app: Context<'_>, owner: &Owner, id: &str) -> Result<RouteQuote, Error> {
    crate::find_owned(
        id,
        RouteQuoteId::parse,
        || Error::RouteNotFound,
        |id| async move { app.store.route_quote(&id, owner).await },
    )
    .await
}

/// Locks the terms of `owner`'s offchain route quote `id` in a createToken (single use, usable
/// only by `owner`), written with the answer (200).
pub async fn resolve(
    app: Context<'_>,
    owner: &Owner,
    id: &str,
    key: &dyn IdempotencyKey,
) -> Result<Answer, Error> {
    let route = owned(app, owner, id).await?;
    let (token, record) = routes::resolve(route, app.clock.now_ms())?;
    let route = &record.route;
    let answer = Answer::json(
        200,
        &Resolved {
            create_token: token,
            expires_at: record.expires_at_ms / 1000,
            route_quote_id: route.id.to_string(),
            from_ccy: route.from.code.into(),
            to_ccy: route.to.code.into(),
            from_amount: route.from_amount.to_string(),
            to_amount: route.to_amount.to_string(),
            rate: route.rate.to_string(),
            rate_type: route.rate_type,
            provider: route.provider.clone(),
        },
    )?;
    app.store
        .issue_create_token(&record, key.finish(&answer.stored))
        .await?;
    Ok(answer.written(Some(key)))
}

impl From<ResolveError> for Error {
    fn from(error: ResolveError) -> Self {
        match error {
            ResolveError::Onchain => Error::RouteUnavailable(error.to_string()),
            ResolveError::Expired => Error::QuoteExpired(error.to_string()),
        }
    }
}
