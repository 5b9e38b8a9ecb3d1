//! FixedFloat API v2 (docs/providers.md, "The desks"): every method is `POST /api/v2/{method}` with a
//! JSON body signed by `X-API-SIGN` = lowercase hex HMAC-SHA256 of the exact body bytes under the
//! API secret, answered `{code, msg, data}`. Here: the request bodies and their signature, and
//! the answers mapped onto swapd's desk model by pure functions; [`FixedFloat`] sends them.

mod client;
mod desk;
pub mod wire;

pub use client::{BASE_URL, FixedFloat, OrderRef};
pub use desk::{FixedFloatDesk, ID};

use std::time::Duration;

use hmac::{Hmac, Mac};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use sha2::Sha256;
use swapd_core::address::Network;
use swapd_core::amount::Amount;
use swapd_core::amount::Rounding::{self, Down, Up};
use swapd_core::amount::decimal;
use swapd_core::market::currencies::{CURRENCIES, CurrencyDef};
use swapd_core::market::{Direction, RateType};
use swapd_core::offchain::desk::{
    DeskDeposit, DeskError, DeskExchange, DeskLimits, DeskQuote, DeskStatus, EmergencyCase,
    OpenedExchange,
};

use crate::{Catalog, Unknown};

/// FixedFloat's network names for swapd's networks, as its currencies list them.
const NETWORKS: &[(&str, Network)] = &[
    ("BTC", Network::Bitcoin),
    ("LTC", Network::Litecoin),
    ("ETH", Network::Ethereum),
    ("BSC", Network::BnbChain),
    ("MATIC", Network::Polygon),
    ("POL", Network::Polygon),
    ("BASE", Network::Base),
    ("ARBITRUM", Network::Arbitrum),
    ("SOL", Network::Solana),
    ("TRX", Network::Tron),
    ("XRP", Network::Xrp),
];

/// `X-API-SIGN` for `body`: lowercase hex HMAC-SHA256 of its exact bytes under `secret`.
pub fn signature(secret: &str, body: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
    mac.update(body.as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

/// The swapd currency a FixedFloat currency is: its `coin` is swapd's symbol on its `network`.
/// FixedFloat names no contracts, so an asset is known by the ticker and network FixedFloat
/// gives it; `None` for a network swapd does not know or an asset it does not list there.
pub fn currency(wire: &wire::Currency) -> Option<&'static CurrencyDef> {
    let network = NETWORKS
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(&wire.network))
        .map(|(_, network)| *network)?;
    CURRENCIES
        .iter()
        .find(|def| def.network == network && def.symbol.eq_ignore_ascii_case(&wire.coin))
}

/// The `ccies` answer as swapd's catalog (FixedFloat quotes fixed and float rates for all).
pub fn catalog(body: &[u8]) -> Result<Catalog, DeskError> {
    let listed: Vec<wire::Currency> = data(body)?;
    let mut catalog = Catalog::default();
    for item in &listed {
        match currency(item) {
            Some(def) => catalog.add(def, &item.code, flag(&item.send), flag(&item.recv), true),
            None => catalog.unknown += 1,
        }
    }
    Ok(catalog)
}

/// The operator's referral at FixedFloat (docs/fees.md): its `refcode`, and the commission
/// (`afftax`, a percent) FixedFloat takes out of the output for it, in bps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Referral<'a> {
    pub refcode: &'a str,
    pub afftax_bps: u32,
}

/// `price` request body. `amount` is of the side `direction` names.
pub fn price_body(
    rate: RateType,
    from_code: &str,
    to_code: &str,
    direction: Direction,
    amount: Amount,
    referral: Option<Referral<'_>>,
) -> String {
    body(&PriceBody::new(
        rate, from_code, to_code, direction, amount, referral,
    ))
}

