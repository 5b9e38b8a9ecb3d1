//! An offchain order: its status machine (which transitions exist and which event each one
//! emits), what it holds, and the outbox event it records about itself (docs/orders.md, "The
//! lifecycle"). Pure: the use cases and the order engine decide, the store applies.

use serde::{Deserialize, Serialize};

use crate::address::{Address, Network};
use crate::amount::Amount;
use crate::fees::entry::{self, Fee};
use crate::fees::ledger::{Charged, Stage};
use crate::ids::{EventId, OrderId};
use crate::market::currencies::CurrencyDef;
use crate::market::{Direction, RateType};
use crate::notify::Email;
use crate::owner::Owner;

/// Where an order is. Every change of status is one of [`OrderStatus::can_become`]'s edges.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum OrderStatus {
    New,
    AwaitingDeposit,
    Confirming,
    Exchanging,
    Withdrawing,
    Completed,
    Expired,
    Emergency,
    Refunding,
    Refunded,
    Failed,
}

impl OrderStatus {
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// No further change will happen. (`expired` is not terminal: a late deposit reopens it
    /// as an emergency.)
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            OrderStatus::Completed | OrderStatus::Refunded | OrderStatus::Failed
        )
    }

    /// The legal transitions; everything else is refused by construction.
    pub fn can_become(self, next: OrderStatus) -> bool {
        use OrderStatus::*;
        matches!(
            (self, next),
            (New, AwaitingDeposit | Failed)
                | (AwaitingDeposit, Confirming | Expired | Emergency)
                | (Confirming, Exchanging | Emergency | Refunding)
                | (Expired, Emergency)
                | (Emergency, Exchanging | Refunding)
                | (Exchanging, Withdrawing | Failed)
                | (Withdrawing, Completed | Failed)
                | (Refunding, Refunded | Failed)
                // A desk that gives up on an exchange, whatever it was doing.
                | (AwaitingDeposit | Confirming | Expired | Emergency, Failed)
        )
    }

    /// The event entering this status emits.
    pub fn entry_event(self) -> EventType {
        match self {
            OrderStatus::New => EventType::Created,
            OrderStatus::AwaitingDeposit => EventType::AwaitingDeposit,
            OrderStatus::Exchanging => EventType::ExchangeStarted,
            OrderStatus::Withdrawing => EventType::WithdrawStarted,
            OrderStatus::Completed => EventType::Completed,
            OrderStatus::Expired => EventType::Expired,
            OrderStatus::Emergency => EventType::Emergency,
            OrderStatus::Failed => EventType::Failed,
            OrderStatus::Confirming | OrderStatus::Refunding | OrderStatus::Refunded => {
                EventType::Updated
            }
        }
    }
}

pub use swapd_types::webhooks::EventType;

/// Why an order needs the user's choice (FixedFloat's emergency codes).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, strum::IntoStaticStr,
)]
#[serde(rename_all = "UPPERCASE")]
#[strum(serialize_all = "UPPERCASE")]
pub enum EmergencyReason {
    /// The deposit arrived after the order expired.
    Expired,
    /// Less than expected (fixed orders, beyond the tolerance), or below the minimum with `Limit`.
    Less,
    /// More than expected (fixed orders, beyond the tolerance), or above the maximum with `Limit`.
    More,
    /// Outside the provider's limits: only a refund is possible.
    Limit,
}

impl EmergencyReason {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, strum::IntoStaticStr,
)]
#[serde(rename_all = "UPPERCASE")]
#[strum(serialize_all = "UPPERCASE")]
pub enum Choice {
    /// Continue at the current market rate for the amount received.
    Exchange,
    /// Send the deposit back (less the network fee) to the refund address.
    Refund,
}

