//! The integration tests of the `swapd` binary and library in one test binary: each module
//! starts real servers (in-process through `swapd::app::App`, or the built binary).

mod browser;
mod cli;
mod cluster;
mod crash;
mod crash_mutations;
mod http;
mod npm_x402;
mod postgres;
mod sdk_x402;
mod web_surface;
mod webhook_durability;

/// A sandbox configuration in `dir`: its SQLite file there, listening on a free local port.
fn local_config(dir: &std::path::Path) -> swapd::config::Config {
    swapd::config::Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: dir.to_path_buf(),
        database_url: format!("sqlite://{}", dir.join("swapd.db").display()),
        ..swapd::config::Config::default()
    }
}
