//! What the live desks share on the provider side: their catalogs as offers, a desk's price and
//! limits as swapd's quote, and their failures in swapd's words (docs/providers.md).

use std::collections::HashMap;
use std::sync::RwLock;

use swapd_core::amount::Amount;
use swapd_core::fees::entry::{Fee, FeeKind};
use swapd_core::market::RateType;
use swapd_core::market::currencies::CurrencyDef;
use swapd_core::market::provider::{CurrencyOffer, ProviderError, ProviderQuote, QuoteRequest};
use swapd_core::market::routes::less_bps;
use swapd_core::offchain::desk::{DeskError, DeskLimits, DeskQuote};

use crate::{Catalog, Listed};

/// What a desk listed at its last currencies answer, by swapd code: its requests name the
/// desk's own codes.
#[derive(Default)]
pub struct Listings(RwLock<HashMap<&'static str, Listed>>);

impl Listings {
    /// Keeps `catalog` as the desk's list, and says in the log how much swapd left out.
    fn remember(&self, desk: &str, catalog: &Catalog) {
        if catalog.unknown > 0 {
            tracing::info!(
                desk,
                left_out = catalog.unknown,
                "currencies or networks swapd does not list were left out"
            );
        }
        *self.0.write().expect("listings lock") = catalog
            .currencies
            .iter()
            .map(|listed| (listed.currency.code, listed.clone()))
            .collect();
    }

    /// The desk's currency list as `currencies` answers it, kept, as offers.
    pub async fn offers(
        &self,
        desk: &str,
        currencies: impl Future<Output = Result<Catalog, DeskError>>,
    ) -> Result<Vec<CurrencyOffer>, ProviderError> {
        let catalog = self
            .refresh(desk, currencies)
            .await
            .map_err(|e| provider_error(desk, e, None))?;
        Ok(offers(&catalog))
    }

    /// The desk's currency list as `currencies` answers it, kept.
    async fn refresh(
        &self,
        desk: &str,
        currencies: impl Future<Output = Result<Catalog, DeskError>>,
    ) -> Result<Catalog, DeskError> {
        let catalog = currencies.await?;
        self.remember(desk, &catalog);
        Ok(catalog)
    }

    /// The pair as the desk lists it, asking for its list (`currencies`, awaited only then)
    /// when a currency is not known yet.
    pub async fn sides(
        &self,
        desk: &str,
        (from, to): (&CurrencyDef, &CurrencyDef),
        rate: RateType,
        currencies: impl Future<Output = Result<Catalog, DeskError>>,
    ) -> Result<(Listed, Listed), DeskError> {
        if let Some(pair) = self.pair(from, to, rate)? {
            return Ok(pair);
        }
        self.refresh(desk, currencies).await?;
        self.pair(from, to, rate)?.ok_or(DeskError::PairUnsupported)
    }

    /// The pair as listed. `Ok(None)`: a currency is not in the list kept (ask the desk for
    /// it); `PairUnsupported`: the desk takes no deposits of `from`, pays no `to`, or locks no
    /// fixed rate for them.
    fn pair(
        &self,
        from: &CurrencyDef,
        to: &CurrencyDef,
        rate: RateType,
    ) -> Result<Option<(Listed, Listed)>, DeskError> {
        let listed = self.0.read().expect("listings lock");
        let (Some(from), Some(to)) = (listed.get(from.code), listed.get(to.code)) else {
            return Ok(None);
        };
        let fixed_ok = rate == RateType::Float || (from.fixed_rate && to.fixed_rate);
        if from.currency.code == to.currency.code || !from.send || !to.receive || !fixed_ok {
            return Err(DeskError::PairUnsupported);
        }
        Ok(Some((from.clone(), to.clone())))
    }
}

/// How long a desk's price is offered: ChangeNOW's fixed rates hold about a minute, and
/// FixedFloat's prices are asked again at create.
pub const QUOTE_VALID_SECS: u32 = 60;

/// A float rate moves until the deposit is exchanged; swapd promises no less than the estimate
/// less this (docs/providers.md).
pub const FLOAT_BAND_BPS: u32 = 100;

/// A desk's currencies as offers. Desks state limits per pair, not per currency: none here.
fn offers(catalog: &Catalog) -> Vec<CurrencyOffer> {
    catalog
        .currencies
        .iter()
        .map(|listed| CurrencyOffer {
            currency: listed.currency,
            send: listed.send,
            receive: listed.receive,
            min: None,
            max: None,
        })
        .collect()
}

/// The desk's price for `request` with its limits, as swapd's quote; an amount outside the
/// limits is refused with them.
pub fn provider_quote(
    request: &QuoteRequest,
    limits: &DeskLimits,
    quote: DeskQuote,
    duration_secs: u32,
) -> Result<ProviderQuote, ProviderError> {
    let outside =
        quote.from_amount < limits.min || limits.max.is_some_and(|max| quote.from_amount > max);
    if outside {
        return Err(ProviderError::OutOfRange {
            min: limits.min,
            max: limits.max,
            code: request.from.code,
        });
    }
    let min_output = match request.rate_type {
        RateType::Fixed => quote.to_amount,
        RateType::Float => less_bps(quote.to_amount, FLOAT_BAND_BPS),
    };
    let network_fee = quote
        .network_fee
        .unwrap_or_else(|| Amount::zero(request.to.precision));
    Ok(ProviderQuote {
        from_amount: quote.from_amount,
        to_amount: quote.to_amount,
        min_output,
        rate_type: request.rate_type,
        network_fee,
        fees: quote
            .network_fee
            .map(|amount| Fee::cost(FeeKind::Network, amount, request.to))
            .into_iter()
            .collect(),
        min: limits.min,
        max: limits.max,
        estimated_duration_secs: duration_secs,
        valid_for_secs: QUOTE_VALID_SECS,
        gasless: false,
        rate_lock: quote.rate_lock,
        onchain_fees: Vec::new(),
    })
}

/// A desk's failure as the market sees it, in swapd's words: out of range with the desk's
/// limits (in `from`, when the request named it), unsupported, or unavailable.
pub fn provider_error(desk: &str, error: DeskError, from: Option<&CurrencyDef>) -> ProviderError {
    match (error, from) {
        (DeskError::PairUnsupported, _) => {
            ProviderError::PairUnsupported(format!("{desk} does not trade this pair now"))
        }
        (DeskError::OutOfRange { min, max }, Some(from)) => ProviderError::OutOfRange {
            min: min.unwrap_or_else(|| Amount::zero(from.precision)),
            max,
            code: from.code,
        },
        (DeskError::Unauthorized, _) => {
            ProviderError::Unavailable(format!("{desk} refused swapd's credentials"))
        }
        (DeskError::RateLimited { .. }, _) => {
            ProviderError::Unavailable(format!("{desk} is rate limiting swapd"))
        }
        _ => ProviderError::Unavailable(format!("{desk} is not answering usably now")),
    }
}

#[cfg(test)]
mod tests {
    use swapd_core::market::Direction;
    use swapd_core::market::currencies::currency;

    use super::*;

    fn request(rate_type: RateType) -> QuoteRequest {
        QuoteRequest::without_wallet(
            currency("BTC").unwrap(),
            currency("USDTTRC").unwrap(),
            Amount::parse("0.1", 8).unwrap(),
            Direction::From,
            rate_type,
            0,
        )
    }

    fn desk_quote() -> DeskQuote {
        DeskQuote {
            from_amount: Amount::parse("0.1", 8).unwrap(),
            to_amount: Amount::parse("9600", 6).unwrap(),
            rate_lock: Some("rate-1".into()),
            network_fee: Some(Amount::parse("1.5", 6).unwrap()),
        }
    }

    #[test]
    fn a_desk_price_becomes_a_quote_with_its_limits_and_lock() {
        let limits = DeskLimits {
            min: Amount::parse("0.001", 8).unwrap(),
            max: None,
        };
        let fixed = provider_quote(&request(RateType::Fixed), &limits, desk_quote(), 900).unwrap();
        assert_eq!(fixed.min_output, fixed.to_amount);
        assert_eq!(fixed.rate_lock.as_deref(), Some("rate-1"));
        assert_eq!(fixed.max, None);
        assert_eq!(fixed.fees.len(), 1);
        let float = provider_quote(&request(RateType::Float), &limits, desk_quote(), 900).unwrap();
        assert_eq!(float.min_output.to_string(), "9504");
    }

    #[test]
    fn amounts_outside_the_limits_are_refused_with_them() {
        let limits = DeskLimits {
            min: Amount::parse("0.5", 8).unwrap(),
            max: Some(Amount::parse("2", 8).unwrap()),
        };
        match provider_quote(&request(RateType::Fixed), &limits, desk_quote(), 900) {
            Err(ProviderError::OutOfRange { min, max, code }) => {
                assert_eq!((min.to_string(), code), ("0.5".into(), "BTC"));
                assert_eq!(max.unwrap().to_string(), "2");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn failures_never_carry_the_desks_words() {
        let error = provider_error(
            "changenow",
            DeskError::Refused {
                detail: "internal id 77 leaked".into(),
            },
            None,
        );
        assert!(!error.to_string().contains("77"), "{error}");
        assert!(matches!(
            provider_error("changenow", DeskError::PairUnsupported, None),
            ProviderError::PairUnsupported(_)
        ));
    }
}
