//! How a sandbox desk runs the book of an exchange, as pure decisions: given the book, what
//! the sandbox chain shows for its deposit address, and the time, what happens next. The desk
//! carries the decisions out (`crate::desk`): it saves [`Next::Save`] with a compare-and-set,
//! performs effects (pricing the exchange, payout, refund) under deterministic idempotency
//! keys, and feeds their results back through the `after_*` functions. A crash between an
//! effect and its save repeats the effect with the same key, which the chain answers with the
//! first transfer: nothing is paid twice. A live desk does all this on its own side; swapd
//! follows either through `swapd_core::offchain::follow`.

use alloy_primitives::U256;
use swapd_core::amount::{Amount, Rounding};
use swapd_core::market::RateType;
use swapd_core::market::pricing::BPS;
use swapd_core::offchain::order::{
    Choice, Deposit, Emergency, EmergencyReason, EventType, Order, OrderStatus, allowed_choices,
    required_confirmations,
};

use crate::behaviour::Behaviour;
use crate::chain::ChainDeposit;

/// How a sandbox desk runs its books.
#[derive(Debug, Clone, Copy)]
pub struct BookRules {
    /// How long a customer has to choose in an emergency before a refund (when possible).
    pub emergency_window_ms: i64,
    /// How often a book waiting on the chain is looked at again.
    pub poll_interval_ms: i64,
    /// How long an expired book is still watched for a late deposit.
    pub late_watch_ms: i64,
    /// How far a fixed exchange's deposit may differ from the agreed amount, in basis points,
    /// and still be exchanged on the agreed terms.
    pub tolerance_bps: u32,
    /// How this desk behaves: what share it refunds or fails, how long it takes.
    pub behaviour: Behaviour,
}

/// What an order's terms say about a confirmed deposit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DepositVerdict {
    /// Exchange it under the order's terms.
    Proceed,
    /// Ask the user; `allowed` are the choices they may make.
    Emergency {
        reasons: Vec<EmergencyReason>,
        allowed: Vec<Choice>,
    },
}

/// The part of an order's terms that judges a deposit.
#[derive(Debug, Clone, Copy)]
pub struct DepositRules {
    pub rate_type: RateType,
    /// What the user was asked to send.
    pub expected: Amount,
    /// The provider's input limits.
    pub min: Amount,
    /// `None`: no maximum.
    pub max: Option<Amount>,
    /// How far a fixed order's deposit may differ from `expected`, in basis points.
    pub tolerance_bps: u32,
}

/// Default tolerance of fixed orders: a deposit within ±0.5 % of the expected amount is
/// exchanged as agreed (at the locked rate, on the amount received).
pub const DEFAULT_TOLERANCE_BPS: u32 = 50;

/// Judges a deposit of `received`, seen `late` (after the order expired) or not.
pub fn judge_deposit(rules: &DepositRules, received: Amount, late: bool) -> DepositVerdict {
    let mut reasons = Vec::new();
    if received < rules.min {
        reasons.extend([EmergencyReason::Limit, EmergencyReason::Less]);
    } else if rules.max.is_some_and(|max| received > max) {
        reasons.extend([EmergencyReason::Limit, EmergencyReason::More]);
    } else if rules.rate_type == RateType::Fixed {
        let band = |bps: u32, rounding| {
            rules
                .expected
                .mul_div(U256::from(bps), U256::from(BPS), rounding)
        };
        let low = band(BPS - rules.tolerance_bps, Rounding::Up);
        let high = band(BPS + rules.tolerance_bps, Rounding::Down);
        if received < low {
            reasons.push(EmergencyReason::Less);
        } else if received > high {
            reasons.push(EmergencyReason::More);
        }
    }
    if late {
        reasons.push(EmergencyReason::Expired);
    }
    if reasons.is_empty() {
        return DepositVerdict::Proceed;
    }
    reasons.sort();
    let allowed = allowed_choices(&reasons);
    DepositVerdict::Emergency { reasons, allowed }
}

