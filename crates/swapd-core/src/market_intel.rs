//! Market-intel jobs, without I/O: what a job asks (validated), the job as stored, and the
//! arithmetic of its results (the ladder of a liquidity curve, price impact, the spread of a
//! route scan, the statistics of a rate history). Rates are exact decimals with
//! [`RATE_DECIMALS`] fraction digits.

use alloy_primitives::U256;
use serde::{Deserialize, Serialize};
use swapd_types::market::Direction;
use swapd_types::market_intel::{JobError, JobResult, JobStatus, RateBucket};

use crate::amount::{Amount, Rounding};
use crate::ids::JobId;
use crate::market::currencies::{CurrencyDef, currency};
use crate::market::pricing::RATE_DECIMALS;
use crate::owner::Owner;

pub const KINDS: [&str; 3] = ["pair_depth", "route_scan", "rate_history"];
/// How long one run of a job may take before it fails with `timeout`.
pub const RUN_TIMEOUT_MS: u64 = 20_000;
/// How long a worker holds a claimed job; a dead worker's job is taken over after it.
pub const LEASE_MS: i64 = 60_000;
/// Runs a job gets before it fails with `attempts_exhausted`.
pub const MAX_ATTEMPTS: u32 = 3;

/// A validated job request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum JobRequest {
    #[serde(rename_all = "camelCase")]
    PairDepth {
        from_ccy: String,
        to_ccy: String,
        steps: u32,
    },
    #[serde(rename_all = "camelCase")]
    RouteScan {
        from_ccy: String,
        to_ccy: String,
        amount: String,
        direction: Direction,
    },
    #[serde(rename_all = "camelCase")]
    RateHistory {
        from_ccy: String,
        to_ccy: String,
        window_secs: i64,
        buckets: u32,
    },
}

impl JobRequest {
    pub fn kind(&self) -> &'static str {
        match self {
            JobRequest::PairDepth { .. } => "pair_depth",
            JobRequest::RouteScan { .. } => "route_scan",
            JobRequest::RateHistory { .. } => "rate_history",
        }
    }

    /// The pair's currencies.
    pub fn pair(&self) -> (&str, &str) {
        match self {
            JobRequest::PairDepth {
                from_ccy, to_ccy, ..
            }
            | JobRequest::RouteScan {
                from_ccy, to_ccy, ..
            }
            | JobRequest::RateHistory {
                from_ccy, to_ccy, ..
            } => (from_ccy, to_ccy),
        }
    }
}

/// Why a job request is refused: the field and the problem, and whether the request is
/// malformed or names a pair swapd does not trade (as an order for it would be refused).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {problem}")]
pub struct InvalidJob {
    pub field: &'static str,
    pub problem: String,
    pub pair_unsupported: bool,
}

fn invalid(field: &'static str, problem: impl Into<String>) -> InvalidJob {
    InvalidJob {
        field,
        problem: problem.into(),
        pair_unsupported: false,
    }
}

fn unsupported(field: &'static str, problem: impl Into<String>) -> InvalidJob {
    InvalidJob {
        pair_unsupported: true,
        ..invalid(field, problem)
    }
}

