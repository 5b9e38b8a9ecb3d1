//! The aggregator behind [`swapd_core::market::Market`]: asks every provider at once, each
//! under its own deadline, and keeps the currency catalog with its fallbacks (the providers'
//! last good answers, then the shipped [`snapshot`]). It holds each provider as its venue (a
//! desk or a router: the sandbox's in sandbox mode, `swapd-desks`' and `swapd-onchain`'s live);
//! the API and the worker see only the port.

mod aggregator;
pub mod snapshot;
#[cfg(test)]
mod test_venues;

pub use aggregator::{Aggregator, MarketOptions};
