//! Reading and checking request input the same way in every handler: pairs, amounts,
//! addresses, query parameters, and the `validation_failed` error that names the field.

use swapd_core::amount::Amount;
use swapd_core::market::Direction;
use swapd_core::market::currencies::CurrencyDef;
use swapd_types::ErrorCode;

use crate::{ApiError, AppState, SignedQuery};

/// Checks a request's query as the route's handler will read it.
pub type QueryCheck = fn(&AppState, &SignedQuery) -> Result<(), ApiError>;

// The queries of the paid GETs, checked as their handlers read them, so the x402 gate can
// refuse them before any charge.

pub(crate) fn pair_currency(code: &str) -> Result<&'static CurrencyDef, ApiError> {
    Ok(swapd_app::input::pair_currency(code)?)
}

/// The amount of the side `direction` names, at that currency's precision; positive.
pub(crate) fn parse_amount(
    text: &str,
    from: &CurrencyDef,
    to: &CurrencyDef,
    direction: Direction,
) -> Result<Amount, ApiError> {
    Ok(swapd_app::input::parse_amount(text, from, to, direction)?)
}

pub(crate) fn check_address(
    currency: &CurrencyDef,
    address: &str,
    field: &str,
) -> Result<(), ApiError> {
    Ok(swapd_app::input::check_address(currency, address, field)?)
}

pub(crate) fn required<'a>(query: &'a SignedQuery, name: &str) -> Result<&'a str, ApiError> {
    query
        .scalar(name)?
        .ok_or_else(|| invalid(name, "is required"))
}

/// Refuses parameters the route does not know, so a misspelt filter is not silently ignored.
pub(crate) fn only_parameters(query: &SignedQuery, known: &[&str]) -> Result<(), ApiError> {
    match query
        .0
        .iter()
        .find(|(name, _)| !known.contains(&name.as_str()))
    {
        None => Ok(()),
        Some((name, _)) => Err(invalid(
            name,
            &if known.is_empty() {
                "this route takes no query parameters".to_owned()
            } else {
                format!("unknown parameter; this route takes {}", known.join(", "))
            },
        )),
    }
}

pub(crate) fn invalid(field: &str, problem: &str) -> ApiError {
    let field: String = field.chars().take(64).collect();
    ApiError::new(ErrorCode::ValidationFailed, format!("{field}: {problem}")).with_details(vec![
        swapd_types::FieldProblem {
            field,
            problem: problem.to_owned(),
        },
    ])
}

pub(crate) fn known_provider<'a>(
    state: &AppState,
    id: &'a str,
    field: &str,
) -> Result<&'a str, ApiError> {
    if state.market.providers().iter().any(|info| info.id == id) {
        return Ok(id);
    }
    let known: Vec<&str> = state
        .market
        .providers()
        .iter()
        .map(|info| info.id)
        .collect();
    Err(invalid(
        field,
        &format!("unknown provider `{id}`; known: {}", known.join(", ")),
    ))
}
