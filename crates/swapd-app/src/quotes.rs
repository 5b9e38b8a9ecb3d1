//! The best offchain offer for a request (docs/market.md): the legacy quote and an order
//! created without a createToken take it.

use swapd_core::amount::Amount;
use swapd_core::market::ExecutionType;
use swapd_core::market::currencies::CurrencyDef;
use swapd_core::market::observed::RouteSort;
use swapd_core::market::pricing;
use swapd_core::market::provider::{ProviderError, ProviderQuote, QuoteRequest};
use swapd_core::market::routes::{self, Candidate, Ranking};

use crate::{Context, Error};

/// The best answer of the offchain providers `allowed` keeps, or why there is none.
pub async fn best_offchain_quote(
    app: Context<'_>,
    request: &QuoteRequest,
    allowed: impl Fn(&str) -> bool + Sync,
) -> Result<(&'static str, ProviderQuote), Error> {
    let mut candidates = app
        .market
        .quote_all(request, &|info| {
            info.execution_type == ExecutionType::Offchain && allowed(info.id)
        })
        .await;
    let observed = app.observed.current();
    routes::rank(
        &mut candidates,
        &Ranking {
            direction: request.direction,
            sort: RouteSort::Best,
            observed: &observed,
            from: request.from.code,
            to: request.to.code,
        },
    );
    let best = candidates
        .iter()
        .find_map(|c| c.outcome.as_ref().ok().map(|q| (c.provider.id, q.clone())));
    let (provider, mut quote) =
        best.ok_or_else(|| no_quote(&candidates, request.from, request.to))?;
    // The limits shown are the ones enforced: an amount any provider quotes is accepted.
    if let Some((min, max)) = accepted_range(&candidates) {
        (quote.min, quote.max) = (min, max);
    }
    Ok((provider, quote))
}

/// The amounts a request of this type is accepted for: the lowest minimum and the highest
/// maximum of the providers that quote the pair (with a quote, or with their range).
fn accepted_range(candidates: &[Candidate]) -> Option<(Amount, Option<Amount>)> {
    candidates
        .iter()
        .filter_map(|c| match &c.outcome {
            Ok(quote) => Some((quote.min, quote.max)),
            Err(ProviderError::OutOfRange { min, max, .. }) => Some((*min, *max)),
            Err(_) => None,
        })
        .reduce(|(a, b), (c, d)| (a.min(c), b.zip(d).map(|(b, d)| b.max(d))))
}

/// Why no provider could quote: out of range (with the widest limits) over unsupported over
/// unavailable.
fn no_quote(candidates: &[Candidate], from: &CurrencyDef, to: &CurrencyDef) -> Error {
    if let Some((min, max)) = accepted_range(candidates) {
        let refusal = ProviderError::OutOfRange {
            min,
            max,
            code: from.code,
        };
        return Error::AmountOutOfRange(refusal.to_string());
    }
    let unavailable: Vec<String> = candidates
        .iter()
        .filter_map(|c| match &c.outcome {
            Err(error @ ProviderError::Unavailable(_)) => {
                Some(format!("{}: {error}", c.provider.id))
            }
            _ => None,
        })
        .collect();
    if !unavailable.is_empty() {
        return Error::Provider(format!(
            "no provider could quote {} → {} now ({}); retry shortly",
            from.code,
            to.code,
            unavailable.join("; ")
        ));
    }
    let onchain = from.onchain_namespace().is_some() && to.onchain_namespace().is_some();
    Error::PairUnsupported(if onchain {
        format!(
            "no offchain provider trades {} → {}; onchain DEX and bridge routes are offered by GET /routes",
            from.code, to.code
        )
    } else {
        format!("no provider trades {} → {}", from.code, to.code)
    })
}

/// Files the rates just served (for `rate_history` jobs), in the background: serving never
/// waits for it, and a failure to file loses only a statistic.
pub fn record_rates<'a>(
    app: Context<'_>,
    request: &QuoteRequest,
    served: impl IntoIterator<Item = (&'a str, &'a ProviderQuote)>,
) {
    let pair = swapd_core::market_intel::rate_pair(request.from.code, request.to.code);
    let observations: Vec<swapd_core::store::RateObservation> = served
        .into_iter()
        .map(|(provider, quote)| swapd_core::store::RateObservation {
            pair: pair.clone(),
            observed_at_ms: request.now_ms,
            rate: pricing::rate(quote.from_amount, quote.to_amount).to_string(),
            provider: provider.to_owned(),
        })
        .collect();
    if observations.is_empty() {
        return;
    }
    let store = app.store.clone();
    tokio::spawn(async move {
        if let Err(error) = store.record_rates(&observations).await {
            tracing::warn!(%error, "cannot record served rates");
        }
    });
}
