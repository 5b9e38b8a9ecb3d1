//! The integration tests of swapd-api in one binary (one link instead of one per file): each
//! module runs real servers from `support`.

mod support;

mod business_auth;
mod database_restart;
mod idempotency;
mod json_extractor;
mod lifecycle;
mod live_desks;
mod live_onchain;
mod market;
mod market_intel;
mod onchain;
mod ops;
mod order_page;
mod orders;
mod rate_limits;
mod shared_redis;
mod webhooks;
mod x402;
