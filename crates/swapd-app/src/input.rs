//! Input checked the same way by every use case: pairs, amounts, addresses and tags, e-mail
//! addresses.

use swapd_core::address::Address;
use swapd_core::amount::Amount;
use swapd_core::market::Direction;
use swapd_core::market::currencies::{CurrencyDef, currency};
use swapd_core::notify::Email;

use crate::Error;

/// The currency `code` names, or `pair_unsupported`.
pub fn pair_currency(code: &str) -> Result<&'static CurrencyDef, Error> {
    currency(code).ok_or_else(|| {
        Error::PairUnsupported(format!(
            "unknown currency `{}`; GET /currencies lists the codes",
            code.chars().take(32).collect::<String>()
        ))
    })
}

/// A positive amount of `currency`, at its precision.
pub fn positive_amount(text: &str, currency: &CurrencyDef) -> Result<Amount, Error> {
    let amount = Amount::parse(text, currency.precision).map_err(|e| {
        Error::AmountInvalid(format!(
            "amount: {e} ({} has {} fraction digits)",
            currency.code, currency.precision
        ))
    })?;
    if amount.is_zero() {
        return Err(Error::AmountInvalid(
            "amount must be greater than zero".into(),
        ));
    }
    Ok(amount)
}

/// The amount of the side `direction` names, at that currency's precision; positive.
pub fn parse_amount(
    text: &str,
    from: &CurrencyDef,
    to: &CurrencyDef,
    direction: Direction,
) -> Result<Amount, Error> {
    match direction {
        Direction::From => positive_amount(text, from),
        Direction::To => positive_amount(text, to),
    }
}

/// An address on `currency`'s network, given in `field`.
pub fn parse_address(currency: &CurrencyDef, address: &str, field: &str) -> Result<Address, Error> {
    currency
        .network
        .parse_address(address)
        .map_err(|e| Error::AddressInvalid(format!("{field}: {e}")))
}

/// Checks an address on `currency`'s network, given in `field`, that is passed on as text.
pub fn check_address(currency: &CurrencyDef, address: &str, field: &str) -> Result<(), Error> {
    parse_address(currency, address, field).map(drop)
}

/// A destination tag (memo) on `currency`'s network, given in `field`.
pub fn check_tag(currency: &CurrencyDef, tag: Option<&str>, field: &str) -> Result<(), Error> {
    currency
        .network
        .validate_tag(tag)
        .map_err(|e| Error::invalid(field, e.to_string()))
}

/// An address swapd can e-mail: the OpenAPI pattern, which the mailer's parser takes.
pub fn parse_email(email: &str) -> Result<Email, Error> {
    Email::parse(email).ok_or_else(|| Error::invalid("email", "is not an e-mail address"))
}
