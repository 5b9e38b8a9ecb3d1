//! Liquidity providers behind swapd's normalized API, as adapters of
//! `swapd_core::provider::Provider`: the sandbox world (price feed, providers, chain) today,
//! the live desks and onchain routers next. The aggregator over them is `swapd-market`.

pub mod price_feed;
pub mod sandbox;
