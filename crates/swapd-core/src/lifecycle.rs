//! The order lifecycle as pure decisions: given an order, what the chain shows for its deposit
//! address, and the time, what happens next. The worker carries the decisions out: it saves
//! [`Next::Save`] with a compare-and-set, performs effects (exchange pricing, payout, refund)
//! under deterministic idempotency keys, and feeds their results back through the `after_*`
//! functions. A crash between an effect and its save repeats the effect with the same key, which
//! the other side answers with the first result: nothing is paid twice.

use crate::address::{Address, Network};
use crate::amount::Amount;
use crate::desk::OpenedExchange;
use crate::market::currencies::CurrencyDef;
use crate::market::{Direction, RateType, pricing};
use crate::notify::Email;
use crate::orders::{
    Choice, Deposit, DepositRules, DepositVerdict, Emergency, EventType, Order, OrderEvent,
    OrderLifetimes, OrderStatus, judge_deposit,
};
use crate::owner::Owner;

/// What opening an order takes: the accepted terms, the exchange the provider opened for them,
/// and what the user asked for.
#[derive(Debug, Clone)]
pub struct OpenOrder {
    pub id: String,
    pub owner: Owner,
    pub from: &'static CurrencyDef,
    pub to: &'static CurrencyDef,
    pub rate_type: RateType,
    pub direction: Direction,
    pub from_amount: Amount,
    pub to_amount: Amount,
    /// The accepted input range, in the input currency.
    pub min: Amount,
    /// `None`: no maximum.
    pub max: Option<Amount>,
    pub provider: String,
    /// The desk's exchange, its access token (if any) already sealed for storage.
    pub exchange: OpenedExchange,
    pub to_address: Address,
    pub to_tag: Option<String>,
    pub refund_address: Option<Address>,
    pub refund_tag: Option<String>,
    pub email: Option<Email>,
    pub affiliate_code: Option<String>,
    /// The quote's fees, locked with its terms.
    pub fees: Vec<crate::market::routes::RouteFee>,
    /// The hosted order page's link (with its token).
    pub page_url: Option<String>,
    /// The redeemed createToken's hash, when the terms came from one.
    pub create_token_hash: Option<String>,
    /// How long it waits for its deposit, by rate type.
    pub lifetimes: OrderLifetimes,
    pub now_ms: i64,
}

/// A new order whose exchange is open: created and awaiting its deposit in one step, at version
/// 2, with both events for the outbox, waiting for its deposit as long as `lifetimes` says
/// for its rate type.
pub fn open(input: OpenOrder) -> (Order, [OrderEvent; 2]) {
    let now_ms = input.now_ms;
    let lifetime = input.lifetimes.for_rate(input.rate_type);
    let mut order = Order {
        id: input.id,
        owner: input.owner.scope(),
        status: OrderStatus::New,
        version: 1,
        rate_type: input.rate_type,
        direction: input.direction,
        from_code: input.from.code.into(),
        to_code: input.to.code.into(),
        provider: input.provider,
        provider_ref: input.exchange.id,
        desk_token: input.exchange.access_token,
        rate: pricing::rate(input.from_amount, input.to_amount).to_string(),
        from_amount: input.from_amount.to_string(),
        to_amount: input.to_amount.to_string(),
        min: input.min.to_string(),
        max: input.max.map(|max| max.to_string()),
        deposit_address: input.exchange.deposit_address,
        deposit_tag: input.exchange.deposit_tag,
        to_address: input.to_address.into_string(),
        to_tag: input.to_tag,
        refund_address: input.refund_address.map(Address::into_string),
        refund_tag: input.refund_tag,
        deposits: Vec::new(),
        payout_tx: None,
        payout_amount: None,
        refund_tx: None,
        refund_amount: None,
        emergency: None,
        affiliate_code: input.affiliate_code,
        fees: input.fees,
        fees_realized: None,
        page_url: input.page_url,
        email: input.email.map(Email::into_string),
        create_token_hash: input.create_token_hash,
        created_at_ms: now_ms,
        updated_at_ms: now_ms,
        expires_at_ms: now_ms + lifetime,
        next_check_at_ms: Some(now_ms),
        desk_failures: 0,
        event_sequence: 0,
        failure_reason: None,
    };
    let created = order.record_event(EventType::Created, None);
    let mut awaiting = bump(&order, OrderStatus::AwaitingDeposit, now_ms);
    let awaiting_event = awaiting.record_event(EventType::AwaitingDeposit, Some(OrderStatus::New));
    (awaiting, [created, awaiting_event])
}

/// Status e-mails to `email` from now on. `None`: that address is already attached.
pub fn attach_email(order: &Order, email: &Email, now_ms: i64) -> Option<(Order, EventType)> {
    if order.email.as_deref() == Some(email.as_str()) {
        return None;
    }
    let mut updated = touch(order, now_ms);
    updated.email = Some(email.as_str().to_owned());
    Some((updated, EventType::Updated))
}

