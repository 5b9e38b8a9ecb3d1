//! `GET /api/v3/earnings`: what a partner's markups earned (docs/fees.md, "Earnings").

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A partner's earnings over a window: totals per currency, per UTC day, and the ledger rows
/// behind them. Times are Unix epoch seconds; amounts exact decimal strings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Earnings {
    /// Start of the window (included).
    pub since: i64,
    /// End of the window (excluded).
    pub until: i64,
    /// Per currency: what the orders' quotes promised (`expected`) and what the providers
    /// have taken (`realized`, when the order completed).
    pub totals: Vec<EarningsTotal>,
    /// The same per UTC day (the day's first second) and currency.
    pub days: Vec<EarningsDay>,
    /// The ledger rows, oldest first.
    pub rows: Vec<EarningsRow>,
    /// `true` when the window held more rows than one answer shows: narrow it.
    pub truncated: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EarningsTotal {
    pub currency: String,
    pub expected: String,
    pub realized: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EarningsDay {
    /// The UTC day's first second.
    pub day: i64,
    pub currency: String,
    pub expected: String,
    pub realized: String,
}

/// One fee of one order, as the ledger learnt it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EarningsRow {
    pub order_id: String,
    /// `partner`: the key's markup.
    pub kind: String,
    /// `expected` (at the order's creation) or `realized` (taken by the provider).
    pub stage: String,
    /// The rate in bps, exact decimal.
    pub bps: Option<String>,
    pub amount: String,
    pub currency: String,
    /// When the ledger learnt it.
    pub at: i64,
}
