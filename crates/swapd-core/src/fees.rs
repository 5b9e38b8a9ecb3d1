//! The fees a swap pays besides the provider's price (docs/fees.md): the operator's service
//! fee, the partner's markup, and an affiliate's share carved out of the service fee (so a user
//! pays the same with or without a code). Every fee is a share of the output, in the output
//! currency; each party's amount is rounded down, so the rounding always favours the user, and
//! the same arithmetic serves the quote, the order and the ledger.

use alloy_primitives::U256;
use serde::{Deserialize, Serialize};

use crate::amount::{Amount, Rounding};
use crate::market::pricing::BPS;
use crate::market::routes::RouteFee;

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

/// When a ledger row was learnt: at the order's creation, from its quote, or when the provider
/// reported the fee taken.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::EnumString,
)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum Stage {
    Expected,
    Realized,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// One party's fee on one order, as the fee ledger keeps it (docs/fees.md, "The ledger").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerRow {
    pub order_id: String,
    /// The order's owner (`key:…` for a partner's order): whose earnings a `partner` row is.
    pub owner: String,
    /// `service`, `partner` or `affiliate`.
    pub party: Party,
    /// The affiliate's code on `affiliate` rows.
    pub affiliate_code: Option<String>,
    pub stage: Stage,
    /// The rate in bps, exact decimal.
    pub bps: Option<String>,
    /// Exact decimal, in `currency`.
    pub amount: String,
    pub currency: String,
    pub at_ms: i64,
}

/// What a swap was charged, as the ledger files it: an order's or an execution's id and owner,
/// the affiliate's code, and its fee entries (`kind`, `bps`, `amount`, `currency` as quoted).
pub struct Charged<'a> {
    pub id: &'a str,
    pub owner: &'a str,
    pub affiliate_code: Option<&'a str>,
    pub fees: &'a [RouteFee],
}