/// Checks a job request and fills in its defaults.
pub fn validate(input: &swapd_types::market_intel::JobInput) -> Result<JobRequest, InvalidJob> {
    if !KINDS.contains(&input.kind.as_str()) {
        return Err(invalid(
            "kind",
            format!(
                "unknown kind `{}`; valid kinds: {}",
                input.kind.chars().take(32).collect::<String>(),
                KINDS.join(", ")
            ),
        ));
    }
    let from = known(&input.from_ccy, "fromCcy")?;
    let to = known(&input.to_ccy, "toCcy")?;
    if from.code == to.code {
        return Err(unsupported("toCcy", "must differ from fromCcy"));
    }
    let unused = |present: bool, field: &'static str| {
        if present {
            Err(invalid(field, format!("does not apply to {}", input.kind)))
        } else {
            Ok(())
        }
    };
    let (from_ccy, to_ccy) = (from.code.to_owned(), to.code.to_owned());
    match input.kind.as_str() {
        "pair_depth" => {
            unused(input.amount.is_some(), "amount")?;
            unused(input.window_secs.is_some(), "windowSecs")?;
            unused(input.buckets.is_some(), "buckets")?;
            let steps = input.steps.unwrap_or(6);
            if !(2..=12).contains(&steps) {
                return Err(invalid("steps", "must be from 2 to 12"));
            }
            Ok(JobRequest::PairDepth {
                from_ccy,
                to_ccy,
                steps,
            })
        }
        "route_scan" => {
            unused(input.steps.is_some(), "steps")?;
            unused(input.window_secs.is_some(), "windowSecs")?;
            unused(input.buckets.is_some(), "buckets")?;
            let direction = input.direction.unwrap_or_default();
            let side = match direction {
                Direction::From => from,
                Direction::To => to,
            };
            Ok(JobRequest::RouteScan {
                from_ccy,
                to_ccy,
                amount: scan_amount(input.amount.as_deref(), side)?.to_string(),
                direction,
            })
        }
        _ => {
            unused(input.amount.is_some(), "amount")?;
            unused(input.steps.is_some(), "steps")?;
            let window_secs = input.window_secs.unwrap_or(86_400);
            if !(60..=30 * 86_400).contains(&window_secs) {
                return Err(invalid("windowSecs", "must be from 60 to 2592000 seconds"));
            }
            let buckets = input.buckets.unwrap_or(24);
            if !(1..=96).contains(&buckets) {
                return Err(invalid("buckets", "must be from 1 to 96"));
            }
            Ok(JobRequest::RateHistory {
                from_ccy,
                to_ccy,
                window_secs,
                buckets,
            })
        }
    }
}

/// A route scan's amount, in the currency of its `side`: required, exact and above zero.
fn scan_amount(text: Option<&str>, side: &CurrencyDef) -> Result<Amount, InvalidJob> {
    let text = text.ok_or_else(|| invalid("amount", "is required for route_scan"))?;
    let amount = Amount::parse(text, side.precision).map_err(|e| {
        invalid(
            "amount",
            format!("{e} ({} has {} fraction digits)", side.code, side.precision),
        )
    })?;
    if amount.is_zero() {
        return Err(invalid("amount", "must be greater than zero"));
    }
    Ok(amount)
}

fn known(code: &str, field: &'static str) -> Result<&'static CurrencyDef, InvalidJob> {
    currency(code).ok_or_else(|| {
        unsupported(
            field,
            format!(
                "unknown currency `{}`; GET /currencies lists the codes",
                code.chars().take(32).collect::<String>()
            ),
        )
    })
}

/// A job as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub id: JobId,
    /// The wallet that paid for it.
    pub owner: Owner,
    pub request: JobRequest,
    pub status: JobStatus,
    pub result: Option<JobResult>,
    pub error: Option<JobError>,
    /// Runs started (a run whose worker died counts).
    pub attempts: u32,
    pub created_at_ms: i64,
    pub started_at_ms: Option<i64>,
    pub finished_at_ms: Option<i64>,
    /// Paid with `upto`: the authorization, settled when the job ends.
    pub payment: Option<JobPayment>,
}

/// The most a job of `kind` may cost, in prices of one paid call (docs/market-intel.md,
/// "What a job costs"): a `pair_depth` one per amount of its ladder (at most 12), the others
/// one.
pub fn maximum_units(kind: &str) -> u64 {
    match kind {
        "pair_depth" => 12,
        _ => 1,
    }
}

/// What a finished job cost, in prices of one paid call: a `pair_depth` one per amount its
/// ladder holds, the others one.
pub fn units_used(result: &JobResult) -> u64 {
    match result {
        JobResult::PairDepth(depth) => {
            (depth.ladder.len() as u64).clamp(1, maximum_units("pair_depth"))
        }
        _ => 1,
    }
}

/// A job paid with x402 `upto` (docs/market-intel.md, "Paying for what a job used"): the
/// authorization the worker settles, for what the job used, when it ends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobPayment {
    pub network: String,
    pub payer: String,
    /// The most it may take, and the price of one unit, in the asset's atomic units.
    pub maximum: String,
    pub unit: String,
    /// The x402 payment and requirements as the facilitator takes them (wire JSON).
    pub payment: serde_json::Value,
    pub requirements: serde_json::Value,
    pub state: JobPaymentState,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum JobPaymentState {
    /// The job has not ended: nothing taken yet.
    Authorized,
    /// Taken: `amount` (atomic units) in `transaction`.
    Settled { amount: String, transaction: String },
    /// The job failed: nothing taken.
    Released,
    /// The facilitator did not settle (the reason code): nothing taken.
    Refused { reason: String },
}