/// The order, due for the engine now (a sandbox deposit was just made to it). `None`: it is
/// already due.
pub fn wake(order: &Order, now_ms: i64) -> Option<Order> {
    if order.next_check_at_ms.is_some_and(|at| at <= now_ms) {
        return None;
    }
    let mut due = order.clone();
    due.next_check_at_ms = Some(now_ms);
    due.version += 1;
    Some(due)
}

/// The chain as the lifecycle sees it: deposits to an address, and transfers out. In sandbox
/// mode a simulated chain in the database; live, the provider's or an indexer's view.
#[async_trait::async_trait]
pub trait Chain: Send + Sync + 'static {
    /// Transfers seen to `address` (with `tag` where the network uses one), with their current
    /// confirmations.
    async fn deposits(
        &self,
        network: Network,
        address: &str,
        tag: Option<&str>,
        now_ms: i64,
    ) -> Result<Vec<ChainDeposit>, ChainError>;

    /// Sends `amount` of `currency` to `address` once per `key`: a repeated call with the same
    /// key returns the first transfer's id and sends nothing.
    async fn transfer(
        &self,
        key: &str,
        currency: &str,
        address: &str,
        tag: Option<&str>,
        amount: &str,
        now_ms: i64,
    ) -> Result<String, ChainError>;
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum ChainError {
    /// The chain (or the node, or the provider) did not answer; retrying later may succeed.
    #[error("chain unavailable: {0}")]
    Unavailable(String),
    /// The transfer was refused for good (e.g. a destination the chain will not pay).
    #[error("transfer rejected: {0}")]
    Rejected(String),
}

/// A transfer seen on the chain to an order's deposit address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainDeposit {
    pub tx_id: String,
    pub amount: Amount,
    pub confirmations: u32,
    pub seen_at_ms: i64,
}

#[derive(Debug, Clone, Copy)]
pub struct LifecycleRules {
    /// How long a user has to choose in an emergency before a refund (when possible).
    pub emergency_window_ms: i64,
    /// How often an order waiting on the chain is looked at again.
    pub poll_interval_ms: i64,
    /// How long an expired order is still watched for a late deposit.
    pub late_watch_ms: i64,
    pub tolerance_bps: u32,
}

impl Default for LifecycleRules {
    fn default() -> Self {
        Self {
            emergency_window_ms: 24 * 60 * 60 * 1000,
            poll_interval_ms: 5_000,
            late_watch_ms: 24 * 60 * 60 * 1000,
            tolerance_bps: crate::orders::DEFAULT_TOLERANCE_BPS,
        }
    }
}

/// Confirmations a deposit needs before it is exchanged.
pub fn required_confirmations(network: Network) -> u32 {
    match network {
        Network::Bitcoin | Network::Litecoin => 2,
        Network::Ethereum
        | Network::BnbChain
        | Network::Polygon
        | Network::Arbitrum
        | Network::Base => 3,
        Network::Solana | Network::Tron | Network::Xrp => 1,
    }
}

/// What to do with an order now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Store this version of the order with this event (`None`: only the next check moved).
    Save(Box<Order>, Option<EventType>),
    /// Price the exchange of the received amount; then call [`after_exchange`].
    Exchange { received: Amount },
    /// Send `amount` of the output to the payout address under `key`; then [`after_payout`].
    Payout { key: String, amount: String },
    /// Send `amount` of the input back to the refund address under `key`; then
    /// [`after_refund`].
    Refund { key: String, amount: String },
    /// Send a deposit after the first (`deposit_tx`) back to the refund address under `key`;
    /// then [`after_extra_refund`].
    RefundExtra {
        key: String,
        deposit_tx: String,
        amount: String,
    },
    /// Nothing to do until the order's next check.
    Idle,
}