/// What `create` opens: FixedFloat's codes of the pair (the catalog's `desk_code`), the amount
/// of the side `direction` names, and where the payout goes (with its memo on memo networks).
#[derive(Debug, Clone, Copy)]
pub struct CreateOrder<'a> {
    pub rate: RateType,
    pub from_code: &'a str,
    pub to_code: &'a str,
    pub direction: Direction,
    pub amount: Amount,
    pub to_address: &'a str,
    pub tag: Option<&'a str>,
    /// The referral the price was quoted with, so the order gets the same price.
    pub referral: Option<Referral<'a>>,
}

/// `create` request body.
pub fn create_body(order: &CreateOrder<'_>) -> String {
    body(&CreateBody {
        price: PriceBody::new(
            order.rate,
            order.from_code,
            order.to_code,
            order.direction,
            order.amount,
            order.referral,
        ),
        to_address: order.to_address,
        tag: order.tag,
    })
}

/// `order` request body.
pub fn order_body(id: &str, token: &str) -> String {
    body(&OrderBody { id, token })
}

/// The customer's choice in an emergency: exchange at today's rate, or refund to an address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice<'a> {
    Exchange,
    Refund {
        address: &'a str,
        tag: Option<&'a str>,
    },
}

/// `emergency` request body.
pub fn emergency_body(id: &str, token: &str, choice: Choice<'_>) -> String {
    let (choice, address, tag) = match choice {
        Choice::Exchange => ("EXCHANGE", None, None),
        Choice::Refund { address, tag } => ("REFUND", Some(address), tag),
    };
    body(&EmergencyBody {
        id,
        token,
        choice,
        address,
        tag,
    })
}

/// `setEmail` request body.
pub fn set_email_body(id: &str, token: &str, email: &str) -> String {
    body(&EmailBody { id, token, email })
}

/// A `price` answer. A price that names a problem (`errors`) is not a price: limits become
/// `OutOfRange` with FixedFloat's bounds, anything else (maintenance, offline, no reserve)
/// `PairUnsupported`.
pub fn quote(
    body: &[u8],
    from: &CurrencyDef,
    to: &CurrencyDef,
) -> Result<(DeskQuote, DeskLimits), DeskError> {
    let price: wire::Price = data(body)?;
    let bound = |value: &Option<wire::Scalar>, rounding| {
        value
            .as_deref()
            .map(|v| amount(v, from.precision, rounding))
            .transpose()
    };
    let limits = DeskLimits {
        min: bound(&price.from.min, Up)?.unwrap_or_else(|| Amount::zero(from.precision)),
        max: bound(&price.from.max, Down)?,
    };
    if price.errors.iter().any(|e| e.starts_with("LIMIT_")) {
        return Err(DeskError::OutOfRange {
            min: Some(limits.min),
            max: limits.max,
        });
    }
    if !price.errors.is_empty() {
        return Err(DeskError::PairUnsupported);
    }
    let quote = DeskQuote {
        from_amount: amount(&price.from.amount, from.precision, Up)?,
        to_amount: amount(&price.to.amount, to.precision, Down)?,
        rate_lock: None,
        network_fee: None,
    };
    Ok((quote, limits))
}

/// The `create` answer: the order and the token that authorizes acting on it.
pub fn opened(body: &[u8]) -> Result<OpenedExchange, DeskError> {
    let order: wire::Order = data(body)?;
    let token = order
        .token
        .filter(|t| !t.is_empty())
        .ok_or_else(|| DeskError::from(Unknown("order without its token".into())))?;
    Ok(OpenedExchange {
        deposit_address: order.from.address.unwrap_or_default(),
        deposit_tag: order.from.tag.as_deref().and_then(text),
        access_token: Some(token),
        id: order.id,
    })
}

/// Where an order stands, from its `status` and, in an emergency, the choice made.
pub fn status(order: &wire::Order) -> Result<DeskStatus, Unknown> {
    let refunded = present(&order.back.tx.id);
    Ok(match order.status.as_str() {
        "NEW" => DeskStatus::AwaitingDeposit,
        "PENDING" => DeskStatus::Confirming,
        "EXCHANGE" => DeskStatus::Exchanging,
        "WITHDRAW" => DeskStatus::Sending,
        "DONE" if refunded => DeskStatus::Refunded,
        "DONE" => DeskStatus::Finished,
        "EXPIRED" => DeskStatus::Expired,
        "EMERGENCY" => match order.emergency.choice.as_str() {
            "NONE" => DeskStatus::NeedsChoice(emergency_cases(&order.emergency)?),
            "REFUND" if refunded => DeskStatus::Refunded,
            "REFUND" => DeskStatus::Refunding,
            "EXCHANGE" => DeskStatus::Exchanging,
            other => return Err(Unknown(format!("emergency choice `{other}`"))),
        },
        other => return Err(Unknown(format!("order status `{other}`"))),
    })
}

