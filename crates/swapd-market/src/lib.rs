//! The aggregator behind [`swapd_core::market::Market`]: asks every provider at once, each
//! under its own deadline, and keeps the currency catalog with its fallbacks (the providers'
//! last good answers, then the shipped [`snapshot`]). The providers are adapters of
//! `swapd-sandbox`; the API and the worker see only the port.

mod aggregator;
pub mod snapshot;

pub use aggregator::{Aggregator, MarketOptions};
