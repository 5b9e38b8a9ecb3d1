//! The fees a swap pays besides the provider's price (docs/fees.md): the operator's service
//! fee, the partner's markup, and an affiliate's share carved out of the service fee (so a user
//! pays the same with or without a code). Every fee is a share of the output, in the output
//! currency; each party's amount is rounded down, so the rounding always favours the user, and
//! the same arithmetic serves the quote, the order and the ledger.

pub mod entry;
pub mod ledger;

use alloy_primitives::U256;
use serde::{Deserialize, Serialize};

use crate::amount::{Amount, Rounding};
use crate::market::pricing::BPS;

/// Who a fee goes to (`kind` on the wire).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::EnumString,
)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum Party {
    /// The operator of this swapd.
    Service,
    /// The partner whose API key asked (its markup).
    Partner,
    /// The affiliate whose code the order carries (a share of the service fee).
    Affiliate,
}

impl Party {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// What the parties take, in basis points: fixed when a quote is made, kept by the route
/// quote, its createToken and the order (a change of settings applies to new quotes only).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FeeSchedule {
    /// The operator's fee, bps of the output.
    pub service_bps: u32,
    /// The partner's markup, bps of the output.
    pub partner_bps: u32,
    /// The affiliate's share of the service fee, bps of that fee (10 000 = all of it).
    pub affiliate_share_bps: u32,
}

/// The fees a quote asks every provider to carry: the operator's service fee (per provider
/// where set), the partner's markup and the affiliate's share.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FeePolicy {
    /// The operator's fee in bps, for providers `per_provider` does not name.
    pub service_bps: u32,
    /// The operator's fee for a provider, by provider id.
    pub per_provider: std::collections::BTreeMap<String, u32>,
    /// The asking partner's markup in bps.
    pub partner_bps: u32,
    /// The affiliate's share of the service fee, in bps of that fee.
    pub affiliate_share_bps: u32,
    /// Where the routers that pay a fee to an address pay the operator's.
    pub recipients: FeeRecipients,
}

/// Where the parties' fees are paid on chain, by the routers that pay them to an address
/// (docs/fees.md, "Recipients"). A router with no recipient for a party leaves its fee out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FeeRecipients {
    /// The operator's EVM address (0x's `swapFeeRecipient`, Relay's `appFees` recipient).
    pub evm: Option<alloy_primitives::Address>,
    /// The operator's Solana token accounts, by the catalog code of the currency each holds
    /// (Jupiter's `feeAccount`, which must hold the output's mint).
    pub solana: std::collections::BTreeMap<String, String>,
    /// The asking partner's EVM address for its markup (its key's markup recipient).
    pub partner_evm: Option<alloy_primitives::Address>,
}

/// A partner's markup, as its API key carries it: the rate, and where the onchain routers that
/// pay a fee to an address pay it (none: they leave it out).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Markup {
    pub bps: u32,
    pub recipient: Option<alloy_primitives::Address>,
}

/// Whom an onchain router pays a fee to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Payee {
    /// The operator: its service fee, the affiliate's share inside it (the operator pays
    /// affiliates).
    Operator,
    /// The partner: its markup.
    Partner,
}

/// What a router is asked to collect for one payee on chain, in whole bps, and where to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OnchainFee {
    pub payee: Payee,
    pub bps: u32,
    /// An EVM address, a Solana token account; empty for a router that pays an account it
    /// knows (LI.FI's integrator).
    pub recipient: String,
}

impl FeePolicy {
    /// What a quote of `provider` takes.
    pub fn schedule_for(&self, provider: &str) -> FeeSchedule {
        FeeSchedule {
            service_bps: self
                .per_provider
                .get(provider)
                .copied()
                .unwrap_or(self.service_bps),
            partner_bps: self.partner_bps,
            affiliate_share_bps: self.affiliate_share_bps,
        }
    }
}

/// One party's fee on one swap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartyFee {
    pub party: Party,
    /// Its rate, in bps of the output (an affiliate's may have a fraction: ten-thousandths).
    pub rate: Rate,
    pub amount: Amount,
}

/// A rate in basis points with four fraction digits, exactly (`7.5` bps is 75 000).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Rate(u64);

impl Rate {
    const SCALE: u64 = 10_000;

    pub fn from_bps(bps: u32) -> Self {
        Self(u64::from(bps) * Self::SCALE)
    }

    /// `bps × share / 10 000`, exactly (four fraction digits hold any such product).
    fn share_of(bps: u32, share_bps: u32) -> Self {
        Self(u64::from(bps) * u64::from(share_bps))
    }

    /// A rate as [`Display`](std::fmt::Display) writes it (`22.5`): at most four fraction
    /// digits.
    pub fn parse(text: &str) -> Option<Self> {
        let amount = Amount::parse(text, 4).ok()?;
        u64::try_from(amount.units()).ok().map(Self)
    }
}

impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let whole = self.0 / Self::SCALE;
        let fraction = self.0 % Self::SCALE;
        if fraction == 0 {
            return write!(f, "{whole}");
        }
        let digits = format!("{fraction:04}");
        write!(f, "{whole}.{}", digits.trim_end_matches('0'))
    }
}

/// The fees leave nothing, or less than the pair's minimum, for the user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the fees ({fees}) leave the user no output of {gross}")]
pub struct NothingLeft {
    pub gross: Amount,
    pub fees: Amount,
}

impl FeeSchedule {
    /// The operator's part only: what a provider that pays one account (a refcode, an
    /// integrator, a fee recipient) can carry; a partner's markup is left out.
    pub fn operator_only(self) -> FeeSchedule {
        FeeSchedule {
            partner_bps: 0,
            ..self
        }
    }

    pub const NONE: FeeSchedule = FeeSchedule {
        service_bps: 0,
        partner_bps: 0,
        affiliate_share_bps: 0,
    };

    /// What the user pays in all, in bps of the output.
    pub fn total_bps(&self) -> u32 {
        self.service_bps + self.partner_bps
    }

    pub fn is_none(&self) -> bool {
        self.total_bps() == 0
    }

    /// The parties' fees on `gross` (the output before them), each rounded down; parties whose
    /// rate is zero are left out. The affiliate's share is taken from the service fee's amount.
    pub fn split(&self, gross: Amount) -> Vec<PartyFee> {
        let of = |bps: u32| gross.mul_div(U256::from(bps), U256::from(BPS), Rounding::Down);
        let mut fees = self.operator_split(of(self.service_bps));
        if self.partner_bps > 0 {
            fees.push(PartyFee {
                party: Party::Partner,
                rate: Rate::from_bps(self.partner_bps),
                amount: of(self.partner_bps),
            });
        }
        fees
    }

    /// The operator's fee of `total` (its service fee's amount, or what a provider stated it
    /// takes): the affiliate's share of it rounded down, the rest the service's; parties whose
    /// rate is zero are left out.
    pub fn operator_split(&self, total: Amount) -> Vec<PartyFee> {
        let share = self.affiliate_share_bps.min(BPS);
        let affiliate = total.mul_div(U256::from(share), U256::from(BPS), Rounding::Down);
        let affiliate_rate = Rate::share_of(self.service_bps, share);
        let service_rate = Rate(Rate::from_bps(self.service_bps).0 - affiliate_rate.0);
        [
            (
                Party::Service,
                service_rate,
                total
                    .checked_sub(affiliate)
                    .expect("a share of a fee is at most the fee"),
            ),
            (Party::Affiliate, affiliate_rate, affiliate),
        ]
        .into_iter()
        .filter(|(_, rate, _)| rate.0 > 0)
        .map(|(party, rate, amount)| PartyFee {
            party,
            rate,
            amount,
        })
        .collect()
    }

    /// What the user receives of `gross` after the fees, and the fees; `Err` when nothing is
    /// left.
    pub fn net_of(&self, gross: Amount) -> Result<(Amount, Vec<PartyFee>), NothingLeft> {
        let fees = self.split(gross);
        let total = fees
            .iter()
            .fold(Amount::zero(gross.decimals()), |sum, fee| sum + fee.amount);
        match gross.checked_sub(total) {
            Some(net) if !net.is_zero() => Ok((net, fees)),
            _ => Err(NothingLeft { gross, fees: total }),
        }
    }

    /// The least gross output that leaves at least `net` after the fees (a reverse quote: the
    /// user names what it receives), with what it leaves and the fees.
    pub fn gross_for(&self, net: Amount) -> Result<(Amount, Amount, Vec<PartyFee>), NothingLeft> {
        let total = self.total_bps();
        if total >= BPS {
            return Err(NothingLeft {
                gross: net,
                fees: net,
            });
        }
        // Each of the three parties' rounding keeps less than one unit, so below this bound
        // the fees leave less than `net`; from it, the first gross that leaves enough is the
        // least (a handful of steps).
        let slack = Amount::from_units(U256::from(3u8), net.decimals());
        let mut gross = net
            .checked_sub(slack)
            .unwrap_or(Amount::zero(net.decimals()))
            .mul_div(U256::from(BPS), U256::from(BPS - total), Rounding::Down);
        let one = Amount::from_units(U256::from(1u8), net.decimals());
        loop {
            if let Ok((left, fees)) = self.net_of(gross)
                && left >= net
            {
                return Ok((gross, left, fees));
            }
            gross = gross + one;
        }
    }
}

