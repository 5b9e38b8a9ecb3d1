//! Market data: the currency registry, the token list, exact pricing, and the route quotes that
//! discovery hands out and resolution redeems.

pub mod breaker;
pub mod catalog;
pub mod currencies;
mod port;
pub mod pricing;
pub mod routes;
pub mod tokens;

pub use port::{Market, ProviderHealth};
pub use swapd_types::market::{Direction, ExecutionType, RateType};