/// Decides the next step for `order` at `now_ms`, given the deposits the chain shows.
/// `from_precision` is the input currency's precision; `from_network` its network.
pub fn next(
    order: &Order,
    chain: &[ChainDeposit],
    from_network: Network,
    from_precision: u8,
    rules: &LifecycleRules,
    now_ms: i64,
) -> Next {
    if let Some(next) = record_deposits(order, chain, from_network, now_ms) {
        return next;
    }
    if let Some(next) = refund_extra_deposit(order) {
        return next;
    }
    if order.status.is_terminal() {
        let waiting = order.refund_address.is_some()
            && order
                .deposits
                .iter()
                .skip(1)
                .any(|d| d.refund_tx.is_none() && d.refund_error.is_none());
        return if waiting {
            reschedule(order, now_ms + rules.poll_interval_ms)
        } else {
            stop_checking(order)
        };
    }
    let received = || first_deposit_amount(order, from_precision);
    match order.status {
        OrderStatus::New => Next::Idle,
        OrderStatus::AwaitingDeposit if now_ms >= order.expires_at_ms => {
            let mut expired = bump(order, OrderStatus::Expired, now_ms);
            expired.next_check_at_ms = Some(now_ms + rules.poll_interval_ms);
            Next::Save(Box::new(expired), Some(EventType::Expired))
        }
        OrderStatus::Confirming | OrderStatus::Expired if !order.deposits.is_empty() => {
            let first = &order.deposits[0];
            if first.confirmations < first.required_confirmations {
                return reschedule(order, now_ms + rules.poll_interval_ms);
            }
            // Once expired, any deposit is late, even one the chain dates earlier.
            let late =
                order.status == OrderStatus::Expired || first.seen_at_ms >= order.expires_at_ms;
            decide_on_deposit(order, received(), late, rules, now_ms)
        }
        OrderStatus::Emergency => emergency_step(order, rules, now_ms),
        OrderStatus::Exchanging => Next::Exchange {
            received: received(),
        },
        OrderStatus::Withdrawing => Next::Payout {
            key: format!("payout:{}", order.id),
            amount: order
                .payout_amount
                .clone()
                .expect("a withdrawing order has its payout amount"),
        },
        OrderStatus::Refunding => Next::Refund {
            key: format!("refund:{}", order.id),
            amount: order
                .refund_amount
                .clone()
                .expect("a refunding order has its refund amount"),
        },
        OrderStatus::AwaitingDeposit => reschedule(
            order,
            (now_ms + rules.poll_interval_ms).min(order.expires_at_ms),
        ),
        OrderStatus::Expired if now_ms < order.expires_at_ms + rules.late_watch_ms => {
            reschedule(order, now_ms + rules.poll_interval_ms)
        }
        OrderStatus::Expired => stop_checking(order),
        OrderStatus::Confirming
        | OrderStatus::Completed
        | OrderStatus::Refunded
        | OrderStatus::Failed => Next::Idle,
    }
}

/// Deposits after the first are not part of the order: each goes back once confirmed, when
/// there is a refund address.
fn refund_extra_deposit(order: &Order) -> Option<Next> {
    order.refund_address.as_ref()?;
    let extra = order
        .deposits
        .iter()
        .skip(1)
        .find(|d| d.refund_tx.is_none() && d.confirmations >= d.required_confirmations)?;
    Some(Next::RefundExtra {
        key: format!("refund:{}:{}", order.id, extra.tx_id),
        deposit_tx: extra.tx_id.clone(),
        amount: extra.amount.clone(),
    })
}

/// An order with nothing left to do: checked no more (saved once with no next check).
fn stop_checking(order: &Order) -> Next {
    if order.next_check_at_ms.is_none() {
        return Next::Idle;
    }
    let mut done = order.clone();
    done.version += 1;
    done.next_check_at_ms = None;
    Next::Save(Box::new(done), None)
}

/// An order in emergency: the user's choice, or the refund it falls back to at the deadline
/// (or at once, when a refund is the only choice), or a wait until the deadline.
fn emergency_step(order: &Order, rules: &LifecycleRules, now_ms: i64) -> Next {
    let emergency = order
        .emergency
        .as_ref()
        .expect("an emergency order has its reasons");
    match emergency.choice {
        Some(Choice::Exchange) => {
            let mut exchanging = bump(order, OrderStatus::Exchanging, now_ms);
            exchanging.next_check_at_ms = Some(now_ms);
            Next::Save(Box::new(exchanging), Some(EventType::ExchangeStarted))
        }
        Some(Choice::Refund) => start_refund(order, now_ms),
        None if order.refund_address.is_some()
            && (now_ms >= emergency.deadline_ms || emergency.allowed == [Choice::Refund]) =>
        {
            let mut chosen = order.clone();
            if let Some(e) = chosen.emergency.as_mut() {
                e.choice = Some(Choice::Refund);
            }
            start_refund(&chosen, now_ms)
        }
        None => reschedule(
            order,
            emergency.deadline_ms.max(now_ms + rules.poll_interval_ms),
        ),
    }
}

/// New deposits and confirmation changes. The first deposit drives the order; later ones are
/// recorded and reported.
fn record_deposits(
    order: &Order,
    chain: &[ChainDeposit],
    network: Network,
    now_ms: i64,
) -> Option<Next> {
    let mut updated = order.clone();
    let mut changed = false;
    for seen in chain {
        match updated.deposits.iter_mut().find(|d| d.tx_id == seen.tx_id) {
            // Followed until confirmed, not after: a chain that adds blocks faster than the
            // order is looked at would otherwise make every look a new count and the order
            // never move on (docs/orders.md).
            Some(known)
                if known.confirmations < known.required_confirmations
                    && known.confirmations != seen.confirmations =>
            {
                known.confirmations = seen.confirmations;
                changed = true;
            }
            Some(_) => {}
            None => {
                updated.deposits.push(Deposit {
                    tx_id: seen.tx_id.clone(),
                    amount: seen.amount.to_string(),
                    confirmations: seen.confirmations,
                    required_confirmations: required_confirmations(network),
                    seen_at_ms: seen.seen_at_ms,
                    refund_tx: None,
                    refund_error: None,
                });
                changed = true;
            }
        }
    }
    if !changed {
        return None;
    }
    updated.version += 1;
    updated.updated_at_ms = now_ms;
    updated.next_check_at_ms = Some(now_ms);
    if order.status == OrderStatus::AwaitingDeposit {
        updated.status = OrderStatus::Confirming;
    }
    Some(Next::Save(Box::new(updated), Some(EventType::Updated)))
}