/// What to do with an order now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Store this version of the order with this event (`None`: only the next check moved).
    Save(Box<Order>, Option<EventType>),
    /// Price the exchange of the received amount; then call [`after_exchange`].
    Exchange { received: Amount },
    /// Send `amount` of the output to the payout address under `key`; then [`after_payout`].
    Payout { key: String, amount: Amount },
    /// Send `amount` of the input back to the refund address under `key`; then
    /// [`after_refund`].
    Refund { key: String, amount: Amount },
    /// Send a deposit after the first (`deposit_tx`) back to the refund address under `key`;
    /// then [`after_extra_refund`].
    RefundExtra {
        key: String,
        deposit_tx: String,
        amount: Amount,
    },
    /// Nothing to do until the order's next check.
    Idle,
}

/// Decides the next step for `order` at `now_ms`, given the deposits the chain shows.
pub fn next(order: &Order, chain: &[ChainDeposit], rules: &BookRules, now_ms: i64) -> Next {
    if let Some(next) = record_deposits(order, chain, now_ms) {
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
    let received = || first_deposit_amount(order);
    match order.status {
        OrderStatus::New => Next::Idle,
        OrderStatus::AwaitingDeposit if now_ms >= order.expires_at_ms => {
            let mut expired = order.advanced(OrderStatus::Expired, now_ms);
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
        OrderStatus::Exchanging => {
            let id = order.id.as_str();
            let started = order.exchange_started_at_ms.unwrap_or(order.updated_at_ms);
            let done_at = started + rules.behaviour.duration_ms(id);
            if now_ms < done_at {
                reschedule(order, done_at)
            } else if rules.behaviour.fails(id) {
                let failed = after_failure(
                    order,
                    "the desk could not complete the exchange".into(),
                    now_ms,
                );
                Next::Save(Box::new(failed), Some(EventType::Failed))
            } else {
                Next::Exchange {
                    received: received(),
                }
            }
        }
        OrderStatus::Withdrawing => Next::Payout {
            key: format!("payout:{}", order.id),
            amount: order
                .payout_amount
                .expect("a withdrawing order has its payout amount"),
        },
        OrderStatus::Refunding => Next::Refund {
            key: format!("refund:{}", order.id),
            amount: order
                .refund_amount
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
        amount: extra.amount,
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
fn emergency_step(order: &Order, rules: &BookRules, now_ms: i64) -> Next {
    let emergency = order
        .emergency
        .as_ref()
        .expect("an emergency order has its reasons");
    match emergency.choice {
        Some(Choice::Exchange) => {
            let mut exchanging = order.advanced(OrderStatus::Exchanging, now_ms);
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
fn record_deposits(order: &Order, chain: &[ChainDeposit], now_ms: i64) -> Option<Next> {
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
                    amount: seen.amount,
                    confirmations: seen.confirmations,
                    required_confirmations: required_confirmations(order.from.network),
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
    rules: &BookRules,
    now_ms: i64,
) -> Next {
    let at_scale = |amount: Amount| amount.rescale(received.decimals(), Rounding::Down);
    let deposit_rules = DepositRules {
        rate_type: order.rate_type,
        expected: at_scale(order.from_amount),
        min: at_scale(order.min),
        max: order.max.map(at_scale),
        tolerance_bps: rules.tolerance_bps,
    };
    match judge_deposit(&deposit_rules, received, late) {
        // The desk's own choice to send the deposit back (its behaviour), when it can.
        DepositVerdict::Proceed
            if order.refund_address.is_some() && rules.behaviour.refunds(order.id.as_str()) =>
        {
            start_refund(order, now_ms)
        }
        DepositVerdict::Proceed => {
            let mut exchanging = order.advanced(OrderStatus::Exchanging, now_ms);
            exchanging.next_check_at_ms = Some(now_ms);
            Next::Save(Box::new(exchanging), Some(EventType::ExchangeStarted))
        }
        DepositVerdict::Emergency { reasons, allowed } => {
            let mut emergency = order.advanced(OrderStatus::Emergency, now_ms);
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
    Next::Save(Box::new(order.refunding(now_ms)), Some(EventType::Updated))
}

/// The order after the exchange was priced: `payout` of the output goes out next.
pub fn after_exchange(order: &Order, payout: Amount, now_ms: i64) -> Order {
    let mut withdrawing = order.advanced(OrderStatus::Withdrawing, now_ms);
    withdrawing.payout_amount = Some(payout);
    withdrawing.next_check_at_ms = Some(now_ms);
    withdrawing
}

/// The order after its payout was sent as `tx_id`.
pub fn after_payout(order: &Order, tx_id: String, now_ms: i64) -> Order {
    let mut completed = order.advanced(OrderStatus::Completed, now_ms);
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
    let mut failed = order.advanced(OrderStatus::Failed, now_ms);
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
    let mut refunded = order.advanced(OrderStatus::Refunded, now_ms);
    refunded.refund_tx = Some(tx_id);
    refunded.next_check_at_ms = None;
    refunded
}

/// The first deposit, at the input currency's precision: what the exchange is priced on.
fn first_deposit_amount(order: &Order) -> Amount {
    let precision = order.from.precision;
    order.deposits.first().map_or(Amount::zero(precision), |d| {
        d.amount.rescale(precision, Rounding::Down)
    })
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
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use swapd_core::address::Network;
    use swapd_core::market::Direction;
    use swapd_core::market::currencies::currency;
    use swapd_core::offchain::actions::{self, OpenOrder};
    use swapd_core::offchain::desk::OpenedExchange;
    use swapd_core::offchain::follow::LifecycleRules;
    use swapd_core::offchain::order::OrderLifetimes;
    use swapd_core::owner::Owner;

    use super::*;

    const T0: i64 = 1_800_000_000_000;
    const BLOCK: i64 = 1_000;

    /// A book awaiting its deposit: 1 BTC for 96 000 USDTTRC, limits 0.1 to 2 BTC, 30 minutes
    /// to pay whatever its rate, opened at `T0` (with a refund address when `refund`).
    fn new_order(rate_type: RateType, refund: bool) -> Order {
        let currency = |code| currency(code).unwrap();
        let amount = |text, code| Amount::parse(text, currency(code).precision).unwrap();
        let (book, _) = actions::open(OpenOrder {
            id: "ord_prop".parse().unwrap(),
            owner: Owner::Desk("atlas".into()),
            from: currency("BTC"),
            to: currency("USDTTRC"),
            rate_type,
            direction: Direction::From,
            from_amount: amount("1", "BTC"),
            to_amount: amount("96000", "USDTTRC"),
            min: amount("0.1", "BTC"),
            max: Some(amount("2", "BTC")),
            provider: "atlas".into(),
            exchange: OpenedExchange {
                id: "atlas-ord_prop".into(),
                deposit_address: "bc1qdeposit".into(),
                deposit_tag: None,
                access_token: None,
            },
            to_address: Network::Tron
                .parse_address("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t")
                .unwrap(),
            to_tag: None,
            refund_address: refund.then(|| {
                Network::Bitcoin
                    .parse_address("bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq")
                    .unwrap()
            }),
            refund_tag: None,
            email: None,
            affiliate_code: None,
            fees: Vec::new(),
            page_url: None,
            create_token_hash: None,
            rules: LifecycleRules {
                lifetimes: OrderLifetimes {
                    fixed_ms: 30 * 60 * 1000,
                    float_ms: 30 * 60 * 1000,
                },
                ..LifecycleRules::default()
            },
            now_ms: T0,
        });
        book
    }

    fn rules(rate_type: RateType) -> DepositRules {
        let a = |s: &str| Amount::parse(s, 8).unwrap();
        DepositRules {
            rate_type,
            expected: a("1"),
            min: a("0.01"),
            max: Some(a("10")),
            tolerance_bps: DEFAULT_TOLERANCE_BPS,
        }
    }

    fn judge(rate_type: RateType, received: &str, late: bool) -> DepositVerdict {
        judge_deposit(&rules(rate_type), Amount::parse(received, 8).unwrap(), late)
    }

    fn emergency(reasons: &[EmergencyReason], allowed: &[Choice]) -> DepositVerdict {
        DepositVerdict::Emergency {
            reasons: reasons.to_vec(),
            allowed: allowed.to_vec(),
        }
    }

    #[test]
    fn fixed_orders_accept_deposits_within_the_tolerance() {
        use EmergencyReason::*;
        let both = [Choice::Exchange, Choice::Refund];
        assert_eq!(judge(RateType::Fixed, "1", false), DepositVerdict::Proceed);
        assert_eq!(
            judge(RateType::Fixed, "0.995", false),
            DepositVerdict::Proceed
        );
        assert_eq!(
            judge(RateType::Fixed, "1.005", false),
            DepositVerdict::Proceed
        );
        assert_eq!(
            judge(RateType::Fixed, "0.99499999", false),
            emergency(&[Less], &both)
        );
        assert_eq!(
            judge(RateType::Fixed, "1.00500001", false),
            emergency(&[More], &both)
        );
        assert_eq!(
            judge(RateType::Fixed, "0.5", true),
            emergency(&[Expired, Less], &both)
        );
    }

    #[test]
    fn float_orders_take_any_amount_within_limits_and_limits_allow_only_refunds() {
        use EmergencyReason::*;
        assert_eq!(
            judge(RateType::Float, "0.5", false),
            DepositVerdict::Proceed
        );
        assert_eq!(judge(RateType::Float, "5", false), DepositVerdict::Proceed);
        assert_eq!(
            judge(RateType::Float, "1", true),
            emergency(&[Expired], &[Choice::Exchange, Choice::Refund])
        );
        assert_eq!(
            judge(RateType::Float, "0.001", false),
            emergency(&[Less, Limit], &[Choice::Refund])
        );
        assert_eq!(
            judge(RateType::Fixed, "11", true),
            emergency(&[Expired, More, Limit], &[Choice::Refund])
        );
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
        world.stored.id.to_string()
    }

    /// The stored order, the chain, and the transfers made (by key).
    struct World {
        stored: Order,
        chain: Vec<ChainDeposit>,
        transfers: BTreeMap<String, Amount>,
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
                    &BookRules {
                        poll_interval_ms: BLOCK,
                        emergency_window_ms: 24 * 60 * 60 * 1000,
                        late_watch_ms: 24 * 60 * 60 * 1000,
                        tolerance_bps: 50,
                        behaviour: Behaviour::PUNCTUAL,
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
                        .rescale(6, Rounding::Down);
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
                        let first = self.transfers.entry(key.clone()).or_insert(amount);
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
                        let first = self.transfers.entry(key.clone()).or_insert(amount);
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
            let rules = BookRules {
                poll_interval_ms: BLOCK,
                emergency_window_ms: 24 * 60 * 60 * 1000,
                late_watch_ms: 24 * 60 * 60 * 1000,
                tolerance_bps: 50,
                behaviour: Behaviour::PUNCTUAL,
            };
            match next(&order, &world.chain_view(), &rules, world.now) {
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
                        let chosen = Network::Bitcoin
                            .parse_address("1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2")
                            .unwrap();
                        let refund_to = Some((chosen, None));
                        if let Ok(Some((updated, event))) = actions::choose(&world.stored, choice, refund_to, world.now) {
                            world.save(updated, Some(event));
                        }
                    }
                    Op::Refund => {
                        if let Ok((updated, event)) = actions::request_refund(&world.stored, None, world.now) {
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
                    prop_assert_eq!(order.refund_amount, Some(order.deposits[0].amount));
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
