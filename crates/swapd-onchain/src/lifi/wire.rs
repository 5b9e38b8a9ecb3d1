//! LI.FI's wire format (docs/providers.md, "LI.FI"), the fields swapd reads. Amounts are
//! base-unit integer strings; `transactionRequest`'s `value`, `gasLimit` and `gasPrice` are hex.

use serde::Deserialize;

/// `GET /v1/quote`: a `LiFiStep`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Quote {
    pub tool: String,
    pub action: Action,
    pub estimate: Estimate,
    #[serde(default)]
    pub transaction_request: Option<TransactionRequest>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Action {
    pub from_token: Token,
    pub to_token: Token,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Token {
    pub address: String,
    pub decimals: u8,
    #[serde(default)]
    pub symbol: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Estimate {
    pub from_amount: String,
    pub to_amount: String,
    pub to_amount_min: String,
    #[serde(default)]
    pub approval_address: Option<String>,
    #[serde(default)]
    pub gas_costs: Vec<Cost>,
    #[serde(default)]
    pub fee_costs: Vec<Cost>,
    /// Seconds; LI.FI sends a JSON number, sometimes with a fraction.
    #[serde(default)]
    pub execution_duration: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cost {
    pub amount: String,
    pub token: Token,
    /// A fee already taken from the amount sent (`feeCosts` only).
    #[serde(default)]
    pub included: Option<bool>,
}

/// EVM: `{to, data, value, gasLimit, ...}` with hex quantities. Solana sources carry only `data`
/// (a base64 transaction).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TransactionRequest {
    #[serde(default)]
    pub to: Option<String>,
    pub data: String,
    #[serde(default)]
    pub value: Option<String>,
    #[serde(default)]
    pub gas_limit: Option<String>,
    #[serde(default)]
    pub chain_id: Option<u64>,
}

/// `GET /v1/status`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    pub status: String,
    #[serde(default)]
    pub substatus: Option<String>,
    #[serde(default)]
    pub receiving: Option<Transfer>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Transfer {
    #[serde(default)]
    pub tx_hash: Option<String>,
    #[serde(default)]
    pub amount: Option<String>,
    #[serde(default)]
    pub token: Option<Token>,
    #[serde(default)]
    pub chain_id: Option<u64>,
}

/// An error answer: `{message, code?, errors?: [{errorType, code, tool, message}]}`.
#[derive(Debug, Default, Deserialize)]
pub struct Error {
    #[serde(default)]
    pub code: Option<u32>,
    #[serde(default)]
    pub errors: Vec<ToolError>,
}

#[derive(Debug, Deserialize)]
pub struct ToolError {
    #[serde(default)]
    pub code: Option<String>,
}
