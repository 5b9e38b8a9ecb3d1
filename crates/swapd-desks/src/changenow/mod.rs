//! ChangeNOW API v2 (`x-changenow-api-key`, docs/providers.md, "The desks"): its currencies,
//! exchanges, statuses and errors mapped onto swapd's desk model by pure functions; [`ChangeNow`]
//! sends them.

mod client;
mod desk;
pub mod wire;

pub use client::{BASE_URL, ChangeNow};
pub use desk::{ChangeNowDesk, ID};

use std::time::Duration;

use swapd_core::address::Network;
use swapd_core::amount::Amount;
use swapd_core::amount::Rounding::{self, Down, Up};
use swapd_core::amount::decimal;
use swapd_core::market::currencies::{CURRENCIES, CurrencyDef};
use swapd_core::market::{Direction, RateType};
use swapd_core::offchain::desk::{
    DeskCommission, DeskDeposit, DeskError, DeskExchange, DeskLimits, DeskQuote, DeskStatus,
    OpenedExchange,
};

use crate::{Catalog, Unknown, parse_json};

/// ChangeNOW's network codes for swapd's networks (lowercase, as its currencies list them).
const NETWORKS: &[(&str, Network)] = &[
    ("btc", Network::Bitcoin),
    ("ltc", Network::Litecoin),
    ("eth", Network::Ethereum),
    ("bsc", Network::BnbChain),
    ("matic", Network::Polygon),
    ("base", Network::Base),
    ("arbitrum", Network::Arbitrum),
    ("sol", Network::Solana),
    ("trx", Network::Tron),
    ("xrp", Network::Xrp),
];

/// ChangeNOW's code for a swapd network.
pub fn network_code(network: Network) -> &'static str {
    NETWORKS
        .iter()
        .find(|(_, known)| *known == network)
        .map(|(code, _)| *code)
        .expect("every swapd network has a ChangeNOW code")
}

/// The swapd currency a ChangeNOW currency is: same network, and the same token contract (or
/// both native). `None` for what swapd does not list: never guessed from a ticker.
pub fn currency(wire: &wire::Currency) -> Option<&'static CurrencyDef> {
    if wire.is_fiat {
        return None;
    }
    let network = NETWORKS
        .iter()
        .find(|(code, _)| code.eq_ignore_ascii_case(&wire.network))
        .map(|(_, network)| *network)?;
    let contract = wire.token_contract.as_deref().filter(|c| !c.is_empty());
    CURRENCIES.iter().find(|def| {
        def.network == network
            && match (def.contract, contract) {
                (None, None) => true,
                (Some(ours), Some(theirs)) if def.network.evm_chain_id().is_some() => {
                    ours.eq_ignore_ascii_case(theirs)
                }
                (Some(ours), Some(theirs)) => ours == theirs,
                _ => false,
            }
    })
}

/// The currencies list as swapd's catalog: what swapd knows, and how many it left out.
pub fn catalog(body: &[u8]) -> Result<Catalog, DeskError> {
    let listed: Vec<wire::Currency> = parse_json(body)?;
    let mut catalog = Catalog::default();
    for item in &listed {
        match currency(item) {
            Some(def) => catalog.add(
                def,
                &item.ticker,
                item.sell,
                item.buy,
                item.supports_fixed_rate,
            ),
            None => catalog.unknown += 1,
        }
    }
    Ok(catalog)
}

/// A side of a pair as ChangeNOW names it: its ticker (from the catalog) and network code.
#[derive(Debug, Clone, Copy)]
pub struct Side<'a> {
    pub ticker: &'a str,
    pub currency: &'static CurrencyDef,
}

impl Side<'_> {
    fn network(&self) -> &'static str {
        network_code(self.currency.network)
    }
}

/// `flow`: `fixed-rate` locks the rate (with `useRateId=true`, the estimate's `rateId`).
fn flow(rate: RateType) -> &'static str {
    match rate {
        RateType::Fixed => "fixed-rate",
        RateType::Float => "standard",
    }
}

/// The query of `GET /v2/exchange/range`.
pub fn range_query(from: Side<'_>, to: Side<'_>, rate: RateType) -> Vec<(&'static str, String)> {
    vec![
        ("fromCurrency", from.ticker.to_owned()),
        ("toCurrency", to.ticker.to_owned()),
        ("fromNetwork", from.network().to_owned()),
        ("toNetwork", to.network().to_owned()),
        ("flow", flow(rate).to_owned()),
    ]
}