impl Choice {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// What a customer may choose in an emergency for these reasons: a deposit outside the limits
/// can only go back.
pub fn allowed_choices(reasons: &[EmergencyReason]) -> Vec<Choice> {
    if reasons.contains(&EmergencyReason::Limit) {
        vec![Choice::Refund]
    } else {
        vec![Choice::Exchange, Choice::Refund]
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

/// A deposit the chain has seen for an order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deposit {
    pub tx_id: String,
    /// In the order's input currency.
    pub amount: Amount,
    pub confirmations: u32,
    pub required_confirmations: u32,
    pub seen_at_ms: i64,
    /// For a deposit after the first: the transfer that sent it back.
    pub refund_tx: Option<String>,
    /// For a deposit after the first: why it could not be sent back.
    pub refund_error: Option<String>,
}

/// An order waiting for the user's choice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Emergency {
    pub reasons: Vec<EmergencyReason>,
    pub allowed: Vec<Choice>,
    pub choice: Option<Choice>,
    /// After this an order with a refund address is refunded.
    pub deadline_ms: i64,
}

/// An offchain order: the user sends `from_amount` of `from` to the desk's deposit address, the
/// desk pays `to` out to `to_address`. `version` increases with every write
/// (compare-and-set). Amounts are in their currency: the input's, or the output's for the
/// payout and the quoted output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Order {
    pub id: OrderId,
    /// Who created it, and so who may see it.
    pub owner: Owner,
    pub status: OrderStatus,
    pub version: i64,
    pub rate_type: RateType,
    pub direction: Direction,
    pub from: &'static CurrencyDef,
    pub to: &'static CurrencyDef,
    pub provider: String,
    /// The desk's id for the exchange.
    pub provider_ref: String,
    /// What the desk needs to act on the exchange later (FixedFloat's order token), sealed
    /// with the master key.
    pub desk_token: Option<String>,
    /// The locked rate (fixed) or the rate quoted at creation (float): output per input.
    pub rate: Amount,
    /// What the user is asked to send.
    pub from_amount: Amount,
    /// What the user is told to expect.
    pub to_amount: Amount,
    /// Input limits of the provider.
    pub min: Amount,
    /// `None`: the provider has no maximum.
    pub max: Option<Amount>,
    /// The desk's address for the deposit, as the desk gave it.
    pub deposit_address: String,
    pub deposit_tag: Option<String>,
    pub to_address: Address,
    pub to_tag: Option<String>,
    pub refund_address: Option<Address>,
    pub refund_tag: Option<String>,
    pub deposits: Vec<Deposit>,
    pub payout_tx: Option<String>,
    pub payout_amount: Option<Amount>,
    pub refund_tx: Option<String>,
    pub refund_amount: Option<Amount>,
    pub emergency: Option<Emergency>,
    pub affiliate_code: Option<String>,
    /// The fees of its quote, locked with its terms (docs/fees.md).
    pub fees: Vec<Fee>,
    /// The parties' fees as the desk reported taking them, where it reports them (ChangeNOW's
    /// `partnerInfo.commission`); otherwise its completion realizes `fees`.
    pub fees_realized: Option<Vec<Fee>>,
    pub email: Option<Email>,
    /// The createToken it was made with, by hash.
    pub create_token_hash: Option<String>,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
    pub expires_at_ms: i64,
    /// When the order engine looks at the order next; `None` when it is finished.
    pub next_check_at_ms: Option<i64>,
    /// Looks at the order's desk that failed in a row (down, timing out, rate limiting): the
    /// engine backs off while they last (`follow::retry_later`).
    pub desk_failures: u32,
    /// Sequence number of the order's latest outbox event.
    pub event_sequence: i64,
    /// Why the order failed.
    pub failure_reason: Option<String>,
    /// The hosted order page, its link carrying the order's page token (docs/order-page.md).
    pub page_url: Option<String>,
    /// When the desk started exchanging (the deposit confirmed), for the observed durations.
    pub exchange_started_at_ms: Option<i64>,
    /// The owner asked for the refund (not the desk's doing: docs/market.md, "Observed figures").
    pub refund_requested: bool,
}

/// One outbox entry: an event about an order, written in the transaction that changed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderEvent {
    pub id: EventId,
    pub order_id: OrderId,
    pub owner: Owner,
    /// 1, 2, 3… per order, in commit order.
    pub sequence: i64,
    pub event_type: EventType,
    /// The order as the API shows it after the change, plus `previousStatus`.
    pub data: serde_json::Value,
    pub created_at_ms: i64,
    /// The e-mail address to tell about this event: set for status changes of orders with an
    /// e-mail attached.
    pub notify_email: Option<Email>,
}

