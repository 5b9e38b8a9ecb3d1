//! FixedFloat API v2 as it is written on the wire (docs/providers.md, "The desks"): every method a
//! signed POST answered `{code, msg, data}`. Field types vary between answers (strings, numbers,
//! booleans, `null`), so scalars are kept as raw JSON and read leniently ([`Scalar`]).

use serde::Deserialize;
use serde_json::value::RawValue;

/// A scalar as written: `"0.5"`, `0.5`, `true`, `1`, `"0"`, `null`.
pub type Scalar = Box<RawValue>;

/// `{code, msg, data}`: `code` 0 is success.
#[derive(Debug, Deserialize)]
pub struct Envelope<T> {
    pub code: Scalar,
    /// Missing or `null` on refusals.
    pub data: Option<T>,
}

/// An item of `ccies`.
#[derive(Debug, Deserialize)]
pub struct Currency {
    pub code: String,
    pub coin: String,
    pub network: String,
    /// Users can deposit it (`true`/`false` or 1/0).
    pub send: Scalar,
    /// FixedFloat pays out in it.
    pub recv: Scalar,
}

/// `price`.
#[derive(Debug, Deserialize)]
pub struct Price {
    pub from: PriceSide,
    pub to: PriceSide,
    #[serde(default)]
    pub errors: Vec<String>,
}

#[derive(Debug, Deserialize)]
pub struct PriceSide {
    pub amount: Scalar,
    #[serde(default)]
    pub min: Option<Scalar>,
    #[serde(default)]
    pub max: Option<Scalar>,
}

/// The order object of `create` and `order`.
#[derive(Debug, Deserialize)]
pub struct Order {
    pub id: String,
    pub status: String,
    pub time: Times,
    pub from: Side,
    pub to: Side,
    pub back: Side,
    pub emergency: Emergency,
    /// With `id`, authorizes `order`, `emergency`, `setEmail`: only in `create`'s answer.
    #[serde(default)]
    pub token: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct Times {
    /// Unix seconds: until when a deposit is expected.
    #[serde(default)]
    pub expiration: Option<Scalar>,
}

/// `from` (the deposit), `to` (the payout) or `back` (the refund).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Side {
    #[serde(default)]
    pub amount: Option<Scalar>,
    #[serde(default)]
    pub address: Option<String>,
    #[serde(default)]
    pub tag: Option<Scalar>,
    #[serde(default)]
    pub req_confirmations: Option<Scalar>,
    pub tx: Tx,
}

#[derive(Debug, Deserialize)]
pub struct Tx {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub amount: Option<Scalar>,
    /// A string in the captures (`"0"`, `"6"`).
    #[serde(default)]
    pub confirmations: Option<Scalar>,
}

#[derive(Debug, Deserialize)]
pub struct Emergency {
    /// Drawn from `EXPIRED`, `LESS`, `MORE`, `LIMIT`.
    #[serde(default)]
    pub status: Vec<String>,
    /// `NONE`, `EXCHANGE` or `REFUND`.
    pub choice: String,
    /// A repeated deposit: `"0"` in the captures, a boolean in some clients.
    #[serde(default)]
    pub repeat: Option<Scalar>,
}
