//! The integration tests of the `swapd` binary and library in one test binary: each module
//! starts real servers (in-process through `swapd::app::App`, or the built binary).

mod cli;
mod crash;
mod crash_mutations;
mod http;
mod npm_x402;
mod postgres;
mod sdk_x402;
mod webhook_durability;