/// Settles what a job paid with `upto` used: the facilitator of its network takes `amount`
/// under its authorization (docs/market-intel.md, "Paying for what a job used").
#[async_trait::async_trait]
pub trait UptoSettler: Send + Sync + 'static {
    /// `again` when an earlier run of the job may have settled it already (it died before
    /// recording the outcome). `Ok` with the transaction (empty for an amount of 0).
    async fn settle(
        &self,
        payment: &JobPayment,
        amount: &str,
        again: bool,
    ) -> Result<String, SettleFailure>;
}

/// Why nothing was settled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettleFailure {
    /// The facilitator refused (its reason code): nothing will be taken.
    Refused(String),
    /// The facilitator could not be asked or did not answer: try again.
    Unavailable(String),
}

impl JobPayment {
    /// The cost of `units` prices of one call.
    pub fn amount_of(&self, units: u64) -> String {
        let unit = U256::from_str_radix(&self.unit, 10).unwrap_or_default();
        (unit * U256::from(units)).to_string()
    }

    pub fn view(&self) -> swapd_types::market_intel::JobPaymentView {
        let (status, amount, transaction) = match &self.state {
            JobPaymentState::Authorized => ("authorized", None, None),
            JobPaymentState::Settled {
                amount,
                transaction,
            } => ("settled", Some(amount.clone()), Some(transaction.clone())),
            JobPaymentState::Released => ("released", None, None),
            JobPaymentState::Refused { .. } => ("refused", None, None),
        };
        swapd_types::market_intel::JobPaymentView {
            scheme: "upto".into(),
            network: self.network.clone(),
            payer: self.payer.clone(),
            maximum: self.maximum.clone(),
            status: status.into(),
            amount,
            transaction,
        }
    }
}

impl Job {
    /// A job queued at `now_ms`, not yet run.
    pub fn queue(id: JobId, owner: Owner, request: JobRequest, now_ms: i64) -> Self {
        Self {
            id,
            owner,
            request,
            status: JobStatus::Queued,
            result: None,
            error: None,
            attempts: 0,
            created_at_ms: now_ms,
            started_at_ms: None,
            finished_at_ms: None,
            payment: None,
        }
    }