/// How long a new order waits for its deposit (`orders.fixed_lifetime_secs`,
/// `orders.float_lifetime_secs`): a fixed order keeps its rate that long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OrderLifetimes {
    pub fixed_ms: i64,
    pub float_ms: i64,
}

impl Default for OrderLifetimes {
    /// 30 minutes at a fixed rate, an hour at a float one.
    fn default() -> Self {
        Self {
            fixed_ms: 30 * 60 * 1000,
            float_ms: 60 * 60 * 1000,
        }
    }
}

impl OrderLifetimes {
    pub fn for_rate(self, rate_type: RateType) -> i64 {
        match rate_type {
            RateType::Fixed => self.fixed_ms,
            RateType::Float => self.float_ms,
        }
    }
}

impl Order {
    /// Its fees as the ledger files them: as quoted, or as realized.
    pub fn charged(&self, stage: Stage) -> Charged<'_> {
        Charged::at(
            stage,
            (
                self.id.as_str(),
                &self.owner,
                self.affiliate_code.as_deref(),
            ),
            &self.fees,
            self.fees_realized.as_deref(),
        )
    }

    /// The order as the API shows it.
    pub fn view(&self) -> swapd_types::orders::OrderView {
        use swapd_types::orders::{
            OrderEmergency, OrderFrom, OrderRefund, OrderTo, OrderView, Received,
        };
        let secs = |ms: i64| ms.div_euclid(1000);
        let text = |amount: Option<Amount>| amount.map(|a| a.to_string());
        OrderView {
            order_id: self.id.to_string(),
            status: self.status.as_str().into(),
            rate_type: self.rate_type,
            direction: self.direction,
            from_ccy: self.from.code.into(),
            to_ccy: self.to.code.into(),
            rate: self.rate.to_string(),
            provider: self.provider.clone(),
            created_at: secs(self.created_at_ms),
            updated_at: secs(self.updated_at_ms),
            expires_at: secs(self.expires_at_ms),
            from: OrderFrom {
                code: self.from.code.into(),
                amount: self.from_amount.to_string(),
                deposit_address: self.deposit_address.clone(),
                deposit_tag: self.deposit_tag.clone(),
                received: self
                    .deposits
                    .iter()
                    .map(|d| Received {
                        tx_id: d.tx_id.clone(),
                        amount: d.amount.to_string(),
                        confirmations: d.confirmations,
                        required_confirmations: d.required_confirmations,
                        seen_at: secs(d.seen_at_ms),
                        refund_tx_id: d.refund_tx.clone(),
                    })
                    .collect(),
            },
            to: OrderTo {
                code: self.to.code.into(),
                amount: self.payout_amount.unwrap_or(self.to_amount).to_string(),
                address: self.to_address.as_str().into(),
                tag: self.to_tag.clone(),
                tx_id: self.payout_tx.clone(),
            },
            refund: OrderRefund {
                address: self.refund_address.as_ref().map(|a| a.as_str().into()),
                tag: self.refund_tag.clone(),
                amount: text(self.refund_amount),
                tx_id: self.refund_tx.clone(),
            },
            emergency: self.emergency.as_ref().map(|e| OrderEmergency {
                reasons: e.reasons.iter().map(|r| r.as_str().into()).collect(),
                allowed_choices: e.allowed.iter().map(|c| c.as_str().into()).collect(),
                choice: e.choice.map(|c| c.as_str().into()),
                deadline: secs(e.deadline_ms),
            }),
            affiliate_code: self.affiliate_code.clone(),
            fees: entry::views(&self.fees),
            email_attached: self.email.is_some(),
            failure_reason: self.failure_reason.clone(),
            order_page_url: self.page_url.clone(),
        }
    }

    /// The next version of the order in `status`. Panics on an illegal transition: the
    /// decisions that call it only make legal ones, and the tests walk them all.
    pub fn advanced(&self, status: OrderStatus, now_ms: i64) -> Order {
        assert!(
            self.status.can_become(status),
            "illegal transition {} -> {}",
            self.status.as_str(),
            status.as_str()
        );
        let mut next = self.touched(now_ms);
        next.enter(status, now_ms);
        next
    }

    /// Puts the order in `status` at `now_ms`, noting when its desk started exchanging (for
    /// the observed durations: docs/market.md).
    pub fn enter(&mut self, status: OrderStatus, now_ms: i64) {
        self.status = status;
        self.updated_at_ms = now_ms;
        if status == OrderStatus::Exchanging && self.exchange_started_at_ms.is_none() {
            self.exchange_started_at_ms = Some(now_ms);
        }
    }

    /// The next version of the order, in the same status.
    pub fn touched(&self, now_ms: i64) -> Order {
        let mut next = self.clone();
        next.version += 1;
        next.updated_at_ms = now_ms;
        next
    }

    /// The next version, sending the first deposit back: refunding, due for the engine now.
    pub fn refunding(&self, now_ms: i64) -> Order {
        let mut refunding = self.advanced(OrderStatus::Refunding, now_ms);
        refunding.refund_amount = self.deposits.first().map(|d| d.amount);
        refunding.next_check_at_ms = Some(now_ms);
        refunding
    }

    /// Records the next outbox event about this order as it is now (the order's view plus
    /// `previousStatus`), numbering it after the previous one.
    pub fn record_event(
        &mut self,
        event_type: EventType,
        previous_status: Option<OrderStatus>,
    ) -> OrderEvent {
        self.event_sequence += 1;
        let sequence = self.event_sequence;
        let mut data = serde_json::to_value(self.view()).expect("views serialize");
        data["previousStatus"] =
            previous_status.map_or(serde_json::Value::Null, |s| s.as_str().into());
        let status_changed = previous_status != Some(self.status);
        OrderEvent {
            id: EventId::generate(),
            order_id: self.id.clone(),
            owner: self.owner.clone(),
            sequence,
            event_type,
            data,
            created_at_ms: self.updated_at_ms,
            notify_email: self.email.clone().filter(|_| status_changed),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use strum::VariantArray;

    use super::*;

    pub(crate) const T0: i64 = 1_800_000_000_000;

    pub(crate) fn amount(text: &str, currency: &CurrencyDef) -> Amount {
        Amount::parse(text, currency.precision).unwrap()
    }

    /// An order awaiting its deposit: 1 BTC for 96 000 USDTTRC, opened at [`T0`].
    pub(crate) fn new_order(rate_type: RateType, refund: bool) -> Order {
        let currency = |code| crate::market::currencies::currency(code).unwrap();
        let (btc, usdt) = (currency("BTC"), currency("USDTTRC"));
        Order {
            id: OrderId::stored("ord_prop".into()).unwrap(),
            owner: Owner::Key("prop".into()),
            status: OrderStatus::AwaitingDeposit,
            version: 2,
            rate_type,
            direction: Direction::From,
            from: btc,
            to: usdt,
            provider: "atlas".into(),
            provider_ref: "atlas-ord_prop".into(),
            desk_token: None,
            rate: amount("96000", usdt),
            from_amount: amount("1", btc),
            to_amount: amount("96000", usdt),
            min: amount("0.1", btc),
            max: Some(amount("2", btc)),
            deposit_address: "bc1qdeposit".into(),
            deposit_tag: None,
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
            exchange_started_at_ms: None,
            refund_requested: false,
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

    #[test]
    fn transitions_follow_the_table_and_events_are_the_spec_nine() {
        use OrderStatus::*;
        assert!(New.can_become(AwaitingDeposit));
        assert!(Expired.can_become(Emergency));
        assert!(!Completed.can_become(Refunding));
        assert!(!AwaitingDeposit.can_become(Completed));
        for &status in OrderStatus::VARIANTS {
            assert_eq!(status.as_str().parse::<OrderStatus>().ok(), Some(status));
            if status.is_terminal() {
                assert!(
                    OrderStatus::VARIANTS
                        .iter()
                        .all(|next| !status.can_become(*next))
                );
            }
        }
        let names: Vec<_> = EventType::VARIANTS.iter().map(|e| e.as_str()).collect();
        assert_eq!(names.len(), 9);
        for name in names {
            assert_eq!(name.parse::<EventType>().unwrap().as_str(), name);
            assert_eq!(
                serde_json::to_string(&name.parse::<EventType>().unwrap()).unwrap(),
                format!("\"{name}\"")
            );
        }
        assert_eq!(Withdrawing.entry_event(), EventType::WithdrawStarted);
        assert_eq!(Refunded.entry_event(), EventType::Updated);
    }
}
