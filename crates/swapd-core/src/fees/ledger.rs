//! The fee ledger (docs/fees.md, "The ledger"): one row per party's fee on a swap, expected
//! when it is made and realized when the provider reports what it took; reconciliation flags
//! a realized fee that is off the expected one.

use alloy_primitives::U256;
use serde::{Deserialize, Serialize};

use crate::amount::{Amount, MAX_DECIMALS, Rounding};
use crate::fees::entry::Fee;
use crate::fees::{Party, Rate};
use crate::market::currencies::CurrencyDef;
use crate::market::pricing::BPS;
use crate::owner::Owner;

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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerRow {
    /// The order's or the execution plan's id.
    pub order_id: String,
    /// The swap's owner (an API key for a partner's swap): whose earnings a `partner` row is.
    pub owner: Owner,
    pub party: Party,
    /// The affiliate's code on `affiliate` rows.
    pub affiliate_code: Option<String>,
    pub stage: Stage,
    /// The rate in bps.
    pub bps: Option<Rate>,
    pub amount: Amount,
    pub currency: &'static CurrencyDef,
    pub at_ms: i64,
}

/// What a swap was charged, as the ledger files it: an order's or an execution's id and owner,
/// the affiliate's code, and its fee entries as quoted (or realized).
pub struct Charged<'a> {
    pub id: &'a str,
    pub owner: &'a Owner,
    pub affiliate_code: Option<&'a str>,
    pub fees: &'a [Fee],
}

impl<'a> Charged<'a> {
    /// A swap's fees at `stage`: as quoted, or at the realized stage as realized where that
    /// is known (otherwise the provider took what it quoted).
    pub fn at(
        stage: Stage,
        (id, owner, affiliate_code): (&'a str, &'a Owner, Option<&'a str>),
        quoted: &'a [Fee],
        realized: Option<&'a [Fee]>,
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
            let party = fee.party()?;
            Some(LedgerRow {
                order_id: charged.id.to_owned(),
                owner: charged.owner.clone(),
                party,
                affiliate_code: (party == Party::Affiliate)
                    .then(|| charged.affiliate_code.map(str::to_owned))
                    .flatten(),
                stage,
                bps: fee.rate,
                amount: fee.amount,
                currency: fee.currency,
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
    expected: &[Fee],
    paid: Amount,
    currency: &'static CurrencyDef,
) -> Vec<Fee> {
    let operator = |fee: &Fee| matches!(fee.party(), Some(Party::Service | Party::Affiliate));
    // Expected in another currency (a desk that took its commission from the input): split
    // by the expected amounts' proportions all the same, each at the paid amount's scale.
    let units = |fee: &Fee| fee.amount.rescale(paid.decimals(), Rounding::Down).units();
    let expected_total: U256 = expected.iter().filter(|f| operator(f)).map(units).sum();
    let mut affiliate_paid = U256::ZERO;
    let mut shares: Vec<Fee> = expected
        .iter()
        .map(|fee| {
            let mut fee = fee.clone();
            if fee.party() == Some(Party::Affiliate) && !expected_total.is_zero() {
                affiliate_paid = paid.units() * units(&fee) / expected_total;
                fee.amount = Amount::from_units(affiliate_paid, paid.decimals());
            }
            if operator(&fee) {
                fee.currency = currency;
            }
            fee
        })
        .collect();
    for fee in shares
        .iter_mut()
        .filter(|fee| fee.party() == Some(Party::Service))
    {
        fee.amount = Amount::from_units(paid.units() - affiliate_paid, paid.decimals());
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
    fees: &[Fee],
    paid: Amount,
    currency: &'static CurrencyDef,
) -> Vec<Fee> {
    fees.iter()
        .map(|fee| match fee.party() {
            Some(Party::Partner) => Fee {
                amount: paid,
                currency,
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
    let units = |amount: Amount| amount.rescale(MAX_DECIMALS, Rounding::Down).units();
    by_party
        .into_values()
        .filter_map(|[expected, realized]| {
            let (expected, realized) = (expected?, realized?);
            if expected.currency.code != realized.currency.code {
                return None;
            }
            let (e, r) = (units(expected.amount), units(realized.amount));
            let off = if e > r { e - r } else { r - e };
            (off * U256::from(BPS) > e * U256::from(tolerance_bps)).then(|| Mismatch {
                order_id: expected.order_id.clone(),
                party: expected.party,
                currency: expected.currency.code.to_owned(),
                expected: expected.amount.to_string(),
                realized: realized.amount.to_string(),
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

    fn usdc() -> &'static CurrencyDef {
        crate::market::currencies::currency("USDCBASE").unwrap()
    }

    fn route_fee(kind: &str, bps: &str, amount: &str) -> Fee {
        Fee {
            kind: kind.parse().unwrap(),
            rate: Rate::parse(bps),
            amount: Amount::parse(amount, usdc().precision).unwrap(),
            currency: usdc(),
        }
    }

    #[test]
    fn what_reached_the_recipient_is_split_as_expected_was() {
        let expected = [
            route_fee("network", "0", "0.01"),
            route_fee("service", "22.5", "0.0675"),
            route_fee("affiliate", "7.5", "0.0225"),
        ];
        let amounts = |paid: u128| -> Vec<String> {
            realized_operator_fees(&expected, amount(paid, 6), usdc())
                .into_iter()
                .map(|fee| fee.amount.to_string())
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
        let row = |id: &str, party, stage, amount: &str, currency: &str| {
            let currency = crate::market::currencies::currency(currency).unwrap();
            LedgerRow {
                order_id: id.into(),
                owner: Owner::Key("a".into()),
                party,
                affiliate_code: None,
                stage,
                bps: None,
                amount: Amount::parse(amount, currency.precision).unwrap(),
                currency,
                at_ms: 0,
            }
        };
        use Party::*;
        use Stage::*;
        let rows = [
            row("ord_exact", Service, Expected, "1.5", "USDCBASE"),
            row("ord_exact", Service, Realized, "1.5", "USDCBASE"),
            row("ord_close", Service, Expected, "100", "USDCBASE"),
            row("ord_close", Service, Realized, "99.5", "USDCBASE"),
            row("ord_off", Service, Expected, "100", "USDCBASE"),
            row("ord_off", Service, Realized, "98", "USDCBASE"),
            row("ord_off", Affiliate, Expected, "1", "USDCBASE"),
            row("ord_off", Affiliate, Realized, "0", "USDCBASE"),
            row("ord_running", Partner, Expected, "3", "USDCBASE"),
            row("ord_other", Service, Expected, "3", "USDCBASE"),
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
