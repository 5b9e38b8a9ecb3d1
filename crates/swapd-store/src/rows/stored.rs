//! How stored text becomes typed values, once, where a row is read: currencies by catalog
//! code, amounts at their currency's precision, owners by scope, ids by prefix. Text that is
//! not what swapd writes is a corrupt row, never a panic.

use std::str::FromStr;

use swapd_core::StoreError;
use swapd_core::amount::{Amount, MAX_DECIMALS};
use swapd_core::market::currencies::{CurrencyDef, currency};
use swapd_core::owner::Owner;

fn corrupt(what: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(what.to_string())
}

pub(crate) fn currency_of(code: &str) -> Result<&'static CurrencyDef, StoreError> {
    currency(code).ok_or_else(|| corrupt(format!("unknown currency code `{code}`")))
}

/// An amount of `currency`: at its precision, or exactly at more digits when a provider
/// reported more (a desk's payout, a chain's deposit).
pub(crate) fn amount_of(text: &str, currency: &CurrencyDef) -> Result<Amount, StoreError> {
    Amount::parse(text, currency.precision)
        .or_else(|_| Amount::parse(text, MAX_DECIMALS))
        .map_err(|e| corrupt(format!("amount of {}: {e}", currency.code)))
}

pub(crate) fn owner_of(scope: &str) -> Result<Owner, StoreError> {
    scope
        .parse()
        .map_err(|_| corrupt(format!("`{scope}` is not an owner")))
}

/// An id of one kind (its type's prefix).
pub(crate) fn id_of<T: FromStr<Err = swapd_core::ids::NotAnId>>(
    text: &str,
) -> Result<T, StoreError> {
    text.parse().map_err(corrupt)
}

/// An optional value read with `read`.
pub(crate) fn optional<T>(
    text: Option<&str>,
    read: impl FnOnce(&str) -> Result<T, StoreError>,
) -> Result<Option<T>, StoreError> {
    text.map(read).transpose()
}
