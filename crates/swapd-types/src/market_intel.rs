//! Wire shapes of market-intel jobs (`/api/x402/market-intel/jobs`): asynchronous analyses an
//! agent pays for before it swaps. Amounts are decimal strings in display units of their
//! currency; rates are output per unit of input; basis points are decimal strings with two
//! fraction digits (negative when the rate improved); times are Unix seconds.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::market::{Direction, Fee};

/// `POST /market-intel/jobs`. Which fields apply depends on `kind`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JobInput {
    /// `pair_depth`, `route_scan` or `rate_history`.
    pub kind: String,
    pub from_ccy: String,
    pub to_ccy: String,
    /// `route_scan`: the amount to route (of `fromCcy`, or of `toCcy` with `direction: to`).
    #[serde(default)]
    pub amount: Option<String>,
    /// `route_scan`: `from` (default) or `to`.
    #[serde(default)]
    pub direction: Option<Direction>,
    /// `pair_depth`: how many amounts the ladder has (2 to 12, default 6).
    #[serde(default)]
    pub steps: Option<u32>,
    /// `rate_history`: how far back, in seconds (60 to 2 592 000, default 86 400).
    #[serde(default)]
    pub window_secs: Option<i64>,
    /// `rate_history`: how many equal buckets the series has (1 to 96, default 24).
    #[serde(default)]
    pub buckets: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum JobStatus {
    Queued,
    Running,
    Succeeded,
    Failed,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobError {
    /// `timeout` (the run took too long), `attempts_exhausted` (workers died running it),
    /// `pair_unsupported`, `no_quotes`, `internal_error`.
    pub code: String,
    pub message: String,
}

/// A job as its wallet sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobView {
    /// `job_…`.
    pub job_id: String,
    pub kind: String,
    pub status: JobStatus,
    /// The request as accepted (defaults filled in).
    #[schema(value_type = Object)]
    pub request: serde_json::Value,
    /// Set when `status` is `succeeded`: the shape of `kind`.
    pub result: Option<JobResult>,
    /// Set when `status` is `failed`.
    pub error: Option<JobError>,
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub finished_at: Option<i64>,
    /// A job paid with `upto`: the most it may cost and what was settled; absent when the job
    /// was paid its maximum with `exact`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payment: Option<JobPaymentView>,
}

/// What an `upto` payment of a job authorized and what was taken under it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobPaymentView {
    /// `upto`.
    pub scheme: String,
    /// CAIP-2.
    pub network: String,
    pub payer: String,
    /// The most the job may cost, in the asset's atomic units.
    pub maximum: String,
    /// `authorized` (the job has not ended), `settled`, `released` (the job failed: nothing
    /// taken) or `refused` (the facilitator did not settle; nothing taken).
    pub status: String,
    /// Settled: the amount taken, in atomic units (`0` when the job used nothing).
    pub amount: Option<String>,
    /// Settled: the transaction (empty for an amount of 0).
    pub transaction: Option<String>,
}

/// The result of a job, by kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum JobResult {
    PairDepth(PairDepth),
    RouteScan(RouteScan),
    RateHistory(RateHistory),
}

/// `pair_depth`: the pair's liquidity curve. Every provider quotes each amount of a ladder
/// spaced geometrically from the pair's smallest to its largest accepted input, at fixed and at
/// float rates; the best answer of each is kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PairDepth {
    pub from_ccy: String,
    pub to_ccy: String,
    /// Smallest and largest input any provider accepts, in `fromCcy`; `max` is `null` when
    /// some provider has none (the ladder then ends at 100 times `min`).
    pub min: String,
    pub max: Option<String>,
    pub ladder: Vec<DepthPoint>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DepthPoint {
    /// Input, in `fromCcy`.
    pub amount: String,
    /// Best fixed-rate answer; `null` when no provider quoted this amount.
    pub fixed: Option<DepthQuote>,
    pub float: Option<DepthQuote>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DepthQuote {
    pub provider: String,
    /// Output, in `toCcy`, after fees.
    pub output: String,
    /// Effective rate: output per unit of input.
    pub rate: String,
    /// How much worse the effective rate is than at the ladder's smallest amount (same rate
    /// type), in basis points.
    pub price_impact_bps: String,
}

/// `route_scan`: every route for one amount, best first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RouteScan {
    pub from_ccy: String,
    pub to_ccy: String,
    pub amount: String,
    pub direction: Direction,
    pub routes: Vec<ScannedRoute>,
    /// Output of the best and the worst available route, in `toCcy` (for `direction: to`,
    /// their inputs in `fromCcy`).
    pub best: Option<String>,
    pub worst: Option<String>,
    /// `best − worst`, and that as basis points of `best`.
    pub spread: Option<String>,
    pub spread_bps: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScannedRoute {
    pub provider: String,
    /// `offchain` or `onchain`.
    pub execution_type: String,
    pub available: bool,
    pub unavailable_reason: Option<String>,
    pub from_amount: Option<String>,
    pub output: Option<String>,
    pub min_output: Option<String>,
    pub rate: Option<String>,
    pub fees: Vec<Fee>,
    pub estimated_duration_seconds: Option<u32>,
}

/// `rate_history`: the pair's rates as swapd served them (quotes and route cards) over a window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RateHistory {
    pub from_ccy: String,
    pub to_ccy: String,
    pub since: i64,
    pub until: i64,
    /// Rates observed in the window.
    pub count: u64,
    pub first: Option<String>,
    pub last: Option<String>,
    pub min: Option<String>,
    pub max: Option<String>,
    pub mean: Option<String>,
    /// Equal buckets from `since` to `until`, oldest first.
    pub series: Vec<RateBucket>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RateBucket {
    pub start: i64,
    pub end: i64,
    pub count: u64,
    pub mean: Option<String>,
    pub min: Option<String>,
    pub max: Option<String>,
}