impl<'a> Charged<'a> {
    /// A swap's fees at `stage`: as quoted, or at the realized stage as realized where that
    /// is known (otherwise the provider took what it quoted).
    pub fn at(
        stage: Stage,
        (id, owner, affiliate_code): (&'a str, &'a str, Option<&'a str>),
        quoted: &'a [RouteFee],
        realized: Option<&'a [RouteFee]>,
    ) -> Self {
        let fees = match (stage, realized) {
            (Stage::Realized, Some(realized)) => realized,
            _ => quoted,
        };
        Charged {
            id,
            owner,
            affiliate_code,
            fees,
        }
    }
}

/// The parties' rows of a swap's fees at `stage`: the other fees (network, provider) are
/// nobody's earnings.
pub fn ledger_rows(charged: Charged<'_>, stage: Stage, at_ms: i64) -> Vec<LedgerRow> {
    charged
        .fees
        .iter()
        .filter_map(|fee| {
            let party: Party = fee.kind.parse().ok()?;
            Some(LedgerRow {
                order_id: charged.id.to_owned(),
                owner: charged.owner.to_owned(),
                party,
                affiliate_code: (party == Party::Affiliate)
                    .then(|| charged.affiliate_code.map(str::to_owned))
                    .flatten(),
                stage,
                bps: fee.bps.clone(),
                amount: fee.amount.clone(),
                currency: fee.currency.clone(),
                at_ms,
            })
        })
        .collect()
}

/// The operator's parties' fees as realized when `paid` of `currency` reached the operator (a
/// recipient's Transfer, a desk's reported commission): the service fee and the affiliate's
/// share in it were paid together, so `paid` is split between them as expected was (the
/// affiliate's part rounded down); the other entries are as expected. Nothing paid where
/// something was expected realizes zeros.
pub fn realized_operator_fees(
    expected: &[RouteFee],
    paid: Amount,
    currency: &crate::market::currencies::CurrencyDef,
) -> Vec<RouteFee> {
    let operator =
        |fee: &RouteFee| matches!(fee.kind.parse(), Ok(Party::Service | Party::Affiliate));
    // Expected in another currency (a desk that took its commission from the input): split
    // by the expected amounts' proportions all the same, each read at its own currency's scale.
    let units = |fee: &RouteFee| {
        let scale = crate::market::currencies::currency(&fee.currency)
            .map_or(paid.decimals(), |def| def.decimals.min(18));
        Amount::parse(&fee.amount, scale)
            .map(|amount| amount.rescale(paid.decimals(), Rounding::Down).units())
            .unwrap_or_default()
    };
    let expected_total: U256 = expected.iter().filter(|f| operator(f)).map(units).sum();
    let mut affiliate_paid = U256::ZERO;
    let mut shares: Vec<RouteFee> = expected
        .iter()
        .map(|fee| {
            let mut fee = fee.clone();
            if fee.kind == Party::Affiliate.as_str() && !expected_total.is_zero() {
                affiliate_paid = paid.units() * units(&fee) / expected_total;
                fee.amount = Amount::from_units(affiliate_paid, paid.decimals()).to_string();
            }
            if operator(&fee) {
                fee.currency = currency.code.to_owned();
            }
            fee
        })
        .collect();
    for fee in shares
        .iter_mut()
        .filter(|fee| fee.kind == Party::Service.as_str())
    {
        fee.amount = Amount::from_units(paid.units() - affiliate_paid, paid.decimals()).to_string();
    }
    shares
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

/// A party's fee on a swap whose realized amount differs from the expected one by more than
/// the tolerance (docs/fees.md, "Reconciliation").
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Mismatch {
    pub order_id: String,
    pub party: Party,
    pub currency: String,
    pub expected: String,
    pub realized: String,
}

/// The partner's fee as realized when `paid` of `currency` reached its recipient (a Transfer):
/// the other entries are as they were.
pub fn realized_partner_fee(
    fees: &[RouteFee],
    paid: Amount,
    currency: &crate::market::currencies::CurrencyDef,
) -> Vec<RouteFee> {
    fees.iter()
        .map(|fee| match fee.kind.parse() {
            Ok(Party::Partner) => RouteFee {
                amount: paid.to_string(),
                currency: currency.code.to_owned(),
                ..fee.clone()
            },
            _ => fee.clone(),
        })
        .collect()
}

/// The swaps in `rows` whose realized fee for a party is off the expected one by more than
/// `tolerance_bps` of it. A fee not realized yet is no mismatch (its swap may still run, or it
/// ended without one); one realized in another currency than expected (a desk reporting its
/// commission in the pair's other currency) cannot be compared and is left out.
pub fn reconcile(rows: &[LedgerRow], tolerance_bps: u32) -> Vec<Mismatch> {
    let mut by_party: std::collections::BTreeMap<(&str, Party), [Option<&LedgerRow>; 2]> =
        std::collections::BTreeMap::new();
    for row in rows {
        let slot = match row.stage {
            Stage::Expected => 0,
            Stage::Realized => 1,
        };
        by_party.entry((&row.order_id, row.party)).or_default()[slot] = Some(row);
    }
    let units = |text: &str| {
        Amount::parse(text, crate::amount::MAX_DECIMALS)
            .map(|amount| amount.units())
            .ok()
    };
    by_party
        .into_values()
        .filter_map(|[expected, realized]| {
            let (expected, realized) = (expected?, realized?);
            if expected.currency != realized.currency {
                return None;
            }
            let (e, r) = (units(&expected.amount)?, units(&realized.amount)?);
            let off = if e > r { e - r } else { r - e };
            (off * U256::from(BPS) > e * U256::from(tolerance_bps)).then(|| Mismatch {
                order_id: expected.order_id.clone(),
                party: expected.party,
                currency: expected.currency.clone(),
                expected: expected.amount.clone(),
                realized: realized.amount.clone(),
            })
        })
        .collect()
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

    fn route_fee(kind: &str, bps: &str, amount: &str) -> RouteFee {
        RouteFee {
            kind: kind.into(),
            bps: Some(bps.into()),
            amount: amount.into(),
            currency: "USDCBASE".into(),
        }
    }

    #[test]
    fn what_reached_the_recipient_is_split_as_expected_was() {
        let usdc = crate::market::currencies::currency("USDCBASE").unwrap();
        let expected = [
            route_fee("network", "0", "0.01"),
            route_fee("service", "22.5", "0.0675"),
            route_fee("affiliate", "7.5", "0.0225"),
        ];
        let amounts = |paid: u128| -> Vec<String> {
            realized_operator_fees(&expected, amount(paid, 6), usdc)
                .into_iter()
                .map(|fee| fee.amount)
                .collect()
        };
        assert_eq!(amounts(90_000), ["0.01", "0.0675", "0.0225"], "all of it");
        assert_eq!(
            amounts(45_001),
            ["0.01", "0.033751", "0.01125"],
            "the affiliate's part rounded down"
        );
        assert_eq!(amounts(0), ["0.01", "0", "0"], "nothing arrived");
    }

    #[test]
    fn reconciliation_flags_realized_fees_off_the_expected_beyond_the_tolerance() {
        let row = |id: &str, party, stage, amount: &str, currency: &str| LedgerRow {
            order_id: id.into(),
            owner: "key:a".into(),
            party,
            affiliate_code: None,
            stage,
            bps: None,
            amount: amount.into(),
            currency: currency.into(),
            at_ms: 0,
        };
        use Party::*;
        use Stage::*;
        let rows = [
            row("ord_exact", Service, Expected, "1.5", "USDC"),
            row("ord_exact", Service, Realized, "1.5", "USDC"),
            row("ord_close", Service, Expected, "100", "USDC"),
            row("ord_close", Service, Realized, "99.5", "USDC"),
            row("ord_off", Service, Expected, "100", "USDC"),
            row("ord_off", Service, Realized, "98", "USDC"),
            row("ord_off", Affiliate, Expected, "1", "USDC"),
            row("ord_off", Affiliate, Realized, "0", "USDC"),
            row("ord_running", Partner, Expected, "3", "USDC"),
            row("ord_other", Service, Expected, "3", "USDC"),
            row("ord_other", Service, Realized, "0.0001", "BTC"),
        ];
        let flagged: Vec<(String, Party)> = reconcile(&rows, 50)
            .into_iter()
            .map(|m| (m.order_id, m.party))
            .collect();
        assert_eq!(
            flagged,
            [("ord_off".into(), Service), ("ord_off".into(), Affiliate)]
        );
        assert_eq!(reconcile(&rows, 0).len(), 3, "no tolerance: ord_close too");
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
