//! The whole-system tests in one test binary (one link instead of one per file): each module
//! starts real servers, in-process through `swapd::app` (the HTTP surfaces on the production
//! wiring, from `support`) or the built binary (the CLI, crashes, several nodes).

mod support;

mod browser;
mod business_auth;
mod cli;
mod cluster;
mod crash;
mod crash_mutations;
mod database_restart;
mod fees;
mod http;
mod idempotency;
mod json_extractor;
mod lifecycle;
mod live_desks;
mod live_observed;
mod live_onchain;
mod market;
mod market_intel;
mod mcp;
mod npm_x402;
mod observed;
mod onchain;
mod ops;
mod order_page;
mod orders;
mod partition;
mod postgres;
mod rate_limits;
mod sdk_x402;
mod shared_redis;
mod telemetry;
mod web_surface;
mod webhook_durability;
mod webhooks;
mod x402;

/// A sandbox configuration in `dir`: its SQLite file there, listening on a free local port.
fn local_config(dir: &std::path::Path) -> swapd::config::Config {
    swapd::config::Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: dir.to_path_buf(),
        // Tests stop their servers at once; the drain is the stopping test's (http.rs).
        shutdown: swapd::config::ShutdownConfig {
            drain_secs: 0,
            ..Default::default()
        },
        sandbox: swapd::config::SandboxConfig::punctual(),
        ..swapd::config::Config::default()
    }
}