fn decide_on_deposit(
    order: &Order,
    received: Amount,
    late: bool,
    rules: &LifecycleRules,
    now_ms: i64,
) -> Next {
    let precision = received.decimals();
    let parse =
        |text: &str| Amount::parse(text, precision).unwrap_or_else(|_| Amount::zero(precision));
    let deposit_rules = DepositRules {
        rate_type: order.rate_type,
        expected: parse(&order.from_amount),
        min: parse(&order.min),
        max: order.max.as_deref().map(parse),
        tolerance_bps: rules.tolerance_bps,
    };
    match judge_deposit(&deposit_rules, received, late) {
        DepositVerdict::Proceed => {
            let mut exchanging = bump(order, OrderStatus::Exchanging, now_ms);
            exchanging.next_check_at_ms = Some(now_ms);
            Next::Save(Box::new(exchanging), Some(EventType::ExchangeStarted))
        }
        DepositVerdict::Emergency { reasons, allowed } => {
            let mut emergency = bump(order, OrderStatus::Emergency, now_ms);
            emergency.emergency = Some(Emergency {
                reasons,
                allowed,
                choice: None,
                deadline_ms: now_ms + rules.emergency_window_ms,
            });
            emergency.next_check_at_ms = Some(now_ms);
            Next::Save(Box::new(emergency), Some(EventType::Emergency))
        }
    }
}

fn start_refund(order: &Order, now_ms: i64) -> Next {
    let mut refunding = bump(order, OrderStatus::Refunding, now_ms);
    let received: Vec<&str> = order.deposits.iter().map(|d| d.amount.as_str()).collect();
    refunding.refund_amount = received.first().map(|a| (*a).to_owned());
    refunding.next_check_at_ms = Some(now_ms);
    Next::Save(Box::new(refunding), Some(EventType::Updated))
}

/// Why a user's choice or refund request cannot be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChoiceError {
    #[error("the order is {0}, not waiting for a choice")]
    NotInEmergency(&'static str),
    #[error("{0} was already chosen")]
    AlreadyChosen(&'static str),
    #[error("{choice} is not allowed here; allowed: {allowed}")]
    NotAllowed {
        choice: &'static str,
        allowed: String,
    },
    #[error("a refund needs refundAddress (none was given when the order was created)")]
    RefundAddressMissing,
    #[error(
        "the order is {0}: only orders holding a deposit that was not exchanged can be refunded"
    )]
    NotRefundable(&'static str),
}

/// Applies a user's emergency choice: EXCHANGE continues at the market rate, REFUND sends the
/// deposit back (to `refund`, or the refund address given at creation). `Ok(None)`: the same
/// choice was already made, nothing changes.
pub fn choose(
    order: &Order,
    choice: Choice,
    refund: Option<(String, Option<String>)>,
    now_ms: i64,
) -> Result<Option<(Order, EventType)>, ChoiceError> {
    let Some(emergency) = &order.emergency else {
        return Err(ChoiceError::NotInEmergency(order.status.as_str()));
    };
    if let Some(made) = emergency.choice {
        return if made == choice {
            Ok(None)
        } else {
            Err(ChoiceError::AlreadyChosen(made.as_str()))
        };
    }
    if order.status != OrderStatus::Emergency {
        return Err(ChoiceError::NotInEmergency(order.status.as_str()));
    }
    if !emergency.allowed.contains(&choice) {
        let allowed: Vec<&str> = emergency.allowed.iter().map(|c| c.as_str()).collect();
        return Err(ChoiceError::NotAllowed {
            choice: choice.as_str(),
            allowed: allowed.join(", "),
        });
    }
    let mut chosen = order.clone();
    if let Some(e) = chosen.emergency.as_mut() {
        e.choice = Some(choice);
    }
    match choice {
        Choice::Exchange => {
            let mut exchanging = bump(&chosen, OrderStatus::Exchanging, now_ms);
            exchanging.next_check_at_ms = Some(now_ms);
            Ok(Some((exchanging, EventType::ExchangeStarted)))
        }
        Choice::Refund => refund_now(&chosen, refund, now_ms).map(Some),
    }
}