/// The operator's bounds on what partners and the ledger may do (`[fees]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeeRules {
    /// The largest markup a partner's key may carry, in bps.
    pub max_markup_bps: u32,
    /// How far a realized fee may be off the expected one before reconciliation flags it, in
    /// bps of the expected amount.
    pub reconcile_tolerance_bps: u32,
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn amount(units: u128, decimals: u8) -> Amount {
        Amount::from_units(U256::from(units), decimals)
    }

    #[test]
    fn an_affiliate_share_is_carved_out_of_the_service_fee() {
        let schedule = FeeSchedule {
            service_bps: 30,
            partner_bps: 20,
            affiliate_share_bps: 2_500,
        };
        let (net, fees) = schedule.net_of(amount(1_000_000, 6)).unwrap();
        let by_party: Vec<(Party, String, u128)> = fees
            .iter()
            .map(|f| (f.party, f.rate.to_string(), f.amount.units().to::<u128>()))
            .collect();
        assert_eq!(
            by_party,
            [
                (Party::Service, "22.5".into(), 2_250),
                (Party::Affiliate, "7.5".into(), 750),
                (Party::Partner, "20".into(), 2_000),
            ]
        );
        assert_eq!(net, amount(995_000, 6));
        let without_code = FeeSchedule {
            affiliate_share_bps: 0,
            ..schedule
        };
        assert_eq!(without_code.net_of(amount(1_000_000, 6)).unwrap().0, net);
    }

    #[test]
    fn rates_read_back_what_they_print() {
        for text in ["0", "30", "22.5", "7.5", "0.0001", "10000"] {
            assert_eq!(Rate::parse(text).unwrap().to_string(), text);
        }
        assert_eq!(Rate::parse("7.50"), Rate::parse("7.5"));
        assert_eq!(Rate::parse("0.00001"), None);
        assert_eq!(Rate::parse("-1"), None);
    }

    #[test]
    fn a_provider_may_have_its_own_service_fee() {
        let policy = FeePolicy {
            service_bps: 30,
            per_provider: [("changenow".to_owned(), 50)].into(),
            partner_bps: 10,
            ..Default::default()
        };
        assert_eq!(policy.schedule_for("changenow").service_bps, 50);
        assert_eq!(policy.schedule_for("lifi").service_bps, 30);
        assert_eq!(policy.schedule_for("lifi").partner_bps, 10);
    }

    #[test]
    fn nothing_left_is_refused() {
        let schedule = FeeSchedule {
            service_bps: 10_000,
            ..FeeSchedule::NONE
        };
        assert!(schedule.net_of(amount(5, 2)).is_err());
        assert!(FeeSchedule::NONE.net_of(amount(0, 2)).is_err());
    }

    #[test]
    fn no_fees_is_the_gross() {
        let (net, fees) = FeeSchedule::NONE.net_of(amount(123, 2)).unwrap();
        assert_eq!(net, amount(123, 2));
        assert!(fees.is_empty());
    }

    /// The same arithmetic, written the simple way on integers.
    fn simple(gross: u128, service: u128, partner: u128, share: u128) -> (u128, u128, u128) {
        let service_total = gross * service / 10_000;
        let affiliate = service_total * share / 10_000;
        (
            service_total - affiliate,
            affiliate,
            gross * partner / 10_000,
        )
    }

    proptest! {
        #[test]
        fn the_split_matches_a_simple_implementation_and_favours_the_user(
            gross in 1u128..10u128.pow(30),
            service in 0u32..2_000,
            partner in 0u32..2_000,
            share in 0u32..=10_000,
            decimals in 0u8..=18,
        ) {
            let schedule = FeeSchedule { service_bps: service, partner_bps: partner, affiliate_share_bps: share };
            let (s, a, p) = simple(gross, service.into(), partner.into(), share.into());
            let fees = schedule.split(amount(gross, decimals));
            let get = |party| fees.iter().find(|f| f.party == party).map_or(0, |f| f.amount.units().to::<u128>());
            prop_assert_eq!((get(Party::Service), get(Party::Affiliate), get(Party::Partner)), (s, a, p));
            // Never more than the exact fee: the rounding is the user's.
            prop_assert!((s + a + p) * 10_000 <= gross * u128::from(service + partner));
            if let Ok((net, _)) = schedule.net_of(amount(gross, decimals)) {
                prop_assert_eq!(net.units().to::<u128>(), gross - s - a - p);
            }
        }

        #[test]
        fn a_reverse_quote_leaves_at_least_what_was_asked_and_is_the_least_that_does(
            net in 1u128..10u128.pow(28),
            service in 0u32..2_000,
            partner in 0u32..2_000,
            share in 0u32..=10_000,
        ) {
            let schedule = FeeSchedule { service_bps: service, partner_bps: partner, affiliate_share_bps: share };
            let (gross, left, _) = schedule.gross_for(amount(net, 6)).unwrap();
            prop_assert!(left >= amount(net, 6));
            let one_less = gross.units().to::<u128>() - 1;
            if one_less > 0 {
                let fewer = schedule.net_of(amount(one_less, 6)).map(|(n, _)| n.units().to::<u128>()).unwrap_or(0);
                prop_assert!(fewer < net, "{} units would do", one_less);
            }
        }
    }
}
