//! A partner's earnings (docs/fees.md, "Earnings"): its markups in the fee ledger, summed per
//! currency and per UTC day.

use std::collections::BTreeMap;

use swapd_core::amount::Amount;
use swapd_core::fees::Party;
use swapd_core::fees::ledger::{LedgerRow, Stage};
use swapd_core::owner::Owner;
use swapd_types::earnings::{Earnings, EarningsDay, EarningsRow, EarningsTotal};

use crate::{Context, Error};

/// The most rows one answer holds.
pub const MAX_ROWS: u32 = 10_000;
/// The longest window one answer covers.
pub const MAX_WINDOW_SECS: i64 = 366 * 86_400;
const DAY_SECS: i64 = 86_400;

/// The window an answer covers when none is given: the last 30 days.
const DEFAULT_WINDOW_SECS: i64 = 30 * DAY_SECS;

/// The window `[since, until)` asked for (epoch seconds), checked: by default the 30 days up to
/// the second after `now` (so what was just learnt is in), at most [`MAX_WINDOW_SECS`].
pub fn window(since: Option<i64>, until: Option<i64>, now: i64) -> Result<(i64, i64), Error> {
    let until = until.unwrap_or(now + 1);
    let since = since.unwrap_or(until - DEFAULT_WINDOW_SECS);
    if since >= until {
        return Err(Error::invalid("until", "must be after since"));
    }
    if until - since > MAX_WINDOW_SECS {
        return Err(Error::invalid("until", "at most 366 days after since"));
    }
    Ok((since, until))
}

/// What `owner`'s markups earned in `[since, until)` (epoch seconds).
pub async fn of(
    app: Context<'_>,
    owner: &Owner,
    since: i64,
    until: i64,
) -> Result<Earnings, Error> {
    let rows = app
        .store
        .fee_ledger(Some(owner), since * 1000, until * 1000, MAX_ROWS + 1)
        .await?;
    Ok(summary(&rows, Party::Partner, since, until))
}

/// `party`'s earnings in `rows` (read with a limit of [`MAX_ROWS`] + 1, so that one more says
/// the window held more than an answer shows).
pub fn summary(rows: &[LedgerRow], party: Party, since: i64, until: i64) -> Earnings {
    let truncated = rows.len() > MAX_ROWS as usize;
    let rows: Vec<&LedgerRow> = rows
        .iter()
        .take(MAX_ROWS as usize)
        .filter(|row| row.party == party)
        .collect();
    Earnings {
        since,
        until,
        totals: sums(&rows, |_| 0)
            .into_iter()
            .map(|((_, currency), (expected, realized))| EarningsTotal {
                currency,
                expected,
                realized,
            })
            .collect(),
        days: sums(&rows, |row| row.at_ms / 1000 / DAY_SECS * DAY_SECS)
            .into_iter()
            .map(|((day, currency), (expected, realized))| EarningsDay {
                day,
                currency,
                expected,
                realized,
            })
            .collect(),
        rows: rows.iter().copied().map(view).collect(),
        truncated,
    }
}

/// Expected and realized sums of `rows` by (`bucket`, currency), exactly.
fn sums(
    rows: &[&LedgerRow],
    bucket: impl Fn(&LedgerRow) -> i64,
) -> BTreeMap<(i64, String), (String, String)> {
    let mut sums: BTreeMap<(i64, String), (Amount, Amount)> = BTreeMap::new();
    for row in rows {
        let zero = Amount::zero(row.currency.precision);
        let entry = sums
            .entry((bucket(row), row.currency.code.to_owned()))
            .or_insert((zero, zero));
        match row.stage {
            Stage::Expected => entry.0 = entry.0 + row.amount,
            Stage::Realized => entry.1 = entry.1 + row.amount,
        }
    }
    sums.into_iter()
        .map(|(key, (expected, realized))| (key, (expected.to_string(), realized.to_string())))
        .collect()
}

fn view(row: &LedgerRow) -> EarningsRow {
    EarningsRow {
        order_id: row.order_id.clone(),
        kind: row.party.as_str().into(),
        stage: row.stage.as_str().into(),
        bps: row.bps.map(|bps| bps.to_string()),
        amount: row.amount.to_string(),
        currency: row.currency.code.into(),
        at: row.at_ms / 1000,
    }
}
