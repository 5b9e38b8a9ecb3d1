//! The handlers, one module per resource. Both surfaces mount them (the Business API behind its
//! key gate, the x402 API behind payment and sign-in); a handler reads its caller with
//! [`crate::principal::Caller`] and never knows which gate admitted it.

pub(crate) mod catalog;
pub(crate) mod earnings;
pub(crate) mod input;
pub(crate) mod market_intel;
pub(crate) mod onchain;
pub(crate) mod orders;
pub(crate) mod providers;
pub(crate) mod quotes;
pub(crate) mod routes;
pub(crate) mod sandbox;
pub(crate) mod tokens;
pub(crate) mod webhooks;
