//! 0x Swap API v2 and Gasless API v2 (docs/providers.md, "0x"), the fields swapd reads. All
//! amounts are base-unit decimal strings, `transaction`'s `gas` and `value` included.

use serde::{Deserialize, Serialize};

/// `/swap/allowance-holder/price|quote` and `/gasless/price|quote`. With
/// `liquidityAvailable: false` no other field is set.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Quote {
    pub liquidity_available: bool,
    #[serde(default)]
    pub buy_token: Option<String>,
    #[serde(default)]
    pub sell_token: Option<String>,
    #[serde(default)]
    pub buy_amount: Option<String>,
    #[serde(default)]
    pub min_buy_amount: Option<String>,
    #[serde(default)]
    pub sell_amount: Option<String>,
    /// Allowance-holder: the network fee in the chain's coin.
    #[serde(default)]
    pub total_network_fee: Option<String>,
    #[serde(default)]
    pub issues: Option<Issues>,
    /// Allowance-holder quotes: the transaction to send.
    #[serde(default)]
    pub transaction: Option<Transaction>,
    /// Gasless quotes: the EIP-712 objects to sign.
    #[serde(default)]
    pub trade: Option<Signable>,
    #[serde(default)]
    pub approval: Option<Signable>,
    #[serde(default)]
    pub fees: Option<Fees>,
}

/// The fees 0x states, each `null` when not taken.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Fees {
    /// The `swapFeeBps` fee paid to `swapFeeRecipient`.
    #[serde(default)]
    pub integrator_fee: Option<TokenAmount>,
}

#[derive(Debug, Deserialize)]
pub struct TokenAmount {
    pub amount: String,
    pub token: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Issues {
    #[serde(default)]
    pub allowance: Option<Allowance>,
}

#[derive(Debug, Deserialize)]
pub struct Allowance {
    pub spender: String,
}

#[derive(Debug, Deserialize)]
pub struct Transaction {
    pub to: String,
    pub data: String,
    #[serde(default)]
    pub gas: Option<String>,
    #[serde(default)]
    pub value: Option<String>,
}

/// A gasless `trade` or `approval`: its type, hash and EIP-712 typed data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Signable {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub hash: Option<String>,
    pub eip712: serde_json::Value,
}

/// A signature as `/gasless/submit` takes it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Signature {
    pub v: u8,
    pub r: String,
    pub s: String,
    /// 2: EIP-712.
    pub signature_type: u8,
}

#[derive(Debug, Serialize)]
pub struct Signed<'a> {
    #[serde(rename = "type")]
    pub kind: &'a str,
    pub eip712: &'a serde_json::Value,
    pub signature: Signature,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Submit<'a> {
    pub chain_id: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval: Option<Signed<'a>>,
    pub trade: Signed<'a>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Submitted {
    pub trade_hash: String,
}

/// `/gasless/status/{tradeHash}`.
#[derive(Debug, Deserialize)]
pub struct Status {
    pub status: String,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub transactions: Vec<StatusTx>,
}

#[derive(Debug, Deserialize)]
pub struct StatusTx {
    pub hash: String,
}

/// An error answer: v2's `{name, message, data}`, or the older `{code, reason}`.
#[derive(Debug, Default, Deserialize)]
pub struct Error {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub data: Option<ErrorData>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorData {
    #[serde(default)]
    pub min_sell_amount: Option<String>,
}
