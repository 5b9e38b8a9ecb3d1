//! The readiness documents of both surfaces (`GET /api/v3`, `GET /api/x402`): what the server
//! offers, what the caller may use, and (x402) what each route costs.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::Permission;

// `Routes`: the server fills it with the list serialized once at start (the same for every
// request, and most of the document's bytes); clients read it as a list.
/// `GET /api/v3`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Readiness<Routes = Vec<RouteInfo>> {
    pub service: String,
    /// `"business"`.
    pub api: String,
    /// `"3"`.
    pub version: String,
    /// `"sandbox"` or `"live"`.
    pub mode: String,
    /// Server time, Unix epoch seconds: sign requests within ±300 s of it.
    pub server_time: i64,
    /// The key that signed this request and its permissions.
    pub api_key: String,
    pub permissions: Vec<Permission>,
    /// Every mounted Business API route with the permission it requires.
    #[schema(value_type = Vec<RouteInfo>)]
    pub routes: Routes,
}

/// One Business route as listed by the readiness document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RouteInfo {
    pub method: String,
    pub path: String,
    /// The API-key permission the route requires; `null` when any valid key may call it.
    pub permission: Option<Permission>,
    /// Units of the weighted hourly quota (`X-RateLimit-Resource: key-weight-hour`) one call costs.
    pub weight: u32,
}

/// What an x402 route needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    /// No payment, no proof.
    Free,
    /// A payment per call.
    Paid,
    /// A payment per call, for a wallet: the SIWX wallet when a proof is sent, else the payer.
    PaidWallet,
    /// Free, but only for the wallet that owns the resource (SIWX proof).
    WalletRead,
}

impl Access {
    pub fn paid(self) -> bool {
        matches!(self, Access::Paid | Access::PaidWallet)
    }

    pub fn wallet_bound(self) -> bool {
        matches!(self, Access::PaidWallet | Access::WalletRead)
    }
}

/// `GET /api/x402`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct X402Readiness {
    pub service: String,
    /// `"x402"`.
    pub api: String,
    /// The x402 protocol version: 2.
    pub x402_version: u8,
    /// `"sandbox"` or `"live"`.
    pub mode: String,
    pub server_time: i64,
    /// Price of one paid call in USD.
    pub price_usd: String,
    /// The first way to pay (the one offered first): scheme, network, asset, payTo, amount
    /// (atomic units), maxTimeoutSeconds.
    #[schema(value_type = Object)]
    pub payment: serde_json::Value,
    /// Who settles the first way to pay: `ledger` (sandbox, in-process) or `http`.
    pub facilitator: String,
    /// Every way to pay, in the order each paid route's `PAYMENT-REQUIRED` lists them: as
    /// `payment`, with `facilitator`.
    #[schema(value_type = Vec<Object>)]
    pub accepts: Vec<serde_json::Value>,
    /// Ways to pay configured but not offered, and why (no facilitator settles them).
    pub left_out: Vec<X402LeftOut>,
    /// Sign-In-With-X: the domain proofs are bound to and the chains they may come from.
    #[schema(value_type = Object)]
    pub siwx: serde_json::Value,
    pub routes: Vec<X402RouteInfo>,
}

/// A configured way to pay that is not offered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct X402LeftOut {
    pub scheme: String,
    /// CAIP-2.
    pub network: String,
    /// What its facilitator answered, in words.
    pub reason: String,
}

/// One x402 route with its charge and access rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct X402RouteInfo {
    pub method: String,
    pub path: String,
    /// `free`, `paid`, `paid_wallet` (paid, acts for the SIWX wallet or the payer) or
    /// `wallet_read` (free, SIWX proof of the owning wallet).
    pub access: Access,
    pub paid: bool,
    /// Whether the route acts for a wallet (SIWX proof, or the payer on paid calls).
    pub wallet_bound: bool,
    /// Disabled: live mode without an operator-set access-token secret.
    pub enabled: bool,
    pub description: String,
}
