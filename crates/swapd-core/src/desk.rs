//! The offchain desk port: a desk opens an exchange for an order, reports where it stands, and
//! acts on the customer's choices. The order engine follows a desk through [`Desk`] alone, so
//! the sandbox desks and the live ones (ChangeNOW, FixedFloat) run the same code path
//! (docs/providers.md). Adapters map their wire formats onto these types with pure functions;
//! `crate::follow` turns what a desk reports into swapd's order statuses and events.

use std::time::Duration;

use async_trait::async_trait;

use crate::amount::{Amount, Rounding};
use crate::market::RateType;
use crate::market::currencies::CurrencyDef;
use crate::orders::{Choice, EmergencyReason};
use crate::provider::Provider;

/// An offchain exchange desk: a [`Provider`] (currencies, limits, quotes) that also opens
/// exchanges and follows them to their end.
#[async_trait]
pub trait Desk: Provider {
    /// What the desk can do for an exchange beyond following it.
    fn actions(&self) -> DeskActions;

    /// Whether [`Desk::open`] writes at an upstream service, so that a retry must not open
    /// again while the first attempt runs (docs/authentication.md, "Idempotency"). A desk that
    /// opens from its reference alone, writing nothing (the sandbox's), says no.
    fn opens_upstream(&self) -> bool {
        true
    }

    /// Opens the exchange for `request`. The desk's exchange is the order's: the user deposits
    /// to the address it answers, and the desk pays out.
    async fn open(&self, request: &ExchangeRequest) -> Result<OpenedExchange, DeskError>;

    /// Where the exchange stands now.
    async fn exchange(&self, exchange: &ExchangeRef<'_>) -> Result<DeskExchange, DeskError>;

    /// Passes the customer's answer to an emergency ([`DeskStatus::NeedsChoice`]) on; a refund
    /// goes to `refund_to`. Repeating the answer already given changes nothing.
    async fn choose(
        &self,
        exchange: &ExchangeRef<'_>,
        choice: Choice,
        refund_to: Option<&Destination>,
    ) -> Result<(), DeskError> {
        let _ = (exchange, choice, refund_to);
        Err(DeskError::ActionUnsupported)
    }

    /// Sends a deposit that was not exchanged back to `refund_to`.
    async fn refund(
        &self,
        exchange: &ExchangeRef<'_>,
        refund_to: &Destination,
    ) -> Result<(), DeskError> {
        let _ = (exchange, refund_to);
        Err(DeskError::ActionUnsupported)
    }
}

/// The longest a call to a desk (open an exchange, read it, pass an answer on) may take in
/// all. Longer than a quote's deadline: a desk's create must not be cut short (its answer would
/// be lost); each live desk also bounds every HTTP call by its own `timeout_ms`.
pub const CALL_DEADLINE: Duration = Duration::from_secs(30);

/// The actions a desk takes through its API; an action it lacks is refused before anything
/// changes (409 `desk_action_unsupported`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DeskActions {
    /// Answers an emergency with EXCHANGE or REFUND.
    pub choose: bool,
    /// Refunds a deposit outside an emergency.
    pub refund: bool,
}

/// An address with its memo, where a network uses one.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Destination {
    pub address: String,
    pub tag: Option<String>,
}

/// An exchange to open: the user deposits `from_amount` of `from` to the address the desk
/// answers; the desk pays `to` out to `payout`.
#[derive(Debug, Clone)]
pub struct ExchangeRequest {
    /// swapd's reference (the order id). The same reference always names the same exchange, so
    /// a create retried after a crash never opens a second one.
    pub reference: String,
    pub from: &'static CurrencyDef,
    pub to: &'static CurrencyDef,
    pub rate_type: RateType,
    pub from_amount: Amount,
    pub to_amount: Amount,
    /// The desk's handle on the quoted fixed rate, when it has one.
    pub rate_lock: Option<String>,
    pub payout: Destination,
    pub refund: Option<Destination>,
    /// Until when (Unix milliseconds) the user may deposit.
    pub deposit_deadline_ms: i64,
    pub now_ms: i64,
}

/// The sealing context of the desk access token stored with order `reference`: a token sealed
/// for one order opens for no other.
pub fn token_context(reference: &str) -> String {
    format!("desk access token {reference}")
}

/// An exchange the engine follows: the desk's id, swapd's reference, the pair (amounts are read
/// at its precisions) and the desk's access token.
#[derive(Debug, Clone, Copy)]
pub struct ExchangeRef<'a> {
    pub id: &'a str,
    pub reference: &'a str,
    pub from: &'static CurrencyDef,
    pub to: &'static CurrencyDef,
    pub access_token: Option<&'a str>,
    pub now_ms: i64,
}

