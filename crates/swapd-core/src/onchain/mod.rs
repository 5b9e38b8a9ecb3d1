//! Onchain routes: the user's wallet executes what a router builds (docs/onchain.md). `plan` is
//! the execution plan and its status machine; `signatures` checks what a wallet reports;
//! `access` the tokens that scope a plan to its principal; `router` the port every router
//! (sandbox or live) answers through; `chain` the chain readers live tracking relies on.

pub mod access;
pub mod chain;
pub mod plan;
pub mod router;
pub mod signatures;