/// A refund request outside an emergency: for an order whose deposit has arrived and was not
/// exchanged (confirming, or held in an emergency).
pub fn request_refund(
    order: &Order,
    refund: Option<(String, Option<String>)>,
    now_ms: i64,
) -> Result<(Order, EventType), ChoiceError> {
    match order.status {
        OrderStatus::Emergency => {
            let mut chosen = order.clone();
            if let Some(e) = chosen.emergency.as_mut() {
                if e.choice.is_some() {
                    return Err(ChoiceError::NotRefundable(order.status.as_str()));
                }
                e.choice = Some(Choice::Refund);
            }
            refund_now(&chosen, refund, now_ms)
        }
        OrderStatus::Confirming if !order.deposits.is_empty() => refund_now(order, refund, now_ms),
        other => Err(ChoiceError::NotRefundable(other.as_str())),
    }
}

fn refund_now(
    order: &Order,
    refund: Option<(String, Option<String>)>,
    now_ms: i64,
) -> Result<(Order, EventType), ChoiceError> {
    let mut with_address = order.clone();
    if let Some((address, tag)) = refund {
        with_address.refund_address = Some(address);
        with_address.refund_tag = tag;
    }
    if with_address.refund_address.is_none() {
        return Err(ChoiceError::RefundAddressMissing);
    }
    match start_refund(&with_address, now_ms) {
        Next::Save(refunding, Some(event)) => Ok((*refunding, event)),
        _ => unreachable!("start_refund always saves with an event"),
    }
}

/// The order after the exchange was priced: `payout` of the output goes out next.
pub fn after_exchange(order: &Order, payout: Amount, now_ms: i64) -> Order {
    let mut withdrawing = bump(order, OrderStatus::Withdrawing, now_ms);
    withdrawing.payout_amount = Some(payout.to_string());
    withdrawing.next_check_at_ms = Some(now_ms);
    withdrawing
}

/// The order after its payout was sent as `tx_id`.
pub fn after_payout(order: &Order, tx_id: String, now_ms: i64) -> Order {
    let mut completed = bump(order, OrderStatus::Completed, now_ms);
    completed.payout_tx = Some(tx_id);
    completed.next_check_at_ms = None;
    completed
}

/// The order after the extra deposit `deposit_tx` was sent back as `refund_tx` (reported as
/// `order.updated`; the status does not change).
pub fn after_extra_refund(
    order: &Order,
    deposit_tx: &str,
    refund_tx: String,
    now_ms: i64,
) -> Order {
    let mut updated = order.clone();
    if let Some(deposit) = updated.deposits.iter_mut().find(|d| d.tx_id == deposit_tx) {
        deposit.refund_tx = Some(refund_tx);
    }
    updated.version += 1;
    updated.updated_at_ms = now_ms;
    updated.next_check_at_ms = Some(now_ms);
    updated
}

/// The order after its payout or refund was rejected for good: failed, with the reason.
pub fn after_failure(order: &Order, reason: String, now_ms: i64) -> Order {
    let mut failed = bump(order, OrderStatus::Failed, now_ms);
    failed.failure_reason = Some(reason);
    failed.next_check_at_ms = None;
    failed
}

/// The order after an extra deposit could not be sent back: recorded on the deposit, not
/// retried.
pub fn after_extra_refund_failure(
    order: &Order,
    deposit_tx: &str,
    reason: String,
    now_ms: i64,
) -> Order {
    let mut updated = order.clone();
    if let Some(deposit) = updated.deposits.iter_mut().find(|d| d.tx_id == deposit_tx) {
        deposit.refund_error = Some(reason);
    }
    updated.version += 1;
    updated.updated_at_ms = now_ms;
    updated.next_check_at_ms = Some(now_ms);
    updated
}

/// The order after its refund was sent as `tx_id`.
pub fn after_refund(order: &Order, tx_id: String, now_ms: i64) -> Order {
    let mut refunded = bump(order, OrderStatus::Refunded, now_ms);
    refunded.refund_tx = Some(tx_id);
    refunded.next_check_at_ms = None;
    refunded
}

fn first_deposit_amount(order: &Order, precision: u8) -> Amount {
    order
        .deposits
        .first()
        .and_then(|d| Amount::parse(&d.amount, precision).ok())
        .unwrap_or_else(|| Amount::zero(precision))
}

/// The next version of `order` in `status`. Panics on an illegal transition: the decisions
/// above only make legal ones, and a test walks them all.
/// The next version of `order`, in the same status.
fn touch(order: &Order, now_ms: i64) -> Order {
    let mut next = order.clone();
    next.version += 1;
    next.updated_at_ms = now_ms;
    next
}

fn bump(order: &Order, status: OrderStatus, now_ms: i64) -> Order {
    assert!(
        order.status.can_become(status),
        "illegal transition {} -> {}",
        order.status.as_str(),
        status.as_str()
    );
    let mut next = order.clone();
    next.status = status;
    next.version += 1;
    next.updated_at_ms = now_ms;
    next
}

