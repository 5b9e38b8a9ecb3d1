//! The swapd binary as a library, so integration tests can build and run the same server that
//! `main` runs.

pub mod affiliates;
pub mod app;
pub mod cli;
pub mod config;
pub mod keys;
pub mod logging;
pub mod master_key;
pub mod telemetry;
