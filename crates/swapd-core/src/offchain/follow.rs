//! Following a desk, as pure decisions: what the order engine asks a desk on the customer's
//! behalf ([`pending_action`]), and how what the desk reports becomes the order's statuses,
//! fields and outbox events ([`follow`]). The desk runs the exchange; swapd keeps its own
//! normalized order in step with it, one status at a time, so a partner sees every status the
//! order passed through even when the engine looked only at the end (docs/orders.md).

use crate::offchain::desk::{DeskExchange, DeskStatus, Destination};
use crate::offchain::order::{
    Choice, Deposit, Emergency, EmergencyReason, EventType, Order, OrderEvent, OrderLifetimes,
    OrderStatus, allowed_choices, required_confirmations,
};

/// An order's timing: how long it waits for its deposit, how often the engine looks, how long a
/// customer has to choose.
#[derive(Debug, Clone, Copy)]
pub struct LifecycleRules {
    /// How long a new order waits for its deposit, by rate type.
    pub lifetimes: OrderLifetimes,
    /// How long a user has to choose in an emergency before a refund (when possible).
    pub emergency_window_ms: i64,
    /// How often an order waiting on the chain is looked at again.
    pub poll_interval_ms: i64,
    /// How long an expired order is still watched for a late deposit.
    pub late_watch_ms: i64,
}

impl Default for LifecycleRules {
    fn default() -> Self {
        Self {
            lifetimes: OrderLifetimes::default(),
            emergency_window_ms: 24 * 60 * 60 * 1000,
            poll_interval_ms: 5_000,
            late_watch_ms: 24 * 60 * 60 * 1000,
        }
    }
}

/// What the customer decided that the desk has not acted on yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeskAction {
    /// Answer the desk's emergency; a refund goes to the destination.
    Choose(Choice, Option<Destination>),
    /// Send the deposit back outside an emergency.
    Refund(Destination),
}

/// The customer's decision the desk still waits for: a choice made while the desk holds the
/// exchange in an emergency, or a refund requested while it holds an unexchanged deposit.
pub fn pending_action(order: &Order, desk: &DeskStatus) -> Option<DeskAction> {
    let refund_to = || {
        order.refund_address.as_ref().map(|address| Destination {
            address: address.as_str().to_owned(),
            tag: order.refund_tag.clone(),
        })
    };
    match desk {
        DeskStatus::NeedsChoice(_) => {
            let choice = order.emergency.as_ref()?.choice?;
            let decided = matches!(
                (choice, order.status),
                (Choice::Exchange, OrderStatus::Exchanging)
                    | (Choice::Refund, OrderStatus::Refunding)
            );
            decided.then(|| {
                DeskAction::Choose(choice, refund_to().filter(|_| choice == Choice::Refund))
            })
        }
        status if status.holds_deposit() && order.status == OrderStatus::Refunding => {
            refund_to().map(DeskAction::Refund)
        }
        _ => None,
    }
}

/// The order in step with its desk, and the events that took it there.
#[derive(Debug, Clone, PartialEq)]
pub struct Followed {
    pub order: Order,
    /// One per status the order passed through (and one `order.updated` for news within a
    /// status), numbered after the order's previous events.
    pub events: Vec<OrderEvent>,
}

impl Followed {
    /// Whether nothing but the time of the next look changed since `before`: no event and the
    /// order as it was. The store then moves the next look alone instead of writing the order
    /// again at a new version (`OrderStore::reschedule_order`): most looks at an order awaiting
    /// its deposit are such.
    pub fn only_reschedules(&self, before: &Order) -> bool {
        self.events.is_empty()
            && Order {
                version: before.version,
                next_check_at_ms: before.next_check_at_ms,
                ..self.order.clone()
            } == *before
    }
}