fn reschedule(order: &Order, at_ms: i64) -> Next {
    if order.next_check_at_ms == Some(at_ms) {
        return Next::Idle;
    }
    let mut next = order.clone();
    next.next_check_at_ms = Some(at_ms);
    next.version += 1;
    Next::Save(Box::new(next), None)
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;
    use crate::market::{Direction, RateType};

    pub(crate) const T0: i64 = 1_800_000_000_000;
    const BLOCK: i64 = 1_000;

    pub(crate) fn new_order(rate_type: RateType, refund: bool) -> Order {
        Order {
            id: "ord_prop".into(),
            owner: "key:prop".into(),
            status: OrderStatus::AwaitingDeposit,
            version: 2,
            rate_type,
            direction: Direction::From,
            from_code: "BTC".into(),
            to_code: "USDTTRC".into(),
            provider: "atlas".into(),
            provider_ref: "atlas-ord_prop".into(),
            desk_token: None,
            rate: "96000".into(),
            from_amount: "1".into(),
            to_amount: "96000".into(),
            min: "0.1".into(),
            max: Some("2".into()),
            deposit_address: "bc1qdeposit".into(),
            deposit_tag: None,
            to_address: "TPayout".into(),
            to_tag: None,
            refund_address: refund.then(|| "bc1qrefund".into()),
            refund_tag: None,
            deposits: vec![],
            payout_tx: None,
            payout_amount: None,
            refund_tx: None,
            refund_amount: None,
            emergency: None,
            affiliate_code: None,
            fees: Vec::new(),
            fees_realized: None,
            page_url: None,
            email: None,
            create_token_hash: None,
            created_at_ms: T0,
            updated_at_ms: T0,
            expires_at_ms: T0 + 30 * 60 * 1000,
            next_check_at_ms: Some(T0),
            desk_failures: 0,
            event_sequence: 2,
            failure_reason: None,
        }
    }

    fn opening(rate_type: RateType) -> OpenOrder {
        let currency = |code| crate::market::currencies::currency(code).unwrap();
        OpenOrder {
            id: "ord_open".into(),
            owner: Owner::Key("open".into()),
            from: currency("BTC"),
            to: currency("USDTTRC"),
            rate_type,
            direction: Direction::From,
            from_amount: Amount::parse("1", 8).unwrap(),
            to_amount: Amount::parse("96000", 6).unwrap(),
            min: Amount::parse("0.1", 8).unwrap(),
            max: Some(Amount::parse("2", 8).unwrap()),
            provider: "atlas".into(),
            exchange: OpenedExchange {
                id: "atlas-ord_open".into(),
                deposit_address: "bc1qdeposit".into(),
                deposit_tag: None,
                access_token: None,
            },
            to_address: Network::Tron
                .parse_address("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t")
                .unwrap(),
            to_tag: None,
            refund_address: None,
            refund_tag: None,
            email: Email::parse("user@example.com"),
            affiliate_code: None,
            fees: Vec::new(),
            page_url: None,
            create_token_hash: None,
            lifetimes: OrderLifetimes {
                fixed_ms: 60_000,
                float_ms: 120_000,
            },
            now_ms: T0,
        }
    }

    #[test]
    fn an_opened_order_awaits_its_deposit_with_both_events_and_its_rate_lifetime() {
        let (order, [created, awaiting]) = open(opening(RateType::Fixed));
        assert_eq!(
            (order.status, order.version),
            (OrderStatus::AwaitingDeposit, 2)
        );
        assert_eq!(order.expires_at_ms, T0 + 60_000);
        assert_eq!(order.next_check_at_ms, Some(T0));
        assert_eq!(order.rate, "96000");
        assert_eq!(
            (
                created.event_type,
                created.sequence,
                created.data["status"].as_str()
            ),
            (EventType::Created, 1, Some("new"))
        );
        assert_eq!(
            (awaiting.event_type, awaiting.sequence),
            (EventType::AwaitingDeposit, 2)
        );
        assert_eq!(awaiting.data["previousStatus"], "new");
        assert_eq!(created.notify_email.as_deref(), Some("user@example.com"));
        let (float, _) = open(opening(RateType::Float));
        assert_eq!(float.expires_at_ms, T0 + 120_000);
    }

    #[test]
    fn attaching_an_email_is_a_new_version_once_and_waking_only_when_not_due() {
        let order = new_order(RateType::Fixed, false);
        let email = Email::parse("a@example.com").unwrap();
        let (with_email, event) = attach_email(&order, &email, T0 + 5).unwrap();
        assert_eq!((with_email.version, event), (3, EventType::Updated));
        assert_eq!(with_email.updated_at_ms, T0 + 5);
        assert!(attach_email(&with_email, &email, T0 + 6).is_none());

        assert!(wake(&order, T0).is_none(), "already due");
        let mut later = order.clone();
        later.next_check_at_ms = Some(T0 + 60_000);
        let woken = wake(&later, T0 + 1).unwrap();
        assert_eq!((woken.version, woken.next_check_at_ms), (3, Some(T0 + 1)));
    }

    #[derive(Debug, Clone)]
    enum Op {
        Deposit(&'static str),
        Wait(i64),
        Choose(Choice),
        Refund,
        /// The next effect is performed, then the process dies before saving.
        CrashAfterEffect,
        Run,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            prop::sample::select(vec!["1", "0.999", "0.5", "1.5", "0.01", "3"])
                .prop_map(Op::Deposit),
            prop::sample::select(vec![BLOCK, 3 * BLOCK, 31 * 60 * 1000, 25 * 60 * 60 * 1000])
                .prop_map(Op::Wait),
            prop::sample::select(vec![Choice::Exchange, Choice::Refund]).prop_map(Op::Choose),
            Just(Op::Refund),
            Just(Op::CrashAfterEffect),
            Just(Op::Run),
        ]
    }

    fn order_id(world: &World) -> String {
        world.stored.id.clone()
    }

    /// The stored order, the chain, and the transfers made (by key).
    struct World {
        stored: Order,
        chain: Vec<ChainDeposit>,
        transfers: BTreeMap<String, String>,
        events: Vec<EventType>,
        now: i64,
        deposits_made: usize,
    }

    impl World {
        fn chain_view(&self) -> Vec<ChainDeposit> {
            self.chain
                .iter()
                .map(|d| ChainDeposit {
                    confirmations: ((self.now - d.seen_at_ms) / BLOCK) as u32,
                    ..d.clone()
                })
                .collect()
        }

        fn save(&mut self, updated: Order, event: Option<EventType>) {
            let before = self.stored.status;
            assert_eq!(updated.version, self.stored.version + 1, "compare-and-set");
            assert!(
                before == updated.status || before.can_become(updated.status),
                "illegal {before:?} -> {:?}",
                updated.status
            );
            if before != updated.status {
                assert!(event.is_some(), "every transition has its event");
            }
            let mut updated = updated;
            if let Some(event) = event {
                let recorded = updated.record_event(event, Some(before));
                assert_eq!(recorded.sequence, self.stored.event_sequence + 1);
                self.events.push(event);
            }
            self.stored = updated;
        }

        /// Runs steps until idle; with `crash`, the first effect is performed and not saved.
        fn run(&mut self, crash: bool) {
            for _ in 0..64 {
                let order = self.stored.clone();
                let next = next(
                    &order,
                    &self.chain_view(),
                    Network::Bitcoin,
                    8,
                    &LifecycleRules {
                        poll_interval_ms: BLOCK,
                        emergency_window_ms: 24 * 60 * 60 * 1000,
                        late_watch_ms: 24 * 60 * 60 * 1000,
                        tolerance_bps: 50,
                    },
                    self.now,
                );
                let (updated, event) = match next {
                    Next::Idle => return,
                    Next::Save(updated, event) => (*updated, event),
                    Next::Exchange { received } => {
                        let payout = Amount::from_units(
                            received.units() * alloy_primitives::U256::from(96_000u64),
                            8,
                        )
                        .rescale(6, crate::amount::Rounding::Down);
                        (
                            after_exchange(&order, payout, self.now),
                            Some(EventType::WithdrawStarted),
                        )
                    }
                    Next::RefundExtra {
                        key,
                        deposit_tx,
                        amount,
                    } => {
                        let first = self.transfers.entry(key.clone()).or_insert(amount.clone());
                        assert_eq!(*first, amount);
                        if crash {
                            return;
                        }
                        (
                            after_extra_refund(&order, &deposit_tx, format!("tx-{key}"), self.now),
                            Some(EventType::Updated),
                        )
                    }
                    Next::Payout { key, amount } | Next::Refund { key, amount } => {
                        let tx = format!("tx-{key}");
                        let first = self.transfers.entry(key.clone()).or_insert(amount.clone());
                        assert_eq!(*first, amount, "a repeated effect asks for the same amount");
                        if crash {
                            return;
                        }
                        if key.starts_with("payout:") {
                            (
                                after_payout(&order, tx, self.now),
                                Some(EventType::Completed),
                            )
                        } else {
                            (after_refund(&order, tx, self.now), Some(EventType::Updated))
                        }
                    }
                };
                self.save(updated, event);
            }
            panic!("the lifecycle did not settle");
        }
    }

    #[test]
    fn a_confirmed_deposit_moves_on_although_a_block_comes_before_every_look() {
        let mut world = World {
            stored: new_order(RateType::Fixed, false),
            chain: vec![],
            transfers: BTreeMap::new(),
            events: vec![],
            now: T0,
            deposits_made: 0,
        };
        world.chain.push(ChainDeposit {
            tx_id: "dep1".into(),
            amount: Amount::parse("1", 8).unwrap(),
            confirmations: 0,
            seen_at_ms: T0,
        });
        for _ in 0..32 {
            // Each look finds more blocks than the last one did.
            world.now += 3 * BLOCK;
            let order = world.stored.clone();
            let rules = LifecycleRules {
                poll_interval_ms: BLOCK,
                emergency_window_ms: 24 * 60 * 60 * 1000,
                late_watch_ms: 24 * 60 * 60 * 1000,
                tolerance_bps: 50,
            };
            match next(
                &order,
                &world.chain_view(),
                Network::Bitcoin,
                8,
                &rules,
                world.now,
            ) {
                Next::Save(updated, event) => world.save(*updated, event),
                Next::Exchange { .. } => return,
                other => panic!("unexpected {other:?}"),
            }
        }
        panic!(
            "still {:?} after 32 looks, {} confirmations recorded",
            world.stored.status, world.stored.deposits[0].confirmations
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        #[test]
        fn random_histories_keep_the_order_consistent(
            fixed in any::<bool>(),
            refund in any::<bool>(),
            ops in prop::collection::vec(op(), 1..25),
        ) {
            let rate_type = if fixed { RateType::Fixed } else { RateType::Float };
            let mut world = World {
                stored: new_order(rate_type, refund),
                chain: vec![],
                transfers: BTreeMap::new(),
                events: vec![],
                now: T0,
                deposits_made: 0,
            };
            for op in ops {
                match op {
                    Op::Deposit(amount) => {
                        world.deposits_made += 1;
                        world.chain.push(ChainDeposit {
                            tx_id: format!("dep{}", world.deposits_made),
                            amount: Amount::parse(amount, 8).unwrap(),
                            confirmations: 0,
                            seen_at_ms: world.now,
                        });
                    }
                    Op::Wait(ms) => world.now += ms,
                    Op::Choose(choice) => {
                        let refund_to = Some(("bc1qchosen".to_owned(), None));
                        if let Ok(Some((updated, event))) = choose(&world.stored, choice, refund_to, world.now) {
                            world.save(updated, Some(event));
                        }
                    }
                    Op::Refund => {
                        if let Ok((updated, event)) = request_refund(&world.stored, None, world.now) {
                            world.save(updated, Some(event));
                        }
                    }
                    Op::CrashAfterEffect => world.run(true),
                    Op::Run => world.run(false),
                }
            }
            world.now += 48 * 60 * 60 * 1000;
            world.run(false);

            let order = &world.stored;
            let payouts = usize::from(world.transfers.contains_key(&format!("payout:{}", order_id(&world))));
            let refunds = usize::from(world.transfers.contains_key(&format!("refund:{}", order_id(&world))));
            // Every deposit after the first goes back once, whole, when there is somewhere to
            // send it (48 h is plenty of confirmations).
            let extras: Vec<&Deposit> = world.stored.deposits.iter().skip(1).collect();
            for extra in &extras {
                let key = format!("refund:{}:{}", order_id(&world), extra.tx_id);
                if world.stored.refund_address.is_some() {
                    prop_assert_eq!(world.transfers.get(&key), Some(&extra.amount));
                    prop_assert_eq!(extra.refund_tx.clone(), Some(format!("tx-{key}")));
                } else {
                    prop_assert!(!world.transfers.contains_key(&key));
                }
            }
            prop_assert_eq!(world.transfers.len(), payouts + refunds + extras.iter().filter(|d| d.refund_tx.is_some()).count());
            prop_assert!(payouts + refunds <= 1, "never both paid out and refunded");
            let terminal_events = world.events.iter().filter(|e| matches!(e, EventType::Completed | EventType::Failed)).count();
            prop_assert!(terminal_events <= 1);
            match order.status {
                OrderStatus::Completed => {
                    prop_assert_eq!(payouts, 1);
                    prop_assert_eq!(order.payout_tx.clone(), Some(format!("tx-payout:{}", order.id)));
                    prop_assert!(!order.deposits.is_empty());
                }
                OrderStatus::Refunded => {
                    prop_assert_eq!(refunds, 1);
                    // Value conservation: the first deposit goes back whole.
                    prop_assert_eq!(order.refund_amount.as_deref(), Some(order.deposits[0].amount.as_str()));
                    prop_assert_eq!(world.transfers.get(&format!("refund:{}", order.id)), order.refund_amount.as_ref());
                }
                OrderStatus::AwaitingDeposit => prop_assert!(false, "48 h later an unpaid order has expired"),
                _ => prop_assert_eq!(payouts + refunds, 0, "{:?} moved no money", order.status),
            }
            if order.deposits.is_empty() {
                prop_assert_eq!(order.status, OrderStatus::Expired);
            }
        }
    }
}
