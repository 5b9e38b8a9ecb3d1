//! Jupiter's Metis swap API v1 (docs/providers.md, "Jupiter"), the fields swapd reads. Amounts
//! are base-unit integer strings.

use serde::Deserialize;

/// `GET /quote`. Passed back to `/swap` unchanged, so it is also kept as received.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Quote {
    pub input_mint: String,
    pub in_amount: String,
    pub output_mint: String,
    pub out_amount: String,
    /// ExactIn: the least output after slippage; ExactOut: the most input.
    pub other_amount_threshold: String,
    pub swap_mode: String,
}

/// `POST /swap`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Swap {
    /// Base64 of the unsigned versioned transaction.
    pub swap_transaction: String,
    pub last_valid_block_height: u64,
}

/// An error answer: `{error, errorCode}`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Error {
    #[serde(default)]
    pub error_code: Option<String>,
}