/// `order` brought in step with `seen`, the desk's report at `now_ms`. `None`: nothing
/// changed, not even when the engine looks next.
pub fn follow(
    order: &Order,
    seen: &DeskExchange,
    rules: &LifecycleRules,
    now_ms: i64,
) -> Option<Followed> {
    let mut next = order.clone();
    let new_deposits = merge_deposits(&mut next, seen, now_ms);
    let new_outcome = merge_outcome(&mut next, seen);
    let mut events = Vec::new();
    let hops = path(order.status, status_for(&seen.status, order.status));
    // News within a status (a deposit, a confirmation, a transaction id) is an
    // `order.updated` of its own; with a change of status, that change's events report it.
    if (new_deposits || new_outcome) && hops.is_empty() {
        next.updated_at_ms = now_ms;
        events.push(next.record_event(EventType::Updated, Some(order.status)));
    }
    for status in hops {
        let previous = next.status;
        next.enter(status, now_ms);
        set_on_entering(&mut next, status, seen, rules, now_ms);
        events.push(next.record_event(status.entry_event(), Some(previous)));
    }
    if let Some(event) = refund_after_window(&mut next, now_ms) {
        events.push(event);
    }
    next.next_check_at_ms = next_check(&next, rules, now_ms);
    // The desk answered: back to the normal cadence.
    next.desk_failures = 0;
    if events.is_empty()
        && next.next_check_at_ms == order.next_check_at_ms
        && order.desk_failures == 0
    {
        return None;
    }
    next.version = order.version + 1;
    Some(Followed {
        order: next,
        events,
    })
}

/// Why the desk could not be asked, as the backoff weighs it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeskFailure {
    /// The desk's `Retry-After`, when it said one (milliseconds).
    pub retry_after_ms: Option<i64>,
    /// Until when the desk's circuit breaker skips it (Unix milliseconds), when it does.
    pub skipped_until_ms: Option<i64>,
}

/// The longest `Retry-After` swapd honours: a desk asking for more is asked at this point.
pub const MAX_RETRY_AFTER_MS: i64 = 10 * 60 * 1000;

/// `order` looked at again later because its desk could not be asked now: the poll interval
/// doubled for each failure in a row, with jitter (`jitter_permille`, 0 to 999, drawn by the
/// caller) spreading the orders of one desk over the upper half of the wait, capped at the
/// quiet interval ([`MAX_POLL_MS`]); never before the desk's `Retry-After` nor while its
/// circuit breaker skips it. The first answer from the desk ([`follow`]) brings the normal
/// cadence back (docs/orders.md).
pub fn retry_later(
    order: &Order,
    rules: &LifecycleRules,
    failure: DeskFailure,
    jitter_permille: u16,
    now_ms: i64,
) -> Order {
    let mut later = order.clone();
    later.version += 1;
    later.desk_failures = order.desk_failures.saturating_add(1);
    let delay = backoff_ms(rules.poll_interval_ms, later.desk_failures, jitter_permille);
    let not_before = [
        failure
            .retry_after_ms
            .map(|ms| now_ms + ms.clamp(0, MAX_RETRY_AFTER_MS)),
        failure.skipped_until_ms,
    ];
    later.next_check_at_ms = Some(
        not_before
            .into_iter()
            .flatten()
            .fold(now_ms + delay, i64::max),
    );
    later
}

/// The wait after `failures` failures in a row (1 or more): `poll × 2^failures` capped at the
/// quiet interval, of which the lower half is always waited and the upper half scaled by the
/// jitter.
pub fn backoff_ms(poll_interval_ms: i64, failures: u32, jitter_permille: u16) -> i64 {
    let cap = MAX_POLL_MS.max(poll_interval_ms);
    let full = poll_interval_ms
        .max(1)
        .saturating_mul(1_i64 << failures.min(30))
        .min(cap);
    let half = full / 2;
    half + (full - half) * i64::from(jitter_permille.min(999)) / 1000
}

/// The status of an order in `current` whose desk reports `status`.
fn status_for(status: &DeskStatus, current: OrderStatus) -> OrderStatus {
    match status {
        DeskStatus::AwaitingDeposit => OrderStatus::AwaitingDeposit,
        DeskStatus::Confirming => OrderStatus::Confirming,
        DeskStatus::Exchanging => OrderStatus::Exchanging,
        DeskStatus::Sending => OrderStatus::Withdrawing,
        DeskStatus::Finished => OrderStatus::Completed,
        DeskStatus::Refunding => OrderStatus::Refunding,
        DeskStatus::Refunded => OrderStatus::Refunded,
        DeskStatus::Expired => OrderStatus::Expired,
        DeskStatus::NeedsChoice(_) => OrderStatus::Emergency,
        // Held for the desk's own checks: the order stays where it is meanwhile.
        DeskStatus::OnHold => current,
        DeskStatus::Failed => OrderStatus::Failed,
    }
}