/// The query of `GET /v2/exchange/estimated-amount`: `amount` of the side `direction` names
/// (`type=direct` or `reverse`); a fixed rate asks for the `rateId` that locks it.
pub fn estimate_query(
    from: Side<'_>,
    to: Side<'_>,
    rate: RateType,
    direction: Direction,
    amount: Amount,
) -> Vec<(&'static str, String)> {
    let mut query = range_query(from, to, rate);
    let (side, kind) = match direction {
        Direction::From => ("fromAmount", "direct"),
        Direction::To => ("toAmount", "reverse"),
    };
    query.extend([(side, amount.to_string()), ("type", kind.to_owned())]);
    if rate == RateType::Fixed {
        query.push(("useRateId", "true".to_owned()));
    }
    query
}

/// What `POST /v2/exchange` opens: the pair, the amount of the side `direction` names, where
/// the payout and a refund go, and the fixed rate's `rateId`.
#[derive(Debug, Clone)]
pub struct CreateRequest<'a> {
    pub from: Side<'a>,
    pub to: Side<'a>,
    pub rate: RateType,
    pub direction: Direction,
    pub amount: Amount,
    pub payout_address: &'a str,
    pub payout_tag: Option<&'a str>,
    pub refund_address: Option<&'a str>,
    pub refund_tag: Option<&'a str>,
    pub rate_id: Option<&'a str>,
    /// swapd's reference (the order id), sent in the `payload` partner field when the account
    /// has it enabled.
    pub reference: Option<&'a str>,
}

/// The key of swapd's reference in the create's `payload` partner field.
pub const PAYLOAD_REFERENCE: &str = "swapdReference";

/// The body of `POST /v2/exchange`.
pub fn create_body(request: &CreateRequest<'_>) -> String {
    let (from_amount, to_amount, kind) = match request.direction {
        Direction::From => (request.amount.to_string(), String::new(), "direct"),
        Direction::To => (String::new(), request.amount.to_string(), "reverse"),
    };
    let mut body = serde_json::json!({
        "fromCurrency": request.from.ticker,
        "fromNetwork": request.from.network(),
        "toCurrency": request.to.ticker,
        "toNetwork": request.to.network(),
        "fromAmount": from_amount,
        "toAmount": to_amount,
        "address": request.payout_address,
        "extraId": request.payout_tag.unwrap_or_default(),
        "refundAddress": request.refund_address.unwrap_or_default(),
        "refundExtraId": request.refund_tag.unwrap_or_default(),
        "flow": flow(request.rate),
        "type": kind,
        "rateId": request.rate_id.unwrap_or_default(),
    });
    if let Some(reference) = request.reference {
        body["payload"] = serde_json::json!({ PAYLOAD_REFERENCE: reference });
    }
    body.to_string()
}

/// The query of `GET /v2/exchanges` for the exchanges a create to `payout_address` may have
/// opened since `since_ms` (Unix milliseconds): newest first, one page.
pub fn lookup_query(payout_address: &str, since_ms: i64) -> Vec<(&'static str, String)> {
    vec![
        ("payoutAddress", payout_address.to_owned()),
        ("dateFrom", iso_millis(since_ms)),
        ("dateField", "createdAt".to_owned()),
        ("sortField", "createdAt".to_owned()),
        ("sortDirection", "DESC".to_owned()),
        ("limit", "100".to_owned()),
    ]
}

/// `2024-01-01T12:00:00.000Z`, as ChangeNOW's date filters take it.
fn iso_millis(ms: i64) -> String {
    let at = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    let format = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    at.format(&format).unwrap_or_default()
}

/// The query of `GET /v2/exchanges` for one exchange, by its id.
pub fn exchange_query(id: &str) -> Vec<(&'static str, String)> {
    vec![("requestId", id.to_owned()), ("limit", "1".to_owned())]
}

/// What exchange `id` earned the operator's account, as `GET /v2/exchanges` reports it
/// (`partnerInfo.commission`): in the exchange's input or output currency, whichever its
/// ticker names. `None` when not (yet) reported.
pub fn commission(
    body: &[u8],
    id: &str,
    (from, to): (&'static CurrencyDef, &'static CurrencyDef),
) -> Result<Option<DeskCommission>, DeskError> {
    let list: wire::ExchangeList = parse_json(body)?;
    let Some((item, commission)) = list.exchanges.iter().find_map(|item| {
        let commission = item.partner_info.as_ref()?.commission.as_ref()?;
        (item.exchange_id == id).then_some((item, commission))
    }) else {
        return Ok(None);
    };
    let currency = [(&item.payout.currency, to), (&item.payin.currency, from)]
        .into_iter()
        .find(|(ticker, _)| commission.currency.eq_ignore_ascii_case(ticker))
        .map(|(_, def)| def);
    let (Some(currency), Some(amount)) = (currency, &commission.amount) else {
        return Ok(None);
    };
    Ok(Some(DeskCommission {
        amount: number(amount, currency.precision, Rounding::Down)?,
        currency,
    }))
}

