//! Liquidity providers behind swapd's normalized API: the sandbox world (price feed and
//! providers), the shipped catalog snapshot, and the [`market::Market`] aggregator.

pub mod market;
pub mod price_feed;
pub mod sandbox;
pub mod snapshot;

pub use market::{CatalogView, Market, MarketOptions};