fn emergency_cases(emergency: &wire::Emergency) -> Result<Vec<EmergencyCase>, Unknown> {
    let mut cases = emergency
        .status
        .iter()
        .map(|case| match case.as_str() {
            "EXPIRED" => Ok(EmergencyCase::Late),
            "LESS" => Ok(EmergencyCase::Less),
            "MORE" => Ok(EmergencyCase::More),
            "LIMIT" => Ok(EmergencyCase::OutOfLimits),
            other => Err(Unknown(format!("emergency case `{other}`"))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    if emergency.repeat.as_deref().is_some_and(flag) {
        cases.push(EmergencyCase::Repeated);
    }
    Ok(cases)
}

/// An `order` (or `create`) answer for an exchange from `from` to `to`.
pub fn exchange(
    body: &[u8],
    from: &CurrencyDef,
    to: &CurrencyDef,
) -> Result<DeskExchange, DeskError> {
    let order: wire::Order = data(body)?;
    let status = status(&order)?;
    let optional = |value: &Option<wire::Scalar>, precision: u8, rounding| {
        value
            .as_deref()
            .map(|v| amount(v, precision, rounding))
            .transpose()
    };
    let deposits = match order.from.tx.id.clone().filter(|id| !id.is_empty()) {
        None => Vec::new(),
        Some(tx_id) => vec![DeskDeposit {
            tx_id,
            amount: optional(&order.from.tx.amount, from.precision, Down)?,
            confirmations: order
                .from
                .tx
                .confirmations
                .as_deref()
                .and_then(count)
                .unwrap_or(0),
            required_confirmations: order.from.req_confirmations.as_deref().and_then(count),
            ..DeskDeposit::default()
        }],
    };
    Ok(DeskExchange {
        status,
        deposit_address: order.from.address.clone().unwrap_or_default(),
        deposit_tag: order.from.tag.as_deref().and_then(text),
        expected_from: optional(&order.from.amount, from.precision, Up)?,
        expected_to: optional(&order.to.amount, to.precision, Down)?,
        deposits,
        payout_tx: order.to.tx.id.clone().filter(|id| !id.is_empty()),
        payout_amount: optional(&order.to.tx.amount, to.precision, Down)?,
        refund_tx: order.back.tx.id.clone().filter(|id| !id.is_empty()),
        refund_amount: optional(&order.back.tx.amount, from.precision, Down)?,
        deposit_deadline: order
            .time
            .expiration
            .as_deref()
            .and_then(|seconds| seconds.get().trim_matches('"').parse().ok()),
        failure_reason: None,
        commission: None,
        id: order.id,
    })
}

/// An `emergency` or `setEmail` answer: `data` is whether FixedFloat took it.
pub fn accepted(body: &[u8]) -> Result<bool, DeskError> {
    let taken: wire::Scalar = data(body)?;
    Ok(flag(&taken))
}

/// A failed call by its HTTP status (the envelope's `code` is read by every answer's own
/// function). FixedFloat's own words are not passed on.
pub fn error(status: u16, retry_after: Option<Duration>) -> DeskError {
    match status {
        401 | 403 => DeskError::Unauthorized,
        404 => DeskError::NotFound,
        429 => DeskError::RateLimited { retry_after },
        _ => DeskError::Unavailable {
            detail: format!("FixedFloat answered {status}"),
        },
    }
}

/// The `data` of a successful envelope; a non-zero `code` is a refusal.
fn data<T: DeserializeOwned>(body: &[u8]) -> Result<T, DeskError> {
    let envelope: wire::Envelope<T> = crate::parse_json(body)?;
    match count(&envelope.code) {
        Some(0) => envelope
            .data
            .ok_or_else(|| Unknown("answer without `data`".into()).into()),
        Some(code) => Err(DeskError::Refused {
            detail: format!("FixedFloat refused the request (code {code})"),
        }),
        None => Err(Unknown("envelope code".into()).into()),
    }
}

/// `true`, `1`, `"1"`, `"true"` are yes; anything else no.
fn flag(value: &RawValue) -> bool {
    matches!(value.get(), "true" | "1" | "\"1\"" | "\"true\"")
}

/// A non-negative integer written as a number or a string.
fn count(value: &RawValue) -> Option<u32> {
    value.get().trim_matches('"').parse().ok()
}

/// A string that may be empty, a number, or `null` for "none".
fn text(value: &RawValue) -> Option<String> {
    match serde_json::from_str::<serde_json::Value>(value.get()).ok()? {
        serde_json::Value::String(text) if !text.is_empty() => Some(text),
        serde_json::Value::Number(number) => Some(number.to_string()),
        _ => None,
    }
}

fn present(id: &Option<String>) -> bool {
    id.as_deref().is_some_and(|id| !id.is_empty())
}

/// A decimal written as a string (`"0.50000000"`) or a number, cut to `precision` rounded as
/// the figure's use asks (docs/providers.md, "Amounts").
fn amount(value: &RawValue, precision: u8, rounding: Rounding) -> Result<Amount, DeskError> {
    decimal(value.get().trim_matches('"'), precision, rounding)
        .ok_or_else(|| Unknown("amount".into()).into())
}

fn rate_name(rate: RateType) -> &'static str {
    match rate {
        RateType::Fixed => "fixed",
        RateType::Float => "float",
    }
}

fn direction_name(direction: Direction) -> &'static str {
    match direction {
        Direction::From => "from",
        Direction::To => "to",
    }
}

/// An amount as a JSON number with exactly its digits.
fn number(amount: Amount) -> Box<RawValue> {
    RawValue::from_string(amount.to_string()).expect("an amount is a JSON number")
}

/// Compact JSON in field order: the exact bytes that are signed and sent.
fn body(value: &impl Serialize) -> String {
    serde_json::to_string(value).expect("request bodies serialize")
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PriceBody<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    from_ccy: &'a str,
    to_ccy: &'a str,
    direction: &'a str,
    amount: Box<RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    refcode: Option<&'a str>,
    /// A percent, as FixedFloat reads it (`0.5` is 50 bps).
    #[serde(skip_serializing_if = "Option::is_none")]
    afftax: Option<Box<RawValue>>,
}

impl<'a> PriceBody<'a> {
    fn new(
        rate: RateType,
        from_ccy: &'a str,
        to_ccy: &'a str,
        direction: Direction,
        amount: Amount,
        referral: Option<Referral<'a>>,
    ) -> Self {
        let percent = |bps: u32| {
            let text = format!("{}.{:02}", bps / 100, bps % 100);
            number(Amount::parse(&text, 2).expect("digits and a point"))
        };
        Self {
            kind: rate_name(rate),
            from_ccy,
            to_ccy,
            direction: direction_name(direction),
            amount: number(amount),
            refcode: referral.map(|r| r.refcode),
            afftax: referral.map(|r| percent(r.afftax_bps)),
        }
    }
}

/// `price`'s fields, then where the payout goes.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CreateBody<'a> {
    #[serde(flatten)]
    price: PriceBody<'a>,
    to_address: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    tag: Option<&'a str>,
}

#[derive(Serialize)]
struct OrderBody<'a> {
    id: &'a str,
    token: &'a str,
}

#[derive(Serialize)]
struct EmergencyBody<'a> {
    id: &'a str,
    token: &'a str,
    choice: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    address: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tag: Option<&'a str>,
}

#[derive(Serialize)]
struct EmailBody<'a> {
    id: &'a str,
    token: &'a str,
    email: &'a str,
}

#[cfg(test)]
mod tests;