/// What a lookup after a lost create found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// Exactly one exchange is the create's: it is the order's.
    One(OpenedExchange),
    /// Nothing matches: the create did not open one (or not yet).
    Nothing,
    /// Several match and none can be told apart: none is adopted.
    Several(usize),
}

/// The exchange of `GET /v2/exchanges` that `request` opened: the one whose `payload` carries
/// its reference; else, among exchanges without swapd's reference that still await their
/// deposit, the one with the request's pair, payout address and memo, and amount, when exactly
/// one matches.
pub fn find_opened(body: &[u8], request: &CreateRequest<'_>) -> Result<Found, DeskError> {
    let list: wire::ExchangeList = parse_json(body)?;
    let reference_of = |item: &wire::ListedExchange| {
        item.partner_info
            .as_ref()
            .and_then(|info| info.payload.as_ref())
            .and_then(|payload| payload.get(PAYLOAD_REFERENCE))
            .and_then(|value| value.as_str().map(str::to_owned))
    };
    let pick = |matching: Vec<&wire::ListedExchange>| match matching.as_slice() {
        [] => Found::Nothing,
        [one] => Found::One(OpenedExchange {
            id: one.exchange_id.clone(),
            deposit_address: one.payin.address.clone(),
            deposit_tag: present(one.payin.extra_id.clone()),
            access_token: None,
        }),
        several => Found::Several(several.len()),
    };
    if let Some(reference) = request.reference {
        let by_reference: Vec<_> = list
            .exchanges
            .iter()
            .filter(|item| reference_of(item).as_deref() == Some(reference))
            .collect();
        if !by_reference.is_empty() {
            return Ok(pick(by_reference));
        }
    }
    let same_address = |ours: &str, theirs: &str| {
        if request.to.currency.network.evm_chain_id().is_some() {
            ours.eq_ignore_ascii_case(theirs)
        } else {
            ours == theirs
        }
    };
    let precision = request.from.currency.precision;
    let by_terms: Vec<_> = list
        .exchanges
        .iter()
        .filter(|item| reference_of(item).is_none())
        .filter(|item| matches!(item.status.as_str(), "new" | "waiting"))
        .filter(|item| {
            item.payin
                .currency
                .eq_ignore_ascii_case(request.from.ticker)
                && item.payout.currency.eq_ignore_ascii_case(request.to.ticker)
                && same_address(request.payout_address, &item.payout.address)
                && present(item.payout.extra_id.clone()).as_deref() == request.payout_tag
        })
        .filter(|item| match request.direction {
            Direction::From => {
                item.payin
                    .expected_amount
                    .as_ref()
                    .and_then(|value| decimal(value.get(), precision, Up))
                    == Some(request.amount)
            }
            // A reverse exchange's deposit is the desk's figure: pair and address tell it.
            Direction::To => true,
        })
        .collect();
    Ok(pick(by_terms))
}

/// A pair's limits (`GET /v2/exchange/range`), in `from`. A maximum of `null` or 0 is none.
pub fn limits(body: &[u8], from: &CurrencyDef) -> Result<DeskLimits, DeskError> {
    let wire: wire::Range = parse_json(body)?;
    let min = number(&wire.min_amount, from.precision, Up)?;
    let max = match &wire.max_amount {
        None => None,
        Some(max) => Some(number(max, from.precision, Down)?).filter(|max| !max.is_zero()),
    };
    Ok(DeskLimits { min, max })
}

/// A price (`GET /v2/exchange/estimated-amount`); fixed-rate estimates carry the `rateId` that
/// locks them.
pub fn quote(body: &[u8], from: &CurrencyDef, to: &CurrencyDef) -> Result<DeskQuote, DeskError> {
    let wire: wire::Estimate = parse_json(body)?;
    let required =
        |number: &Option<wire::Number>, precision: u8, rounding, field: &str| match number {
            Some(value) => self::number(value, precision, rounding),
            None => Err(DeskError::from(Unknown(format!(
                "estimate without `{field}`"
            )))),
        };
    Ok(DeskQuote {
        // What the user sends rounds up (a reverse estimate's required deposit), what the user
        // gets down: never a promise above the desk's.
        from_amount: required(&wire.from_amount, from.precision, Up, "fromAmount")?,
        to_amount: required(&wire.to_amount, to.precision, Down, "toAmount")?,
        rate_lock: present(wire.rate_id),
        network_fee: match &wire.withdrawal_fee {
            Some(fee) => Some(number(fee, to.precision, Up)?),
            None => None,
        },
    })
}

/// The answer of `POST /v2/exchange`.
pub fn opened(body: &[u8]) -> Result<OpenedExchange, DeskError> {
    let wire: wire::Created = parse_json(body)?;
    Ok(OpenedExchange {
        id: wire.id,
        deposit_address: wire.payin_address,
        deposit_tag: present(wire.payin_extra_id),
        access_token: None,
    })
}

