//! Liquidity providers behind swapd's normalized API. So far: the sandbox price feed that every
//! sandbox provider quotes from.

pub mod price_feed;
