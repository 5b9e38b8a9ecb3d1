//! The fee ledger (docs/fees.md, "The ledger"): one row per party's fee on a swap, expected
//! when it is made and realized when the provider reports what it took; reconciliation flags
//! a realized fee that is off the expected one.

use alloy_primitives::U256;
use serde::{Deserialize, Serialize};

use crate::amount::{Amount, Rounding};
use crate::fees::Party;
use crate::fees::entry::RouteFee;
use crate::market::pricing::BPS;

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
    use super::*;
    use crate::fees::Party;

    fn amount(units: u128, decimals: u8) -> Amount {
        Amount::from_units(U256::from(units), decimals)
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
}