/// Where an exchange stands, from its `status`.
pub fn status(status: &str) -> Result<DeskStatus, Unknown> {
    Ok(match status {
        "new" | "waiting" => DeskStatus::AwaitingDeposit,
        "confirming" => DeskStatus::Confirming,
        "exchanging" => DeskStatus::Exchanging,
        "sending" => DeskStatus::Sending,
        "finished" => DeskStatus::Finished,
        "failed" => DeskStatus::Failed,
        "refunded" => DeskStatus::Refunded,
        "verifying" => DeskStatus::OnHold,
        "expired" => DeskStatus::Expired,
        other => return Err(Unknown(format!("exchange status `{other}`"))),
    })
}

/// An exchange (`GET /v2/exchange/by-id`) between `from` and `to`.
pub fn exchange(
    body: &[u8],
    from: &CurrencyDef,
    to: &CurrencyDef,
) -> Result<DeskExchange, DeskError> {
    let wire: wire::Exchange = parse_json(body)?;
    let status = status(&wire.status).map_err(DeskError::from)?;
    let amount = |value: &Option<wire::Number>, precision: u8, rounding| {
        value
            .as_ref()
            .map(|v| number(v, precision, rounding))
            .transpose()
    };
    let deposits = match wire.payin_hash.clone().filter(|h| !h.is_empty()) {
        None => Vec::new(),
        Some(tx_id) => vec![DeskDeposit {
            tx_id,
            amount: amount(&wire.amount_from, from.precision, Down)?,
            // ChangeNOW does not count confirmations: one stands for "enough", reached once
            // it is past `confirming`.
            confirmations: u32::from(!matches!(
                status,
                DeskStatus::AwaitingDeposit | DeskStatus::Confirming
            )),
            required_confirmations: Some(1),
            ..DeskDeposit::default()
        }],
    };
    Ok(DeskExchange {
        status,
        deposit_address: wire.payin_address,
        deposit_tag: present(wire.payin_extra_id),
        expected_from: amount(&wire.expected_amount_from, from.precision, Up)?,
        expected_to: amount(&wire.expected_amount_to, to.precision, Down)?,
        deposits,
        payout_tx: present(wire.payout_hash),
        payout_amount: amount(&wire.amount_to, to.precision, Down)?,
        refund_tx: present(wire.refund_hash),
        refund_amount: amount(&wire.refund_amount, from.precision, Down)?,
        deposit_deadline: None,
        failure_reason: None,
        commission: None,
        id: wire.id,
    })
}

/// A refused or failed call: its HTTP status, body and `Retry-After` (seconds), as swapd's
/// error. ChangeNOW's own message is not passed on.
pub fn error(status: u16, body: &[u8], retry_after: Option<Duration>) -> DeskError {
    match status {
        401 | 403 => return DeskError::Unauthorized,
        404 => return DeskError::NotFound,
        429 => return DeskError::RateLimited { retry_after },
        500..=599 => {
            return DeskError::Unavailable {
                detail: format!("ChangeNOW answered {status}"),
            };
        }
        _ => {}
    }
    let Ok(refusal) = serde_json::from_slice::<wire::ErrorBody>(body) else {
        return DeskError::Unavailable {
            detail: format!("ChangeNOW answered {status} without an error code"),
        };
    };
    match refusal.error.as_str() {
        "not_valid_address" => DeskError::AddressRefused,
        // ChangeNOW also says `pair_is_inactive` for an amount below the real minimum; the
        // caller checks the range before telling the user the pair is off (ChangeNOW's minimums differ between its endpoints).
        "pair_is_inactive" | "fixed_rate_not_enabled" => DeskError::PairUnsupported,
        "deposit_too_small" | "less_min_amount" | "max_amount_exceeded" => DeskError::OutOfRange {
            min: None,
            max: None,
        },
        code => DeskError::Refused {
            detail: format!("ChangeNOW refused the request (`{}`)", printable(code)),
        },
    }
}

/// A JSON number as an amount cut to `precision` (rounded as the figure's use asks:
/// docs/providers.md, "Amounts"), or `Unavailable` when it is not a decimal.
fn number(value: &wire::Number, precision: u8, rounding: Rounding) -> Result<Amount, DeskError> {
    decimal(value.get(), precision, rounding)
        .ok_or_else(|| Unknown(format!("amount `{}`", printable(value.get()))).into())
}

/// An optional string that may be empty for "none".
fn present(text: Option<String>) -> Option<String> {
    text.filter(|t| !t.is_empty())
}

/// An upstream code as it may appear in our messages: short, plain ASCII.
fn printable(code: &str) -> String {
    code.chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
        .take(48)
        .collect()
}

#[cfg(test)]
mod tests;