/// The statuses from `from` to `to` along [`OrderStatus::can_become`]'s edges, fewest first;
/// empty when `to` is `from` or cannot be reached (a desk report that would take the order
/// back is not followed: the order waits for the desk to catch up).
fn path(from: OrderStatus, to: OrderStatus) -> Vec<OrderStatus> {
    use strum::VariantArray;
    let mut came_from: Vec<(OrderStatus, OrderStatus)> = Vec::new();
    let mut frontier = vec![from];
    while !frontier.is_empty() {
        let mut further = Vec::new();
        for &status in &frontier {
            for &step in OrderStatus::VARIANTS {
                let seen = step == from || came_from.iter().any(|(s, _)| *s == step);
                if !seen && status.can_become(step) {
                    came_from.push((step, status));
                    further.push(step);
                }
            }
        }
        if further.contains(&to) {
            let mut hops = vec![to];
            while let Some(&(_, previous)) = came_from.iter().find(|(s, _)| *s == hops[0]) {
                if previous == from {
                    break;
                }
                hops.insert(0, previous);
            }
            return hops;
        }
        frontier = further;
    }
    Vec::new()
}

/// What entering `status` sets on the order beyond the desk's figures.
fn set_on_entering(
    order: &mut Order,
    status: OrderStatus,
    seen: &DeskExchange,
    rules: &LifecycleRules,
    now_ms: i64,
) {
    match status {
        OrderStatus::Emergency => {
            let DeskStatus::NeedsChoice(cases) = &seen.status else {
                // Only on the way through to a later status: the customer chose at the desk.
                return;
            };
            let mut reasons: Vec<EmergencyReason> = cases.iter().map(|c| c.reason()).collect();
            reasons.sort();
            reasons.dedup();
            order.emergency = Some(Emergency {
                allowed: allowed_choices(&reasons),
                reasons,
                choice: None,
                deadline_ms: now_ms + rules.emergency_window_ms,
            });
        }
        OrderStatus::Refunding if order.refund_amount.is_none() => {
            order.refund_amount = order.deposits.first().map(|d| d.amount);
        }
        OrderStatus::Failed if order.failure_reason.is_none() => {
            order.failure_reason = Some(
                seen.failure_reason
                    .clone()
                    .unwrap_or_else(|| "the desk could not complete the exchange".into()),
            );
        }
        _ => {}
    }
}

/// swapd's own rule for an emergency nobody answers: once its window ends (at once when only a
/// refund is possible), a deposit with a refund address goes back.
fn refund_after_window(order: &mut Order, now_ms: i64) -> Option<OrderEvent> {
    let emergency = order.emergency.as_mut()?;
    let due = now_ms >= emergency.deadline_ms || emergency.allowed == [Choice::Refund];
    if order.status != OrderStatus::Emergency
        || emergency.choice.is_some()
        || !due
        || order.refund_address.is_none()
    {
        return None;
    }
    emergency.choice = Some(Choice::Refund);
    order.status = OrderStatus::Refunding;
    order.updated_at_ms = now_ms;
    if order.refund_amount.is_none() {
        order.refund_amount = order.deposits.first().map(|d| d.amount);
    }
    Some(order.record_event(EventType::Updated, Some(OrderStatus::Emergency)))
}

/// New deposits, confirmations and returns of later deposits. `true` when anything changed.
fn merge_deposits(order: &mut Order, seen: &DeskExchange, now_ms: i64) -> bool {
    let mut changed = false;
    for reported in &seen.deposits {
        let required = reported
            .required_confirmations
            .unwrap_or_else(|| required_confirmations(order.from.network));
        let amount = reported.amount;
        match order
            .deposits
            .iter_mut()
            .find(|d| d.tx_id == reported.tx_id)
        {
            Some(known) => {
                let before = known.clone();
                known.confirmations = reported.confirmations.max(known.confirmations);
                known.required_confirmations = required;
                if let Some(amount) = amount {
                    known.amount = amount;
                }
                if reported.refund_tx.is_some() {
                    known.refund_tx.clone_from(&reported.refund_tx);
                }
                if reported.refund_error.is_some() {
                    known.refund_error.clone_from(&reported.refund_error);
                }
                changed |= *known != before;
            }
            None => {
                order.deposits.push(Deposit {
                    tx_id: reported.tx_id.clone(),
                    // A desk that does not say how much arrived: what the order asked for.
                    amount: amount.unwrap_or(order.from_amount),
                    confirmations: reported.confirmations,
                    required_confirmations: required,
                    seen_at_ms: reported.seen_at_ms.unwrap_or(now_ms),
                    refund_tx: reported.refund_tx.clone(),
                    refund_error: reported.refund_error.clone(),
                });
                changed = true;
            }
        }
    }
    changed
}