/// Where an exchange stands at its desk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeskStatus {
    /// Opened; no deposit seen yet.
    AwaitingDeposit,
    /// A deposit is seen and gathering confirmations.
    Confirming,
    /// The deposit is confirmed and being exchanged.
    Exchanging,
    /// The payout is being sent.
    Sending,
    /// Paid out (the payout transaction is known).
    Finished,
    /// The desk is sending the deposit back.
    Refunding,
    /// The deposit went back (the refund transaction is known when the desk says it).
    Refunded,
    /// No deposit arrived in time.
    Expired,
    /// The desk holds the exchange until the customer chooses: exchange anyway or refund
    /// (FixedFloat's `EMERGENCY`).
    NeedsChoice(Vec<EmergencyCase>),
    /// The desk holds the exchange for its own checks (ChangeNOW's `verifying`: the customer is
    /// asked for KYC through the desk's support).
    OnHold,
    /// The desk gave up; its support is involved.
    Failed,
}

impl DeskStatus {
    /// The desk holds a deposit it has not exchanged: one a refund can send back.
    pub fn holds_deposit(&self) -> bool {
        matches!(
            self,
            DeskStatus::Confirming | DeskStatus::OnHold | DeskStatus::NeedsChoice(_)
        )
    }

    /// Nothing further will happen at the desk.
    pub fn is_final(&self) -> bool {
        matches!(
            self,
            DeskStatus::Finished | DeskStatus::Refunded | DeskStatus::Expired | DeskStatus::Failed
        )
    }
}

/// Why a desk asks the customer to choose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmergencyCase {
    /// The deposit arrived after the order expired.
    Late,
    /// Less than the order expects.
    Less,
    /// More than the order expects.
    More,
    /// Outside the desk's limits.
    OutOfLimits,
    /// A second deposit to the same address.
    Repeated,
}

impl EmergencyCase {
    /// The reason swapd shows for it.
    pub fn reason(self) -> EmergencyReason {
        match self {
            EmergencyCase::Late => EmergencyReason::Expired,
            EmergencyCase::Less => EmergencyReason::Less,
            // A second deposit is more than the order asked for.
            EmergencyCase::More | EmergencyCase::Repeated => EmergencyReason::More,
            EmergencyCase::OutOfLimits => EmergencyReason::Limit,
        }
    }
}

/// A deposit the desk has seen.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeskDeposit {
    pub tx_id: String,
    pub amount: Option<Amount>,
    pub confirmations: u32,
    /// Confirmations the desk waits for, when it says.
    pub required_confirmations: Option<u32>,
    /// When the desk saw it (Unix milliseconds), when it says.
    pub seen_at_ms: Option<i64>,
    /// For a deposit after the first: the transfer that sent it back, or why it could not be.
    pub refund_tx: Option<String>,
    pub refund_error: Option<String>,
}

/// An exchange as its desk reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeskExchange {
    /// The desk's id for it.
    pub id: String,
    pub status: DeskStatus,
    pub deposit_address: String,
    /// The memo the deposit must carry, on networks that use one.
    pub deposit_tag: Option<String>,
    /// What the user is to send, and what the desk expects to pay out.
    pub expected_from: Option<Amount>,
    pub expected_to: Option<Amount>,
    /// Deposits seen, first first: the first is the order's, later ones go back.
    pub deposits: Vec<DeskDeposit>,
    pub payout_tx: Option<String>,
    /// What was paid out, when known.
    pub payout_amount: Option<Amount>,
    pub refund_tx: Option<String>,
    pub refund_amount: Option<Amount>,
    /// Until when (Unix seconds) a deposit is expected, when the desk says.
    pub deposit_deadline: Option<i64>,
    /// Why it failed, in swapd's words, when it did.
    pub failure_reason: Option<String>,
    /// What the desk reports it took for the operator's account (ChangeNOW's
    /// `partnerInfo.commission`), once it has: the order's realized service fee.
    pub commission: Option<DeskCommission>,
}

/// A desk's commission for the operator: the amount and the currency it was taken in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeskCommission {
    pub amount: Amount,
    pub currency: &'static CurrencyDef,
}

/// A desk's price for an exchange.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeskQuote {
    pub from_amount: Amount,
    pub to_amount: Amount,
    /// The desk's handle on a fixed rate, passed back when the exchange is opened.
    pub rate_lock: Option<String>,
    /// The payout network fee the desk deducts, in the output currency, when it says.
    pub network_fee: Option<Amount>,
}

/// What a desk accepts as input for a pair, in the input currency.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeskLimits {
    pub min: Amount,
    /// `None`: no maximum.
    pub max: Option<Amount>,
}

