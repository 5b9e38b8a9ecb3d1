//! The fees a route card, an order and an execution list: who each goes to, how much, in what
//! currency (docs/fees.md).

use crate::amount::Amount;
use crate::fees::{Party, PartyFee, Rate};
use crate::market::currencies::CurrencyDef;

/// Who a fee goes to: `kind` on the wire (docs/fees.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr, strum::EnumString)]
#[strum(serialize_all = "lowercase")]
pub enum FeeKind {
    /// A network's transaction cost: the payout's (deducted from the output), or the gas the
    /// signing wallet pays on the source chain (not deducted).
    Network,
    /// What the provider charges besides its price (a bridge relayer's fee), deducted.
    Provider,
    /// The operator's service fee, deducted.
    Service,
    /// The partner's markup, deducted.
    Partner,
    /// The affiliate's share of the service fee, deducted.
    Affiliate,
}

impl From<Party> for FeeKind {
    fn from(party: Party) -> Self {
        match party {
            Party::Service => FeeKind::Service,
            Party::Partner => FeeKind::Partner,
            Party::Affiliate => FeeKind::Affiliate,
        }
    }
}

impl FeeKind {
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The party whose earnings a fee of this kind is; `None` for costs (network, provider).
    pub fn party(self) -> Option<Party> {
        match self {
            FeeKind::Service => Some(Party::Service),
            FeeKind::Partner => Some(Party::Partner),
            FeeKind::Affiliate => Some(Party::Affiliate),
            FeeKind::Network | FeeKind::Provider => None,
        }
    }
}

/// One fee of a quote, a route card, an order or an execution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fee {
    pub kind: FeeKind,
    pub amount: Amount,
    /// The currency the fee is paid in.
    pub currency: &'static CurrencyDef,
    /// The fee's rate in bps of the output, where it is one (the parties' fees).
    pub rate: Option<Rate>,
}

impl Fee {
    /// A cost without a rate (a network's, a provider's).
    pub fn cost(kind: FeeKind, amount: Amount, currency: &'static CurrencyDef) -> Self {
        Self {
            kind,
            amount,
            currency,
            rate: None,
        }
    }

    /// The parties' fees of a [`FeeSchedule`](crate::fees::FeeSchedule), in `currency`.
    pub fn of_parties(fees: &[PartyFee], currency: &'static CurrencyDef) -> Vec<Fee> {
        fees.iter()
            .map(|fee| Fee {
                kind: fee.party.into(),
                amount: fee.amount,
                currency,
                rate: Some(fee.rate),
            })
            .collect()
    }

    /// The party whose earnings this fee is, if any.
    pub fn party(&self) -> Option<Party> {
        self.kind.party()
    }

    /// The fee as the API shows it.
    pub fn view(&self) -> swapd_types::market::Fee {
        swapd_types::market::Fee {
            kind: self.kind.as_str().into(),
            bps: self.rate.map(|rate| rate.to_string()),
            amount: self.amount.to_string(),
            currency: self.currency.code.into(),
        }
    }
}

/// The fees as the API shows them.
pub fn views(fees: &[Fee]) -> Vec<swapd_types::market::Fee> {
    fees.iter().map(Fee::view).collect()
}
