//! The market: the currency registry, the token list, exact pricing, the provider port and its
//! venues (desks and routers), the route quotes that discovery hands out and resolution
//! redeems, and the [`Market`] port over every provider at once.

pub mod breaker;
pub mod catalog;
pub mod currencies;
pub mod observed;
mod port;
pub mod pricing;
pub mod provider;
pub mod routes;
pub mod tokens;
pub mod venue;

pub use port::{Market, ProviderHealth};
pub use swapd_types::market::{Direction, ExecutionType, RateType};
