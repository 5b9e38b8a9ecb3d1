//! Relay's wire format (docs/providers.md, "Relay"), the fields swapd reads. Amounts are
//! base-unit integer strings.

use serde::{Deserialize, Serialize};

/// `POST /quote/v2`'s body.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QuoteRequest<'a> {
    pub user: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recipient: Option<&'a str>,
    pub origin_chain_id: u64,
    pub destination_chain_id: u64,
    pub origin_currency: &'a str,
    pub destination_currency: &'a str,
    pub amount: String,
    pub trade_type: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refund_to: Option<&'a str>,
    /// Basis points, as a string.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slippage_tolerance: Option<String>,
    #[serde(skip_serializing_if = "str::is_empty")]
    pub referrer: &'a str,
    /// Ask for a permit signature instead of an approval transaction, where the token allows.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub use_permit: bool,
    /// Fees Relay takes from the input for the app, each to its EVM recipient.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub app_fees: Vec<AppFee<'a>>,
}

#[derive(Debug, Serialize)]
pub struct AppFee<'a> {
    pub recipient: &'a str,
    /// Basis points of the input, as a string.
    pub fee: String,
}

#[derive(Debug, Deserialize)]
pub struct Quote {
    pub steps: Vec<Step>,
    #[serde(default)]
    pub fees: Option<Fees>,
    pub details: Details,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    pub id: String,
    pub kind: String,
    #[serde(default)]
    pub request_id: Option<String>,
    #[serde(default)]
    pub items: Vec<Item>,
}

#[derive(Debug, Deserialize)]
pub struct Item {
    pub data: serde_json::Value,
}

/// A transaction item's `data` on an EVM chain.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EvmTransaction {
    pub to: String,
    pub data: String,
    #[serde(default)]
    pub value: Option<String>,
    #[serde(default)]
    pub gas: Option<String>,
    #[serde(default)]
    pub chain_id: Option<u64>,
}

/// A signature item's `data`: what to sign, and where the signature goes.
#[derive(Debug, Deserialize)]
pub struct SignatureItem {
    pub sign: Sign,
    pub post: Post,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Sign {
    pub signature_kind: String,
    #[serde(default)]
    pub domain: serde_json::Value,
    #[serde(default)]
    pub types: serde_json::Map<String, serde_json::Value>,
    #[serde(default)]
    pub primary_type: Option<String>,
    #[serde(default)]
    pub value: serde_json::Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Post {
    pub endpoint: String,
    pub method: String,
    #[serde(default)]
    pub body: serde_json::Value,
}

#[derive(Debug, Deserialize)]
pub struct Fees {
    #[serde(default)]
    pub gas: Option<Fee>,
    #[serde(default)]
    pub relayer: Option<Fee>,
}

#[derive(Debug, Deserialize)]
pub struct Fee {
    pub currency: Currency,
    pub amount: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Currency {
    pub chain_id: u64,
    pub address: String,
    pub decimals: u8,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Details {
    pub currency_in: Side,
    pub currency_out: Side,
    #[serde(default)]
    pub time_estimate: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Side {
    pub currency: Currency,
    pub amount: String,
    #[serde(default)]
    pub minimum_amount: Option<String>,
}

/// `GET /intents/status/v3`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    pub status: String,
    #[serde(default)]
    pub in_tx_hashes: Vec<String>,
    #[serde(default)]
    pub tx_hashes: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Error {
    #[serde(default)]
    pub error_code: Option<String>,
}