/// The payout and refund the desk reports. `true` when anything changed.
fn merge_outcome(order: &mut Order, seen: &DeskExchange) -> bool {
    let mut changed = false;
    fn take<T: PartialEq>(field: &mut Option<T>, value: Option<T>, changed: &mut bool) {
        if value.is_some() && *field != value {
            *field = value;
            *changed = true;
        }
    }
    take(&mut order.payout_amount, seen.payout_amount, &mut changed);
    take(&mut order.payout_tx, seen.payout_tx.clone(), &mut changed);
    take(&mut order.refund_amount, seen.refund_amount, &mut changed);
    take(&mut order.refund_tx, seen.refund_tx.clone(), &mut changed);
    if let (Some(commission), None) = (&seen.commission, &order.fees_realized) {
        order.fees_realized = Some(crate::fees::ledger::realized_operator_fees(
            &order.fees,
            commission.amount,
            commission.currency,
        ));
        changed = true;
    }
    changed
}

/// The longest wait between two looks at a desk whose exchange is quiet.
pub const MAX_POLL_MS: i64 = 60_000;

/// When the engine asks the desk next. Every poll interval while a deposit is expected or
/// confirming (and at expiry at the latest); later, the longer the order has been quiet, the
/// less often: a tenth of the quiet time, up to a minute (and at the end of an emergency window
/// at the latest). An expired order is watched for a late deposit; a finished one only while a
/// later deposit waits to go back.
pub(crate) fn next_check(order: &Order, rules: &LifecycleRules, now_ms: i64) -> Option<i64> {
    let fast = now_ms + rules.poll_interval_ms;
    let quiet = (now_ms - order.updated_at_ms).max(0) / 10;
    let slow = now_ms
        + quiet.clamp(
            rules.poll_interval_ms,
            MAX_POLL_MS.max(rules.poll_interval_ms),
        );
    // A moment still ahead brings the next look forward; one already past does not.
    let by = |next: i64, at_ms: i64| {
        if at_ms > now_ms {
            next.min(at_ms)
        } else {
            next
        }
    };
    match order.status {
        OrderStatus::Completed | OrderStatus::Refunded | OrderStatus::Failed => {
            let returning = order.refund_address.is_some()
                && order
                    .deposits
                    .iter()
                    .skip(1)
                    .any(|d| d.refund_tx.is_none() && d.refund_error.is_none());
            returning.then_some(slow)
        }
        OrderStatus::Expired => {
            (now_ms < order.expires_at_ms + rules.late_watch_ms).then_some(slow)
        }
        OrderStatus::New | OrderStatus::AwaitingDeposit => Some(by(fast, order.expires_at_ms)),
        OrderStatus::Confirming => Some(fast),
        OrderStatus::Emergency => Some(match &order.emergency {
            Some(e) if e.choice.is_none() => by(slow, e.deadline_ms),
            _ => slow,
        }),
        OrderStatus::Exchanging | OrderStatus::Withdrawing | OrderStatus::Refunding => Some(slow),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::amount::Amount;
    use crate::market::RateType;
    use crate::market::currencies::currency;
    use crate::offchain::desk::{DeskDeposit, EmergencyCase};

    use crate::offchain::order::tests::{T0, new_order};

    fn order(refund: bool) -> Order {
        new_order(RateType::Fixed, refund)
    }

    fn seen(status: DeskStatus) -> DeskExchange {
        DeskExchange {
            id: "cn-1".into(),
            status,
            deposit_address: "bc1qdeposit".into(),
            deposit_tag: None,
            expected_from: None,
            expected_to: None,
            deposits: vec![],
            payout_tx: None,
            payout_amount: None,
            refund_tx: None,
            refund_amount: None,
            deposit_deadline: None,
            failure_reason: None,
            commission: None,
        }
    }

    fn deposit(confirmations: u32) -> DeskDeposit {
        DeskDeposit {
            tx_id: "tx_in".into(),
            amount: Some(Amount::parse("0.5", 8).unwrap()),
            confirmations,
            required_confirmations: Some(2),
            ..DeskDeposit::default()
        }
    }

    fn rules() -> LifecycleRules {
        LifecycleRules {
            poll_interval_ms: 5_000,
            emergency_window_ms: 60_000,
            ..LifecycleRules::default()
        }
    }

    fn types(followed: &Followed) -> Vec<EventType> {
        followed.events.iter().map(|e| e.event_type).collect()
    }

    #[test]
    fn a_reported_commission_realizes_the_operators_fees_once() {
        let usdt = currency("USDTTRC").unwrap();
        let fee = |kind: &str, amount: &str| crate::fees::entry::Fee {
            kind: kind.parse().unwrap(),
            rate: crate::fees::Rate::parse("25"),
            amount: Amount::parse(amount, usdt.precision).unwrap(),
            currency: usdt,
        };
        let mut order = order(false);
        order.fees = vec![fee("service", "2.5"), fee("affiliate", "2.5")];
        let mut finished = seen(DeskStatus::Finished);
        finished.deposits = vec![deposit(3)];
        finished.commission = Some(crate::offchain::desk::DeskCommission {
            amount: Amount::parse("4.8", 6).unwrap(),
            currency: currency("USDTTRC").unwrap(),
        });
        let done = follow(&order, &finished, &rules(), T0 + 1).unwrap().order;
        let realized: Vec<String> = done
            .fees_realized
            .clone()
            .unwrap()
            .into_iter()
            .map(|fee| fee.amount.to_string())
            .collect();
        assert_eq!(realized, ["2.4", "2.4"], "the report, split as quoted");
        // A later, different report does not rewrite what was realized.
        finished.commission.as_mut().unwrap().amount = Amount::parse("9", 6).unwrap();
        let again = follow(&done, &finished, &rules(), T0 + 2);
        assert_eq!(
            again.map_or(done.fees_realized.clone(), |f| f.order.fees_realized),
            done.fees_realized
        );
    }

    #[test]
    fn a_desk_seen_late_is_followed_through_every_status_in_one_save() {
        let mut finished = seen(DeskStatus::Finished);
        finished.deposits = vec![deposit(3)];
        finished.payout_tx = Some("tx_out".into());
        finished.payout_amount = Some(Amount::parse("47990", 6).unwrap());
        let followed = follow(&order(false), &finished, &rules(), T0 + 1).unwrap();
        use EventType::*;
        assert_eq!(
            types(&followed),
            [Updated, ExchangeStarted, WithdrawStarted, Completed]
        );
        let sequences: Vec<i64> = followed.events.iter().map(|e| e.sequence).collect();
        assert_eq!(sequences, [3, 4, 5, 6]);
        // Each event shows the status it entered, and the one before.
        assert_eq!(followed.events[0].data["status"], "confirming");
        assert_eq!(
            followed.events[0].data["previousStatus"],
            "awaiting_deposit"
        );
        assert_eq!(followed.events[3].data["previousStatus"], "withdrawing");
        let done = &followed.order;
        assert_eq!(done.status, OrderStatus::Completed);
        assert_eq!(done.version, 3, "one save, one version");
        assert_eq!(done.payout_tx.as_deref(), Some("tx_out"));
        assert_eq!(
            done.payout_amount.map(|a| a.to_string()).as_deref(),
            Some("47990")
        );
        assert_eq!(done.deposits[0].confirmations, 3);
        assert_eq!(
            done.next_check_at_ms, None,
            "a finished order is not looked at again"
        );
    }

    #[test]
    fn news_within_a_status_is_one_update_and_nothing_new_is_nothing() {
        let mut confirming = order(false);
        confirming.status = OrderStatus::Confirming;
        let mut report = seen(DeskStatus::Confirming);
        report.deposits = vec![deposit(0)];
        let first = follow(&confirming, &report, &rules(), T0).unwrap();
        assert_eq!(types(&first), [EventType::Updated]);
        assert_eq!(first.order.deposits[0].required_confirmations, 2);
        // The same report again changes nothing but when to look next.
        let again = follow(&first.order, &report, &rules(), T0 + 1_000).unwrap();
        assert!(again.events.is_empty());
        assert_eq!(again.order.next_check_at_ms, Some(T0 + 6_000));
        assert_eq!(follow(&again.order, &report, &rules(), T0 + 1_000), None);
    }

    #[test]
    fn reports_that_would_take_the_order_back_or_hold_it_change_no_status() {
        let mut exchanging = order(false);
        exchanging.status = OrderStatus::Exchanging;
        for status in [
            DeskStatus::NeedsChoice(vec![EmergencyCase::Less]),
            DeskStatus::AwaitingDeposit,
            DeskStatus::OnHold,
        ] {
            let followed = follow(&exchanging, &seen(status.clone()), &rules(), T0);
            assert!(
                followed.is_none_or(
                    |f| f.order.status == OrderStatus::Exchanging && f.events.is_empty()
                ),
                "{status:?}"
            );
        }
    }

    #[test]
    fn an_emergency_shows_its_reasons_and_is_refunded_when_its_window_ends() {
        let mut confirming = order(true);
        confirming.status = OrderStatus::Confirming;
        let mut report = seen(DeskStatus::NeedsChoice(vec![
            EmergencyCase::Less,
            EmergencyCase::Late,
        ]));
        report.deposits = vec![deposit(2)];
        let held = follow(&confirming, &report, &rules(), T0).unwrap();
        assert_eq!(
            types(&held),
            [EventType::Emergency],
            "the deposit comes with it"
        );
        let emergency = held.order.emergency.clone().unwrap();
        assert_eq!(
            emergency.reasons,
            [EmergencyReason::Expired, EmergencyReason::Less]
        );
        assert_eq!(emergency.allowed, [Choice::Exchange, Choice::Refund]);
        assert_eq!(emergency.deadline_ms, T0 + 60_000);
        assert_eq!(held.order.next_check_at_ms, Some(T0 + 5_000));
        // Nobody answers: at the end of the window swapd chooses the refund.
        let late = follow(&held.order, &report, &rules(), T0 + 60_000).unwrap();
        assert_eq!(types(&late), [EventType::Updated]);
        assert_eq!(late.order.status, OrderStatus::Refunding);
        assert_eq!(
            late.order.refund_amount.map(|a| a.to_string()).as_deref(),
            Some("0.5")
        );
        assert_eq!(
            pending_action(&late.order, &report.status),
            Some(DeskAction::Choose(
                Choice::Refund,
                Some(Destination {
                    address: "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq".into(),
                    tag: None
                })
            ))
        );
    }

    #[test]
    fn a_deposit_outside_the_limits_goes_back_at_once_when_it_can() {
        let mut confirming = order(true);
        confirming.status = OrderStatus::Confirming;
        let report = seen(DeskStatus::NeedsChoice(vec![EmergencyCase::OutOfLimits]));
        let followed = follow(&confirming, &report, &rules(), T0).unwrap();
        assert_eq!(types(&followed), [EventType::Emergency, EventType::Updated]);
        assert_eq!(followed.order.status, OrderStatus::Refunding);
        // Without a refund address it waits for one.
        let followed = follow(
            &Order {
                refund_address: None,
                ..confirming
            },
            &report,
            &rules(),
            T0,
        )
        .unwrap();
        assert_eq!(followed.order.status, OrderStatus::Emergency);
        assert_eq!(followed.order.emergency.unwrap().allowed, [Choice::Refund]);
    }

    #[test]
    fn decisions_are_passed_on_only_while_the_desk_waits_for_them() {
        let mut exchanging = order(true);
        exchanging.status = OrderStatus::Exchanging;
        exchanging.emergency = Some(Emergency {
            reasons: vec![EmergencyReason::Less],
            allowed: vec![Choice::Exchange, Choice::Refund],
            choice: Some(Choice::Exchange),
            deadline_ms: T0,
        });
        let waiting = DeskStatus::NeedsChoice(vec![EmergencyCase::Less]);
        assert_eq!(
            pending_action(&exchanging, &waiting),
            Some(DeskAction::Choose(Choice::Exchange, None))
        );
        assert_eq!(pending_action(&exchanging, &DeskStatus::Exchanging), None);

        let mut refunding = order(true);
        refunding.status = OrderStatus::Refunding;
        let to = Destination {
            address: "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq".into(),
            tag: None,
        };
        for holding in [DeskStatus::Confirming, DeskStatus::OnHold] {
            assert_eq!(
                pending_action(&refunding, &holding),
                Some(DeskAction::Refund(to.clone()))
            );
        }
        assert_eq!(pending_action(&refunding, &DeskStatus::Refunding), None);
        assert_eq!(pending_action(&order(true), &DeskStatus::Confirming), None);
    }

    #[test]
    fn a_desk_that_gives_up_fails_the_order_with_a_reason() {
        let mut confirming = order(false);
        confirming.status = OrderStatus::Confirming;
        let followed = follow(&confirming, &seen(DeskStatus::Failed), &rules(), T0).unwrap();
        assert_eq!(types(&followed), [EventType::Failed]);
        assert_eq!(
            followed.order.failure_reason.as_deref(),
            Some("the desk could not complete the exchange")
        );
        assert_eq!(followed.order.next_check_at_ms, None);
    }

    #[test]
    fn a_desk_is_asked_often_while_a_deposit_is_expected_and_less_the_longer_it_is_quiet() {
        let report = |status| {
            let mut report = seen(status);
            report.deposits = vec![deposit(3)];
            report
        };
        let mut confirming = order(false);
        confirming.status = OrderStatus::Confirming;
        confirming.updated_at_ms = T0 - 3_600_000;
        let fast = follow(&confirming, &report(DeskStatus::Confirming), &rules(), T0).unwrap();
        assert_eq!(fast.order.next_check_at_ms, Some(T0 + 5_000));
        // Exchanging for ten minutes now: once a minute.
        let mut exchanging = fast.order.clone();
        exchanging.status = OrderStatus::Exchanging;
        exchanging.updated_at_ms = T0;
        let later = T0 + 600_000;
        let quiet = follow(
            &exchanging,
            &report(DeskStatus::Exchanging),
            &rules(),
            later,
        )
        .unwrap();
        assert_eq!(quiet.order.next_check_at_ms, Some(later + MAX_POLL_MS));
        // Just changed: soon again.
        let moved = follow(&exchanging, &report(DeskStatus::Sending), &rules(), later).unwrap();
        assert_eq!(moved.order.next_check_at_ms, Some(later + 5_000));
    }

    #[test]
    fn a_quiet_look_only_reschedules_and_news_or_a_desk_back_from_failing_do_not() {
        let awaiting = order(false);
        let quiet = follow(
            &awaiting,
            &seen(DeskStatus::AwaitingDeposit),
            &rules(),
            T0 + 1,
        )
        .expect("the next look moves");
        assert!(quiet.events.is_empty());
        assert!(quiet.only_reschedules(&awaiting));
        let mut deposited = seen(DeskStatus::AwaitingDeposit);
        deposited.deposits = vec![deposit(0)];
        let news = follow(&awaiting, &deposited, &rules(), T0 + 1).unwrap();
        assert!(!news.only_reschedules(&awaiting));
        // The desk answers again after failures: the count goes back to 0, a change to store.
        let mut failing = awaiting.clone();
        failing.desk_failures = 3;
        let back = follow(
            &failing,
            &seen(DeskStatus::AwaitingDeposit),
            &rules(),
            T0 + 1,
        )
        .unwrap();
        assert!(back.events.is_empty());
        assert!(!back.only_reschedules(&failing));
    }

    #[test]
    fn paths_follow_the_legal_transitions() {
        use OrderStatus::*;
        assert_eq!(
            path(AwaitingDeposit, Completed),
            [Confirming, Exchanging, Withdrawing, Completed]
        );
        assert_eq!(
            path(AwaitingDeposit, Refunded),
            [Confirming, Refunding, Refunded]
        );
        assert_eq!(
            path(Expired, Completed),
            [Emergency, Exchanging, Withdrawing, Completed]
        );
        assert_eq!(path(Confirming, Failed), [Failed]);
        assert!(path(Completed, Refunding).is_empty());
        assert!(path(Exchanging, Emergency).is_empty());
        assert!(path(Withdrawing, Withdrawing).is_empty());
    }
}
