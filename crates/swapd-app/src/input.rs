//! Input checked the same way by every use case: pairs, amounts, addresses and tags, e-mail
//! addresses.

use swapd_core::amount::Amount;
use swapd_core::market::Direction;
use swapd_core::market::currencies::{CurrencyDef, currency};

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

/// A currency stored with an order or a route: unknown only if swapd's own data is broken.
pub(crate) fn stored_currency(code: &str) -> Result<&'static CurrencyDef, Error> {
    currency(code).ok_or_else(|| Error::internal(format_args!("stored currency {code} is unknown")))
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
pub fn check_address(currency: &CurrencyDef, address: &str, field: &str) -> Result<(), Error> {
    currency
        .network
        .validate_address(address)
        .map_err(|e| Error::AddressInvalid(format!("{field}: {e}")))
}

/// A destination tag (memo) on `currency`'s network, given in `field`.
pub fn check_tag(currency: &CurrencyDef, tag: Option<&str>, field: &str) -> Result<(), Error> {
    currency
        .network
        .validate_tag(tag)
        .map_err(|e| Error::invalid(field, e.to_string()))
}

/// An address swapd can e-mail: the OpenAPI pattern, which the mailer's parser takes.
pub fn check_email(email: &str) -> Result<(), Error> {
    if swapd_types::orders::is_email_address(email) && swapd_core::notify::can_send_to(email) {
        Ok(())
    } else {
        Err(Error::invalid("email", "is not an e-mail address"))
    }
}
