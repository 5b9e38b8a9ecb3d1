//! The currency catalog: the registry entries some provider trades now, with the widest limits
//! any of them offers.

use std::collections::BTreeMap;

use super::currencies::{CURRENCIES, CurrencyDef};
use crate::amount::Amount;
use crate::market::provider::CurrencyOffer;

/// Version of the catalog's wire shape (`schemaVersion`).
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogEntry {
    pub currency: &'static CurrencyDef,
    pub send: bool,
    pub receive: bool,
    /// Smallest input any provider accepts, in this currency; `None` when some provider's
    /// limits depend on the pair (live desks): a quote tells.
    pub min: Option<Amount>,
    /// Largest input any provider accepts, in this currency; `None` as for `min`.
    pub max: Option<Amount>,
}

/// Where a served catalog came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
pub enum CatalogSource {
    /// Assembled from the providers' current answers.
    Live,
    /// Some provider's part is its last good answer, kept after a failed refresh.
    Cache,
    /// The catalog shipped with swapd: no provider has answered since start.
    Snapshot,
}

impl CatalogSource {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// The catalog as served.
#[derive(Debug, Clone)]
pub struct CatalogView {
    pub currencies: Vec<CatalogEntry>,
    pub degraded: bool,
    pub reason: Option<String>,
    pub source: CatalogSource,
}

impl CatalogView {
    /// The entry of the currency `code` names, when it is listed.
    pub fn listed(&self, code: &str) -> Option<&CatalogEntry> {
        let def = super::currencies::currency(code)?;
        self.currencies.iter().find(|e| e.currency.code == def.code)
    }
}

/// Merges offers into catalog entries, in registry order: a currency is listed when some
/// provider trades it; `send`/`receive` when any does; limits span every provider accepting it
/// as input, and are unknown when one of them states none.
pub fn assemble<'a>(offers: impl IntoIterator<Item = &'a CurrencyOffer>) -> Vec<CatalogEntry> {
    let mut merged: BTreeMap<usize, CatalogEntry> = BTreeMap::new();
    for offer in offers {
        let Some(position) = CURRENCIES
            .iter()
            .position(|c| c.code == offer.currency.code)
        else {
            continue;
        };
        let entry = merged.entry(position).or_insert_with(|| CatalogEntry {
            currency: offer.currency,
            send: false,
            receive: false,
            min: offer.min,
            max: offer.max,
        });
        entry.receive |= offer.receive;
        if offer.send {
            if entry.send {
                entry.min = entry.min.zip(offer.min).map(|(a, b)| a.min(b));
                entry.max = entry.max.zip(offer.max).map(|(a, b)| a.max(b));
            } else {
                entry.min = offer.min;
                entry.max = offer.max;
            }
            entry.send = true;
        }
    }
    merged.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::market::currencies::currency;

    fn offer(code: &str, send: bool, receive: bool, min: &str, max: &str) -> CurrencyOffer {
        let currency = currency(code).unwrap();
        CurrencyOffer {
            currency,
            send,
            receive,
            min: Some(Amount::parse(min, currency.precision).unwrap()),
            max: Some(Amount::parse(max, currency.precision).unwrap()),
        }
    }

    #[test]
    fn limits_span_providers_and_order_follows_the_registry() {
        let offers = [
            offer("XRP", false, true, "0", "0"),
            offer("BTC", true, true, "0.001", "2"),
            offer("BTC", true, false, "0.0002", "1"),
            offer("XRP", true, false, "10", "5000"),
        ];
        let catalog = assemble(&offers);
        assert_eq!(catalog.len(), 2);
        assert_eq!(catalog[0].currency.code, "BTC");
        assert_eq!(catalog[0].min.unwrap().to_string(), "0.0002");
        assert_eq!(catalog[0].max.unwrap().to_string(), "2");
        assert!(catalog[0].send && catalog[0].receive);
        assert_eq!(catalog[1].currency.code, "XRP");
        assert_eq!(catalog[1].min.unwrap().to_string(), "10");
        assert!(catalog[1].send && catalog[1].receive);

        // A provider whose limits depend on the pair leaves the bounds unknown.
        let mut per_pair = offer("BTC", true, true, "0", "0");
        (per_pair.min, per_pair.max) = (None, None);
        let catalog = assemble(&[offers[1].clone(), per_pair]);
        assert_eq!((catalog[0].min, catalog[0].max), (None, None));
    }
}
