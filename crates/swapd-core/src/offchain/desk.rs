//! The offchain desk port: a desk opens an exchange for an order, reports where it stands, and
//! acts on the customer's choices. The order engine follows a desk through [`Desk`] alone, so
//! the sandbox desks and the live ones (ChangeNOW, FixedFloat) run the same code path
//! (docs/providers.md). Adapters map their wire formats onto these types with pure functions;
//! `offchain::follow` turns what a desk reports into swapd's order statuses and events.

use std::time::Duration;

use async_trait::async_trait;

use crate::amount::Amount;
use crate::market::RateType;
use crate::market::currencies::CurrencyDef;
use crate::market::provider::Provider;
use crate::offchain::order::{Choice, EmergencyReason};

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
    /// goes to `refund_to`. Repeating the answer already given changes nothing. A desk without
    /// this action ([`DeskActions::choose`]) answers [`DeskError::ActionUnsupported`].
    async fn choose(
        &self,
        exchange: &ExchangeRef<'_>,
        choice: Choice,
        refund_to: Option<&Destination>,
    ) -> Result<(), DeskError>;

    /// Sends a deposit that was not exchanged back to `refund_to`. A desk without this action
    /// ([`DeskActions::refund`]) answers [`DeskError::ActionUnsupported`].
    async fn refund(
        &self,
        exchange: &ExchangeRef<'_>,
        refund_to: &Destination,
    ) -> Result<(), DeskError>;
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