/// An exchange just opened: where the user deposits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenedExchange {
    /// The desk's id for it.
    pub id: String,
    pub deposit_address: String,
    pub deposit_tag: Option<String>,
    /// Anything else the desk needs to act on the exchange later (FixedFloat's order token).
    /// A secret: stored sealed.
    pub access_token: Option<String>,
}

/// Why a call to a desk failed, in terms a caller can act on. Raw upstream text stays in the
/// adapter's logs; `detail` is swapd's own wording.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeskError {
    /// The desk refused our credentials: an operator must fix the configuration.
    #[error("the desk refused swapd's credentials")]
    Unauthorized,
    /// Too many requests: wait `retry_after` when the desk says.
    #[error("the desk is rate limiting swapd")]
    RateLimited { retry_after: Option<Duration> },
    /// The desk is down, timed out, or answered something unusable; retry later.
    #[error("the desk is unavailable: {detail}")]
    Unavailable { detail: String },
    /// The desk does not trade this pair (or this kind of rate) now.
    #[error("the desk does not trade this pair now")]
    PairUnsupported,
    /// The amount is outside the desk's limits (in the input currency, when it says).
    #[error("the amount is outside the desk's limits")]
    OutOfRange {
        min: Option<Amount>,
        max: Option<Amount>,
    },
    /// The desk refused an address (payout or refund).
    #[error("the desk refused the address")]
    AddressRefused,
    /// The desk knows no such exchange.
    #[error("the desk knows no such exchange")]
    NotFound,
    /// The request was refused for a reason swapd does not model.
    #[error("the desk refused the request: {detail}")]
    Refused { detail: String },
    /// The desk has no API for this action (see [`DeskActions`]).
    #[error("the desk cannot do this through its API")]
    ActionUnsupported,
}

impl DeskError {
    /// Worth retrying the same call later.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            DeskError::RateLimited { .. } | DeskError::Unavailable { .. }
        )
    }
}

/// A decimal as written in a JSON number or string (`0.1`, `4312.55`, `1e-7`, `2.5E+3`,
/// `7.46249999999999999999`), as an [`Amount`] of `precision` fraction digits: every digit is
/// read exactly (never through a float), then the value is cut to `precision` rounded as asked,
/// so a figure swapd promises is never more than the desk's (an estimate rounds down, a
/// required deposit up). `None` for anything that is not a non-negative decimal, or whose
/// exponent or whole part is out of any amount's range.
pub fn decimal(text: &str, precision: u8, rounding: Rounding) -> Option<Amount> {
    /// Far beyond any amount's digits, small enough that the digit string stays short.
    const MAX_EXPONENT: i32 = 64;
    let text = text.trim();
    let (mantissa, exponent) = match text.split_once(['e', 'E']) {
        Some((mantissa, exponent)) => (mantissa, exponent.parse::<i32>().ok()?),
        None => (text, 0),
    };
    if exponent.abs() > MAX_EXPONENT {
        return None;
    }
    let (whole, fraction) = match mantissa.split_once('.') {
        Some((_, "")) => return None,
        Some(parts) => parts,
        None => (mantissa, ""),
    };
    let digits_only = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits_only(whole) || !digits_only(fraction) {
        return None;
    }
    // Move the point `exponent` places: all digits, and where the point goes among them.
    let digits = format!("{whole}{fraction}");
    let point = i64::try_from(whole.len()).ok()? + i64::from(exponent);
    let plain = if point <= 0 {
        format!("0.{}{digits}", "0".repeat(usize::try_from(-point).ok()?))
    } else {
        let point = usize::try_from(point).ok()?;
        if point >= digits.len() {
            format!("{digits}{}", "0".repeat(point - digits.len()))
        } else {
            format!("{}.{}", &digits[..point], &digits[point..])
        }
    };
    let plain = trim_zeros(&plain);
    let (whole, fraction) = plain.split_once('.').unwrap_or((&plain, ""));
    let kept = fraction.len().min(usize::from(precision));
    let (kept_fraction, dropped) = fraction.split_at(kept);
    let cut = if kept_fraction.is_empty() {
        whole.to_owned()
    } else {
        format!("{whole}.{kept_fraction}")
    };
    let amount = Amount::parse(&cut, precision).ok()?;
    let more = dropped.bytes().any(|b| b != b'0');
    Some(match rounding {
        Rounding::Up if more => {
            amount + Amount::from_units(alloy_primitives::U256::from(1u8), precision)
        }
        _ => amount,
    })
}

