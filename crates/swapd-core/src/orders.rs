//! Offchain orders: the status machine (which transitions exist and which event each one emits)
//! and the emergency rules that classify a deposit (docs/orders.md, "The lifecycle").
//! Pure: the lifecycle engine and the store apply these decisions.

use serde::{Deserialize, Serialize};

use crate::amount::{Amount, Rounding};
use crate::market::routes::RouteFee;
use crate::market::{Direction, RateType};

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
            rules.expected.mul_div(
                alloy_primitives::U256::from(bps),
                alloy_primitives::U256::from(crate::market::pricing::BPS),
                rounding,
            )
        };
        let low = band(
            crate::market::pricing::BPS - rules.tolerance_bps,
            Rounding::Up,
        );
        let high = band(
            crate::market::pricing::BPS + rules.tolerance_bps,
            Rounding::Down,
        );
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

/// What a customer may choose in an emergency for these reasons: a deposit outside the limits
/// can only go back.
pub fn allowed_choices(reasons: &[EmergencyReason]) -> Vec<Choice> {
    if reasons.contains(&EmergencyReason::Limit) {
        vec![Choice::Refund]
    } else {
        vec![Choice::Exchange, Choice::Refund]
    }
}

/// A deposit the chain has seen for an order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Deposit {
    pub tx_id: String,
    pub amount: String,
    pub confirmations: u32,
    pub required_confirmations: u32,
    pub seen_at_ms: i64,
    /// For a deposit after the first: the transfer that sent it back.
    #[serde(default)]
    pub refund_tx: Option<String>,
    /// For a deposit after the first: why it could not be sent back.
    #[serde(default)]
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

/// An offchain order as stored. Amounts are decimal strings in display units of their
/// currency; `version` increases with every write (compare-and-set).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Order {
    /// `ord_…`.
    pub id: String,
    /// The caller scope that created it (`key:<id>`, `wallet:<address>`).
    pub owner: String,
    pub status: OrderStatus,
    pub version: i64,
    pub rate_type: RateType,
    pub direction: Direction,
    pub from_code: String,
    pub to_code: String,
    pub provider: String,
    /// The desk's id for the exchange.
    pub provider_ref: String,
    /// What the desk needs to act on the exchange later (FixedFloat's order token), sealed
    /// with the master key.
    #[serde(default)]
    pub desk_token: Option<String>,
    /// The locked rate (fixed) or the rate quoted at creation (float).
    pub rate: String,
    /// What the user is asked to send.
    pub from_amount: String,
    /// What the user is told to expect.
    pub to_amount: String,
    /// Input limits of the provider, in `from_code`.
    pub min: String,
    /// `None`: the provider has no maximum.
    pub max: Option<String>,
    pub deposit_address: String,
    pub deposit_tag: Option<String>,
    pub to_address: String,
    pub to_tag: Option<String>,
    pub refund_address: Option<String>,
    pub refund_tag: Option<String>,
    pub deposits: Vec<Deposit>,
    pub payout_tx: Option<String>,
    pub payout_amount: Option<String>,
    pub refund_tx: Option<String>,
    pub refund_amount: Option<String>,
    pub emergency: Option<Emergency>,
    pub affiliate_code: Option<String>,
    /// The fees of its quote, locked with its terms (docs/fees.md).
    #[serde(default)]
    pub fees: Vec<crate::market::routes::RouteFee>,
    /// The parties' fees as the desk reported taking them, where it reports them (ChangeNOW's
    /// `partnerInfo.commission`); otherwise its completion realizes `fees`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fees_realized: Option<Vec<crate::market::routes::RouteFee>>,
    pub email: Option<String>,
    /// The createToken it was made with, by hash.
    pub create_token_hash: Option<String>,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
    pub expires_at_ms: i64,
    /// When the lifecycle engine looks at the order next; `None` when it is finished.
    #[serde(default)]
    pub next_check_at_ms: Option<i64>,
    /// Looks at the order's desk that failed in a row (down, timing out, rate limiting): the
    /// engine backs off while they last (`follow::retry_later`).
    #[serde(default)]
    pub desk_failures: u32,
    /// Sequence number of the order's latest outbox event.
    #[serde(default)]
    pub event_sequence: i64,
    /// Why the order failed.
    #[serde(default)]
    pub failure_reason: Option<String>,
    /// The hosted order page, its link carrying the order's page token (docs/order-page.md).
    #[serde(default)]
    pub page_url: Option<String>,
}

/// One outbox entry: an event about an order, written in the transaction that changed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrderEvent {
    /// `evt_…`.
    pub id: String,
    pub order_id: String,
    pub owner: String,
    /// 1, 2, 3… per order, in commit order.
    pub sequence: i64,
    pub event_type: EventType,
    /// The order as the API shows it after the change, plus `previousStatus`.
    pub data: serde_json::Value,
    pub created_at_ms: i64,
    /// The e-mail address to tell about this event: set for status changes of orders with an
    /// e-mail attached.
    #[serde(default)]
    pub notify_email: Option<String>,
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
    pub fn charged(&self, stage: crate::fees::Stage) -> crate::fees::Charged<'_> {
        crate::fees::Charged::at(
            stage,
            (&self.id, &self.owner, self.affiliate_code.as_deref()),
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
        OrderView {
            order_id: self.id.clone(),
            status: self.status.as_str().into(),
            rate_type: self.rate_type,
            direction: self.direction,
            from_ccy: self.from_code.clone(),
            to_ccy: self.to_code.clone(),
            rate: self.rate.clone(),
            provider: self.provider.clone(),
            created_at: secs(self.created_at_ms),
            updated_at: secs(self.updated_at_ms),
            expires_at: secs(self.expires_at_ms),
            from: OrderFrom {
                code: self.from_code.clone(),
                amount: self.from_amount.clone(),
                deposit_address: self.deposit_address.clone(),
                deposit_tag: self.deposit_tag.clone(),
                received: self
                    .deposits
                    .iter()
                    .map(|d| Received {
                        tx_id: d.tx_id.clone(),
                        amount: d.amount.clone(),
                        confirmations: d.confirmations,
                        required_confirmations: d.required_confirmations,
                        seen_at: secs(d.seen_at_ms),
                        refund_tx_id: d.refund_tx.clone(),
                    })
                    .collect(),
            },
            to: OrderTo {
                code: self.to_code.clone(),
                amount: self
                    .payout_amount
                    .clone()
                    .unwrap_or_else(|| self.to_amount.clone()),
                address: self.to_address.clone(),
                tag: self.to_tag.clone(),
                tx_id: self.payout_tx.clone(),
            },
            refund: OrderRefund {
                address: self.refund_address.clone(),
                tag: self.refund_tag.clone(),
                amount: self.refund_amount.clone(),
                tx_id: self.refund_tx.clone(),
            },
            emergency: self.emergency.as_ref().map(|e| OrderEmergency {
                reasons: e.reasons.iter().map(|r| r.as_str().into()).collect(),
                allowed_choices: e.allowed.iter().map(|c| c.as_str().into()).collect(),
                choice: e.choice.map(|c| c.as_str().into()),
                deadline: secs(e.deadline_ms),
            }),
            affiliate_code: self.affiliate_code.clone(),
            fees: self.fees.iter().map(RouteFee::view).collect(),
            email_attached: self.email.is_some(),
            failure_reason: self.failure_reason.clone(),
            order_page_url: self.page_url.clone(),
        }
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
            id: crate::ids::new_id("evt_"),
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
mod tests {
    use strum::VariantArray;

    use super::*;

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
