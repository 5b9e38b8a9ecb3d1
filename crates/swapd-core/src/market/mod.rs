//! Market data: the currency registry, the token list, exact pricing, and the route quotes that
//! discovery hands out and resolution redeems.

pub mod catalog;
pub mod currencies;
pub mod pricing;
pub mod routes;
pub mod tokens;

use serde::{Deserialize, Serialize};

/// Which side of a swap the requested amount names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// The amount is what the user sends.
    #[default]
    From,
    /// The amount is what the user receives (a reverse quote).
    To,
}

/// Whether the rate is locked when the order is made (`fixed`) or taken when the deposit is
/// exchanged (`float`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RateType {
    #[default]
    Fixed,
    Float,
}

/// How a route is executed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExecutionType {
    /// Deposit to an address; the provider exchanges and pays out.
    Offchain,
    /// The user's wallet signs transactions or permits (DEX swaps, bridges).
    Onchain,
}