/// `007.500` → `7.5`, `0.000` → `0`: the digits [`Amount::parse`] reads.
fn trim_zeros(plain: &str) -> String {
    let (whole, fraction) = plain.split_once('.').unwrap_or((plain, ""));
    let whole = whole.trim_start_matches('0');
    let fraction = fraction.trim_end_matches('0');
    let whole = if whole.is_empty() { "0" } else { whole };
    if fraction.is_empty() {
        whole.to_owned()
    } else {
        format!("{whole}.{fraction}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(text: &str, precision: u8) -> Option<String> {
        decimal(text, precision, Rounding::Down).map(|amount| amount.to_string())
    }

    fn up(text: &str, precision: u8) -> Option<String> {
        decimal(text, precision, Rounding::Up).map(|amount| amount.to_string())
    }

    #[test]
    fn decimals_are_read_exactly_from_their_text() {
        assert_eq!(shown("0.1", 8).as_deref(), Some("0.1"));
        assert_eq!(shown("4312.55", 6).as_deref(), Some("4312.55"));
        assert_eq!(shown("0.50000000", 8).as_deref(), Some("0.5"));
        assert_eq!(shown("1e-7", 8).as_deref(), Some("0.0000001"));
        assert_eq!(shown("2.5E+3", 2).as_deref(), Some("2500"));
        assert_eq!(shown("12", 0).as_deref(), Some("12"));
        // 0.1 + 0.2 as a float is 0.30000000000000004; the text is what counts.
        assert_eq!(shown("0.30000000000000004", 8).as_deref(), Some("0.3"));
        // More digits than the currency has: an estimate rounds down, a requirement up.
        assert_eq!(shown("1.999999999", 8).as_deref(), Some("1.99999999"));
        assert_eq!(up("1.999999999", 8).as_deref(), Some("2"));
        assert_eq!(up("1.99999999", 8).as_deref(), Some("1.99999999"), "exact");
        assert_eq!(shown("0", 8).as_deref(), Some("0"));
    }

    #[test]
    fn float_noise_and_tiny_exponents_beyond_eighteen_digits_are_cut_not_refused() {
        // ChangeNOW's JSON numbers as its serializer writes them.
        assert_eq!(
            shown("7.46249999999999999999", 8).as_deref(),
            Some("7.46249999")
        );
        assert_eq!(up("7.46249999999999999999", 8).as_deref(), Some("7.4625"));
        assert_eq!(
            shown("5.123456789012345e-05", 8).as_deref(),
            Some("0.00005123")
        );
        assert_eq!(
            up("5.123456789012345e-05", 8).as_deref(),
            Some("0.00005124")
        );
        assert_eq!(
            shown("5.123456789012345e-05", 18).as_deref(),
            Some("0.000051234567890123")
        );
        assert_eq!(shown("1e-19", 18).as_deref(), Some("0"));
        assert_eq!(up("1e-19", 18).as_deref(), Some("0.000000000000000001"));
        assert_eq!(
            shown("4312.549871000000000000001", 6).as_deref(),
            Some("4312.549871")
        );
    }

    #[test]
    fn anything_else_is_not_a_decimal() {
        for text in [
            "",
            "-1",
            "1.",
            ".5",
            "abc",
            "1e",
            "1e9999999999",
            "1e65",
            "0x10",
            "1,5",
            "NaN",
        ] {
            assert_eq!(shown(text, 8), None, "{text}");
        }
    }

    #[test]
    fn rounding_down_never_exceeds_and_up_never_falls_short_of_the_text() {
        use proptest::prelude::*;
        proptest!(|(whole in 0u64..1_000_000, fraction in "[0-9]{0,30}", precision in 0u8..=18)| {
            let text = if fraction.is_empty() { whole.to_string() } else { format!("{whole}.{fraction}") };
            let down = decimal(&text, precision, Rounding::Down).unwrap();
            let up = decimal(&text, precision, Rounding::Up).unwrap();
            // Compare at 18 + 30 digits of scale as strings of the exact value.
            let exact = exact_units(&text, 48);
            prop_assert!(exact_units(&down.to_string(), 48) <= exact);
            prop_assert!(exact_units(&up.to_string(), 48) >= exact);
            let step = up.checked_sub(down).unwrap();
            prop_assert!(step.is_zero() || step == Amount::from_units(alloy_primitives::U256::from(1u8), precision));
        });
    }

    /// `text` scaled by 10^scale, as an integer (for comparisons beyond 18 decimals).
    fn exact_units(text: &str, scale: usize) -> alloy_primitives::U256 {
        let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
        let digits = format!("{whole}{fraction:0<scale$}");
        alloy_primitives::U256::from_str_radix(&digits, 10).unwrap()
    }
}
