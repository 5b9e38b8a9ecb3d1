//! What a caller does to an order, as pure decisions: open it on a desk's exchange, attach an
//! e-mail, wake it for the engine, answer its emergency or ask for a refund. Each returns the
//! order's next version (and its event) for the use case to save with a compare-and-set.

use crate::address::Address;
use crate::amount::Amount;
use crate::fees::entry::Fee;
use crate::ids::OrderId;
use crate::market::currencies::CurrencyDef;
use crate::market::{Direction, RateType, pricing};
use crate::notify::Email;
use crate::offchain::desk::OpenedExchange;
use crate::offchain::follow::{LifecycleRules, next_check};
use crate::offchain::order::{Choice, EventType, Order, OrderEvent, OrderStatus};
use crate::owner::Owner;

/// What opening an order takes: the accepted terms, the exchange the provider opened for them,
/// and what the user asked for.
#[derive(Debug, Clone)]
pub struct OpenOrder {
    pub id: OrderId,
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
    pub fees: Vec<Fee>,
    /// The hosted order page's link (with its token).
    pub page_url: Option<String>,
    /// The redeemed createToken's hash, when the terms came from one.
    pub create_token_hash: Option<String>,
    /// How long it waits for its deposit, and when the engine first looks at it.
    pub rules: LifecycleRules,
    pub now_ms: i64,
}

/// A new order whose exchange is open: created and awaiting its deposit in one step, at version
/// 2, with both events for the outbox, waiting for its deposit as long as the rules' lifetimes
/// say for its rate type. The engine first looks at it when it would look at any order awaiting
/// its deposit: one poll interval on (the desk has just opened the exchange; no deposit can be
/// there yet, and a sandbox deposit wakes the order itself).
pub fn open(input: OpenOrder) -> (Order, [OrderEvent; 2]) {
    let now_ms = input.now_ms;
    let lifetime = input.rules.lifetimes.for_rate(input.rate_type);
    let mut order = Order {
        id: input.id,
        owner: input.owner,
        status: OrderStatus::New,
        version: 1,
        rate_type: input.rate_type,
        direction: input.direction,
        from: input.from,
        to: input.to,
        provider: input.provider,
        provider_ref: input.exchange.id,
        desk_token: input.exchange.access_token,
        rate: pricing::rate(input.from_amount, input.to_amount),
        from_amount: input.from_amount,
        to_amount: input.to_amount,
        min: input.min,
        max: input.max,
        deposit_address: input.exchange.deposit_address,
        deposit_tag: input.exchange.deposit_tag,
        to_address: input.to_address,
        to_tag: input.to_tag,
        refund_address: input.refund_address,
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
        exchange_started_at_ms: None,
        refund_requested: false,
        email: input.email,
        create_token_hash: input.create_token_hash,
        created_at_ms: now_ms,
        updated_at_ms: now_ms,
        expires_at_ms: now_ms + lifetime,
        // Set below, once it awaits its deposit.
        next_check_at_ms: None,
        desk_failures: 0,
        event_sequence: 0,
        failure_reason: None,
    };
    let created = order.record_event(EventType::Created, None);
    let mut awaiting = order.advanced(OrderStatus::AwaitingDeposit, now_ms);
    let awaiting_event = awaiting.record_event(EventType::AwaitingDeposit, Some(OrderStatus::New));
    awaiting.next_check_at_ms = next_check(&awaiting, &input.rules, now_ms);
    (awaiting, [created, awaiting_event])
}

/// Status e-mails to `email` from now on. `None`: that address is already attached.
pub fn attach_email(order: &Order, email: &Email, now_ms: i64) -> Option<(Order, EventType)> {
    if order.email.as_ref() == Some(email) {
        return None;
    }
    let mut updated = order.touched(now_ms);
    updated.email = Some(email.clone());
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
    refund: Option<(Address, Option<String>)>,
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
            let mut exchanging = chosen.advanced(OrderStatus::Exchanging, now_ms);
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
    refund: Option<(Address, Option<String>)>,
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
        OrderStatus::Confirming if !order.deposits.is_empty() => {
            let asked = Order {
                refund_requested: true,
                ..order.clone()
            };
            refund_now(&asked, refund, now_ms)
        }
        other => Err(ChoiceError::NotRefundable(other.as_str())),
    }
}

fn refund_now(
    order: &Order,
    refund: Option<(Address, Option<String>)>,
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
    Ok((with_address.refunding(now_ms), EventType::Updated))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::address::Network;
    use crate::offchain::order::OrderLifetimes;
    use crate::offchain::order::tests::{T0, new_order};

    fn opening(rate_type: RateType) -> OpenOrder {
        let currency = |code| crate::market::currencies::currency(code).unwrap();
        OpenOrder {
            id: OrderId::stored("ord_open".into()).unwrap(),
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
            rules: LifecycleRules {
                lifetimes: OrderLifetimes {
                    fixed_ms: 60_000,
                    float_ms: 120_000,
                },
                poll_interval_ms: 1_000,
                ..LifecycleRules::default()
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
        assert_eq!(
            order.next_check_at_ms,
            Some(T0 + 1_000),
            "first looked at one poll interval after it opened"
        );
        assert_eq!(order.rate.to_string(), "96000");
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
        assert_eq!(
            created.notify_email.as_ref().map(Email::as_str),
            Some("user@example.com")
        );
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
}
