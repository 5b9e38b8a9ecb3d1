//! The fees a route card, an order and an execution list: who each goes to, how much, in what
//! currency (docs/fees.md).

use serde::{Deserialize, Serialize};

use crate::amount::Amount;
use crate::fees::{Party, PartyFee, Rate};

/// Who a fee goes to: `kind` on the wire (docs/fees.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr)]
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
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fee {
    pub kind: FeeKind,
    pub amount: Amount,
    /// Catalog code of the currency the fee is paid in.
    pub currency: &'static str,
    /// The fee's rate in bps of the output, where it is one (the parties' fees).
    pub rate: Option<Rate>,
}

impl Fee {
    /// A cost without a rate (a network's, a provider's).
    pub fn cost(kind: FeeKind, amount: Amount, currency: &'static str) -> Self {
        Self {
            kind,
            amount,
            currency,
            rate: None,
        }
    }

    /// The parties' fees of a [`FeeSchedule`], in the output currency.
    pub fn of_parties(fees: &[PartyFee], currency: &'static str) -> Vec<Fee> {
        fees.iter()
            .map(|fee| Fee {
                kind: fee.party.into(),
                amount: fee.amount,
                currency,
                rate: Some(fee.rate),
            })
            .collect()
    }
}

/// One fee of a stored route, as shown on its card.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RouteFee {
    pub kind: String,
    /// The rate in bps of the output, for the parties' fees.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bps: Option<String>,
    pub amount: String,
    pub currency: String,
}

impl RouteFee {
    /// The fee as the API shows it.
    pub fn view(&self) -> swapd_types::market::Fee {
        swapd_types::market::Fee {
            kind: self.kind.clone(),
            bps: self.bps.clone(),
            amount: self.amount.clone(),
            currency: self.currency.clone(),
        }
    }
}
