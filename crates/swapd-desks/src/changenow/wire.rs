//! ChangeNOW API v2 as it is written on the wire (docs/providers.md, "The desks"). Amounts are JSON
//! numbers, kept as their raw text ([`Number`]) so that no digit passes through a float.

use serde::Deserialize;
use serde_json::value::RawValue;

/// A JSON number as written; `null` and absence are `None` in an `Option<Number>`.
pub type Number = Box<RawValue>;

/// An item of `GET /v2/exchange/currencies`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Currency {
    pub ticker: String,
    pub network: String,
    #[serde(default)]
    pub token_contract: Option<String>,
    /// Deposits and payouts on this network carry a memo (`extraId`).
    #[serde(default)]
    pub has_external_id: bool,
    #[serde(default)]
    pub is_extra_id_supported: bool,
    #[serde(default)]
    pub is_fiat: bool,
    #[serde(default)]
    pub supports_fixed_rate: bool,
    /// ChangeNOW sells it to users: swapd can pay out in it.
    #[serde(default)]
    pub buy: bool,
    /// ChangeNOW buys it from users: swapd's users can deposit it.
    #[serde(default)]
    pub sell: bool,
}

/// `GET /v2/exchange/range`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Range {
    pub min_amount: Number,
    /// `null` (or 0) when there is no maximum.
    #[serde(default)]
    pub max_amount: Option<Number>,
}

/// `GET /v2/exchange/estimated-amount`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Estimate {
    #[serde(default)]
    pub from_amount: Option<Number>,
    #[serde(default)]
    pub to_amount: Option<Number>,
    /// Locks a fixed rate when passed to create (fixed-rate flow with `useRateId=true`).
    #[serde(default)]
    pub rate_id: Option<String>,
    /// ISO 8601.
    #[serde(default)]
    pub valid_until: Option<String>,
    #[serde(default)]
    pub withdrawal_fee: Option<Number>,
}

/// The answer of `POST /v2/exchange`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Created {
    pub id: String,
    pub payin_address: String,
    /// The memo the deposit must carry; empty or `null` when none.
    #[serde(default)]
    pub payin_extra_id: Option<String>,
    #[serde(default)]
    pub from_amount: Option<Number>,
    #[serde(default)]
    pub to_amount: Option<Number>,
    #[serde(default)]
    pub valid_until: Option<String>,
}

/// `GET /v2/exchange/by-id`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Exchange {
    pub id: String,
    pub status: String,
    pub payin_address: String,
    #[serde(default)]
    pub payin_extra_id: Option<String>,
    #[serde(default)]
    pub expected_amount_from: Option<Number>,
    #[serde(default)]
    pub expected_amount_to: Option<Number>,
    /// What was received, once a deposit is seen.
    #[serde(default)]
    pub amount_from: Option<Number>,
    /// What was (or is being) paid out.
    #[serde(default)]
    pub amount_to: Option<Number>,
    #[serde(default)]
    pub payin_hash: Option<String>,
    #[serde(default)]
    pub payout_hash: Option<String>,
    #[serde(default)]
    pub refund_hash: Option<String>,
    #[serde(default)]
    pub refund_amount: Option<Number>,
    #[serde(default)]
    pub valid_until: Option<String>,
}

/// `GET /v2/exchanges` (the partner's list, read with the private API key).
#[derive(Debug, Deserialize)]
pub struct ExchangeList {
    #[serde(default)]
    pub exchanges: Vec<ListedExchange>,
}

/// An item of `GET /v2/exchanges`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListedExchange {
    pub exchange_id: String,
    pub status: String,
    pub payin: ListedPayin,
    pub payout: ListedPayout,
    #[serde(default)]
    pub partner_info: Option<PartnerInfo>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListedPayin {
    /// The ticker (`btc`).
    pub currency: String,
    pub address: String,
    #[serde(default)]
    pub extra_id: Option<String>,
    #[serde(default)]
    pub expected_amount: Option<Number>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListedPayout {
    pub currency: String,
    pub address: String,
    #[serde(default)]
    pub extra_id: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct PartnerInfo {
    /// The partner fields sent on create, when the account has them enabled.
    #[serde(default)]
    pub payload: Option<serde_json::Value>,
    /// What the exchange earned the partner's account.
    #[serde(default)]
    pub commission: Option<Commission>,
}

#[derive(Debug, Deserialize)]
pub struct Commission {
    /// The ticker it was taken in (`usdt`).
    pub currency: String,
    #[serde(default)]
    pub amount: Option<Number>,
}

/// The body of a refused request: `{"error": "<code>", "message": "<text>"}`.
#[derive(Debug, Deserialize)]
pub struct ErrorBody {
    pub error: String,
}