    pub fn view(&self) -> swapd_types::market_intel::JobView {
        swapd_types::market_intel::JobView {
            job_id: self.id.to_string(),
            kind: self.request.kind().into(),
            status: self.status,
            request: serde_json::to_value(&self.request).expect("requests serialize"),
            result: self.result.clone(),
            error: self.error.clone(),
            created_at: self.created_at_ms / 1000,
            started_at: self.started_at_ms.map(|ms| ms / 1000),
            finished_at: self.finished_at_ms.map(|ms| ms / 1000),
            payment: self.payment.as_ref().map(JobPayment::view),
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum JobOutcome {
    Succeeded(JobResult),
    Failed(JobError),
}

/// Where a depth ladder ends when no provider has a maximum: 100 times the minimum.
pub fn open_ended_top(min: Amount) -> Amount {
    min.mul_div(
        alloy_primitives::U256::from(100u8),
        alloy_primitives::U256::from(1u8),
        crate::amount::Rounding::Down,
    )
}

/// `steps` amounts from `min` to `max` (both included), spaced geometrically, so a curve
/// spanning four orders of magnitude is sampled evenly. The spacing is chosen in floating point;
/// each amount is then an exact decimal at `precision` within `[min, max]`.
pub fn ladder(min: Amount, max: Amount, steps: u32, precision: u8) -> Vec<Amount> {
    let (low, high) = (min.to_string(), max.to_string());
    let (low_f, high_f): (f64, f64) = (low.parse().unwrap_or(0.0), high.parse().unwrap_or(0.0));
    let mut points = Vec::with_capacity(steps as usize);
    for i in 0..steps {
        let point = if i == 0 {
            min
        } else if i + 1 == steps || low_f <= 0.0 {
            max
        } else {
            let t = f64::from(i) / f64::from(steps - 1);
            let value = low_f * (high_f / low_f).powf(t);
            Amount::parse(&format!("{value:.*}", usize::from(precision)), precision)
                .unwrap_or(min)
                .clamp(min, max)
        };
        if points.last() != Some(&point) {
            points.push(point);
        }
    }
    points
}

/// `(reference − rate) / reference` in basis points with two fraction digits: how much worse
/// `rate` is (negative when better).
pub fn impact_bps(reference: Amount, rate: Amount) -> String {
    if reference.is_zero() {
        return "0.00".into();
    }
    let (worse, gap) = if rate <= reference {
        (
            true,
            reference.units() - rate.rescale(reference.decimals(), Rounding::Down).units(),
        )
    } else {
        (
            false,
            rate.rescale(reference.decimals(), Rounding::Down).units() - reference.units(),
        )
    };
    // gap / reference · 10 000, with two decimals: gap · 1 000 000 / reference, in hundredths.
    let hundredths = gap * U256::from(1_000_000u64) / reference.units();
    let text = Amount::from_units(hundredths, 2).to_string();
    let text = if text.contains('.') {
        format!("{text:0<width$}", width = text.find('.').unwrap() + 3)
    } else {
        format!("{text}.00")
    };
    if worse || hundredths.is_zero() {
        text
    } else {
        format!("-{text}")
    }
}

/// Statistics of rates observed at times (ms), in `[since_ms, until_ms)`, with `buckets` equal
/// buckets. `observations` must be oldest first.
pub fn rate_statistics(
    observations: &[(i64, Amount)],
    since_ms: i64,
    until_ms: i64,
    buckets: u32,
) -> RateStats {
    let in_window: Vec<&(i64, Amount)> = observations
        .iter()
        .filter(|(at, _)| (since_ms..until_ms).contains(at))
        .collect();
    let summary = |rates: &mut dyn Iterator<Item = Amount>| -> Summary {
        let mut summary = Summary::default();
        for rate in rates {
            summary.count += 1;
            summary.sum = Some(summary.sum.map_or(rate, |s| s + rate));
            summary.min = Some(summary.min.map_or(rate, |m| m.min(rate)));
            summary.max = Some(summary.max.map_or(rate, |m| m.max(rate)));
        }
        summary
    };
    let overall = summary(&mut in_window.iter().map(|(_, r)| *r));
    let width = ((until_ms - since_ms) / i64::from(buckets.max(1))).max(1);
    let series = (0..buckets)
        .map(|i| {
            let start = since_ms + width * i64::from(i);
            let end = if i + 1 == buckets {
                until_ms
            } else {
                start + width
            };
            let bucket = summary(
                &mut in_window
                    .iter()
                    .filter(|(at, _)| (start..end).contains(at))
                    .map(|(_, r)| *r),
            );
            RateBucket {
                start: start / 1000,
                end: end / 1000,
                count: bucket.count,
                mean: bucket.mean().map(|m| m.to_string()),
                min: bucket.min.map(|m| m.to_string()),
                max: bucket.max.map(|m| m.to_string()),
            }
        })
        .collect();
    RateStats {
        count: overall.count,
        first: in_window.first().map(|(_, r)| r.to_string()),
        last: in_window.last().map(|(_, r)| r.to_string()),
        min: overall.min.map(|m| m.to_string()),
        max: overall.max.map(|m| m.to_string()),
        mean: overall.mean().map(|m| m.to_string()),
        series,
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct RateStats {
    pub count: u64,
    pub first: Option<String>,
    pub last: Option<String>,
    pub min: Option<String>,
    pub max: Option<String>,
    pub mean: Option<String>,
    pub series: Vec<RateBucket>,
}

#[derive(Default)]
struct Summary {
    count: u64,
    sum: Option<Amount>,
    min: Option<Amount>,
    max: Option<Amount>,
}

impl Summary {
    /// The mean, rounded down at the rates' precision.
    fn mean(&self) -> Option<Amount> {
        let sum = self.sum?;
        Some(sum.mul_div(U256::from(1u8), U256::from(self.count), Rounding::Down))
    }
}

/// How the rates of a pair are filed: `FROM/TO`.
pub fn rate_pair(from: &str, to: &str) -> String {
    format!("{from}/{to}")
}

/// A rate as observed (parsed at the rate precision).
pub fn parse_rate(text: &str) -> Option<Amount> {
    Amount::parse(text, RATE_DECIMALS).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use swapd_types::market_intel::JobInput;

    fn input(kind: &str) -> JobInput {
        JobInput {
            kind: kind.into(),
            from_ccy: "BTC".into(),
            to_ccy: "USDTTRC".into(),
            amount: None,
            direction: None,
            steps: None,
            window_secs: None,
            buckets: None,
        }
    }

    #[test]
    fn requests_are_validated_and_defaulted() {
        let error = validate(&input("order_book")).unwrap_err();
        assert_eq!(error.field, "kind");
        assert!(
            error
                .problem
                .contains("pair_depth, route_scan, rate_history")
        );
        assert_eq!(
            validate(&input("pair_depth")).unwrap(),
            JobRequest::PairDepth {
                from_ccy: "BTC".into(),
                to_ccy: "USDTTRC".into(),
                steps: 6
            }
        );
        assert_eq!(validate(&input("route_scan")).unwrap_err().field, "amount");
        let mut scan = input("route_scan");
        scan.amount = Some("0.123456789".into());
        assert_eq!(
            validate(&scan).unwrap_err().field,
            "amount",
            "BTC has 8 digits"
        );
        scan.amount = Some("0.5".into());
        assert!(matches!(
            validate(&scan).unwrap(),
            JobRequest::RouteScan {
                direction: Direction::From,
                ..
            }
        ));
        scan.steps = Some(3);
        assert_eq!(validate(&scan).unwrap_err().field, "steps");
        let mut history = input("rate_history");
        history.window_secs = Some(10);
        assert_eq!(validate(&history).unwrap_err().field, "windowSecs");
        let mut same = input("pair_depth");
        same.to_ccy = "BTC".into();
        assert_eq!(validate(&same).unwrap_err().field, "toCcy");
        let mut unknown = input("pair_depth");
        unknown.from_ccy = "DOGE".into();
        assert_eq!(validate(&unknown).unwrap_err().field, "fromCcy");
    }

    #[test]
    fn ladders_span_min_to_max_geometrically_in_exact_decimals() {
        let a = |s: &str| Amount::parse(s, 8).unwrap();
        let ladder = ladder(a("0.0001"), a("1"), 5, 8);
        let text: Vec<String> = ladder.iter().map(ToString::to_string).collect();
        assert_eq!(text, ["0.0001", "0.001", "0.01", "0.1", "1"]);
        assert_eq!(super::ladder(a("1"), a("1"), 4, 8).len(), 1, "no repeats");
    }

    #[test]
    fn impact_is_in_basis_points_with_sign() {
        let r = |s: &str| Amount::parse(s, 12).unwrap();
        assert_eq!(impact_bps(r("100"), r("99")), "100.00");
        assert_eq!(impact_bps(r("100"), r("99.995")), "0.50");
        assert_eq!(impact_bps(r("100"), r("100")), "0.00");
        assert_eq!(impact_bps(r("100"), r("101")), "-100.00");
        assert_eq!(impact_bps(r("3"), r("2")), "3333.33");
    }

    #[test]
    fn statistics_are_exact_and_bucketed() {
        let r = |s: &str| Amount::parse(s, 12).unwrap();
        let observations = vec![
            (500, r("1")),
            (1_000, r("2")),
            (1_500, r("4")),
            (3_500, r("3")),
            (4_000, r("9")),
        ];
        let stats = rate_statistics(&observations, 1_000, 4_000, 3);
        assert_eq!(stats.count, 3);
        assert_eq!(stats.first.as_deref(), Some("2"));
        assert_eq!(stats.last.as_deref(), Some("3"));
        assert_eq!(stats.min.as_deref(), Some("2"));
        assert_eq!(stats.max.as_deref(), Some("4"));
        assert_eq!(stats.mean.as_deref(), Some("3"));
        let counts: Vec<u64> = stats.series.iter().map(|b| b.count).collect();
        assert_eq!(counts, [2, 0, 1]);
        assert_eq!(stats.series[0].mean.as_deref(), Some("3"));
        assert_eq!(stats.series[1].mean, None);
        let thirds = rate_statistics(&[(0, r("1")), (1, r("1")), (2, r("2"))], 0, 10, 1);
        assert_eq!(thirds.mean.as_deref(), Some("1.333333333333"));
    }
}
